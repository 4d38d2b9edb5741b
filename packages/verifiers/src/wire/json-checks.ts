/**
 * Small checks of parsed JSON values, each matching what the zod type it names accepts
 * (`z.string().nullish()`, `z.number().int().positive().nullish()`, …): the pieces of the quick
 * body checks that spare a zod parse on the interception hot path.
 */

/** A JSON object's fields. */
export type Json = Record<string, unknown>;

/** `z.looseObject(…)`'s first test: an object that is not null or an array. */
export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** What `z.record` accepts: an object whose prototype is `Object.prototype` or null. */
export function isPlainObject(value: unknown): value is Json {
  if (!isObject(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** `null` or `undefined`. */
export const isNullish = (value: unknown): boolean => value === null || value === undefined;
/** `z.number()`: a finite number. */
export const isNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);
/** `z.string().nullish()`. */
export const nullishString = (value: unknown): boolean => isNullish(value) || typeof value === 'string';
/** `z.boolean().nullish()`. */
export const nullishBoolean = (value: unknown): boolean => isNullish(value) || typeof value === 'boolean';
/** `z.number().int().nullish()` (a safe integer). */
export const nullishInt = (value: unknown): boolean => isNullish(value) || Number.isSafeInteger(value);
/** `z.number().int().positive().nullish()`. */
export const nullishPositiveInt = (value: unknown): boolean =>
  isNullish(value) || (Number.isSafeInteger(value) && (value as number) > 0);
/** `z.number().int().nonnegative().nullish()`. */
export const nullishCount = (value: unknown): boolean =>
  isNullish(value) || (Number.isSafeInteger(value) && (value as number) >= 0);

/** `z.array(z.string())`. */
export function isStringArray(value: unknown): boolean {
  if (!Array.isArray(value)) return false;
  for (const item of value) if (typeof item !== 'string') return false;
  return true;
}

/** `z.array(z.looseObject({ type: z.string() }))`: objects each with a string `type`. */
export function isTypedArray(value: unknown): boolean {
  if (!Array.isArray(value)) return false;
  for (const item of value) if (!isObject(item) || typeof item.type !== 'string') return false;
  return true;
}

/** `z.union([z.string(), z.array(z.looseObject({ type: z.string() }))])`: text, or typed blocks. */
export const isTextOrTyped = (value: unknown): boolean => typeof value === 'string' || isTypedArray(value);
