import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFixtureRun } from './__fixtures__/fixture-run.ts';
import { comparedRuns } from './__fixtures__/training-run.ts';
import type { ComparePageData } from './render-compare-html.ts';
import { viewCommand } from './view-command.ts';

function jsonScript<T>(html: string, id: string): T {
  const match = new RegExp(`<script type="application/json" id="${id}">(.*?)</script>`, 's').exec(html);
  if (!match) throw new Error(`no script ${id}`);
  return JSON.parse(match[1]!) as T;
}

describe('troupe view', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'troupe-view-command-'));
    const { a, b } = comparedRuns();
    await writeFixtureRun({ dir: join(dir, 'runs', 'a'), episodes: a });
    await writeFixtureRun({ dir: join(dir, 'runs', 'b'), episodes: b });
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const view = (args: string[]) => viewCommand({ args, help: 'HELP' });

  it('writes two runs compared as one static page with both runs’ episodes embedded', async () => {
    const outFile = join(dir, 'out', 'compare.html');
    expect(await view([join(dir, 'runs', 'a'), join(dir, 'runs', 'b'), '--html', outFile])).toBe(0);
    const html = await readFile(outFile, 'utf8');
    const data = jsonScript<ComparePageData>(html, 'troupe-compare');
    expect([data.a.name, data.b.name]).toEqual(['a', 'b']);
    expect(data.a.mode).toMatchObject({ episodes: 'embedded', chunkPrefix: 'a-', chunks: [6] });
    expect(data.b.mode).toMatchObject({ episodes: 'embedded', chunkPrefix: 'b-', chunks: [7] });
    expect(html).toContain('id="a-chunk-0"');
    expect(html).toContain('id="b-chunk-0"');
    expect(html).toContain("connect-src 'none'");
  });

  it('refuses what it cannot do, naming the fix', async () => {
    await expect(view([])).rejects.toThrow(/name a run directory/);
    await expect(view([join(dir, 'runs'), '--html', join(dir, 'x.html')])).rejects.toThrow(
      /folder of runs .*--html takes one run directory, or two/,
    );
    await expect(view([join(dir, 'runs', 'a'), join(dir, 'runs', 'b')])).rejects.toThrow(/needs --html FILE/);
    await expect(view([join(dir, 'runs', 'a'), join(dir, 'runs')])).rejects.toThrow(/has no traces.jsonl/);
    await expect(view([join(dir, 'nowhere')])).rejects.toThrow(/does not exist/);
    await expect(view(['a', 'b', 'c'])).rejects.toThrow(/got 3/);
  });
});
