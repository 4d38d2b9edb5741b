import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { troupe } from '../../test/support/troupe-process.ts';
import { defineEnv, Env } from '../env/env.ts';
import { runEval } from '../eval/eval-runner.ts';
import { readEpisodes } from '../eval/traces-file.ts';
import { parseFilter } from '../export/export-filter.ts';
import { exportRecords } from '../export/export-records.ts';
import { InterceptionServer } from '../interception/interception-server.ts';
import type { ModelRequest } from '../model/model-client.ts';
import { OpenAICompatibleClient } from '../model/openai-client.ts';
import { arithmeticTaskset } from '../task/arithmetic.ts';
import { ScriptedModelServer } from '../testing/scripted-model-server.ts';

const root = resolve(import.meta.dirname, '../../../..');
const _cli = join(root, 'packages/verifiers/src/cli/main.ts');

/** A writer (bash harness, trainable) and a frozen critic (null harness, trainable = false). */
const writerCritic = defineEnv({
  id: 'writer-critic',
  roles: { writer: { harness: 'bash' }, critic: { harness: 'null', trainable: false } },
  maxConcurrentAgents: 1,
  async run({ task, agents }) {
    const draft = await agents.writer.run(task);
    const review = await agents.critic.run(task.with({ prompt: `Score 0-10:\n${draft.lastReply}` }));
    draft.recordMetric('critic', Number(review.lastReply.match(/\d+/)?.[0] ?? 0));
  },
});

/**
 * The writer computes with the bash tool, then answers: right on even rollouts of a task, wrong on
 * odd ones (each task's calls arrive in order at concurrency 1), so groups have reward spread.
 */
function script() {
  let answers = 0;
  return (request: ModelRequest) => {
    const last = request.messages.at(-1);
    if (String(last?.role === 'user' ? last.content : '').startsWith('Score')) return 'Critic says 7';
    const expression = String(request.messages.find((m) => m.role === 'user')?.content).match(/What is (.*)\?/)?.[1] ?? '0';
    const tool = request.messages.findLast((m) => m.role === 'tool');
    if (!tool) return { toolCalls: [{ name: 'bash', arguments: { command: `echo $((${expression}))` } }] };
    const value = Number(String(tool.content).match(/stdout:\n<<<\S+\n(-?\d+)/)?.[1] ?? Number.NaN);
    return `The answer is ${answers++ % 2 === 0 ? value : value + 1}`;
  };
}

