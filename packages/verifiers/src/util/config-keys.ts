import { ConfigError } from '../errors/troupe-error.ts';

/**
 * Throws a `ConfigError` naming the key path when a parsed config (TOML or JSON) holds a
 * `__proto__` key at any depth (`[__proto__]`, `a.__proto__.b = 1`, `{"__proto__": …}`). Such a key
 * is an own property after parsing, but any later merge, spread or assignment would set an object's
 * prototype instead of a field: it is refused at the door, never applied. `where` names the file.
 */
export function rejectPrototypeKeys(value: unknown, where: string): void {
  const walk = (node: unknown, path: string[]) => {
    if (typeof node !== 'object' || node === null) return;
    for (const key of Object.keys(node)) {
      const at = [...path, key];
      if (key === '__proto__')
        throw new ConfigError(`${where}: ${at.join('.')}: a "__proto__" key is refused (it would set a prototype, not a field)`);
      walk((node as Record<string, unknown>)[key], at);
    }
  };
  walk(value, []);
}

/** A module a config names: where (`env.player.rewards.0.module`) and the specifier. */
export interface NamedModule {
  path: string;
  module: string;
}

/** Is `ref` an env module path rather than a registry id or package (`./x.ts`, `/abs/x.mjs`, `x.js`)? */
function isModulePath(ref: string): boolean {
  return ref.startsWith('.') || ref.startsWith('/') || /\.(m|c)?[jt]s$/.test(ref) || /^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(ref);
}

/** Every module a config names: each string `module` field at any depth, and `env.id` when it is a module path. */
export function modulesNamed(config: unknown): NamedModule[] {
  const found: NamedModule[] = [];
  const walk = (node: unknown, path: string[]) => {
    if (typeof node !== 'object' || node === null) return;
    for (const [key, value] of Object.entries(node)) {
      if (key === 'module' && typeof value === 'string') found.push({ path: [...path, key].join('.'), module: value });
      else walk(value, [...path, key]);
    }
  };
  walk(config, []);
  const env = (config as { env?: { id?: unknown } } | null)?.env;
  if (typeof env?.id === 'string' && isModulePath(env.id)) found.push({ path: 'env.id', module: env.id });
  return found;
}

/**
 * A run directory is data, never code: refuses (a `ConfigError` naming the module and where it
 * is) when the saved `config.json` of the run at `runDir` names a module that the config passed
 * now (`--config`, `--env`) does not name at the same place. `command` is how the refusal starts
 * (`--resume <dir>`, `replay <dir>`).
 */
export function assertSavedModulesPassedAgain(options: { saved: unknown; passed: unknown; command: string }): void {
  const passed = new Map(modulesNamed(options.passed).map((m) => [m.path, m.module]));
  for (const { path, module } of modulesNamed(options.saved)) {
    if (passed.get(path) === module) continue;
    throw new ConfigError(
      `${options.command}: the run's config.json names module ${JSON.stringify(module)} (${path}); a run directory is data and its modules are not loaded from it: pass that config again with --config <file>${path === 'env.id' ? ` (or --env ${module})` : ''}`,
    );
  }
}

/** Tables whose keys are data (HTTP headers, a provider's request body, env vars, JSON schemas): kept verbatim. */
const VERBATIM = new Set(['headers', 'extra', 'extraBody', 'extra_body', 'labels', 'parameters', 'info', 'data', 'metadata']);
/** Tables keyed by names the user chose (roles, policies, models, servers): the names are kept, their values normalized. */
const NAMED = new Set(['roles', 'policies', 'prices', 'mcpServers', 'mcp_servers']);
const warnedKeys = new Set<string>();

/**
 * A key whose name the user chose: a key of a {@link NAMED} table, or a table directly under the
 * top-level `env` (an eval config's `[env.<role>]`: role names such as `red_team` are the env's own
 * and are never respelled; only the keys inside are).
 */
const isChosenName = (path: readonly string[], child: unknown) => {
  const parent = path.at(-1);
  if (parent !== undefined && NAMED.has(parent)) return true;
  return path.length === 1 && parent === 'env' && typeof child === 'object' && child !== null && !Array.isArray(child);
};

