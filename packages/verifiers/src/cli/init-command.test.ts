import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type NodeProcessResult, runNode } from '../testing/node-process.ts';
import { ScriptedModelServer } from '../testing/scripted-model-server.ts';
import { INIT_HELP, scaffoldPackage } from './init-command.ts';

const root = resolve(import.meta.dirname, '../../../..');
const cli = join(root, 'packages/verifiers/src/cli/main.ts');
const tsc = join(root, 'node_modules/typescript/bin/tsc');

function run(args: string[], cwd: string): Promise<NodeProcessResult> {
  return runNode(['--import', join(root, 'node_modules/tsx/dist/loader.mjs'), cli, ...args], {
    cwd,
    env: { ...process.env, OPENAI_API_KEY: 'x' },
  });
}

/** Transpiles a scaffold's src to dist (types are checked by the consumer test, against the tarballs). */
function build(dir: string): Promise<number | null> {
  const child = spawn(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json'), '--noCheck'], { stdio: 'inherit' });
  return new Promise((done) => child.on('close', done));
}

describe('troupe init', () => {
  let work: string;
  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'troupe-init-'));
    // The scaffolds resolve @troupe/* and zod from here (the workspace packages, by name).
    mkdirSync(join(work, 'node_modules/@troupe'), { recursive: true });
    symlinkSync(join(root, 'packages/verifiers'), join(work, 'node_modules/@troupe/verifiers'));
    symlinkSync(join(root, 'packages/harnesses/kit'), join(work, 'node_modules/@troupe/harness-kit'));
    symlinkSync(join(root, 'packages/verifiers/node_modules/zod'), join(work, 'node_modules/zod'));
    mkdirSync(join(work, 'node_modules/@types'));
    symlinkSync(join(root, 'node_modules/@types/node'), join(work, 'node_modules/@types/node'));
  });

  it.each(['env', 'harness', 'runtime'] as const)('scaffolds a standalone %s package', (kind) => {
    const made = scaffoldPackage({ kind, name: 'my-probe', dir: join(work, `files-${kind}`) });
    expect(made.packageName).toBe(`@troupe/${kind}-my-probe`);
    expect(made.id).toBe(kind === 'env' ? 'my-probe' : 'my_probe');
    expect(made.files).toEqual(
      [
        '.gitignore',
        'README.md',
        'package.json',
        'src/index.ts',
        `src/my-probe-${kind}.test.ts`,
        `src/my-probe-${kind}.ts`,
        'tsconfig.json',
      ].sort(),
    );
    const pkg = JSON.parse(readFileSync(join(made.dir, 'package.json'), 'utf8'));
    const version = JSON.parse(readFileSync(join(root, 'packages/verifiers/package.json'), 'utf8')).version;
    expect(pkg.type).toBe('module');
    expect(pkg.dependencies['@troupe/verifiers']).toBe(`^${version}`);
    if (kind === 'harness') expect(pkg.dependencies['@troupe/harness-kit']).toBe(`^${version}`);
    expect(Object.values(pkg.dependencies).some((range) => String(range).startsWith('workspace:'))).toBe(false);
    expect(pkg.exports['.']).toEqual({ types: './dist/index.d.ts', import: './dist/index.js', default: './dist/index.js' });
    expect(Object.keys(pkg.scripts)).toEqual(['build', 'test']);
    const test = readFileSync(join(made.dir, `src/my-probe-${kind}.test.ts`), 'utf8');
    expect(test).toContain(kind === 'runtime' ? '@troupe/verifiers/conformance' : '@troupe/verifiers/testing');
    for (const file of made.files) expect(readFileSync(join(made.dir, file), 'utf8')).not.toMatch(/__[A-Z]+__/);
  });

  it('lays a package out for the monorepo with --workspace', () => {
    const dir = join(work, 'repo/packages/harnesses/my-probe');
    mkdirSync(join(work, 'repo'), { recursive: true });
    writeFileSync(join(work, 'repo/LICENSE'), 'L\n');
    const made = scaffoldPackage({ kind: 'harness', name: 'my_probe', dir, workspaceRoot: join(work, 'repo') });
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    expect(pkg.dependencies).toEqual({ '@troupe/harness-kit': 'workspace:*', '@troupe/verifiers': 'workspace:*' });
    expect(pkg.exports['.']['@troupe/source']).toBe('./src/index.ts');
    expect(readFileSync(join(dir, 'tsconfig.json'), 'utf8')).toContain('"../../../tooling/tsconfig/base.json"');
    expect(made.files).toContain('LICENSE');
    expect(made.files).not.toContain('.gitignore');
  });

  it('refuses a non-empty directory naming it, a bad name and an unknown kind (exit 2)', async () => {
    const taken = join(work, 'taken');
    mkdirSync(taken);
    writeFileSync(join(taken, 'keep.txt'), 'x');
    const busy = await run(['init', 'env', 'fine', '--dir', taken], work);
    expect(busy.code).toBe(2);
    expect(busy.stderr).toContain(`${taken} exists and is not empty`);
    expect(readdirSync(taken)).toEqual(['keep.txt']);
    const bad = await run(['init', 'harness', 'My Agent!', '--dir', join(work, 'bad')], work);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('bad name "My Agent!"');
    expect(existsSync(join(work, 'bad'))).toBe(false);
    const kind = await run(['init', 'widget', 'x'], work);
    expect(kind.code).toBe(2);
    expect(kind.stderr).toContain('unknown kind "widget"');
  }, 60_000);

  it('--help shows every option', async () => {
    const help = await run(['init', '--help'], work);
    expect(help.code).toBe(0);
    expect(help.stdout).toBe(INIT_HELP);
    for (const option of ['-d, --dir D', '--workspace', '-h, --help', 'env', 'harness', 'runtime'])
      expect(help.stdout).toContain(option);
  }, 60_000);

  describe('scaffolds that load', () => {
    let server: ScriptedModelServer;
    beforeAll(async () => {
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
      const child = spawn(process.execPath, ['--import', join(root, 'node_modules/tsx/dist/loader.mjs'), script], {
        cwd: work,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let stdout = '';
      child.stdout.on('data', (d) => (stdout += d));
      expect(await new Promise((done) => child.on('close', done))).toBe(0);
      expect(JSON.parse(stdout)).toEqual({ harness: 'probe_plugin', failed: [], runtime: 'probe_plugin', echoed: 'hi\n' });
    }, 120_000);
  });
});
