import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelRequest } from '../model/model-client.ts';
import { arithmeticTaskset } from '../task/arithmetic.ts';
import { type NodeProcessResult, runNode } from '../testing/node-process.ts';
import { ScriptedModelServer } from '../testing/scripted-model-server.ts';

const pkg = resolve(import.meta.dirname, '../..');
const root = resolve(pkg, '../..');

function run(args: string[], cwd: string): Promise<NodeProcessResult> {
  return runNode(['--conditions=@troupe/source', '--import', 'tsx', ...args], { cwd });
}

/**
 * The model computes with the bash tool, then answers. Of each task's 3 final answers (tasks run
 * one after another), only the first to arrive is right — and on the third task none is.
 */
function script() {
  let answers = 0;
  return (request: ModelRequest) => {
    const expression = String(request.messages.find((m) => m.role === 'user')?.content).match(/What is (.*)\?/)?.[1] ?? '0';
    const tool = request.messages.findLast((m) => m.role === 'tool');
    if (!tool) return { toolCalls: [{ name: 'bash', arguments: { command: `echo $((${expression}))` } }] };
    const value = Number(String(tool.content).match(/stdout:\n<<<\S+\n(-?\d+)/)?.[1] ?? Number.NaN);
    const n = answers++;
    const right = n % 3 === 0 && n !== 6;
    return `The answer is ${right ? value : value + 1}`;
  };
}

describe('examples/synthetic-data.ts', () => {
  let server: ScriptedModelServer;
  beforeAll(async () => {
    server = await ScriptedModelServer.start({ script: script() });
  });
  afterAll(() => server.close());

  it('keeps the best passing trace of each task (best of 3) and writes SFT JSONL', async () => {
    const project = mkdtempSync(join(tmpdir(), 'troupe-synthetic-'));
    mkdirSync(join(project, 'node_modules/@troupe'), { recursive: true });
    symlinkSync(pkg, join(project, 'node_modules/@troupe/verifiers'));
    writeFileSync(join(project, 'package.json'), '{"type":"module"}\n');
    writeFileSync(join(project, 'synthetic-data.ts'), readFileSync(join(root, 'examples/synthetic-data.ts')));
    const out = join(project, 'sft.jsonl');
    const result = await run(
      [
        join(project, 'synthetic-data.ts'),
        '--model',
        'm',
        '--base-url',
        server.baseUrl,
        '--tasks',
        '4',
        '--best-of',
        '3',
        '--out',
        out,
      ],
      pkg,
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const tasks = arithmeticTaskset({ size: 1000 }).head(4).toArray();
    expect(result.stdout.trim().split('\n')).toEqual([
      `${tasks[0]?.key}: 1/3 passed, kept reward 1`,
      `${tasks[1]?.key}: 1/3 passed, kept reward 1`,
      `${tasks[2]?.key}: 0/3 passed, none kept`,
      `${tasks[3]?.key}: 1/3 passed, kept reward 1`,
      `kept 3 of 4 tasks → ${out}`,
    ]);
    expect(server.calls).toBe(4 * 3 * 2);
    const lines = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.metadata.task)).toEqual([tasks[0]?.key, tasks[1]?.key, tasks[3]?.key]);
    for (const [i, line] of lines.entries()) {
      const task = [tasks[0], tasks[1], tasks[3]][i];
      expect(line.metadata).toMatchObject({ run: 'synthetic-data', role: 'agent', reward: 1, passed: 1, bestOf: 3 });
      expect(line.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
      expect(line.messages[0].content).toBe(task?.data.prompt);
      expect(line.messages[1].tool_calls[0].function).toMatchObject({ name: 'bash' });
      expect(line.messages[3].content).toBe(`The answer is ${task?.data.answer}`);
      expect(line.tools.map((t: { function: { name: string } }) => t.function.name)).toContain('bash');
    }
  });
});
