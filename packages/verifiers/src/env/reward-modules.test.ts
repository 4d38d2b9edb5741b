import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Task } from '../task/task.ts';
import { type ScriptedClient, scriptedClient } from '../testing/scripted-model-server.ts';
import { singleAgentEnv } from './builtin/single-agent/single-agent-env.ts';
import { Env } from './env.ts';

let dir: string;
let scripted: ScriptedClient | undefined;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'troupe-reward-modules-'));
  writeFileSync(
    join(dir, 'rewards.mjs'),
    `export function exactMatch({ task, trace }) { return trace.lastReply === String(task.data.answer) ? 1 : 0; }
export const replyLength = { name: 'reply_length', fn: ({ trace }) => trace.lastReply.length };
export function threshold(options) { return ({ trace }) => (trace.lastReply.length >= options.min ? 1 : 0); }
export function boom() { throw new Error('kaboom'); }
export function forbidden(trace, request) { return JSON.stringify(request.messages).includes('FORBIDDEN') ? 'forbidden_prompt' : null; }
`,
  );
  writeFileSync(
    join(dir, 'typed.ts'),
    `import type { TaskContext } from '../not-needed-at-runtime';\nexport const startsWithDigit = (context: TaskContext): number => (/^\\d/.test(context.trace.lastReply) ? 1 : 0);\n`,
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(async () => {
  await scripted?.close();
  scripted = undefined;
});

async function runOne(agent: Record<string, unknown>, prompt = 'What is 2+2?') {
  scripted ??= await scriptedClient({ script: () => '4' });
  const env = await Env.create({
    definition: singleAgentEnv,
    config: { id: 'single-agent', agent: { harness: 'null', ...agent } },
    run: { model: 'policy', client: scripted.client },
  });
  const episode = await env.runEpisode({ task: new Task({ prompt, answer: 4 }), group: { id: 'g', index: 0 } });
  const trace = episode.traces[0];
  if (!trace) throw new Error('no trace');
  return trace;
}

describe('rewards, metrics and stops from config by module path', () => {
  it('loads [[env.agent.rewards]] from .mjs and .ts modules with their weights, and metrics beside them', async () => {
    const trace = await runOne({
      rewards: [
        { module: join(dir, 'rewards.mjs'), export: 'exactMatch', weight: 0.5 },
        { module: join(dir, 'typed.ts'), export: 'startsWithDigit' },
        { module: join(dir, 'rewards.mjs'), export: 'threshold', name: 'long_enough', options: { min: 2 } },
      ],
      metrics: [{ module: join(dir, 'rewards.mjs'), export: 'replyLength' }],
    });
    expect(trace.ok).toBe(true);
    expect(trace.rewards).toEqual({
      exactMatch: { score: 1, weight: 0.5 },
      startsWithDigit: { score: 1, weight: 1 },
      long_enough: { score: 0, weight: 1 },
    });
    expect(trace.metrics).toEqual({ reply_length: 1 });
    expect(trace.reward).toBe(1.5);
  });

  it('a plugged reward that throws is an error on the trace with its reward null, not a 0', async () => {
    const trace = await runOne({ rewards: [{ module: join(dir, 'rewards.mjs'), export: 'boom' }] });
    expect(trace.ok).toBe(false);
    expect(trace.rewards.boom).toBeNull();
    expect(trace.errors[0]).toMatchObject({ type: 'RewardError', message: 'boom: kaboom' });
  });

  it('a plugged stop ends the rollout before the model is called', async () => {
    const trace = await runOne({ stops: [{ module: join(dir, 'rewards.mjs'), export: 'forbidden' }] }, 'say FORBIDDEN');
    expect(trace.stopCondition).toBe('forbidden_prompt');
    expect(trace.calls).toHaveLength(0);
    expect(scripted?.server.calls).toBe(0);
  });

  it('refuses a missing export or a bad entry at the door, naming the field', async () => {
    await expect(runOne({ rewards: [{ module: join(dir, 'rewards.mjs'), export: 'nope' }] })).rejects.toThrow(
      /env\.agent\.rewards\.0: .*rewards\.mjs has no export "nope" \(exports: .*exactMatch/,
    );
    await expect(runOne({ rewards: [{ module: './missing.mjs' }] })).rejects.toThrow(/module \.\/missing\.mjs not found/);
    await expect(runOne({ rewards: [{ module: 'x.mjs', weight: 'heavy' }] })).rejects.toThrow(/env\.agent\.rewards\.0\.weight/);
    await expect(runOne({ metrics: [{ module: join(dir, 'rewards.mjs'), export: 'replyLength', weight: 2 }] })).rejects.toThrow(
      /metrics are unweighted/,
    );
  });

  it('a judge entry plugs a single-call rubric judge on the role client', async () => {
    scripted = await scriptedClient({
      script: (request) =>
        JSON.stringify(request.messages).includes('# Criteria')
          ? '{"verdicts": [{"name": "right", "reason": "r", "verdict": "yes"}]}'
          : '4',
    });
    const trace = await runOne({
      rewards: [{ judge: 'rubric', name: 'quality', model: 'judge-model', criteria: [{ name: 'right', text: 'Says 4.' }] }],
    });
    expect(trace.rewards.quality).toEqual({ score: 1, weight: 1 });
    expect(trace.metrics['quality/right']).toBe(1);
    expect(trace.calls).toHaveLength(1);
    expect(trace.info.judgeCalls).toMatchObject([{ judge: 'quality', model: 'judge-model' }]);
  });
});
