import { ParseError } from '../../../errors/troupe-error.ts';

/**
 * Characters a verdict may not contain anywhere (raw or `\u`-escaped): a BOM, no-break and other
 * odd spaces, zero-width characters, bidi controls, soft hyphen, and control characters other
 * than tab, newline and carriage return. They let a verdict look like one answer and be another.
 */
const INVISIBLE_RANGES: readonly (readonly [number, number])[] = [
  [0x00, 0x08],
  [0x0b, 0x0c],
  [0x0e, 0x1f],
  [0x7f, 0x9f],
  [0xa0, 0xa0],
  [0xad, 0xad],
  [0x34f, 0x34f],
  [0x61c, 0x61c],
  [0x115f, 0x1160],
  [0x1680, 0x1680],
  [0x180e, 0x180e],
  [0x2000, 0x200f],
  [0x2028, 0x202f],
  [0x205f, 0x206f],
  [0x3000, 0x3000],
  [0x3164, 0x3164],
  [0xfe00, 0xfe0f],
  [0xfeff, 0xfeff],
  [0xffa0, 0xffa0],
  [0xfff9, 0xfffb],
  [0xe0000, 0xe007f],
];

/** The first invisible character of `text` as `U+XXXX`, or undefined. */
export function findInvisible(text: string): string | undefined {
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    if (INVISIBLE_RANGES.some(([low, high]) => code >= low && code <= high)) {
      return `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
    }
  }
  return undefined;
}

/**
 * `JSON.parse` that also refuses what it silently accepts: an object naming the same key twice
 * (`JSON.parse` keeps the last, so `"verdict":"no","verdict":"yes"` reads as yes) and any
 * invisible character ({@link findInvisible}) in the text or in a decoded string. Errors are
 * `ParseError`s naming what was refused.
 */
export function parseStrictJson(text: string, what: string): unknown {
  const raw = findInvisible(text);
  if (raw) throw new ParseError(`${what} contains an invisible character (${raw}); write plain text`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ParseError(`${what} is not JSON: ${(error as Error).message}`);
  }
  checkDuplicateKeys(text, what);
  checkStrings(value, what);
  return value;
}

function checkStrings(value: unknown, what: string): void {
  if (typeof value === 'string') {
    const found = findInvisible(value);
    if (found) throw new ParseError(`${what} contains an invisible character (${found}, escaped); write plain text`);
  } else if (Array.isArray(value)) {
    for (const item of value) checkStrings(item, what);
  } else if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      checkStrings(key, what);
      checkStrings(item, what);
    }
  }
}

/**
 * Walks text already known to be valid JSON and throws on an object with a repeated key
 * (compared after decoding escapes, so `"verdict"` and `"\u0076erdict"` are the same key).
 */
function checkDuplicateKeys(text: string, what: string): void {
  let i = 0;
  const skipSpace = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i] as string)) i++;
  };
  const readString = (): string => {
    const start = i;
    i++; // opening quote
    while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const readValue = (path: string): void => {
    skipSpace();
    const c = text[i];
    if (c === '{') {
      i++;
      const keys = new Set<string>();
      skipSpace();
      if (text[i] === '}') {
        i++;
        return;
      }
      for (;;) {
        skipSpace();
        const key = readString();
        if (keys.has(key))
          throw new ParseError(`${what} names the key ${JSON.stringify(key)} twice in ${path || 'the top object'}`);
        keys.add(key);
        skipSpace();
        i++; // colon
        readValue(`${path}.${key}`);
        skipSpace();
        if (text[i++] === '}') return;
      }
    }
    if (c === '[') {
      i++;
      skipSpace();
      if (text[i] === ']') {
        i++;
        return;
      }
      for (let index = 0; ; index++) {
        readValue(`${path}[${index}]`);
        skipSpace();
        if (text[i++] === ']') return;
      }
    }
    if (c === '"') {
      readString();
      return;
    }
    while (i < text.length && !',]} \t\n\r'.includes(text[i] as string)) i++;
  };
  readValue('');
}
