import { mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelRequest } from '../model/model-client.ts';
import { type NodeProcessResult, runNode } from '../testing/node-process.ts';
import { ScriptedModelServer } from '../testing/scripted-model-server.ts';

const pkg = resolve(import.meta.dirname, '../..');
const root = resolve(pkg, '../..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

/** The first ```ts block after `<!-- marker`, verbatim. */
function blockAfter(marker: string): string {
  const at = readme.indexOf(`<!-- ${marker}`);
  expect(at, `README has no <!-- ${marker} --> marker`).toBeGreaterThan(0);
  const block = readme.slice(at).match(/```ts\n([\s\S]*?)```/);
  if (!block?.[1]) throw new Error(`README: no ts block after ${marker}`);
  return block[1];
}

function run(args: string[], cwd: string): Promise<NodeProcessResult> {
  return runNode(['--import', 'tsx', ...args], { cwd });
}

/** Answers arithmetic questions correctly and rates every draft 7. */
function writerAndCritic(request: ModelRequest): string {
  const last = String(request.messages.at(-1)?.content ?? '');
  if (last.startsWith('Score 0-10')) return '7';
  const expression = last.match(/What is (.*)\?/)?.[1] ?? '0';
  return `The answer is ${Function(`return (${expression})`)()}`;
}

describe("the README's examples do what the README says", () => {
  let server: ScriptedModelServer;
  beforeAll(async () => {
    server = await ScriptedModelServer.start({ script: writerAndCritic });
  });
  afterAll(() => server.close());

  it('writer-critic: a correct draft rated 7 gets reward 1.7; the critic is not scored', async () => {
    const envSource = blockAfter('readme-writer-critic');
    const project = mkdtempSync(join(tmpdir(), 'troupe-readme-'));
    mkdirSync(join(project, 'node_modules/@troupe'), { recursive: true });
    symlinkSync(pkg, join(project, 'node_modules/@troupe/verifiers'));
    writeFileSync(join(project, 'package.json'), '{"type":"module"}\n');
    writeFileSync(join(project, 'writer-critic.ts'), envSource);
    // The driver a user would write: the README's env on the built-in arithmetic taskset.
    writeFileSync(
      join(project, 'run.ts'),
      `import { Env, OpenAICompatibleClient, arithmeticTaskset, formatSummary, runEval } from '@troupe/verifiers';
import { writerCritic } from './writer-critic.ts';
const client = new OpenAICompatibleClient({ baseUrl: ${JSON.stringify(server.baseUrl)}, apiKey: 'x', model: 'm' });
const env = await Env.create({ definition: writerCritic, config: { id: 'writer-critic' }, run: { model: 'm', client } });
const { summary } = await runEval({ env, taskset: arithmeticTaskset({ size: 2 }), outDir: ${JSON.stringify(join(project, 'out'))}, model: 'm' });
console.log(JSON.stringify({ summary, text: formatSummary(summary) }));
`,
    );
    const result = await run([join(project, 'run.ts')], pkg);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const { summary, text } = JSON.parse(result.stdout);
    expect(summary.episodesOk).toBe(2);
    expect(summary.byRole.writer.rewardMean).toBeCloseTo(1.7, 12);
    expect(summary.byRole.critic.scored).toBe(0);
    expect(summary.byRole.critic.rewardMean).toBeNull();
    expect(text).toMatch(/critic: not scored \(frozen\)/);
    const [episode] = readFileSync(join(project, 'out/traces.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    const byName = Object.fromEntries(episode.traces.map((t: { agent: { name: string } }) => [t.agent.name, t]));
    expect(byName.writer.rewards).toEqual({ correct: { score: 1, weight: 1 }, critic: { score: 0.7, weight: 1 } });
    expect(byName.critic.rewards).toEqual({});
  });

  it('the exit codes the README documents are the ones troupe eval --help lists', async () => {
    const documented = [
      ...readme.matchAll(
        /\*\*(\d+)\*\*\s+(every\s+episode\s+ok|some\s+episodes\s+failed|every\s+episode\s+failed|a\s+bad\s+config)/g,
      ),
    ].map((m) => Number(m[1]));
    expect(documented).toEqual([0, 3, 4, 2]);
    const help = await run([join(pkg, 'src/cli/main.ts'), 'eval', '--help'], root);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/0 {2}every episode ok/);
    expect(help.stdout).toMatch(/3 {2}some episodes failed/);
    expect(help.stdout).toMatch(/4 {2}every episode failed/);
    expect(help.stdout).toMatch(/2 {2}bad config or flag/);
  });

  it('the kuhn-poker eval command of the README runs', async () => {
    const line = readme.split('\n').find((l) => l.startsWith('pnpm troupe eval --env kuhn-poker'));
    expect(line).toBeDefined();
    const args = (line as string).replace(/#.*$/, '').trim().split(/\s+/).slice(2);
    expect(args).toEqual(['eval', '--env', 'kuhn-poker', '-n', '100', '--harness', 'null']);
    const outputs = mkdtempSync(join(tmpdir(), 'troupe-readme-kuhn-'));
    // A model that plays the first legal action the prompt names.
    const kuhn = await ScriptedModelServer.start({
      script: (request) => `[${String(request.messages.at(-1)?.content).match(/\[(\w+)\]/)?.[1] ?? 'check'}]`,
    });
    try {
      const result = await run([join(pkg, 'src/cli/main.ts'), ...args, '-m', 'm', '-b', kuhn.baseUrl, '-o', outputs], root);
      expect(result.stderr).not.toMatch(/unknown/);
      expect(result.code).toBe(0);
      const [runDir] = readdirSync(outputs);
      const summary = JSON.parse(readFileSync(join(outputs, String(runDir), 'summary.json'), 'utf8'));
      expect(summary.env).toBe('kuhn-poker');
      expect(summary.episodes).toBe(100);
      expect(summary.episodesOk).toBe(100);
      expect(Object.keys(summary.byRole).sort()).toEqual(['player0', 'player1']);
      const traces = readFileSync(join(outputs, String(runDir), 'traces.jsonl'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .flatMap((l) => JSON.parse(l).traces as { metrics: { forfeit?: number } }[]);
      expect(traces.map((t) => t.metrics.forfeit).every((f) => f === 0)).toBe(true);
    } finally {
      await kuhn.close();
    }
  });
});
