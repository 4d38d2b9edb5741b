import * as crypto from 'node:crypto';
import { ConfigError } from '../errors/troupe-error.ts';

/**
 * JSON with sorted keys and `null` / `undefined` values dropped: the canonical form hashed for keys.
 * Written in one pass, without the sorted copy of the value that `JSON.stringify` would need; the
 * text is that of `JSON.stringify` over such a copy (integer-like keys first, as V8 orders them).
 */
export function canonicalJson(value: unknown): string {
  // A top-level value JSON cannot write (undefined, a function, a symbol) gives undefined, as JSON.stringify does.
  if (value === undefined || typeof value === 'function' || typeof value === 'symbol') return undefined as unknown as string;
  return write(value, 0);
}

/** Nesting beyond this is refused like a cycle would be (JSON.stringify would overflow the stack). */
const MAX_DEPTH = 1000;

function write(value: unknown, depth: number): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? String(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      // The error JSON.stringify throws.
      return JSON.stringify(value);
    case 'object':
      break;
    default:
      return 'null';
  }
  if (depth > MAX_DEPTH) throw new ConfigError('canonicalJson: value is nested too deeply (or cyclic)');
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ',';
      const item = value[i];
      out += item === undefined || typeof item === 'function' || typeof item === 'symbol' ? 'null' : write(item, depth + 1);
    }
    return `${out}]`;
  }
  const record = value as Record<string, unknown>;
  const keys = sortedKeys(record);
  let out = '{';
  let first = true;
  for (const key of keys) {
    const v = record[key];
    if (v === null || v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
    // The sorted copy this text was first written from assigned `__proto__` (setting its prototype), so the key never showed.
    if (key === '__proto__') continue;
    out += first ? JSON.stringify(key) : `,${JSON.stringify(key)}`;
    out += `:${write(v, depth + 1)}`;
    first = false;
  }
  return `${out}}`;
}

/** Own enumerable keys, sorted; integer-like keys first in numeric order (where V8 puts them in an object's key order). */
function sortedKeys(record: Record<string, unknown>): string[] {
  const keys = Object.keys(record);
  if (keys.length < 2) return keys;
  if (keys.length > 16) keys.sort();
  // Insertion sort by UTF-16 code units (the order of the default sort), without the work array
  // Array.prototype.sort allocates: most objects hashed here have a handful of keys.
  else
    for (let i = 1; i < keys.length; i++) {
      const key = keys[i] as string;
      let j = i - 1;
      while (j >= 0 && (keys[j] as string) > key) {
        keys[j + 1] = keys[j] as string;
        j--;
      }
      keys[j + 1] = key;
    }
  let integers = 0;
  for (const key of keys) if (isIndex(key)) integers++;
  if (integers === 0) return keys;
  const indexKeys = keys.filter(isIndex).sort((a, b) => Number(a) - Number(b));
  return indexKeys.concat(keys.filter((k) => !isIndex(k)));
}

/** An array-index key (canonical decimal below 2³² − 1): V8 enumerates these first, ascending. */
function isIndex(key: string): boolean {
  const c = key.charCodeAt(0);
  if (c < 48 || c > 57) return false;
  if (key.length > 1 && c === 48) return false;
  if (!/^\d{1,10}$/.test(key)) return false;
  return Number(key) < 4294967295;
}

/** One-shot `crypto.hash` (Node ≥ 20.12) skips the Hash object that `createHash` allocates. */
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;

/** The SHA-256 digest of a string (UTF-8), as 64 lowercase hex digits. */
export function sha256(text: string): string {
  return oneShot ? oneShot('sha256', text, 'hex') : crypto.createHash('sha256').update(text).digest('hex');
}
