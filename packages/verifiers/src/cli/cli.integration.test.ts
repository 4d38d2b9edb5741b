import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedModelServer } from '../testing/scripted-model-server.ts';

const root = resolve(import.meta.dirname, '../../../..');
const cli = join(root, 'packages/verifiers/src/cli/main.ts');

function run(args: string[]): { child: ChildProcess; done: Promise<{ code: number | null; stdout: string; stderr: string }> } {
  const child = spawn(process.execPath, ['--import', 'tsx', cli, ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => (stdout += d));
  child.stderr?.on('data', (d) => (stderr += d));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((res) =>
    child.on('close', (code) => res({ code, stdout, stderr })),
  );
  return { child, done };
}

const episodeLines = (dir: string) =>
  existsSync(join(dir, 'traces.jsonl'))
    ? readFileSync(join(dir, 'traces.jsonl'), 'utf8')
        .split('\n')
        .filter((l) => l.trim())
    : [];

describe('troupe eval (CLI)', () => {
  let server: ScriptedModelServer;
  beforeAll(async () => {
    server = await ScriptedModelServer.start({
      latencyMs: 60,
      script: (request) => {
        const expression = String(request.messages.at(-1)?.content).match(/What is (.*)\?/)?.[1] ?? '0';
        return `The answer is ${Function(`return (${expression})`)()}`;
      },
    });
  });
  afterAll(() => server.close());

  it('rejects a bad flag value naming it', async () => {
    const { done } = run(['eval', '-m', 'x', '-n', 'lots']);
    const result = await done;
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--num-tasks must be a positive integer/);
  });

  it('says a misspelt command is unknown and names the closest one, with exit 2', async () => {
    const result = await run(['trian']).done;
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^troupe: unknown command "trian" \(did you mean "train"\?\)\n/);
  });

  it('after SIGKILL mid-run, --resume ends with every episode exactly once', async () => {
    const outputs = mkdtempSync(join(tmpdir(), 'troupe-cli-'));
    const args = [
      'eval',
      '-m',
      'scripted-model',
      '-b',
      server.baseUrl,
      '-n',
      '20',
      '-r',
      '2',
      '-c',
      '2',
      '--harness',
      'null',
      '-o',
      outputs,
    ];
    const first = run(args);
    // Kill it once some (not all) episodes are on disk.
    const deadline = Date.now() + 60_000;
    let dir = '';
    while (Date.now() < deadline) {
      const runs = existsSync(outputs) ? readdirSync(outputs) : [];
      if (runs[0]) dir = join(outputs, runs[0]);
      if (dir && episodeLines(dir).length >= 5) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    first.child.kill('SIGKILL');
    await first.done;
    const before = episodeLines(dir).length;
    expect(before).toBeGreaterThanOrEqual(5);
    expect(before).toBeLessThan(40);
    const resumed = await run(['eval', '--resume', dir]).done;
    expect(resumed.stderr + resumed.stdout).not.toMatch(/Error:/);
    expect(resumed.code).toBe(0);
    const episodes = episodeLines(dir).map((l) => JSON.parse(l));
    const keys = episodes.map((e) => `${e.task.key}#${e.group.index}`);
    expect(keys).toHaveLength(40);
    expect(new Set(keys).size).toBe(40);
    expect(episodes.every((e) => e.ok && e.traces[0].rewards.correct.score === 1)).toBe(true);
    expect(resumed.stdout).toMatch(/troupe view/);
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'));
    expect(summary.passAtK['pass@2']).toBe(1);
  });
});
