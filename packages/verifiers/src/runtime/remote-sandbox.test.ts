import { describe, expect, it } from 'vitest';
import { SandboxError } from '../errors/index.ts';
import type { CreationSlot } from './creation-limiter.ts';
import { OpenSandboxes, RemoteSandbox, remoteSandboxError } from './remote-sandbox.ts';
import type { ExecOptions, ExecResult } from './runtime.ts';

/** A remote sandbox whose provider is a list of calls (and an optional failing delete). */
class RecordingSandbox extends RemoteSandbox {
  readonly runtime = 'fake';
  readonly id = 'sb-1';
  readonly workdir = '/home/user';
  readonly calls: string[] = [];

  constructor(
    slot: CreationSlot,
    private readonly deleteError?: Error,
  ) {
    super(slot);
  }

  /** Answers with the shell line the provider would have been sent. */
  async exec(command: string | string[], options: ExecOptions = {}): Promise<ExecResult> {
    const line = this.execLine(command, options);
    return { exitCode: 0, stdout: line, stderr: '', timedOut: false, durationMs: 0 };
  }
  async readFile(path: string): Promise<Uint8Array> {
    this.calls.push(`read ${this.resolve(path)}`);
    return new Uint8Array();
  }
  async writeFile(): Promise<void> {}
  async alive(): Promise<boolean> {
    return !this.stopped;
  }
  override stop(): Promise<void> {
    this.calls.push('stop');
    return super.stop();
  }
  protected async destroy(): Promise<void> {
    this.calls.push('destroy');
    if (this.deleteError) throw this.deleteError;
  }
}

function countingSlot(): CreationSlot & { released: number } {
  const slot = {
    released: 0,
    release() {
      slot.released += 1;
    },
  };
  return slot;
}

describe('RemoteSandbox', () => {
  it('resolves paths against the workdir and refuses an empty one', async () => {
    const sandbox = new RecordingSandbox(countingSlot());
    await sandbox.readFile('out/a.txt');
    await sandbox.readFile('/etc/hosts');
    expect(sandbox.calls).toEqual(['read /home/user/out/a.txt', 'read /etc/hosts']);
    await expect(sandbox.readFile('')).rejects.toThrow(/empty sandbox path/);
  });

  it('starts every exec the same way: one shell line, refused when already aborted (when stopped: below)', async () => {
    const sandbox = new RecordingSandbox(countingSlot());
    expect((await sandbox.exec('echo "$HOME"')).stdout).toBe('echo "$HOME"');
    expect((await sandbox.exec(['printf', '%s', "it's a b"])).stdout).toBe(`printf %s 'it'\\''s a b'`);
    const abort = new AbortController();
    abort.abort(new Error('cancelled by the caller'));
    await expect(sandbox.exec('true', { signal: abort.signal })).rejects.toThrow('cancelled by the caller');
  });

  it('refuses a host loopback URL and passes any other through', async () => {
    const sandbox = new RecordingSandbox(countingSlot());
    for (const url of ['http://127.0.0.1:8000/v1', 'http://localhost:1/v1', 'http://[::1]:2/v1']) {
      await expect(sandbox.reachHost(url)).rejects.toThrow(/fake sandbox sb-1 cannot reach the host's loopback/);
    }
    expect(await sandbox.reachHost('https://relay.example.com/v1')).toBe('https://relay.example.com/v1');
  });

  it('deletes once however often stop is called, then refuses commands', async () => {
    const slot = countingSlot();
    const sandbox = new RecordingSandbox(slot);
    await Promise.all([sandbox.stop(), sandbox.stop()]);
    await sandbox.stop();
    expect(sandbox.calls.filter((call) => call === 'destroy')).toEqual(['destroy']);
    expect(slot.released).toBe(1);
    expect(await sandbox.alive()).toBe(false);
    await expect(sandbox.exec('true')).rejects.toThrow(/sandbox sb-1 is stopped \(exec\)/);
  });

  it('frees the slot even when the delete fails, and reports the failure', async () => {
    const slot = countingSlot();
    const sandbox = new RecordingSandbox(slot, new Error('gone wrong'));
    await expect(sandbox.stop()).rejects.toThrow(/gone wrong/);
    expect(slot.released).toBe(1);
  });
});

describe('remoteSandboxError', () => {
  it('names the operation, runtime and sandbox, keeping the cause; a SandboxError passes through', () => {
    const cause = new Error('HTTP 502');
    const error = remoteSandboxError({ runtime: 'e2b', operation: 'exec', id: 'sb-9', error: cause });
    expect(error).toBeInstanceOf(SandboxError);
    expect(error.message).toBe('exec failed in e2b sandbox sb-9: HTTP 502');
    expect(error.cause).toBe(cause);
    const original = new SandboxError('already one');
    expect(remoteSandboxError({ runtime: 'e2b', operation: 'exec', id: 'sb-9', error: original })).toBe(original);
  });
});

describe('OpenSandboxes', () => {
  it('stops the open sandboxes on stopAll and forgets each one whose slot was released', async () => {
    const open = new OpenSandboxes<RecordingSandbox>();
    const slots = [countingSlot(), countingSlot()];
    const [first, second] = slots.map((slot) => open.add(slot, (held) => new RecordingSandbox(held)));
    await first?.stop();
    expect(slots[0]?.released).toBe(1);
    await open.stopAll();
    expect(first?.calls).toEqual(['stop', 'destroy']);
    expect(second?.calls).toEqual(['stop', 'destroy']);
    expect(slots.map((slot) => slot.released)).toEqual([1, 1]);
  });

  it('waits for every stop even when one fails', async () => {
    const open = new OpenSandboxes<RecordingSandbox>();
    const failing = open.add(countingSlot(), (held) => new RecordingSandbox(held, new Error('boom')));
    const fine = open.add(countingSlot(), (held) => new RecordingSandbox(held));
    await expect(open.stopAll()).resolves.toBeUndefined();
    expect(failing.calls).toEqual(['stop', 'destroy']);
    expect(fine.calls).toEqual(['stop', 'destroy']);
  });
});
