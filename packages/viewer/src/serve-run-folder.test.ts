import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFixtureRun } from './__fixtures__/fixture-run.ts';
import { comparedRuns } from './__fixtures__/training-run.ts';
import type { ComparePageData } from './render-compare-html.ts';
import type { RunsPageData } from './render-runs-html.ts';
import { findRuns } from './run-folder.ts';
import type { ServedRun } from './serve-run.ts';
import { runHref, serveRunFolder } from './serve-run-folder.ts';

function get(url: string, host?: string): Promise<{ status: number; body: string; location?: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: host ? { host } : {} }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body, ...(res.headers.location ? { location: res.headers.location } : {}) }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

function jsonScript<T>(html: string, id: string): T {
  const match = new RegExp(`<script type="application/json" id="${id}">(.*?)</script>`, 's').exec(html);
  if (!match) throw new Error(`no script ${id}`);
  return JSON.parse(match[1]!) as T;
}

describe('a folder of runs', () => {
  let folder: string;
  let served: ServedRun;

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'troupe-folder-'));
    const { a, b } = comparedRuns();
    await writeFixtureRun({ dir: join(folder, 'baseline'), episodes: a });
    await writeFixtureRun({ dir: join(folder, 'sweep', 'tuned'), episodes: b });
    await mkdir(join(folder, '.hidden', 'run'), { recursive: true });
    await writeFile(join(folder, '.hidden', 'run', 'traces.jsonl'), '');
    await mkdir(join(folder, 'not-a-run'), { recursive: true });
    // baseline is older than sweep/tuned.
    const old = new Date(Date.UTC(2025, 0, 1));
    await utimes(join(folder, 'baseline', 'traces.jsonl'), old, old);
    served = await serveRunFolder({ folder });
  });

  afterAll(async () => {
    await served?.close();
    await rm(folder, { recursive: true, force: true });
  });

  it('finds run directories below the folder, newest first, skipping hidden folders', async () => {
    const runs = await findRuns({ folder });
    expect(runs.map((r) => r.name)).toEqual(['sweep/tuned', 'baseline']);
    expect(runs[1]!.runDir).toBe(join(folder, 'baseline'));
  });

  it('lists the runs on / with their per-role rewards, pass@1, tokens and cost', async () => {
    const page = await get(served.url);
    expect(page.status).toBe(200);
    const data = jsonScript<RunsPageData>(page.body, 'troupe-runs');
    expect(data.runs.map((r) => r.name)).toEqual(['sweep/tuned', 'baseline']);
    const baseline = data.runs[1]!;
    expect(baseline.episodes).toBe(6);
    expect(baseline.tasks).toBe(3);
    const solver = baseline.roles.find((r) => r.name === 'solver')!;
    expect(solver.rewardMean).toBeCloseTo(0.5);
    expect(solver.passAt1).toBeCloseTo(0.5);
    expect(baseline.tokens).toBeGreaterThan(0);
    expect(baseline.cost).toBeGreaterThan(0);
    const tuned = data.runs[0]!;
    expect(tuned.roles.find((r) => r.name === 'solver')!.rewardMean).toBeCloseTo(6 / 7);
    const json = JSON.parse((await get(`${served.url}api/runs.json`)).body) as RunsPageData['runs'];
    expect(json.map((r) => r.name)).toEqual(['sweep/tuned', 'baseline']);
  });

  it('serves each run under runs/<name>/ with its episodes, linking back to the list', async () => {
    const base = `${served.url}${runHref('sweep/tuned')}`;
    expect(base).toMatch(/\/runs\/sweep%2Ftuned\/$/);
    const page = await get(base);
    expect(page.status).toBe(200);
    expect(jsonScript(page.body, 'troupe-mode')).toEqual({ episodes: 'fetch', runs: '../../' });
    const episode = await get(`${base}api/episodes/b-3-0`);
    expect(episode.status).toBe(200);
    expect(JSON.parse(episode.body).task.key).toBe('sum-to-41');
    expect((await get(`${base}api/episodes/a-0-0`)).status).toBe(404);
    const redirect = await get(`${served.url}runs/baseline`);
    expect(redirect.status).toBe(301);
    expect(redirect.location).toBe('/runs/baseline/');
    expect((await get(`${served.url}runs/nope/`)).status).toBe(404);
    expect((await get(`${served.url}runs/..%2F..%2Fetc/`)).status).toBe(404);
  });

  it('compares two runs on compare?a=&b=, fetching each run’s episodes from its own base', async () => {
    const page = await get(`${served.url}compare?a=baseline&b=${encodeURIComponent('sweep/tuned')}`);
    expect(page.status).toBe(200);
    const data = jsonScript<ComparePageData>(page.body, 'troupe-compare');
    expect(data.a.name).toBe('baseline');
    expect(data.b.name).toBe('tuned');
    expect(data.a.mode).toEqual({ episodes: 'fetch', base: 'runs/baseline/' });
    expect(data.b.mode).toEqual({ episodes: 'fetch', base: 'runs/sweep%2Ftuned/' });
    expect(data.a.index.episodes.map((e) => e.id)).toContain('a-2-1');
    expect(page.body).toContain("connect-src 'self'");
    const missing = await get(`${served.url}compare?a=baseline&b=nope`);
    expect(missing.status).toBe(404);
    expect(missing.body).toContain('"nope"');
  });

  it('answers loopback Host headers only', async () => {
    expect((await get(served.url, 'evil.example:80')).status).toBe(403);
  });

  it('refuses a folder that holds no run', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'troupe-empty-'));
    try {
      await expect(serveRunFolder({ folder: empty })).rejects.toThrow(/holds no run directory/);
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });
});
