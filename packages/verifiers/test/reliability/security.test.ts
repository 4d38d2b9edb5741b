import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerHarness } from '../../src/agent/plugins.ts';
import { singleAgentEnv } from '../../src/env/builtin/single-agent/single-agent-env.ts';
import { Env } from '../../src/env/env.ts';
import { TroupeError } from '../../src/errors/troupe-error.ts';
import { runEval } from '../../src/eval/eval-runner.ts';
import type { Harness, HarnessLaunchContext, HarnessResult } from '../../src/harness/harness.ts';
import { InterceptionServer } from '../../src/interception/interception-server.ts';
import type { RolloutSession } from '../../src/interception/rollout-session.ts';
import { LocalRuntime, type LocalSandbox } from '../../src/runtime/local-runtime.ts';
import { type ScriptedClient, ScriptedModelServer, scriptedClient } from '../../src/testing/scripted-model-server.ts';
import { answerOf, reliabilityTaskset, taskIndexOf } from './support/arithmetic-script.ts';
import { FetchProgramHarness } from './support/fetch-program-harness.ts';
import { registerReliabilityPlugins } from './support/register-plugins.ts';
import { runCli } from './support/troupe-cli.ts';

/** Every file under `dir`, with its text. */
function filesUnder(dir: string): { path: string; text: string }[] {
  const out: { path: string; text: string }[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const info = lstatSync(path);
    // Links are data here (a downloaded link is copied as a link, never followed).
    if (info.isDirectory()) out.push(...filesUnder(path));
    else if (info.isFile()) out.push({ path, text: readFileSync(path, 'utf8') });
  }
  return out;
}

const ROLLOUT_SECRET = /rs-[A-Za-z0-9_-]{32}/;

describe('interception binding', () => {
  it('listens on 127.0.0.1 only: the same port on another interface refuses connections', async () => {
    const server = new InterceptionServer();
    await server.start();
    try {
      const url = new URL(server.url);
      expect(url.hostname).toBe('127.0.0.1');
      const external = Object.values(networkInterfaces())
        .flat()
        .find((i) => i && i.family === 'IPv4' && !i.internal);
      if (external) {
        const attempt = fetch(`http://${external.address}:${url.port}/v1/models`, { signal: AbortSignal.timeout(5000) });
        await expect(attempt).rejects.toThrow();
      }
      const local = await fetch(`${server.url}/v1/models`);
      expect(local.status).toBe(401);
    } finally {
      await server.close();
    }
  });
});

