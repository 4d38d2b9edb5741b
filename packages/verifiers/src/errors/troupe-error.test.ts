import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  ConfigError,
  EngineError,
  errorRecord,
  InterceptionError,
  MalformedReplyError,
  ProviderError,
  SandboxError,
  TrainerError,
  TroupeError,
  WireError,
  WireRequestError,
} from './index.ts';

type ErrorsModule = typeof import('./index.ts');

/**
 * A second copy of the package's error classes, as when two versions of `@troupe/verifiers` are
 * installed side by side: the same sources bundled into a module of its own and loaded from there.
 */
async function duplicateCopy(): Promise<ErrorsModule> {
  const outfile = join(mkdtempSync(join(tmpdir(), 'troupe-errors-copy-')), 'errors.mjs');
  await build({
    entryPoints: [join(import.meta.dirname, 'index.ts')],
    bundle: true,
    format: 'esm',
    platform: 'node',
    outfile,
    logLevel: 'silent',
  });
  return (await import(pathToFileURL(outfile).href)) as ErrorsModule;
}

describe('TroupeError kinds', () => {
  let copy: ErrorsModule;
  beforeAll(async () => {
    copy = await duplicateCopy();
  });

  it('loads a real second copy (its classes are not ours)', () => {
    expect(copy.ConfigError).not.toBe(ConfigError);
    expect(new copy.ConfigError('x')).not.toBeInstanceOf(ConfigError);
  });

  it('isInstance matches an error of the same kind made by a duplicate copy', () => {
    expect(ConfigError.isInstance(new copy.ConfigError('bad field'))).toBe(true);
    expect(TroupeError.isInstance(new copy.SandboxError('gone'))).toBe(true);
    expect(WireRequestError.isInstance(new copy.WireRequestError('bad body'))).toBe(true);
    expect(MalformedReplyError.isInstance(new copy.MalformedReplyError('not JSON'))).toBe(true);
    expect(InterceptionError.isInstance(new copy.InterceptionError('closed'))).toBe(true);
  });

  it('isInstance of a kind refuses the other kinds, in either copy', () => {
    expect(ConfigError.isInstance(new SandboxError('x'))).toBe(false);
    expect(ConfigError.isInstance(new copy.SandboxError('x'))).toBe(false);
    expect(SandboxError.isInstance(new ProviderError('x'))).toBe(false);
    expect(WireRequestError.isInstance(new MalformedReplyError('x'))).toBe(false);
    expect(TroupeError.isInstance(new Error('plain'))).toBe(false);
    expect(ConfigError.isInstance({ name: 'ConfigError', message: 'look-alike' })).toBe(false);
    expect(ConfigError.isInstance(null)).toBe(false);
  });

  it('keeps the deprecated static is() as the same check', () => {
    expect(ProviderError.is(new copy.ProviderError('x'))).toBe(true);
    expect(ProviderError.is(new ConfigError('x'))).toBe(false);
  });

  it('has a stable name, a cause, and a status where the kind has one', () => {
    const cause = new Error('root');
    const error = new SandboxError('could not create', { cause });
    expect(error.name).toBe('SandboxError');
    expect(error.cause).toBe(cause);
    const wire = new WireRequestError('too big', { status: 413, param: 'messages' });
    expect([wire.name, wire.status, wire.statusCode, wire.param]).toEqual(['WireRequestError', 413, 413, 'messages']);
    expect(new MalformedReplyError('m').name).toBe('MalformedReplyError');
    expect(new InterceptionError('i').name).toBe('InterceptionError');
    expect(errorRecord(new copy.ConfigError('bad'))).toMatchObject({ type: 'ConfigError', message: 'bad' });
  });

  it('records the user error a wrapper carries as its cause: the user stack follows as "Caused by:"', () => {
    function userRewardFunction(): never {
      throw new TypeError('reply.split is not a function');
    }
    let user: Error | undefined;
    try {
      userRewardFunction();
    } catch (error) {
      user = error as Error;
    }
    const record = errorRecord(new copy.RewardError(`exact: ${user?.message}`, { cause: user }));
    expect(record.type).toBe('RewardError');
    expect(record.stack).toMatch(/^RewardError: exact: reply\.split is not a function\n/);
    expect(record.stack).toMatch(
      /\nCaused by: TypeError: reply\.split is not a function\n\s+at userRewardFunction \(.*troupe-error\.test\.ts:\d+:\d+\)/,
    );
    expect(errorRecord(new Error('plain')).stack).not.toContain('Caused by');
  });
});

describe('structured fields of the error kinds', () => {
  it('a ConfigError carries the key path of the field, and every issue when there were several', () => {
    const one = new ConfigError('policy.d_model: expected a positive integer', { path: 'policy.d_model' });
    expect([one.name, one.path, one.issues]).toEqual(['ConfigError', 'policy.d_model', undefined]);
    const issues = [
      { path: 'max_steps', message: 'too small' },
      { path: 'train.source[0].ratio', message: 'expected a number' },
    ];
    const many = new ConfigError('max_steps: too small; train.source[0].ratio: expected a number', { issues });
    expect(many.path).toBe('max_steps');
    expect(many.issues).toEqual(issues);
    expect(new ConfigError('no field').path).toBeUndefined();
  });

  it('wire, trainer and engine errors are TroupeErrors of their own kind, with their fields', async () => {
    const copy = await duplicateCopy();
    const wire = new copy.WireError('samples[2].mask: 3 entries for 4 tokens', { path: 'samples[2].mask' });
    expect(WireError.isInstance(wire) && TroupeError.isInstance(wire)).toBe(true);
    expect(TrainerError.isInstance(wire)).toBe(false);
    expect(wire.path).toBe('samples[2].mask');
    const trainer = new TrainerError('sequence 0 is over the context', { step: 7 });
    expect([trainer.name, trainer.step, EngineError.isInstance(trainer)]).toEqual(['TrainerError', 7, false]);
    const engine = new copy.EngineError('cannot load', { engine: 'onnxruntime-node' });
    expect([EngineError.isInstance(engine), engine.engine]).toEqual([true, 'onnxruntime-node']);
    expect(errorRecord(engine)).toMatchObject({ type: 'EngineError', message: 'cannot load' });
  });
});
