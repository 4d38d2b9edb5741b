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
