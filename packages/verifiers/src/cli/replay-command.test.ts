import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { troupe } from '../../test/support/troupe-process.ts';
import { ScriptedModelServer } from '../testing/scripted-model-server.ts';

const root = resolve(import.meta.dirname, '../../../..');
const _cli = join(root, 'packages/verifiers/src/cli/main.ts');

describe('troupe replay', () => {
  let server: ScriptedModelServer;
  let judgeCalls = 0;
  let agentCalls = 0;
  beforeAll(async () => {
    server = await ScriptedModelServer.start({
      script: (request) => {
        const text = JSON.stringify(request.messages);
        if (text.includes('# Criteria')) {
          // `right` is always yes; `terse` wavers: yes, yes, no, yes, yes, no, …
          const terse = judgeCalls++ % 3 === 2 ? 'no' : 'yes';
          return {
            content: `{"verdicts": [{"name": "right", "reason": "r", "verdict": "yes"}, {"name": "terse", "reason": "r", "verdict": "${terse}"}]}`,
            usage: { promptTokens: 100, completionTokens: 10, cost: 0.001 },
          };
        }
        agentCalls++;
        const expression = String(request.messages.at(-1)?.content).match(/What is (.*)\?/)?.[1] ?? '0';
        return `The answer is ${Function(`return (${expression})`)()}`;
      },
    });
  });
  afterAll(() => server.close());

  it('re-scores saved traces K times with added judges, without re-running agents, into a new run naming its source', async () => {
    const outputs = mkdtempSync(join(tmpdir(), 'troupe-replay-'));
    const run = await troupe(['eval', '-m', 'm', '-b', server.baseUrl, '-n', '3', '--harness', 'null', '-o', outputs]);
    expect(run.code).toBe(0);
    const [runName] = readdirSync(outputs);
    const source = join(outputs, runName as string);
    const sourceTraces = readFileSync(join(source, 'traces.jsonl'), 'utf8');
    expect(agentCalls).toBe(3);

    const replayConfig = join(outputs, 'replay.toml');
    writeFileSync(
      replayConfig,
      `[[env.agent.rewards]]\njudge = "rubric"\nname = "style"\nweight = 0.5\ncriteria = [{ name = "right", text = "Correct." }, { name = "terse", text = "Short." }]\n\n[prices.m]\ninput = 1\noutput = 1\n`,
    );
    const out = join(outputs, 'replayed');
    const replay = await troupe(['replay', source, '-f', replayConfig, '--num-rescores', '3', '-o', out, '-b', server.baseUrl]);
    expect(replay.stderr).toBe('');
    expect(replay.code).toBe(0);
    expect(agentCalls).toBe(3); // no agent ran again
    expect(judgeCalls).toBe(9); // 3 traces × 3 rescores, one call each

    const config = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
    expect(config.replay).toEqual({ source: resolve(source), numRescores: 3 });
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    expect(summary.replay).toMatchObject({ numRescores: 3, rescored: 3, copied: 0 });
    const { criteria } = summary.replay;
    // The taskset's own `correct` is re-scored too (deterministic: agreement 1, spread 0).
    expect(criteria.correct).toEqual({ traces: 3, mean: 1, spread: 0, agreement: 1, failed: 0 });
    expect(criteria['style/right']).toEqual({ traces: 3, mean: 1, spread: 0, agreement: 1, failed: 0 });
    expect(criteria['style/terse'].agreement).toBe(0);
    expect(criteria['style/terse'].mean).toBeCloseTo(2 / 3, 10);
    expect(criteria['style/terse'].spread).toBeCloseTo(Math.sqrt(2) / 3, 10);
    // The recorded reward is the mean over rescores; judge cost is apart from the (free) agent calls.
    const [episode] = readFileSync(join(out, 'traces.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(episode.traces[0].rewards.style.score).toBeCloseTo((1 + 2 / 3) / 2, 10);
    expect(episode.traces[0].info.judgeCalls).toHaveLength(3);
    expect(summary.judgeCost).toBeCloseTo(0.009, 10);
    expect(replay.stdout).toMatch(/style\/terse: mean 0\.667 {2}spread 0\.471 {2}agreement 0%/);
    // The source run is untouched; a second replay into the same directory needs --clean.
    expect(readFileSync(join(source, 'traces.jsonl'), 'utf8')).toBe(sourceTraces);
    const again = await troupe(['replay', source, '-o', out]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/exists \(--clean replaces it\)/);

    // A reward from a module under the name of the taskset's own `correct` replaces it.
    writeFileSync(join(outputs, 'half.mjs'), 'export const half = () => 0.5;\n');
    const replacing = join(outputs, 'replace.toml');
    writeFileSync(
      replacing,
      `[[env.agent.rewards]]\nmodule = "${join(outputs, 'half.mjs')}"\nexport = "half"\nname = "correct"\n`,
    );
    const replaced = join(outputs, 'replaced');
    const third = await troupe(['replay', source, '-f', replacing, '-o', replaced]);
    expect(third.stderr).toBe('');
    expect(third.code).toBe(0);
    expect(agentCalls).toBe(3);
    const replacedSummary = JSON.parse(readFileSync(join(replaced, 'summary.json'), 'utf8'));
    // One rescore: no agreement to measure.
    expect(replacedSummary.replay.criteria.correct).toEqual({ traces: 3, mean: 0.5, spread: 0, agreement: null, failed: 0 });
  });
});
