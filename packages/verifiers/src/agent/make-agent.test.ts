import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelRequest } from '../model/model-client.ts';
import { OpenAICompatibleClient } from '../model/openai-client.ts';
import { Task } from '../task/task.ts';
import { type NodeProcessResult, runNode } from '../testing/node-process.ts';
import { ScriptedModelServer } from '../testing/scripted-model-server.ts';
import { asyncDisposeSymbol, makeAgent } from './make-agent.ts';

const pkg = resolve(import.meta.dirname, '../..');
const root = resolve(pkg, '../..');

/** The ts block after the `readme-agent-script` marker in the README, verbatim. */
function readmeScript(): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const marker = readme.indexOf('<!-- readme-agent-script');
  expect(marker).toBeGreaterThan(0);
  const block = readme.slice(marker).match(/```ts\n([\s\S]*?)```/);
  if (!block?.[1]) throw new Error('README: no ts block after the readme-agent-script marker');
  return block[1];
}

/**
 * A model that uses the bash tool once, then answers with what the tool printed: the answer is
 * computed by the shell in the sandbox, so it can only be right when the tool really ran.
 */
function toolThenAnswer(request: ModelRequest) {
  const tool = request.messages.findLast((m) => m.role === 'tool');
  if (!tool) return { toolCalls: [{ name: 'bash', arguments: { command: 'echo "4.1.$((6 * 2))"' } }] };
  const version = String(tool.content).match(/\d+\.\d+\.\d+/)?.[0] ?? 'unknown';
  return { content: `The latest release of zod is ${version}.` };
}

function run(args: string[], cwd: string): Promise<NodeProcessResult> {
  return runNode(['--conditions=@troupe/source', '--import', 'tsx', ...args], { cwd });
}

describe('makeAgent', () => {
  let server: ScriptedModelServer;
  beforeAll(async () => {
    server = await ScriptedModelServer.start({ script: toolThenAnswer });
  });
  afterAll(() => server.close());

  it("runs the README's script verbatim (bash harness, local runtime) as a consumer project would", async () => {
    const script = readmeScript();
    expect(script).toContain('await using agent = await makeAgent(');
    expect(script).toContain("harness: { id: 'bash' }");
    const project = mkdtempSync(join(tmpdir(), 'troupe-readme-'));
    mkdirSync(join(project, 'node_modules/@troupe'), { recursive: true });
    symlinkSync(pkg, join(project, 'node_modules/@troupe/verifiers'));
    writeFileSync(join(project, 'package.json'), '{"type":"module"}\n');
    // The one edit: the README's endpoint becomes the scripted server's.
    expect(script).toContain("'http://127.0.0.1:8000/v1'");
    writeFileSync(join(project, 'agent.ts'), script.replace("'http://127.0.0.1:8000/v1'", `'${server.baseUrl}'`));
    const before = server.calls;
    const result = await run([join(project, 'agent.ts')], pkg);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('The latest release of zod is 4.1.12.\n');
    expect(server.calls - before).toBe(2);
  });

  it('returns a trace with the tool call and its result, and await using releases the runtime', async () => {
    let closed = 0;
    {
      await using agent = await makeAgent({ model: 'm', baseUrl: server.baseUrl, harness: 'bash', maxTurns: 4 });
      const close = agent.runtime.close?.bind(agent.runtime);
      Object.assign(agent.runtime, {
        close: async () => {
          closed++;
          await close?.();
        },
      });
      const trace = await agent.run(new Task({ prompt: 'latest zod?' }));
      expect(trace.ok).toBe(true);
      expect(trace.lastReply).toBe('The latest release of zod is 4.1.12.');
      expect(trace.agent).toMatchObject({ name: 'agent', harness: 'bash', runtime: 'local', model: 'm' });
      const roles = trace.messages.map((m) => m.role);
      expect(roles).toEqual(['user', 'assistant', 'tool', 'assistant']);
      expect(typeof agent[asyncDisposeSymbol as typeof Symbol.asyncDispose]).toBe('function');
    }
    expect(closed).toBe(1);
  });

  it('takes a ready ModelClient and a runtime as { id, ...options } (the sandbox lands under the given root)', async () => {
    const root = mkdtempSync(join(tmpdir(), 'troupe-make-agent-root-'));
    const client = new OpenAICompatibleClient({ baseUrl: server.baseUrl, apiKey: 'k', model: 'm' });
    await using agent = await makeAgent({ model: 'm', client, harness: 'bash', runtime: { id: 'local', root }, name: 'solver' });
    let workdir = '';
    const trace = await agent.run(
      new Task(
        { prompt: 'latest zod?' },
        {
          setup: ({ sandbox }) => {
            workdir = sandbox?.workdir ?? '';
          },
        },
      ),
    );
    expect(trace.ok).toBe(true);
    expect(trace.agent.name).toBe('solver');
    expect(workdir.startsWith(root)).toBe(true);
    await expect(makeAgent({ model: 'm', client, baseUrl: server.baseUrl })).rejects.toThrow(/client and baseUrl/);
  });

  it('opens an interaction and closes it with the agent', async () => {
    const agent = await makeAgent({ model: 'm', baseUrl: server.baseUrl, harness: 'null' });
    const interaction = await agent.interaction('hello');
    const segment = await interaction.turn();
    expect(segment.terminated).toBe(false);
    await agent.close();
    expect(interaction.trace.stopCondition).toBe('user_closed');
    await expect(agent.run('again')).rejects.toThrow(/closed/);
  });

  it('rejects a bad config at the door, naming the field', async () => {
    await expect(makeAgent({ model: 'm', baseUrl: server.baseUrl, maxTurns: 0 })).rejects.toThrow(/maxTurns/);
    await expect(makeAgent({ model: 'm', baseUrl: 'not a url' })).rejects.toThrow(/baseUrl/);
    await expect(makeAgent({ model: 'm' })).rejects.toThrow(/client/);
    await expect(makeAgent({ baseUrl: server.baseUrl } as never)).rejects.toThrow(/model/);
    await expect(makeAgent({ model: 'm', baseUrl: server.baseUrl, harness: 'no-such-harness' })).rejects.toThrow(
      /^makeAgent: harness: harness "no-such-harness" is not built in/,
    );
    await expect(makeAgent({ model: 'm', baseUrl: server.baseUrl, runtime: { id: 'nope' } })).rejects.toThrow(
      /makeAgent: runtime:/,
    );
    await expect(makeAgent({ model: 'm', baseUrl: server.baseUrl, harnes: 'bash' } as never)).rejects.toThrow(/harnes/);
  });
});