/** `max_turns` → `maxTurns`: a config file's key as the TypeScript API spells it. */
export function camelConfigKey(key: string): string {
  return key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** `maxTurns` → `max_turns`: the TypeScript API's key as a config file spells it. */
export function snakeConfigKey(key: string): string {
  return /^[a-z][A-Za-z0-9]*$/.test(key) ? key.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase() : key;
}

/** True for a key spelled camelCase (`numTasks`), the spelling a config file no longer uses. */
const isCamel = (key: string) => /^[a-z][a-z0-9]*[A-Z]/.test(key);

/** Options of {@link normalizeConfigKeys}. */
export interface ConfigKeyOptions {
  /** Names the file (or `--set`) in warnings and errors. */
  where?: string;
  /**
   * Called once per process for each camelCase key (default: a Node `DeprecationWarning`, code
   * `TROUPE_CONFIG_KEY`); `false` stays silent (a run's own `config.json`).
   */
  warn?: ((message: string) => void) | false;
}

function deprecated(key: string, where: string | undefined, warn: ConfigKeyOptions['warn']): void {
  if (warn === false || warnedKeys.has(key)) return;
  warnedKeys.add(key);
  const message = `${where ? `${where}: ` : ''}config key "${key}" is deprecated: write "${snakeConfigKey(key)}" (config files use snake_case; the camelCase spelling will be refused in a later release)`;
  if (warn) warn(message);
  else process.emitWarning(message, { type: 'DeprecationWarning', code: 'TROUPE_CONFIG_KEY' });
}

/**
 * A config file's keys (snake_case: `num_tasks`, `max_turns`, `episode_agents`) as the TypeScript
 * API spells them (camelCase). The camelCase spelling is still accepted, with one deprecation
 * warning per key naming the snake_case one; both spellings of one key in one table is a
 * `ConfigError` naming it. Keys of data tables (`headers`, `extra`, `env` vars, `info`, …) are
 * kept verbatim, and so are the names of `roles`, `policies`, `prices` and `mcp_servers`.
 */
export function normalizeConfigKeys(value: unknown, options: ConfigKeyOptions = {}): unknown {
  const walk = (node: unknown, path: string[]): unknown => {
    if (Array.isArray(node)) return node.map((item, i) => walk(item, [...path, String(i)]));
    if (typeof node !== 'object' || node === null) return node;
    const parent = path.at(-1);
    if (parent !== undefined && (VERBATIM.has(parent) || (parent === 'env' && path.length > 1))) return node;
    const out: Record<string, unknown> = {};
    const spelled: Record<string, string> = {};
    for (const [key, child] of Object.entries(node as Record<string, unknown>)) {
      const named = isChosenName(path, child);
      const name = named ? key : camelConfigKey(key);
      if (!named && isCamel(key)) deprecated(key, options.where, options.warn);
      if (Object.hasOwn(out, name)) {
        const at = [...path, snakeConfigKey(name)].join('.');
        throw new ConfigError(
          `${options.where ? `${options.where}: ` : ''}${at}: given twice, as "${spelled[name]}" and "${key}"; keep "${snakeConfigKey(name)}"`,
          { path: at },
        );
      }
      spelled[name] = key;
      out[name] = walk(child, [...path, name]);
    }
    return out;
  };
  return walk(value, []);
}

/** The inverse of {@link normalizeConfigKeys}: a config object as a config file spells it (a run's `config.json`). */
export function snakeConfigKeys(value: unknown): unknown {
  const walk = (node: unknown, path: string[]): unknown => {
    if (Array.isArray(node)) return node.map((item, i) => walk(item, [...path, String(i)]));
    if (typeof node !== 'object' || node === null) return node;
    const parent = path.at(-1);
    if (parent !== undefined && (VERBATIM.has(parent) || (parent === 'env' && path.length > 1))) return node;
    return Object.fromEntries(
      Object.entries(node as Record<string, unknown>).map(([key, child]) => [
        isChosenName(path, child) ? key : snakeConfigKey(key),
        walk(child, [...path, key]),
      ]),
    );
  };
  return walk(value, []);
}

/** A `--set` path (`env.solver.max_turns`) as the TypeScript API spells it, each camelCase segment warned about once. */
export function normalizeSetPath(path: string, options: ConfigKeyOptions & { table?: boolean } = {}): string {
  const segments = path.split('.');
  return segments
    .map((segment, i) => {
      // `env.<role>.…` and `roles.<name>.…`: the name is the user's, kept as written.
      const previous = segments[i - 1];
      if ((i === 1 && previous === 'env' && i < segments.length - 1) || (previous !== undefined && NAMED.has(previous)))
        return segment;
      if (isCamel(segment)) deprecated(segment, options.where ?? '--set', options.warn);
      return camelConfigKey(segment);
    })
    .join('.');
}

/**
 * A `--set` value that is a table (`--set env.agent.runtime={"id":"docker","socket_path":"…"}`),
 * with its keys read as a config file's keys at that place: snake_case to camelCase, data tables
 * and chosen names kept. `path` is the `--set` path as the user wrote it. A scalar is returned as is.
 */
export function normalizeSetValue(path: string, value: unknown, options: ConfigKeyOptions = {}): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const segments = path.split('.');
  let wrapped: unknown = value;
  for (const segment of [...segments].reverse()) wrapped = { [segment]: wrapped };
  let node = normalizeConfigKeys(wrapped, {
    where: options.where ?? '--set',
    ...(options.warn !== undefined ? { warn: options.warn } : {}),
  });
  // One key per level: the path as normalized, whatever spelling it took.
  for (let i = 0; i < segments.length; i++) node = Object.values(node as Record<string, unknown>)[0];
  return node;
}

/**
 * One `--set PATH=VALUE` as the TypeScript API spells it: the path by {@link normalizeSetPath} (a
 * table under `env` keeps its role name) and a table value by {@link normalizeSetValue}.
 */
export function normalizeSet(path: string, value: unknown, options: ConfigKeyOptions = {}): { path: string; value: unknown } {
  const table = typeof value === 'object' && value !== null && !Array.isArray(value);
  return { path: normalizeSetPath(path, { ...options, table }), value: normalizeSetValue(path, value, options) };
}
