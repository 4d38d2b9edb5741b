import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelRequest } from '../../../model/model-client.ts';
import {
  type ScriptedModelServer,
  type ScriptedReply,
  ScriptedModelServer as Server,
} from '../../../testing/scripted-model-server.ts';

/**
 * `troupe eval -f examples/<env>.toml` end to end: the real CLI in a child process, against the
 * scripted model server over HTTP, one episode per env.
 */
const repo = resolve(import.meta.dirname, '../../../../../..');
const cli = join(repo, 'packages/verifiers/src/cli/main.ts');

const textOf = (request: ModelRequest) =>
  request.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');
const bash = (command: string): ScriptedReply => ({ toolCalls: [{ name: 'bash', arguments: { command } }] });

/** Plays every role of the example envs by recognising its prompt. */
function play(request: ModelRequest): ScriptedReply | string {
  const text = textOf(request);
  const turn = request.messages.filter((m) => m.role === 'assistant').length;
  if (text.startsWith('You are a judge.')) {
    if (turn === 0) return bash('ls');
    const verdicts = [...text.matchAll(/^- ([\w.-]+): .*\(answer one of, worst to best: (.*)\)$/gm)].map(([, name, choices]) => ({
      name,
      reason: 'I ran the script and compared its output.',
      verdict: choices?.split(', ').at(-1),
    }));
    // The verdict channel: the judge's final reply.
    return `All checks done.\n\n\`\`\`json\n${JSON.stringify({ verdicts })}\n\`\`\``;
  }
  if (text.includes('role-playing a user')) return turn === 0 ? 'I need help counting chairs for a party.' : '###DONE###';
  if (text.includes('Invent one new')) return 'Checked with code.\n{"problem": "What is 6 * 7 + 19?", "answer": 61}';
  if (text.includes('End your reply with just the final integer.')) return '61';
  if (text.includes('Write ') || text.includes('Create ')) return turn === 0 ? bash('echo "print(1)" > fizzbuzz.py') : 'Done.';
  return 'You need 29 chairs.';
}

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await Server.start({ script: play });
});
afterAll(() => server.close());

function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['--import', 'tsx', cli, ...args], { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

// Each case starts the CLI under tsx (several seconds on a loaded machine).
describe('troupe eval with the example configs', { timeout: 180_000 }, () => {
  it.each([
    ['agentic-judge', ['solver', 'judge']],
    ['shared-agentic-judge', ['solver', 'judge']],
    ['proposer-solver', ['proposer', 'solver', 'solver']],
    ['user-sim', ['user', 'assistant']],
  ])('runs examples/%s.toml by env id', async (env, roles) => {
    const outputs = mkdtempSync(join(tmpdir(), `example-${env}-`));
    const result = await runCli([
      'eval',
      '-f',
      `examples/${env}.toml`,
      '-b',
      server.baseUrl,
      '-n',
      '1',
      '-o',
      outputs,
      ...(env === 'proposer-solver' ? ['--set', 'env.n=2'] : []),
    ]);
    expect(result.stderr).not.toMatch(/troupe: /);
    expect(result.code).toBe(0);
    const [runDir] = readdirSync(outputs);
    const lines = readFileSync(join(outputs, String(runDir), 'traces.jsonl'), 'utf8')
      .trim()
      .split('\n');
    expect(lines).toHaveLength(1);
    const episode = JSON.parse(lines[0] ?? '{}') as {
      ok: boolean;
      errors: unknown[];
      env: { id: string };
      traces: {
        agent: { name: string };
        rewards: Record<string, { score: number } | null>;
        metrics: Record<string, number | null>;
      }[];
    };
    expect(episode.errors).toEqual([]);
    expect(episode.ok).toBe(true);
    expect(episode.env.id).toBe(env);
    expect(episode.traces.map((t) => t.agent.name).sort()).toEqual([...roles].sort());
    const first = (name: string) => episode.traces.find((t) => t.agent.name === name);
    if (env.endsWith('agentic-judge')) expect(first('solver')?.rewards.judge?.score).toBe(1);
    if (env === 'agentic-judge') expect(first('solver')?.metrics).toMatchObject({ 'judge/works': 1, 'judge/verified': 1 });
    if (env === 'proposer-solver') expect(first('proposer')?.metrics.solve_rate).toBe(1);
    if (env === 'user-sim') expect(first('assistant')?.metrics.user_turns).toBe(2);
  });
});