describe('troupe export', () => {
  let server: ScriptedModelServer;
  let interception: InterceptionServer;
  let runDir: string;

  beforeAll(async () => {
    server = await ScriptedModelServer.start({ script: script(), vllmTokens: true });
    interception = new InterceptionServer();
    await interception.start();
    const env = await Env.create({
      definition: writerCritic,
      config: { id: 'writer-critic' },
      run: { model: 'm', client: new OpenAICompatibleClient({ baseUrl: server.baseUrl, apiKey: 'k', model: 'm' }) },
      interception: async () => interception,
    });
    runDir = join(mkdtempSync(join(tmpdir(), 'troupe-export-')), 'writer-critic--m--bash--0000abcd');
    await runEval({ env, taskset: arithmeticTaskset({ size: 2 }), rollouts: 2, concurrency: 1, outDir: runDir, model: 'm' });
  });
  afterAll(async () => {
    await interception.close();
    await server.close();
  });

  it('chat: one line per trainable trace with tool calls, tool results and metadata; the frozen critic only when named', async () => {
    const result = await troupe(['export', runDir, '--format', 'chat']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const lines = result.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(4);
    const first = lines[0];
    expect(first.metadata).toMatchObject({
      run: basename(runDir),
      role: 'writer',
      rollout: 0,
      error: null,
      stop: 'agent_completed',
    });
    expect(first.metadata.task).toBe(readEpisodes(join(runDir, 'traces.jsonl')).episodes[0]?.task.key);
    expect(first.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const call = first.messages[1].tool_calls[0];
    expect(call).toMatchObject({ type: 'function', function: { name: 'bash' } });
    expect(call.function.arguments.command).toMatch(/^echo \$\(\(/);
    expect(first.messages[2]).toMatchObject({ role: 'tool', tool_call_id: call.id, name: 'bash' });
    expect(first.messages[2].content).toMatch(/exit code: 0/);
    expect(first.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(['bash', 'edit']);
    expect(lines.map((l) => l.metadata.reward).sort()).toEqual([0, 0, 1, 1]);

    const critic = await troupe(['export', runDir, '--format', 'chat', '--role', 'critic']);
    const criticLines = critic.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(criticLines).toHaveLength(4);
    expect(criticLines.every((l) => l.metadata.role === 'critic')).toBe(true);
    expect(criticLines[0].messages.at(-1)).toEqual({ role: 'assistant', content: 'Critic says 7' });
  });

  it('sft with --where and --tokens writes a file of passing traces with token ids and a completion mask', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'troupe-export-out-')), 'sft.jsonl');
    const result = await troupe([
      'export',
      runDir,
      '--format',
      'sft',
      '--where',
      'reward >= 1 and metrics.critic == 7',
      '--tokens',
      '--out',
      out,
    ]);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/wrote 2 sft records/);
    const lines = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(line.metadata.reward).toBe(1);
      expect(line.messages.at(-1).role).toBe('assistant');
      expect(line.input_ids.length).toBe(line.completion_mask.length);
      expect(line.completion_mask.filter((m: number) => m === 1).length).toBe(line.logprobs.length);
      expect(line.completion_mask).toContain(0);
    }
  });

  it('preference: the right and the wrong answer of one task pair up, chosen = higher reward', () => {
    const { episodes } = readEpisodes(join(runDir, 'traces.jsonl'));
    const pairs = exportRecords(episodes, { format: 'preference', run: 'r' });
    expect(pairs).toHaveLength(2);
    for (const pair of pairs as {
      prompt: { role: string }[];
      chosen: { content: string }[];
      rejected: { content: string }[];
      metadata: { chosen: { reward: number }; rejected: { reward: number }; task: string };
    }[]) {
      expect(pair.prompt.map((m) => m.role)).toEqual(['user']);
      expect(pair.metadata.chosen.reward).toBe(1);
      expect(pair.metadata.rejected.reward).toBe(0);
      expect(pair.chosen.at(-1)?.content).not.toBe(pair.rejected.at(-1)?.content);
    }
    expect(new Set(pairs.map((p) => (p.metadata as { task: string }).task)).size).toBe(2);
  });

  it('refuses a malformed --where naming the position, and --help lists every option', async () => {
    const bad = await troupe(['export', runDir, '--format', 'chat', '--where', 'reward >= )']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--where: expected a value .* found "\)" at position 11/);
    const help = await troupe(['export', '--help']);
    expect(help.code).toBe(0);
    for (const option of ['--format', '--role', '--where', '--tokens', '--out', '--help']) expect(help.stdout).toContain(option);
    const role = await troupe(['export', runDir, '--format', 'chat', '--role', 'judge']);
    expect(role.code).toBe(2);
    expect(role.stderr).toMatch(/--role judge: no trace of the run has this role \(roles: writer, critic\)/);
    const none = await troupe(['export', runDir, '--format', 'chat', '--where', 'reward > 5']);
    expect(none.code).toBe(0);
    expect(none.stdout).toBe('');
    expect(none.stderr).toMatch(/no chat records from 4 episodes \(frozen roles critic are left out unless named with --role\)/);
    const format = await troupe(['export', runDir, '--format', 'dpo']);
    expect(format.code).toBe(2);
    expect(format.stderr).toMatch(/--format must be one of chat, sft, preference/);
  });
});

describe('parseFilter', () => {
  const fields = {
    reward: 0.5,
    role: 'solver',
    error: null,
    stop: 'max_turns',
    ok: true,
    turns: 3,
    trainable: true,
    metrics: { acc: 1, missing: null },
    rewards: { exact: 0.5 },
  };
  it.each([
    ['reward >= 0.5', true],
    ['reward > 0.5', false],
    ['role == \'solver\' && stop == "max_turns"', true],
    ['error == null and not (turns < 2)', true],
    ['metrics.acc == 1 or reward > 9', true],
    ['metrics.missing >= 0', false],
    ['metrics.absent == null', true],
    ['!ok || rewards.exact < 0', false],
    ['error', false],
  ])('%s → %s', (source, expected) => {
    expect(parseFilter(source)(fields)).toBe(expected);
  });
  it.each([
    ['reward >=', /expected a value .*found the end at position 10/],
    ['reward = 1', /unexpected character "=" at position 8/],
    ['rewrd > 1', /unknown field "rewrd" \(fields: reward, .*\) at position 1/],
    ['(reward > 1', /expected "\)".*at position 12/],
    ["role == 'x", /unterminated string at position 9/],
    ['reward > 1 reward', /expected "and", "or" or the end, found "reward" at position 12/],
    ['process.exit(1)', /unknown field "process.exit"/],
  ])('refuses %s', (source, message) => {
    expect(() => parseFilter(source)).toThrow(message);
  });
});
