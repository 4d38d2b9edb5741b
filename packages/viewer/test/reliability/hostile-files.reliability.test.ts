import {
  appendFileSync,
  closeSync,
  ftruncateSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadViewerRun } from '../../src/run-directory.ts';
import { calculatorEval } from '../support/calculator-eval.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Bytes of the hole: past V8's longest string (2^29 − 24) twice over, over 1 GiB in all. */
const HOLE_BYTES = 1100 * 1024 * 1024;

describe('the viewer on hostile run files (CI size)', () => {
  it('views a traces.jsonl over 1 GiB (a sparse 1.1 GiB line between episodes) line by line, naming the long line', async () => {
    const outDir = mkdtempSync(join(tmpdir(), 'troupe-viewer-huge-traces-'));
    dirs.push(outDir);
    await calculatorEval(outDir);
    const tracesPath = join(outDir, 'traces.jsonl');
    const [first, ...rest] = readFileSync(tracesPath, 'utf8').split('\n').filter(Boolean);
    // First episode, then a hole of NUL bytes as one line (sparse: no disk, written in a moment), then the rest.
    writeFileSync(tracesPath, `${first}\n`);
    const fd = openSync(tracesPath, 'r+');
    ftruncateSync(fd, statSync(tracesPath).size + HOLE_BYTES);
    closeSync(fd);
    appendFileSync(tracesPath, `\n${rest.join('\n')}\n`);
    expect(statSync(tracesPath).size).toBeGreaterThan(1024 * 1024 * 1024);

    const viewed = await loadViewerRun({ runDir: outDir });
    expect(viewed.episodes).toHaveLength(4);
    expect(viewed.warnings.join('\n')).toMatch(`line 2: ${HOLE_BYTES} bytes, longer than a viewer holds`);
  });
});