describe('secrets never land in traces or logs', () => {
  it('troupe eval with OPENAI_API_KEY set writes the key to no file of the run directory and to no output', async () => {
    const apiKey = `sk-test-SECRET-${Math.random().toString(36).slice(2)}${Date.now()}`;
    // The model server demands the key, so the run only succeeds if the key was really used.
    const server = await ScriptedModelServer.start({
      apiKey,
      script: (request) => {
        const last = request.messages.at(-1);
        if (last?.role === 'user' && (taskIndexOf(request) ?? 0) % 2 === 0) {
          // Programs try to read the key: dump the environment into the trace.
          return { toolCalls: [{ name: 'bash', arguments: { command: 'env; cat /proc/self/environ | tr "\\0" "\\n"' } }] };
        }
        return answerOf(request);
      },
    });
    try {
      const outputs = mkdtempSync(join(tmpdir(), 'troupe-secret-scan-'));
      const run = runCli({
        args: [
          'eval',
          '-m',
          'scripted-model',
          '-b',
          server.baseUrl,
          '-n',
          '6',
          '--harness',
          'bash',
          '--runtime',
          'local',
          '-o',
          outputs,
        ],
        env: { OPENAI_API_KEY: apiKey, ANTHROPIC_API_KEY: apiKey, MY_SERVICE_TOKEN: apiKey },
      });
      const result = await run.done;
      expect(result.code, result.stderr).toBe(0);
      const runDir = join(outputs, readdirSync(outputs)[0] as string);
      const files = filesUnder(runDir);
      expect(files.map((f) => f.path.slice(runDir.length + 1)).sort()).toEqual(
        expect.arrayContaining(['config.json', 'logs/eval.log', 'summary.json', 'traces.jsonl']),
      );
      // The environment dump really is in the traces (so the scan looks at something).
      expect(files.find((f) => f.path.endsWith('traces.jsonl'))?.text).toContain('SANDBOX_ROOT=');
      for (const file of files) {
        expect(file.text.includes(apiKey), file.path).toBe(false);
        expect(
          /OPENAI_API_KEY|ANTHROPIC_API_KEY|MY_SERVICE_TOKEN/.test(file.text.replace(/"apiKeyVar":\s*"OPENAI_API_KEY"/g, '')),
          file.path,
        ).toBe(false);
      }
      expect(result.stdout.includes(apiKey)).toBe(false);
      expect(result.stderr.includes(apiKey)).toBe(false);
      expect(server.requests.every((r) => r.status !== 401)).toBe(true);
    } finally {
      await server.close();
    }
  });

  it('an eval of HTTP programs leaves no rollout secret in traces.jsonl, summary.json, config.json or the log, even when a program prints its key', async () => {
    registerReliabilityPlugins();
    /** A program that prints its environment (key included) and fails on odd tasks. */
    class LeakyProgramHarness implements Harness {
      readonly id = 'leaky-program';
      readonly inProcess = false;
      readonly capabilities = new FetchProgramHarness().capabilities;
      private readonly inner = new FetchProgramHarness();
      async launch(context: HarnessLaunchContext): Promise<HarnessResult> {
        const result = await this.inner.launch(context);
        const leak = `OPENAI_API_KEY=${context.endpoint.secret} OPENAI_BASE_URL=${context.endpoint.baseUrl}`;
        const index = Number(context.task.key.replace('reliability-', ''));
        return index % 2 === 1 ? { exitCode: 3, stdout: leak, stderr: leak } : { ...result, stdout: `${result.stdout}\n${leak}` };
      }
    }
    registerHarness('leaky_program', () => new LeakyProgramHarness());
    const scripted: ScriptedClient = await scriptedClient({ script: (request) => answerOf(request) });
    const interception = new InterceptionServer();
    await interception.start();
    const secrets: string[] = [];
    const logLines: string[] = [];
    try {
      const env = await Env.create({
        definition: singleAgentEnv,
        config: { id: 'single-agent', agent: { harness: 'leaky-program', runtime: 'memory' } },
        run: { model: 'scripted-model', client: scripted.client },
        interception: async () => ({
          register: (session: RolloutSession) => {
            secrets.push(session.secret);
            return interception.register(session);
          },
          unregister: (session: RolloutSession) => interception.unregister(session),
        }),
        log: (line) => logLines.push(line),
      });
      const outDir = mkdtempSync(join(tmpdir(), 'troupe-secret-scan-'));
      await runEval({
        env,
        taskset: reliabilityTaskset(8),
        outDir,
        model: 'scripted-model',
        config: { note: 'scan' },
        log: (line) => logLines.push(line),
      });
      expect(secrets).toHaveLength(8);
      const texts = [
        ...filesUnder(outDir).map((f) => ({ where: f.path, text: f.text })),
        { where: 'log', text: logLines.join('\n') },
      ];
      // The failing programs' output is on their traces (so the scan looks at something).
      expect(texts.find((t) => t.where.endsWith('traces.jsonl'))?.text).toContain('OPENAI_API_KEY=');
      for (const { where, text } of texts) {
        for (const secret of secrets) expect(text.includes(secret), `${where} holds a rollout secret`).toBe(false);
        expect(ROLLOUT_SECRET.test(text), where).toBe(false);
      }
    } finally {
      await interception.close();
      await scripted.close();
    }
  });
});

