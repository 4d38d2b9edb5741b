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
