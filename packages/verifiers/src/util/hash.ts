import * as crypto from 'node:crypto';

/** JSON with sorted keys and `null` / `undefined` values dropped: the canonical form hashed for keys. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v === null || v === undefined) continue;
      out[key] = sortKeys(v);
    }
    return out;
  }
  return value;
}

/** One-shot `crypto.hash` (Node ≥ 20.12) skips the Hash object that `createHash` allocates. */
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;

/** The SHA-256 digest of a string (UTF-8), as 64 lowercase hex digits. */
export function sha256(text: string): string {
  return oneShot ? oneShot('sha256', text, 'hex') : crypto.createHash('sha256').update(text).digest('hex');
}
