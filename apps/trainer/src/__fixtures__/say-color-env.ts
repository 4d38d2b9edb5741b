// A user's own env, not in the registry: one seat is told a colour and earns 1 for replying it.
import { sayWordEnv } from '@troupe/verifiers/testing';

/** `say-color`: task i asks for colour i mod 3; reward `said` = the reply is that colour. */
export const sayColorEnv = sayWordEnv({ id: 'say-color', words: ['red', 'green', 'blue'] });
