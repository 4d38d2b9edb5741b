import { appendFile, mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fixtureEpisodes, judgeEpisode, toJsonl, writeFixtureRun } from './__fixtures__/fixture-run.ts';
import { type ServedRun, serveRun } from './serve-run.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function servedFixture(): Promise<{ served: ServedRun; dir: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'troupe-serve-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  await writeFixtureRun({ dir, episodes: fixtureEpisodes() });
  const served = await serveRun({ runDir: dir });
  cleanups.push(() => served.close());
  return { served, dir };
}

/** A raw GET with a chosen Host header (fetch does not let us set it). */
function get(url: string, host?: string): Promise<{ status: number; body: string; type: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: host ? { host } : {} }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, type: String(res.headers['content-type']) }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('serveRun', () => {
  it('serves the page on a loopback URL with the index embedded and episodes left to fetch', async () => {
    const { served } = await servedFixture();
    expect(served.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const page = await get(served.url);
    expect(page.status).toBe(200);
    expect(page.type).toMatch(/^text\/html/);
    expect(page.body).toContain('id="troupe-index"');
    expect(page.body).not.toContain('id="chunk-0"');
  });

  it('serves one episode record by id, and 404 for an unknown id', async () => {
    const { served } = await servedFixture();
    const episode = await get(`${served.url}api/episodes/${encodeURIComponent('judge-1-2')}`);
    expect(episode.status).toBe(200);
    expect(JSON.parse(episode.body)).toMatchObject({
      id: 'judge-1-2',
      traces: [{ agent: { name: 'solver' } }, { agent: { name: 'judge' } }],
    });
    const missing = await get(`${served.url}api/episodes/nope`);
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.body)).toEqual({ error: 'no episode nope in this run' });
  });

  it('re-reads traces.jsonl when it grows (a run still being written)', async () => {
    const { served, dir } = await servedFixture();
    const before = JSON.parse((await get(`${served.url}api/index.json`)).body) as { episodes: unknown[] };
    await appendFile(join(dir, 'traces.jsonl'), toJsonl([judgeEpisode({ index: 9, rollout: 0, solved: true, start: 0 })]));
    const after = JSON.parse((await get(`${served.url}api/index.json`)).body) as { episodes: { id: string }[] };
    expect(after.episodes).toHaveLength(before.episodes.length + 1);
    expect(after.episodes.at(-1)!.id).toBe('judge-9-0');
    expect((await get(`${served.url}api/episodes/judge-9-0`)).status).toBe(200);
  });

  it('refuses requests whose Host is not loopback (DNS rebinding)', async () => {
    const { served } = await servedFixture();
    const port = new URL(served.url).port;
    expect((await get(served.url, `evil.example:${port}`)).status).toBe(403);
    expect((await get(served.url, `localhost:${port}`)).status).toBe(200);
  });

  it('binds loopback only: any other host is a config error naming the field', async () => {
    await expect(serveRun({ runDir: '/nowhere', host: '0.0.0.0' as never })).rejects.toThrow(/host must be a loopback address/);
  });

  it('stops listening on close', async () => {
    const { served } = await servedFixture();
    await served.close();
    cleanups.pop();
    await expect(get(served.url)).rejects.toThrow(/ECONNREFUSED/);
  });
});
