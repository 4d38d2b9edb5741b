import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { exportCommand } from '../../src/cli/export-command.ts';
import { REJECTED_TRACES_FILE } from '../../src/eval/resume-file.ts';
import { readEpisodes } from '../../src/eval/traces-file.ts';
import { calculatorEval, insertHugeLine } from '../../src/testing/calculator-run.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Bytes of the hole: past V8's longest string (2^29 − 24) twice over, over 1 GiB in all. */
const HOLE_BYTES = 1100 * 1024 * 1024;

describe('hostile run files (CI size)', () => {
  it('a traces.jsonl over 1 GiB (a sparse 1.1 GiB line between episodes) is resumed and exported line by line', async () => {
    const outDir = mkdtempSync(join(tmpdir(), 'troupe-huge-traces-'));
    dirs.push(outDir);
    await calculatorEval(outDir);
    const tracesPath = join(outDir, 'traces.jsonl');
    insertHugeLine(tracesPath, HOLE_BYTES);
    expect(statSync(tracesPath).size).toBeGreaterThan(1024 * 1024 * 1024);

    const read = readEpisodes(tracesPath);
    expect(read.episodes).toHaveLength(4);
    expect(read.badLines).toHaveLength(1);
    expect(read.badLines[0]?.reason).toMatch(`line of ${HOLE_BYTES} bytes`);

    const exported = join(outDir, 'export.jsonl');
    expect(await exportCommand([outDir, '--format', 'chat', '--out', exported])).toBe(0);
    expect(readFileSync(exported, 'utf8').split('\n').filter(Boolean)).toHaveLength(4);

    const logs: string[] = [];
    const resumed = await calculatorEval(outDir, { resume: true, log: (l) => logs.push(l) });
    expect(resumed.kept).toBe(4);
    expect(resumed.ran).toBe(0);
    expect(logs.join('\n')).toMatch(/moving line 2 of traces.jsonl to traces.rejected.jsonl/);
    const [record] = readFileSync(join(outDir, REJECTED_TRACES_FILE), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(record).toMatchObject({ line: 2, bytes: HOLE_BYTES });
    expect(statSync(join(outDir, record.file)).size).toBe(HOLE_BYTES);
    expect(readEpisodes(tracesPath).episodes).toHaveLength(4);
    expect(statSync(tracesPath).size).toBeLessThan(1024 * 1024);
  });
});
