import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { loadViewerRun, writeHtmlReport } from '@troupe/viewer';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from './default-config.ts';
import { train } from './run.ts';
import { applySet, readRunConfigFile } from './run-config.ts';

// A training run's episodes in `troupe view` (issue 17 item 10): with `traces_every`, the
// orchestrator appends each step's scored episodes to <out>/traces.jsonl; every model call names
// the policy version that served it, and the sampled tokens carry their advantages.

const CHROMIUM = '/usr/bin/chromium';
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('training traces for the viewer', () => {
  it('writes each step’s episodes with the policy version of every call and the advantages; the report shows the version', async () => {
    const out = await mkdtemp(join(tmpdir(), 'troupe-train-traces-'));
    dirs.push(out);
    const config = await readRunConfigFile(DEFAULT_CONFIG);
    for (const set of [
      'max_steps=2',
      'groups_per_step=2',
      'max_async=0', // on-policy: step 1 plays version 0, step 2 version 1
      'checkpoint_every=0',
      'traces_every=1',
      'train.source.0.group_size=2',
      'trainer.worker_thread=false',
      'policy.d_model=8',
      'policy.heads=2',
      'policy.ffn_mult=1',
    ])
      applySet(config, set);
    await train({ config, out });

    const run = await loadViewerRun({ runDir: out });
    expect(run.warnings).toEqual([]);
    // 2 steps × 2 groups × 2 episodes, in step order.
    expect(run.episodes).toHaveLength(8);
    const episodes = run.episodes.map((e) => e.record);
    const versions = episodes.map((episode) => [
      ...new Set(episode.traces.flatMap((trace) => trace.calls.map((call) => call.policyVersion))),
    ]);
    expect(versions).toEqual([[0], [0], [0], [0], [1], [1], [1], [1]]);
    const sampled = episodes.flatMap((e) => e.traces.flatMap((t) => t.nodes.filter((n) => n.sampled && n.tokenIds)));
    expect(sampled.length).toBeGreaterThan(0);
    // The built-in algorithms give each sampled node one value (`advantage`), read for all its sampled tokens.
    for (const node of sampled) expect(typeof node.advantage).toBe('number');
    expect(sampled.some((node) => node.advantage !== 0)).toBe(true);

    // The static report of the training run, rendered by real Chromium: a step-2 call reads "policy v1".
    if (!existsSync(CHROMIUM)) return;
    const outFile = join(out, 'report.html');
    await writeHtmlReport({ runDir: out, outFile });
    const episode = episodes[7]?.id as string;
    const { stdout } = await promisify(execFile)(
      CHROMIUM,
      [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        `--user-data-dir=${join(out, 'chromium-profile')}`,
        '--virtual-time-budget=10000',
        '--dump-dom',
        `${pathToFileURL(outFile).href}#episode=${episode}`,
      ],
      { maxBuffer: 64 * 1024 * 1024, timeout: 120_000 },
    );
    expect(stdout).toContain(`data-episode="${episode}"`);
    expect(stdout).toContain('policy v1');
    expect(stdout).not.toContain('policy v0');
  }, 300_000);
});
