import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeEpisode, makeTrace } from '../algorithms/__fixtures__/episodes.ts';
import { assignAdvantages } from '../algorithms/assign-advantages.ts';
import { episodesToSamples } from '../samples/trace-to-samples.ts';
import { FilesystemRolloutSender, readRollouts, rolloutRankPath } from './filesystem.ts';
import { encodeMicroBatches, type WireMicroBatch, type WireSample } from './micro-batch.ts';
import { prepareBatch } from './prepare-batch.ts';
import { sampleExportPath, writeSampleExport } from './sample-export.ts';
import { toWireSample } from './wire-sample.ts';

const PYTHON = '/usr/bin/python3';
const CHECKER = resolve(import.meta.dirname, '../../../../tooling/wire-check/check_rollouts.py');
const hasMsgpack = spawnSync(PYTHON, ['-c', 'import msgpack'], { stdio: 'ignore' }).status === 0;
if (!hasMsgpack) {
  console.warn(`wire-check: skipped, ${PYTHON} lacks msgpack (apt-get install -y python3-msgpack)`);
}

function check(dir: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(PYTHON, [CHECKER, dir, ...args], { encoding: 'utf8' });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** A step of samples shaped like self-play rollouts: a prompt, a sampled reply, two envs, varied lengths. */
function stepSamples(step: number, count: number): WireSample[] {
  return Array.from({ length: count }, (_, i) => {
    const length = 5 + ((i * 13 + step * 7) % 60);
    const prompt = Math.max(1, Math.floor(length * 0.6));
    const trainable = i % 5 !== 0;
    return {
      tokenIds: Array.from({ length }, (_, t) => 2 + ((i + t) % 97)),
      mask: Array.from({ length }, (_, t) => trainable && t >= prompt),
      logprobs: Array.from({ length }, (_, t) => (t >= prompt ? -0.1 - (t % 3) * 0.2 : 0)),
      temperatures: Array.from({ length }, (_, t) => (t >= prompt ? 0.8 : 1)),
      envName: i % 2 === 0 ? 'kuhn-poker' : 'proposer-solver',
      advantages: Array.from({ length }, (_, t) => (trainable && t >= prompt ? (i % 3) - 1 + 0.25 : 0)),
    };
  });
}

describe.skipIf(!hasMsgpack)('wire check (prime-rl layout, checked by Python msgpack)', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'troupe-wire-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('accepts every rank file our packer wrote over three 1-indexed steps', async () => {
    const sender = new FilesystemRolloutSender({ outputDir: dir, dataWorldSize: 2 });
    for (const step of [1, 2, 3]) {
      const microBatches = prepareBatch({ samples: stepSamples(step, 40), seqLen: 128, dataWorldSize: 2, padToMultipleOf: 8 });
      await sender.send({ step, microBatches });
    }
    expect((await readdir(join(dir, 'rollouts', 'step_1'))).sort()).toEqual(['rank_0.bin', 'rank_1.bin']);
    const result = check(dir, ['--seq-len', '128', '--pad-to-multiple-of', '8', '--world-size', '2']);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^step_1: 2 ranks x \d+ micro batches$/m);
    expect(result.stdout).toMatch(/ok: steps=3 micro_batches=\d+ tokens=\d+ trained_tokens=\d+ samples=120 exports_checked=0\n$/);
    // Our own reader decodes the same files.
    const rank1 = await readRollouts({ outputDir: dir, step: 3, rank: 1 });
    expect(rank1.length).toBeGreaterThan(0);
  });

  it('accepts truncated samples (none longer than seqLen) and a zero-loss filler', async () => {
    const samples = stepSamples(1, 3).map((s, i) => (i === 0 ? { ...s, tokenIds: [...s.tokenIds, ...s.tokenIds] } : s));
    const fixed = samples.map((s) => ({
      ...s,
      mask: s.tokenIds.map((_, t) => s.mask[t] ?? true),
      logprobs: s.tokenIds.map((_, t) => s.logprobs[t] ?? -1),
      advantages: s.tokenIds.map((_, t) => ((s.mask[t] ?? true) ? 0.5 : 0)),
      temperatures: 1,
    }));
    await new FilesystemRolloutSender({ outputDir: dir, dataWorldSize: 4 }).send({
      step: 1,
      microBatches: prepareBatch({ samples: fixed, seqLen: 16, dataWorldSize: 4 }),
    });
    const result = check(dir, ['--seq-len', '16', '--world-size', '4']);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('fails a run whose ranks differ in micro batches, whose mask covers padding, or whose sample exceeds seqLen', async () => {
    const grid = prepareBatch({ samples: stepSamples(1, 20), seqLen: 64, dataWorldSize: 2, padToMultipleOf: 8 });
    await new FilesystemRolloutSender({ outputDir: dir, dataWorldSize: 2 }).send({ step: 1, microBatches: grid });
    // Rank 1 loses a micro batch.
    await writeFile(rolloutRankPath({ outputDir: dir, step: 1, rank: 1 }), encodeMicroBatches(grid[1]!.slice(1)));
    let result = check(dir, []);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/ranks hold different numbers of micro batches/);

    // The mask covers a padding token.
    const padded = grid[0]!.find((batch) => batch.positionIds.at(-1) !== batch.sequenceLengths.at(-1)! - 1)!;
    expect(padded).toBeDefined();
    const broken = { ...padded, lossMask: padded.lossMask.map((bit, t) => bit || t === padded.lossMask.length - 1) };
    await writeFile(rolloutRankPath({ outputDir: dir, step: 1, rank: 1 }), encodeMicroBatches(grid[1]!));
    await writeFile(
      rolloutRankPath({ outputDir: dir, step: 1, rank: 0 }),
      encodeMicroBatches(grid[0]!.map((b) => (b === padded ? broken : b))),
    );
    result = check(dir, []);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/loss_mask true on padding/);

    // A sample longer than the seqLen the checker is told.
    await writeFile(rolloutRankPath({ outputDir: dir, step: 1, rank: 0 }), encodeMicroBatches(grid[0]!));
    result = check(dir, ['--seq-len', '8']);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/more than seq_len 8/);
  });

  it('names each broken invariant: list lengths, length sums, positions, env names per sample, the reserved "all"', async () => {
    const grid = prepareBatch({ samples: stepSamples(2, 12), seqLen: 64, dataWorldSize: 1 });
    const victim = grid[0]!.findIndex((batch) => batch.sequenceLengths.length >= 2);
    expect(victim).toBeGreaterThanOrEqual(0);
    const base = grid[0]![victim]!;
    const second = base.sequenceLengths[0]!;
    const breaks: [string, WireMicroBatch, RegExp][] = [
      ['short list', { ...base, advantages: base.advantages.slice(1) }, /\.advantages: \d+ entries, input_ids has \d+/],
      [
        'sum',
        { ...base, sequenceLengths: base.sequenceLengths.map((n, i) => (i === 0 ? n - 1 : n)) },
        /\.sequence_lengths: sums to \d+/,
      ],
      ['seq_lens sum', { ...base, seqLens: [...base.seqLens, 1] }, /\.seq_lens: sums to \d+/],
      [
        'positions',
        { ...base, positionIds: base.positionIds.map((p, t) => (t === second ? p + 1 : p)) },
        /sample 1 starts at position 1, not 0/,
      ],
      [
        'env per sample',
        { ...base, envNames: base.envNames.map((name, t) => (t === second + 1 ? 'other-env' : name)) },
        /sample 1 env names \[.*'other-env'.*\] \(one non-empty name per sample\)/,
      ],
      ['all', { ...base, envNames: base.envNames.map(() => 'all') }, /'all' is reserved/],
    ];
    for (const [name, broken, message] of breaks) {
      const sender = new FilesystemRolloutSender({ outputDir: dir, dataWorldSize: 1 });
      const payload = encodeMicroBatches(grid[0]!.map((batch, index) => (index === victim ? broken : batch)));
      await sender.sendPayloads({ step: 1, payloads: [payload] });
      await sender.sendPayloads({ step: 2, payloads: [encodeMicroBatches(grid[0]!)] });
      const result = check(dir, []);
      expect(result.status, name).toBe(1);
      expect(result.stderr, name).toMatch(new RegExp(`step_1/rank_0\\[${victim}\\]`));
      expect(result.stderr, name).toMatch(message);
      expect(result.stderr, name).not.toMatch(/step_2/);
    }
  });

  it('matches the step troupe exported (troupe.batch v2): trainable traces only, masks on sampled tokens, temperatures', async () => {
    // Self-play episodes: two trainable seats with two turns each, an untrainable judge, and one errored seat.
    const episodes = Array.from({ length: 6 }, (_, e) => {
      const seat = (role: string, reward: number, ok = true) =>
        makeTrace({
          role,
          reward,
          ok,
          turns: [
            { prompt: [1, 2 + e, 3], completion: [10 + e, 11], logprobs: [-0.5, -0.25] },
            { prompt: [4], completion: [12 + (e % 3)], logprobs: [-0.125] },
          ],
        });
      const traces = [seat('player0', e % 2 ? 1 : -1), seat('player1', e % 2 ? -1 : 1, e !== 3)];
      for (const trace of traces) if (trace.ok) assignAdvantages(trace, trace.reward / 2);
      traces.push(makeTrace({ role: 'judge', trainable: false, turns: [{ prompt: [7, 7], completion: [8] }] }));
      return makeEpisode({ traces, env: 'kuhn-poker' });
    });
    const troupeSamples = episodesToSamples({ episodes });
    expect(troupeSamples.map((sample) => sample.role).sort()).toEqual([...Array(6).fill('player0'), ...Array(5).fill('player1')]);
    const samples = troupeSamples.map((sample) => toWireSample(sample, { temperatures: 0.9 }));
    // Where RolloutLink's exportSamples writes it, so the checker finds it by itself.
    await writeSampleExport({ path: sampleExportPath({ outputDir: dir, step: 1 }), samples, step: 1 });
    const microBatches = prepareBatch({ samples, seqLen: 16, dataWorldSize: 2, padToMultipleOf: 4 });
    await new FilesystemRolloutSender({ outputDir: dir, dataWorldSize: 2 }).send({ step: 1, microBatches });
    const ok = check(dir, ['--seq-len', '16', '--world-size', '2']);
    expect(ok.stderr).toBe('');
    expect(ok.status).toBe(0);
    expect(ok.stdout).toMatch(/exports_checked=1/);

    const exportWith = async (name: string, variant: WireSample[]) => {
      const path = join(dir, name);
      await writeSampleExport({ path, samples: variant, step: 1 });
      return check(dir, ['--seq-len', '16', '--samples', `1=${path}`]);
    };
    // An export that also holds the judge's trace does not match: the judge never reaches the wire.
    const judge = episodes[0]!.traces[2]!;
    const extra = await exportWith('with-judge.jsonl', [
      ...samples,
      {
        ...samples[0]!,
        tokenIds: [7, 7, 8],
        mask: [false, false, true],
        logprobs: [0, 0, -0.5],
        advantages: [0, 0, 1],
        provenance: { role: 'judge', traceId: judge.id, episodeId: 'e0', branch: 0 },
      },
    ]);
    expect(extra.status).toBe(1);
    expect(extra.stderr).toMatch(new RegExp(`line 13 \\(role judge, trace ${judge.id}\\) is not in the rank files`));

    // A mask moved off the sampled tokens is caught too.
    const moved = await exportWith(
      'moved.jsonl',
      samples.map((sample, i) => (i === 2 ? { ...sample, mask: sample.mask.map((bit, t) => (t === 0 ? true : bit)) } : sample)),
    );
    expect(moved.status).toBe(1);
    expect(moved.stderr).toMatch(/line 4 \(role player0, trace .*\) is not in the rank files as exported/);
    expect(moved.stderr).toMatch(/a packed sample of \d+ tokens with trained tokens is not in/);

    // So is a temperature the trainer would divide by that is not the one the tokens were sampled at.
    const hotter = await exportWith(
      'hotter.jsonl',
      samples.map((sample, i) => (i === 5 ? { ...sample, temperatures: 1.2 } : sample)),
    );
    expect(hotter.status).toBe(1);
    expect(hotter.stderr).toMatch(/line 7 \(role player\d, trace .*\) is not in the rank files as exported/);
  });

  it("accepts upstream's padding: positions restart inside the last sample, rl_weights 0 on padding", async () => {
    // prime-rl's pad_micro_batch (`src/prime_rl/trainer/batch.py:692-737` at 559b447): padding is
    // appended to the last sample (its sequence_lengths / seq_lens grow), with positions
    // 0, 1, … of its own, token 1, mask false, advantage 0, temperature 1, env name "", every
    // weight stream 0. A last sample of one token gives positions [0, 0, 1, 2].
    const upstreamPadded = (lengths: number[], padTo: number): WireMicroBatch => {
      const batch: WireMicroBatch = {
        inputIds: [],
        lossMask: [],
        advantages: [],
        inferenceLogprobs: [],
        positionIds: [],
        sequenceLengths: [...lengths],
        temperatures: [],
        envNames: [],
        seqLens: [...lengths],
        rlWeights: [],
      };
      for (const length of lengths)
        for (let t = 0; t < length; t++) {
          batch.inputIds.push(3 + t);
          batch.lossMask.push(t > 0);
          batch.advantages.push(t > 0 ? 0.5 : 0);
          batch.inferenceLogprobs.push(t > 0 ? -0.25 : 0);
          batch.positionIds.push(t);
          batch.temperatures.push(1);
          batch.envNames.push('kuhn-poker');
          batch.rlWeights?.push(1);
        }
      const pad = (padTo - (batch.inputIds.length % padTo)) % padTo;
      for (let t = 0; t < pad; t++) {
        batch.inputIds.push(1);
        batch.lossMask.push(false);
        batch.advantages.push(0);
        batch.inferenceLogprobs.push(0);
        batch.positionIds.push(t);
        batch.temperatures.push(1);
        batch.envNames.push('');
        batch.rlWeights?.push(0);
      }
      (batch.sequenceLengths[lengths.length - 1] as number) += pad;
      (batch.seqLens[lengths.length - 1] as number) += pad;
      return batch;
    };
    const cases = [[3, 2], [2, 1], [1], [1, 1, 1], [5]];
    cases.forEach((lengths, i) => {
      const batch = upstreamPadded(lengths, 4);
      if (i === 1) expect(batch.positionIds).toEqual([0, 1, 0, 0]);
      if (i === 2) expect(batch.positionIds).toEqual([0, 0, 1, 2]);
    });
    const sender = new FilesystemRolloutSender({ outputDir: dir, dataWorldSize: 1 });
    for (const [i, lengths] of cases.entries()) await sender.send({ step: i + 1, microBatches: [[upstreamPadded(lengths, 4)]] });
    const result = check(dir, ['--seq-len', '8', '--pad-to-multiple-of', '4', '--world-size', '1']);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('fails a step numbered from 0 and a leftover temporary file', async () => {
    const grid = prepareBatch({ samples: stepSamples(1, 4), seqLen: 64, dataWorldSize: 1 });
    await new FilesystemRolloutSender({ outputDir: dir, dataWorldSize: 1 }).send({ step: 0, microBatches: grid });
    await writeFile(join(dir, 'rollouts', 'step_0', 'rank_0.bin.tmp'), '');
    const result = check(dir, []);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/1-indexed/);
    expect(result.stderr).toMatch(/temporary files left behind/);
  });
});

it('the checker is plain Python 3 that at least parses', () => {
  execFileSync(PYTHON, ['-c', 'import ast, sys; ast.parse(open(sys.argv[1]).read())', CHECKER]);
});