describe('the local runtime', () => {
  let runtime: LocalRuntime;
  let outside: string;
  const canary = `canary-${Math.random()}`;
  beforeAll(() => {
    runtime = new LocalRuntime({
      root: mkdtempSync(join(tmpdir(), 'troupe-escape-root-')),
      env: { MY_API_KEY: 'runtime-level', SERVICE_TOKEN: 't' },
    });
    outside = mkdtempSync(join(tmpdir(), 'troupe-escape-outside-'));
    writeFileSync(join(outside, 'canary'), canary);
  });
  afterAll(async () => {
    await runtime.close();
    rmSync(outside, { recursive: true, force: true });
  });

  it('passes no *API_KEY* (or secret or token) variable to programs, from the host, the runtime or the sandbox options', async () => {
    const previous = process.env.OPENAI_API_KEY;
    process.env.OPENAI_API_KEY = 'sk-host-level';
    try {
      const sandbox = await runtime.createSandbox({ env: { OPENAI_API_KEY: 'sandbox-level', HF_TOKEN: 'x', VISIBLE: 'yes' } });
      const result = await sandbox.exec('env');
      const names = result.stdout.split('\n').map((line) => line.split('=')[0]);
      expect(names).toContain('VISIBLE');
      expect(names.filter((n) => n && /API_KEY|SECRET|TOKEN/i.test(n))).toEqual([]);
      await sandbox.stop();
    } finally {
      if (previous === undefined) delete process.env.OPENAI_API_KEY;
      else process.env.OPENAI_API_KEY = previous;
    }
  });

  it('file APIs never read, write or download outside the sandbox, whatever the path (.., absolute, symlinks)', async () => {
    const sandbox = (await runtime.createSandbox()) as LocalSandbox;
    // Links planted by a program: to the outside directory, to its canary, and a relative climb.
    symlinkSync(outside, join(sandbox.workdir, 'out-dir'));
    symlinkSync(join(outside, 'canary'), join(sandbox.workdir, 'out-file'));
    symlinkSync('../../../..', join(sandbox.workdir, 'climb'));
    mkdirSync(join(sandbox.workdir, 'sub'));
    const segment = fc.constantFrom(
      '..',
      '.',
      'sub',
      'out-dir',
      'out-file',
      'climb',
      'canary',
      'x',
      '',
      outside.slice(1),
      'tmp',
      'etc',
    );
    const pathArbitrary = fc.oneof(
      fc.array(segment, { minLength: 1, maxLength: 6 }).map((parts) => parts.join('/')),
      fc.array(segment, { minLength: 1, maxLength: 6 }).map((parts) => `/${parts.join('/')}`),
      fc.constantFrom(
        join(outside, 'canary'),
        `${sandbox.root}/../${outside.split('/').pop()}/canary`,
        `${sandbox.workdir}/out-file`,
      ),
    );
    const downloads = mkdtempSync(join(tmpdir(), 'troupe-escape-downloads-'));
    let n = 0;
    await fc.assert(
      fc.asyncProperty(pathArbitrary, fc.constantFrom('read', 'write', 'download'), async (path, operation) => {
        const target = join(downloads, String(n++));
        let read: string | undefined;
        try {
          if (operation === 'read') read = new TextDecoder().decode(await sandbox.readFile(path));
          else if (operation === 'write') await sandbox.writeFile(path, 'overwritten');
          else await sandbox.download(path, target);
        } catch (error) {
          expect(TroupeError.isInstance(error) && error.name, `${operation} ${path}: ${String(error)}`).toBe('SandboxError');
        }
        // Nothing read or downloaded carries the outside file's content.
        if (read !== undefined) expect(read).not.toContain(canary);
        if (existsSync(target)) {
          const info = lstatSync(target);
          const texts = info.isDirectory()
            ? filesUnder(target).map((f) => f.text)
            : info.isFile()
              ? [readFileSync(target, 'utf8')]
              : [];
          for (const text of texts) expect(text, `${operation} ${path}`).not.toContain(canary);
        }
        // Whatever happened, the outside directory is untouched.
        expect(readdirSync(outside)).toEqual(['canary']);
        expect(readFileSync(join(outside, 'canary'), 'utf8')).toBe(canary);
      }),
      { numRuns: 300 },
    );
    await sandbox.stop();
    rmSync(downloads, { recursive: true, force: true });
  });
});
