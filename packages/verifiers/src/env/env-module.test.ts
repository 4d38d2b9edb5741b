import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { setPluginSearchPaths } from '../agent/plugins.ts';
import { isEnvModulePath, loadEnvDefinition } from './registry.ts';

const body = (id: string) => `{ id: '${id}', roles: { solver: {} }, async run(task, agents) { await agents.solver.run(task); } }`;

function folder(): string {
  return mkdtempSync(join(tmpdir(), 'troupe-env-module-'));
}

describe('loadEnvDefinition', () => {
  afterEach(() => setPluginSearchPaths([]));

  it('has kuhn-poker in the registry', async () => {
    expect((await loadEnvDefinition('kuhn-poker')).id).toBe('kuhn-poker');
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
    await expect(loadEnvDefinition('no-such-env')).rejects.toThrow(/@troupe\/env-no-such-env/);
  });

  it('tells module paths from ids', () => {
    expect(isEnvModulePath('./my-env.ts')).toBe(true);
    expect(isEnvModulePath('/abs/env.mjs')).toBe(true);
    expect(isEnvModulePath('my-env.mjs')).toBe(true);
    expect(isEnvModulePath('kuhn-poker')).toBe(false);
  });
});
