import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The config `pnpm trainer train` runs without `--config`: Kuhn poker self-play with RAE. */
export const DEFAULT_CONFIG = resolve(dirname(fileURLToPath(import.meta.url)), '../configs/kuhn-poker.toml');
