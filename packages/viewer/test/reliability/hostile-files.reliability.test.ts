import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { calculatorEval, insertHugeLine } from '@troupe/verifiers/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { loadViewerRun } from '../../src/run-directory.ts';

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
    insertHugeLine(tracesPath, HOLE_BYTES);
    expect(statSync(tracesPath).size).toBeGreaterThan(1024 * 1024 * 1024);

    const viewed = await loadViewerRun({ runDir: outDir });
    expect(viewed.episodes).toHaveLength(4);
    expect(viewed.warnings.join('\n')).toMatch(`line 2: ${HOLE_BYTES} bytes, longer than a viewer holds`);
  });
});
