import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { troupe } from '../../test/support/troupe-process.ts';
import type { ModelRequest } from '../model/model-client.ts';
import { ScriptedModelServer } from '../testing/scripted-model-server.ts';

// Issue 17 item 9 end to end: two `troupe eval` processes whose role runtime sets
// `maxConcurrent = 1, shared = "<scope>"` never have two sandboxes alive at once between them.
// Each episode's bash command prints the sandbox's clock before and after a one-second sleep;
// those windows lie inside the sandboxes' lives, so across both runs none may overlap.

const SLEEP = 'echo start $(date +%s%3N); sleep 1; echo end $(date +%s%3N)';

describe('shared creation limits across two troupe eval processes', () => {
  let server: ScriptedModelServer;
  beforeAll(async () => {
    server = await ScriptedModelServer.start({
      script: (request: ModelRequest) =>
        request.messages.some((m) => m.role === 'tool')
          ? 'done'
          : { toolCalls: [{ name: 'bash', arguments: { command: SLEEP } }] },
    });
  });
  afterAll(() => server.close());

  it('maxConcurrent = 1 with shared holds between the two runs: no two sandbox windows overlap', async () => {
    const root = mkdtempSync(join(tmpdir(), 'troupe-shared-eval-'));
    const runtime = JSON.stringify({
      id: 'local',
      maxConcurrent: 1,
      shared: 'eval-test',
      sharedLimitsDir: join(root, 'limits'),
      acquireTimeoutMs: 120_000,
    });
    const run = (name: string) =>
      troupe([
        'eval',
        '-m',
        'm',
        '-b',
        server.baseUrl,
        '-n',
        '3',
        '-c',
        '3',
        '--harness',
        'bash',
        '--set',
        `env.agent.runtime=${runtime}`,
        '--run-dir',
        join(root, name),
      ]);
    const results = await Promise.all([run('a'), run('b')]);
    for (const result of results) {
      expect(result.stderr).not.toMatch(/Error/);
      expect(result.code).toBe(0);
    }
    const windows: { run: string; start: number; end: number }[] = [];
    const firstEpisodeStart: Record<string, number> = {};
    for (const name of ['a', 'b']) {
      expect(readdirSync(join(root, name))).toContain('traces.jsonl');
      for (const line of readFileSync(join(root, name, 'traces.jsonl'), 'utf8')
        .trim()
        .split('\n')) {
        const episode = JSON.parse(line) as {
          startedAt: number;
          traces: { nodes: { message: { role: string; content: unknown } }[] }[];
        };
        firstEpisodeStart[name] = Math.min(firstEpisodeStart[name] ?? Number.POSITIVE_INFINITY, episode.startedAt);
        const text = episode.traces
          .flatMap((t) => t.nodes)
          .filter((n) => n.message.role === 'tool')
          .map((n) => JSON.stringify(n.message.content))
          .join(' ');
        const match = /start (\d+)[\s\S]*?end (\d+)/.exec(text);
        expect(match, `episode of run ${name} has no sandbox window: ${text.slice(0, 200)}`).not.toBeNull();
        windows.push({ run: name, start: Number(match?.[1]), end: Number(match?.[2]) });
      }
    }
    expect(windows).toHaveLength(6);
    windows.sort((x, y) => x.start - y.start);
    for (let i = 1; i < windows.length; i++) expect(windows[i]?.start).toBeGreaterThanOrEqual(windows[i - 1]?.end ?? 0);
    // The runs contended (else the test proved nothing): each had started an episode before the
    // other's last sandbox window ended.
    const lastEnd = (name: string) => Math.max(...windows.filter((w) => w.run === name).map((w) => w.end));
    expect(firstEpisodeStart.a).toBeLessThan(lastEnd('b'));
    expect(firstEpisodeStart.b).toBeLessThan(lastEnd('a'));
  }, 300_000);
});
