import { randomFillSync } from 'node:crypto';

/** Random bytes for 256 UUIDs, refilled by one call when used up (`crypto.randomUUID` pools its entropy the same way). */
const pool = Buffer.alloc(16 * 256);
let offset = pool.length;
/** The 36 ASCII bytes of the UUID being written, decoded into one flat string. */
const text = Buffer.alloc(36);
/** ASCII codes of the two hex digits of each byte value. */
const HEX = Buffer.from(Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0')).join(''), 'latin1');
/** Where each of the 16 bytes' two digits go in `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`. */
const AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
text[8] = text[13] = text[18] = text[23] = 0x2d;

/**
 * A random (version 4) UUID, as `crypto.randomUUID()` makes: 122 random bits from the CSPRNG, in the
 * same lowercase form. Written as ASCII into a buffer and decoded once: `randomUUID` builds its string
 * from 20 pieces (≈600 bytes of intermediate strings per id, and the loop makes several ids per hand).
 */
export function randomUuid(): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  for (let i = 0; i < 16; i++) {
    let byte = pool[offset + i] as number;
    if (i === 6) byte = (byte & 0x0f) | 0x40;
    else if (i === 8) byte = (byte & 0x3f) | 0x80;
    const at = AT[i] as number;
    text[at] = HEX[2 * byte] as number;
    text[at + 1] = HEX[2 * byte + 1] as number;
  }
  offset += 16;
  return text.toString('latin1', 0, 36);
}
