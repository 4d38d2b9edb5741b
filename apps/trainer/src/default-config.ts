import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const manifest = JSON.parse(readFileSync(resolve(packageRoot, 'package.json'), 'utf8')) as {
  troupe?: { defaultConfig?: string };
};

/**
 * The config `troupe train` runs without `--config`: the file this package's `package.json`
 * names in `troupe.defaultConfig` (data, not code: which env the main job trains is that file's
 * `env`).
 */
export const DEFAULT_CONFIG = resolve(packageRoot, manifest.troupe?.defaultConfig ?? 'configs/default.toml');
