import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type NodeProcessResult, runNode, ScriptedModelServer } from '@troupe/verifiers/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * `troupe init env|harness|runtime` end to end: the CLI in a child process scaffolds each kind,
 * `tsc` builds it, and the result runs (`troupe eval --env`) or loads by id (the harness on
 * `@troupe/program-kit`, with the recorded-harness conformance checks). Every package comes from
 * this package's own dependencies, by name.
 */
const require = createRequire(import.meta.url);
const folderOf = (name: string) => dirname(require.resolve(`${name}/package.json`));
const verifiers = folderOf('@troupe/verifiers');
const cli = join(verifiers, 'src/cli/main.ts');
const tsxLoader = join(folderOf('tsx'), 'dist/loader.mjs');
const tsc = join(folderOf('typescript'), 'bin/tsc');

function run(args: string[], cwd: string): Promise<NodeProcessResult> {
  return runNode(['--import', tsxLoader, cli, ...args], { cwd, env: { ...process.env, OPENAI_API_KEY: 'x' } });
}

/** Transpiles a scaffold's src to dist (types are checked by the consumer test, against the tarballs). */
function build(dir: string): Promise<number | null> {
  const child = spawn(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json'), '--noCheck'], { stdio: 'inherit' });
  return new Promise((done) => child.on('close', done));
}

describe('troupe init: scaffolds that build, load by id and run', () => {
  let work: string;
  let server: ScriptedModelServer;
  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'troupe-init-'));
    // The scaffolds resolve @troupe/*, zod and @types/node from here (this package's dependencies).
    mkdirSync(join(work, 'node_modules/@troupe'), { recursive: true });
    mkdirSync(join(work, 'node_modules/@types'));
    symlinkSync(verifiers, join(work, 'node_modules/@troupe/verifiers'));
    symlinkSync(folderOf('@troupe/program-kit'), join(work, 'node_modules/@troupe/program-kit'));
    symlinkSync(folderOf('zod'), join(work, 'node_modules/zod'));
    symlinkSync(folderOf('@types/node'), join(work, 'node_modules/@types/node'));
    server = await ScriptedModelServer.start({ script: () => 'The answer is 4' });
  });
  afterAll(() => server.close());

  it('troupe eval --env <scaffold>/dist/index.js runs the scaffolded env', async () => {
    const made = await run(['init', 'env', 'probe-env'], work);
    expect(made.code, made.stderr).toBe(0);
    const dir = join(work, 'env-probe-env');
    expect(await build(dir)).toBe(0);
    const out = join(work, 'outputs');
    const result = await run(
      [
        'eval',
        '--env',
        './env-probe-env/dist/index.js',
        '-m',
        'm',
        '-b',
        server.baseUrl,
        '-n',
        '2',
        '--harness',
        'null',
        '-o',
        out,
      ],
      work,
    );
    expect(result.code, result.stderr).toBe(0);
    const [runDir] = readdirSync(out);
    expect(runDir).toMatch(/^probe-env--m--null--/);
    const episodes = readFileSync(join(out, runDir!, 'traces.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(episodes).toHaveLength(2);
    expect(episodes[0].traces[0].rewards.replied.score).toBe(1);
  }, 120_000);

  it('the scaffolded harness and runtime load by id and work', async () => {
    for (const kind of ['harness', 'runtime']) {
      expect((await run(['init', kind, 'probe-plugin'], work)).code).toBe(0);
      expect(await build(join(work, `${kind}-probe-plugin`))).toBe(0);
      symlinkSync(join(work, `${kind}-probe-plugin`), join(work, `node_modules/@troupe/${kind}-probe-plugin`));
    }
    const script = join(work, 'load.mjs');
    writeFileSync(
      script,
      `import { loadHarness, loadRuntime, setPluginSearchPaths } from '@troupe/verifiers';
import { runRecordedHarnessConformance } from '@troupe/verifiers/testing';
setPluginSearchPaths([process.cwd()]);
const harness = await loadHarness('probe_plugin');
const { checks } = await runRecordedHarnessConformance({ harness, expect: { install: ['probe-plugin=='] } });
const runtime = await loadRuntime({ id: 'probe_plugin', root: ${JSON.stringify(join(work, 'sandboxes'))} });
const sandbox = await runtime.createSandbox();
const echoed = (await sandbox.exec('echo hi')).stdout;
await sandbox.stop();
await runtime.close();
console.log(JSON.stringify({ harness: harness.id, failed: checks.filter((c) => !c.ok), runtime: runtime.id, echoed }));
`,
    );
    const child = spawn(process.execPath, ['--import', tsxLoader, script], {
      cwd: work,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    expect(await new Promise((done) => child.on('close', done))).toBe(0);
    expect(JSON.parse(stdout)).toEqual({ harness: 'probe_plugin', failed: [], runtime: 'probe_plugin', echoed: 'hi\n' });
  }, 120_000);
});
