import { randomUUID } from 'node:crypto';
import { type Runtime, registerRuntime, type Sandbox, SandboxError } from '@troupe/verifiers';

/**
 * A runtime for seats that never run code (the `null` harness: game players, user
 * simulators): its sandboxes hold nothing and refuse commands and files. Creating one costs
 * no I/O, which matters when a training step plays thousands of hands (the `local` runtime's
 * temporary directories cost ≈30 ms per hand here).
 */
export class GameRuntime implements Runtime {
  readonly id = 'game';
  readonly capabilities = { container: false, networkIsolation: true };

  /** Ids are this runtime's random prefix and a counter: unique without a UUID per seat. */
  private readonly idPrefix = `game-${randomUUID()}-`;
  private created = 0;

  createSandbox(): Promise<Sandbox> {
    return Promise.resolve(new GameSandbox(`${this.idPrefix}${(++this.created).toString(36)}`));
  }
}

/** A sandbox of the game runtime; methods on the prototype, so creating one allocates no closures (two per hand). */
class GameSandbox implements Sandbox {
  readonly runtime = 'game';
  readonly workdir = '/';
  private live = true;

  constructor(readonly id: string) {}

  exec(): Promise<never> {
    return refuse('shell');
  }
  readFile(): Promise<never> {
    return refuse('files');
  }
  writeFile(): Promise<never> {
    return refuse('files');
  }
  upload(): Promise<never> {
    return refuse('files');
  }
  download(): Promise<never> {
    return refuse('files');
  }
  async alive(): Promise<boolean> {
    return this.live;
  }
  async reachHost(url: string): Promise<string> {
    return url;
  }
  stop(): Promise<void> {
    this.live = false;
    return STOPPED;
  }
}

/** What `stop` returns: nothing to wait for (shared). */
const STOPPED = Promise.resolve();

function refuse(what: string): Promise<never> {
  return Promise.reject(new SandboxError(`the game runtime has no ${what}: its seats never run code`));
}

/** Registers runtime id `game` (idempotent). */
export function registerGameRuntime(): void {
  registerRuntime('game', () => new GameRuntime());
}
