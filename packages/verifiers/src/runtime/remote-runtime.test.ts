import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { SandboxError } from '../errors/index.ts';
import type { CreationSlot } from './creation-limiter.ts';
import { ApiKeyRuntimeOptionsSchema, apiKeyRuntimeEntry, RemoteRuntime, runtimeOptionsTable } from './remote-runtime.ts';
import { RemoteSandbox } from './remote-sandbox.ts';
import type { ExecResult, RuntimeCapabilities, SandboxOptions } from './runtime.ts';

const FakeOptionsSchema = ApiKeyRuntimeOptionsSchema.extend({ region: z.string().optional() }).strict();
type FakeOptions = z.infer<typeof FakeOptionsSchema>;

class FakeSandbox extends RemoteSandbox {
  readonly runtime = 'fake';
  readonly workdir = '/w';
  destroyed = false;
  constructor(
    readonly id: string,
    slot: CreationSlot,
  ) {
    super(slot);
  }
  async exec(): Promise<ExecResult> {
    return { exitCode: 0, stdout: '', stderr: '', timedOut: false, durationMs: 0 };
  }
  async readFile(): Promise<Uint8Array> {
    return new Uint8Array();
  }
  async writeFile(): Promise<void> {}
  async alive(): Promise<boolean> {
    return !this.stopped;
  }
  protected async destroy(): Promise<void> {
    this.destroyed = true;
  }
}

/** A provider whose next creations fail with the queued errors. */
class FakeRuntime extends RemoteRuntime<FakeOptions, FakeSandbox> {
  static readonly id = 'fake';
  static readonly optionsSchema = FakeOptionsSchema;
  readonly capabilities: RuntimeCapabilities = { container: true, networkIsolation: true };
  readonly failures: unknown[] = [];
  readonly made: FakeSandbox[] = [];
  readonly seen: SandboxOptions[] = [];

  constructor(options: FakeOptions) {
    super({ id: 'fake', schema: FakeOptionsSchema, options });
  }

  protected async provision(options: SandboxOptions): Promise<(slot: CreationSlot) => FakeSandbox> {
    this.seen.push(options);
    const failure = this.failures.shift();
    if (failure) throw failure;
    return (slot) => {
      const sandbox = new FakeSandbox(`sb-${this.made.length + 1}`, slot);
      this.made.push(sandbox);
      return sandbox;
    };
  }
}

describe('RemoteRuntime', () => {
  it('parses its options with the schema, naming <id>.<field>', () => {
    expect(() => new FakeRuntime({} as never)).toThrow(/fake\.apiKey/);
    expect(new FakeRuntime({ apiKey: 'k' }).id).toBe('fake');
  });

  it('parses sandbox options and hands them to provision, the env without secret-looking names', async () => {
    const runtime = new FakeRuntime({ apiKey: 'k' });
    await expect(runtime.createSandbox({ cpu: -1 })).rejects.toThrow(/sandbox\.cpu/);
    await runtime.createSandbox({ image: 'img', workdir: '/x' });
    await runtime.createSandbox({ env: { LANG: 'C', OPENAI_API_KEY: 'sk', GH_TOKEN: 't', db_secret: 's' } });
    expect(runtime.seen).toEqual([{ image: 'img', workdir: '/x', env: {} }, { env: { LANG: 'C' } }]);
    await runtime.close();
  });

  it('frees the slot of a failed creation and names the runtime in a foreign error', async () => {
    const runtime = new FakeRuntime({ apiKey: 'k', maxConcurrent: 1, acquireTimeoutMs: 2000 });
    runtime.failures.push(new Error('quota exceeded'));
    await expect(runtime.createSandbox()).rejects.toMatchObject({
      name: 'SandboxError',
      message: 'create failed in fake sandbox new: quota exceeded',
    });
    const own = new SandboxError('pod never ran');
    runtime.failures.push(own);
    await expect(runtime.createSandbox()).rejects.toBe(own);
    // Both slots were released: with maxConcurrent 1 this create would otherwise time out.
    const sandbox = await runtime.createSandbox();
    await sandbox.stop();
    await runtime.createSandbox();
    await runtime.close();
  });

  it('close stops every sandbox still open, and a stopped one frees its slot', async () => {
    const runtime = new FakeRuntime({ apiKey: 'k', maxConcurrent: 2, acquireTimeoutMs: 2000 });
    const first = await runtime.createSandbox();
    await runtime.createSandbox();
    await first.stop();
    await runtime.createSandbox();
    await runtime.close();
    expect(runtime.made.map((sandbox) => sandbox.destroyed)).toEqual([true, true, true]);
  });
});

describe('apiKeyRuntimeEntry', () => {
  const createRuntime = apiKeyRuntimeEntry({ runtime: FakeRuntime, defaultKeyVar: 'FAKE_API_KEY' });

  it('reads the key from the default or the named variable of the given environment', () => {
    expect(createRuntime({}, { env: { FAKE_API_KEY: 'a' } })).toBeInstanceOf(FakeRuntime);
    expect(createRuntime({ apiKeyVar: 'OTHER' }, { env: { OTHER: 'b' } })).toBeInstanceOf(FakeRuntime);
    expect(() => createRuntime({ apiKeyVar: 'OTHER' }, { env: { FAKE_API_KEY: 'a' } })).toThrow(
      'runtime (fake): set the API key in OTHER (or runtime.apiKeyVar)',
    );
  });

  it('names the runtime in option errors', () => {
    expect(() => createRuntime({ region: 3 }, { env: { FAKE_API_KEY: 'a' } })).toThrow(/runtime \(fake\)\.region/);
    expect(() => createRuntime('nope')).toThrow('runtime (fake): options must be a table');
  });

  it('runtimeOptionsTable refuses anything but a table', () => {
    expect(runtimeOptionsTable({ a: 1 }, 'x')).toEqual({ a: 1 });
    expect(() => runtimeOptionsTable([], 'x')).toThrow('runtime (x): options must be a table');
    expect(() => runtimeOptionsTable(null, 'x')).toThrow('runtime (x): options must be a table');
  });
});
