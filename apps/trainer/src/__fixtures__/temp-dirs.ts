// Temporary folders of a test file, removed once its tests are done.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/** A maker of fresh folders `<tmpdir>/<prefix>XXXXXX`; every one it made is removed after the suite (it registers `afterAll`). */
export function tempDirs(prefix: string): () => Promise<string> {
  const made: string[] = [];
  afterAll(async () => {
    for (const dir of made.splice(0)) await rm(dir, { recursive: true, force: true });
  });
  return async () => {
    const dir = await mkdtemp(join(tmpdir(), prefix));
    made.push(dir);
    return dir;
  };
}
