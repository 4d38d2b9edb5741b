import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { setPluginSearchPaths } from '../agent/plugins.ts';
import { importEnv, isEnvModulePath, loadEnvDefinition } from './registry.ts';

const body = (id: string) => `{ id: '${id}', roles: { solver: {} }, async run(task, agents) { await agents.solver.run(task); } }`;

function folder(): string {
  return mkdtempSync(join(tmpdir(), 'troupe-env-module-'));
}

describe('loadEnvDefinition', () => {
  afterEach(() => setPluginSearchPaths([]));

  it('has the built-in envs in the registry', async () => {
    expect((await loadEnvDefinition('best-of-n')).id).toBe('best-of-n');
  });

  it('loads the default export of a .mjs module', async () => {
    const dir = folder();
    writeFileSync(join(dir, 'my-env.mjs'), `export default ${body('from-mjs')};\n`);
    const definition = await loadEnvDefinition(join(dir, 'my-env.mjs'));
    expect(definition.id).toBe('from-mjs');
    expect(Object.keys(definition.roles)).toEqual(['solver']);
  });

  it('loads the `env` export of a .ts module (type annotations and all)', async () => {
    const dir = folder();
    writeFileSync(
      join(dir, 'my-env.ts'),
      `const id: string = 'from-ts';\nexport const env = ${body('from-ts').replace("'from-ts'", 'id')};\n`,
    );
    expect((await loadEnvDefinition(join(dir, 'my-env.ts'))).id).toBe('from-ts');
  });

  it('refuses a module without a defineEnv definition, naming the file', async () => {
    const dir = folder();
    writeFileSync(join(dir, 'empty.mjs'), 'export const x = 1;\n');
    await expect(loadEnvDefinition(join(dir, 'empty.mjs'))).rejects.toThrow(/empty\.mjs: expected a default export/);
    await expect(loadEnvDefinition(join(dir, 'missing.mjs'))).rejects.toThrow(/does not exist/);
  });

  it('resolves an installed @troupe/env-<id> package by id', async () => {
    const dir = folder();
    const pkg = join(dir, 'node_modules', '@troupe', 'env-coin-flip');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(
      join(pkg, 'package.json'),
      JSON.stringify({ name: '@troupe/env-coin-flip', type: 'module', exports: './index.js' }),
    );
    writeFileSync(join(pkg, 'index.js'), `export default ${body('coin-flip')};\n`);
    setPluginSearchPaths([dir]);
    expect((await loadEnvDefinition('coin-flip')).id).toBe('coin-flip');
  });

  it('names the package it looked for when an id is unknown', async () => {
    await expect(loadEnvDefinition('no-such-env')).rejects.toThrow(/npm install @troupe\/env-no-such-env\)$/);
  });

  it('importEnv: one loader for .ts, .mts, .mjs and a package named in full, relative to baseDir, with the module exports', async () => {
    const dir = folder();
    writeFileSync(
      join(dir, 'a.mts'),
      `const id: string = 'from-mts';\nexport default ${body('x').replace("'x'", 'id')};\nexport const training = { marker: 1 };\n`,
    );
    writeFileSync(join(dir, 'b.ts'), `export const only = ${body('from-named')};\n`);
    writeFileSync(join(dir, 'c.mjs'), `export default ${body('from-mjs')};\n`);
    const pkg = join(dir, 'node_modules', '@acme', 'dice');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: '@acme/dice', type: 'module', exports: './index.js' }));
    writeFileSync(join(pkg, 'index.js'), `export default ${body('dice')};\n`);
    setPluginSearchPaths([dir]);
    const mts = await importEnv('./a.mts', { baseDir: dir });
    expect(mts.definition.id).toBe('from-mts');
    expect(mts.module?.training).toEqual({ marker: 1 });
    expect(mts.where).toBe(join(dir, 'a.mts'));
    expect((await importEnv('./b.ts', { baseDir: dir })).definition.id).toBe('from-named');
    expect((await importEnv('./c.mjs', { baseDir: dir })).definition.id).toBe('from-mjs');
    expect((await importEnv('@acme/dice')).definition.id).toBe('dice');
    expect((await importEnv('single-agent')).module).toBeNull();
  });

  it("keeps the module's own error, with its file and line, as the cause of the ConfigError", async () => {
    const dir = folder();
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
    writeFileSync(join(dir, 'boom.ts'), `const n: number = 1;\nthrow new RangeError('boom at import ' + n);\n`);
    const error = (await importEnv(join(dir, 'boom.ts')).catch((e: unknown) => e)) as Error & { cause?: Error };
    expect(error.name).toBe('ConfigError');
    expect(error.message).toMatch(/boom\.ts: boom at import 1/);
    expect(error.cause).toBeInstanceOf(RangeError);
    // (The line is mapped by Node's source maps, which vitest's stack formatting bypasses; the consumer test checks it.)
    expect(error.cause?.stack).toMatch(/boom\.ts/);
  });

  it('tells module paths from ids', () => {
    expect(isEnvModulePath('./my-env.ts')).toBe(true);
    expect(isEnvModulePath('/abs/env.mjs')).toBe(true);
    expect(isEnvModulePath('my-env.mjs')).toBe(true);
    expect(isEnvModulePath('best-of-n')).toBe(false);
  });
});
