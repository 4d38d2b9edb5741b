import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fixtureEpisodes, judgeEpisode, toJsonl, writeFixtureRun } from './__fixtures__/fixture-run.ts';
import { loadViewerRun, parseTracesJsonl } from './run-directory.ts';

const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'troupe-viewer-'));
  dirs.push(dir);
  return dir;
}
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

describe('parseTracesJsonl', () => {
  it('reads one episode per line and keeps each line verbatim', () => {
    const episodes = [
      judgeEpisode({ index: 0, rollout: 0, solved: true, start: 0 }),
      judgeEpisode({ index: 0, rollout: 1, solved: false, start: 0 }),
    ];
    const text = toJsonl(episodes);
    const parsed = parseTracesJsonl({ text });
    expect(parsed.warnings).toEqual([]);
    expect(parsed.episodes.map((e) => e.record.id)).toEqual(['judge-0-0', 'judge-0-1']);
    expect(parsed.episodes[0]!.json).toBe(text.split('\n')[0]);
    expect(parsed.episodes[1]!.record.traces.map((t) => t.agent.name)).toEqual(['solver', 'judge']);
  });

  it('skips a torn last line with a warning instead of failing', () => {
    const text = `${toJsonl([judgeEpisode({ index: 1, rollout: 0, solved: true, start: 0 })])}{"version":1,"id":"half`;
    const parsed = parseTracesJsonl({ text });
    expect(parsed.episodes).toHaveLength(1);
    expect(parsed.warnings).toHaveLength(1);
    expect(parsed.warnings[0]).toMatch(/torn last line \(line 2/);
  });

  it('skips an invalid line in the middle, naming the line and the field', () => {
    const good = toJsonl([judgeEpisode({ index: 2, rollout: 0, solved: true, start: 0 })]);
    const bad = JSON.stringify({ ...JSON.parse(good), id: 42 });
    const parsed = parseTracesJsonl({ text: `${bad}\nnot json\n${good}` });
    expect(parsed.episodes).toHaveLength(1);
    expect(parsed.warnings[0]).toMatch(/line 1: not an episode record: id:/);
    expect(parsed.warnings[1]).toMatch(/line 2: not valid JSON/);
  });

  it('ignores blank lines and CRLF line ends', () => {
    const line = toJsonl([judgeEpisode({ index: 3, rollout: 0, solved: true, start: 0 })]).trimEnd();
    const parsed = parseTracesJsonl({ text: `\n${line}\r\n\n` });
    expect(parsed.episodes).toHaveLength(1);
    expect(parsed.warnings).toEqual([]);
  });
});

describe('loadViewerRun', () => {
  it('reads traces.jsonl, config.json and summary.json of a run directory', async () => {
    const dir = await writeFixtureRun({ dir: await tempDir(), episodes: fixtureEpisodes(), tornTail: true });
    const run = await loadViewerRun({ runDir: dir });
    expect(run.episodes).toHaveLength(fixtureEpisodes().length);
    expect(run.config).toMatchObject({ model: 'qwen3-4b' });
    expect(run.summary).toMatchObject({ episodes: fixtureEpisodes().length });
    expect(run.warnings).toEqual([expect.stringMatching(/torn last line/)]);
  });

  it('treats config.json and summary.json as optional, and warns when one is not JSON', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'traces.jsonl'), toJsonl([judgeEpisode({ index: 0, rollout: 0, solved: true, start: 0 })]));
    await writeFile(join(dir, 'summary.json'), '{oops');
    const run = await loadViewerRun({ runDir: dir });
    expect(run.config).toBeNull();
    expect(run.summary).toBeNull();
    expect(run.warnings).toEqual([expect.stringMatching(/^summary\.json: not valid JSON/)]);
  });

  it('fails with a ConfigError naming runDir when there is no traces.jsonl', async () => {
    const dir = await tempDir();
    await expect(loadViewerRun({ runDir: dir })).rejects.toMatchObject({
      name: 'ConfigError',
      message: expect.stringMatching(/^runDir: .* has no traces\.jsonl/),
    });
  });
});
