import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TimeoutError, TroupeError } from '../errors/troupe-error.ts';
import type { Runtime, Sandbox, SandboxOptions } from '../runtime/runtime.ts';

/** What {@link describeSandboxConformance} needs to test one runtime. */
export interface SandboxConformanceOptions {
  /** Shown in the test names (`docker`, `local`, …). */
  name: string;
  /** Makes the runtime under test; closed after the suite. */
  makeRuntime: () => Runtime | Promise<Runtime>;
  /** Options of every sandbox the suite creates (an image, say); the suite adds its own labels. */
  sandboxOptions?: SandboxOptions;
  /**
   * Lists what the runtime left behind (directories, containers, pods) for sandboxes carrying
   * `labels`; must be empty once every sandbox stopped. Omit when the runtime cannot tell.
   */
  inspectLeftovers?: (labels: Record<string, string>) => Promise<string[]>;
  /** A reason to skip the whole suite (such as "TROUPE_DOCKER_HOST is not set"). */
  skip?: string | false;
  /**
   * Whether the sandbox can reach the host's loopback (default `true`); a remote runtime's sandbox
   * cannot, and must then refuse a loopback URL with a `SandboxError` rather than return one.
   */
  reachesHostLoopback?: boolean;
}

/** Size of the large-output test: more than 5 MB on stdout. */
const LARGE_OUTPUT_BYTES = 6_000_000;

const isSandboxError = (error: unknown) => TroupeError.isInstance(error) && error.name === 'SandboxError';

/** Resolves to 'refused' when the promise rejects, else to the value. */
async function outcome<T>(promise: Promise<T>): Promise<T | 'refused'> {
  try {
    return await promise;
  } catch {
    return 'refused';
  }
}

/**
 * Registers the vitest suite every runtime passes: exec, exit codes, separate stderr, stdin,
 * environment, large output, binary files, directory upload / download, timeouts that kill a
 * whole process tree (a child ignoring SIGTERM and a grandchild), abort, isolation between
 * concurrent sandboxes, refused path escapes, and cleanup. Commands only use POSIX `sh` and
 * busybox tools, so a busybox image suffices.
 */
export function describeSandboxConformance(options: SandboxConformanceOptions): void {
  // Long: the suite itself, one `it` per guarantee in the order the doc comment lists them.
  const suite = options.skip ? describe.skip : describe;
  const title = options.skip
    ? `sandbox conformance: ${options.name} (skipped: ${options.skip})`
    : `sandbox conformance: ${options.name}`;

  suite(title, () => {
    const run = randomBytes(4).toString('hex');
    const labels = { 'troupe.conformance': run };
    let runtime: Runtime;
    let hostDir: string;
    const created: Sandbox[] = [];

    const makeSandbox = async (extra: SandboxOptions = {}): Promise<Sandbox> => {
      const sandbox = await runtime.createSandbox({
        ...options.sandboxOptions,
        ...extra,
        labels: { ...options.sandboxOptions?.labels, ...labels },
      });
      created.push(sandbox);
      return sandbox;
    };
    const text = (bytes: Uint8Array) => Buffer.from(bytes).toString('utf8');

    /** Pids (inside the sandbox) that still run, read from /proc (zombies count as dead). */
    const livePids = async (sandbox: Sandbox, pidFile: string): Promise<string[]> => {
      for (let attempt = 0; ; attempt++) {
        const check = await sandbox.exec(
          `for p in $(cat ${pidFile}); do s=$(cut -d' ' -f3 /proc/$p/stat 2>/dev/null); if [ -n "$s" ] && [ "$s" != Z ]; then echo $p; fi; done`,
        );
        const live = check.stdout.split('\n').filter(Boolean);
        if (live.length === 0 || attempt >= 20) return live;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };

    beforeAll(async () => {
      runtime = await options.makeRuntime();
      hostDir = await mkdtemp(join(tmpdir(), 'troupe-conformance-host-'));
    });

    afterAll(async () => {
      await Promise.allSettled(created.map((sandbox) => sandbox.stop()));
      await runtime?.close?.();
      if (hostDir) await rm(hostDir, { recursive: true, force: true });
    });

    it('runs a shell command and returns its stdout and exit code', async () => {
      const sandbox = await makeSandbox();
      const result = await sandbox.exec('echo hello');
      expect(result).toMatchObject({ exitCode: 0, stdout: 'hello\n', stderr: '', timedOut: false });
      expect(result.durationMs).toBeGreaterThanOrEqual(0);
    });

    it('runs an argv without a shell re-parsing its arguments', async () => {
      const sandbox = await makeSandbox();
      const result = await sandbox.exec(['sh', '-c', 'printf "%s|%s" "$1" "$2"', 'sh', 'a b', '$HOME;x']);
      expect(result.stdout).toBe('a b|$HOME;x');
    });

    it('reports non-zero exit codes', async () => {
      const sandbox = await makeSandbox();
      expect((await sandbox.exec('exit 7')).exitCode).toBe(7);
      expect((await sandbox.exec('false')).exitCode).toBe(1);
      expect((await sandbox.exec('this-command-does-not-exist-anywhere')).exitCode).toBe(127);
    });

    it('keeps stderr apart from stdout', async () => {
      const sandbox = await makeSandbox();
      const result = await sandbox.exec('echo out; echo err >&2; echo out2');
      expect(result.stdout).toBe('out\nout2\n');
      expect(result.stderr).toBe('err\n');
    });

    it('feeds stdin when given and closes it otherwise', async () => {
      const sandbox = await makeSandbox();
      expect((await sandbox.exec('cat', { stdin: 'abc\ndef' })).stdout).toBe('abc\ndef');
      const closed = await sandbox.exec('cat; echo done', { timeoutMs: 20_000 });
      expect(closed).toMatchObject({ timedOut: false, stdout: 'done\n' });
    });

    it('passes environment variables, and keeps credential-like names out of the sandbox env', async () => {
      const sandbox = await makeSandbox({ env: { TROUPE_PLAIN: 'plain', TROUPE_API_KEY: 'leaked' } });
      const result = await sandbox.exec('echo "$TROUPE_PLAIN|$TROUPE_API_KEY|$PER_CALL|$PER_CALL_TOKEN"', {
        env: { PER_CALL: 'call', PER_CALL_TOKEN: 'explicit' },
      });
      expect(result.stdout).toBe('plain||call|explicit\n');
    });

    it('runs in the workdir, and relative file paths are relative to it', async () => {
      const sandbox = await makeSandbox();
      expect((await sandbox.exec('pwd')).stdout.trim()).toBe(sandbox.workdir);
      await sandbox.writeFile('relative.txt', 'here');
      expect((await sandbox.exec('cat relative.txt')).stdout).toBe('here');
      await sandbox.writeFile('nested/dir/file.txt', 'deep');
      expect((await sandbox.exec('cat file.txt', { cwd: 'nested/dir' })).stdout).toBe('deep');
    });

    it(`returns large output intact (${LARGE_OUTPUT_BYTES} bytes)`, async () => {
      const sandbox = await makeSandbox();
      const result = await sandbox.exec(`yes 0123456789abcdef | head -c ${LARGE_OUTPUT_BYTES}; echo tail >&2`);
      expect(result.exitCode).toBe(0);
      expect(result.stdout.length).toBe(LARGE_OUTPUT_BYTES);
      expect(result.stdout.slice(0, 34)).toBe('0123456789abcdef\n0123456789abcdef\n');
      expect(result.stderr).toBe('tail\n');
    });

    it('streams output chunks while the command runs', async () => {
      const sandbox = await makeSandbox();
      const chunks: string[] = [];
      const result = await sandbox.exec('echo one; echo two >&2; echo three', { onStdout: (chunk) => chunks.push(chunk) });
      expect(chunks.join('')).toBe(result.stdout);
      expect(result.stdout).toBe('one\nthree\n');
    });

    it('round-trips binary files byte for byte, with the file mode', async () => {
      const sandbox = await makeSandbox();
      const every = Uint8Array.from({ length: 256 }, (_, index) => index);
      const random = new Uint8Array(randomBytes(1_500_000));
      await sandbox.writeFile('bytes.bin', every);
      await sandbox.writeFile('/tmp/random.bin', random);
      expect(Buffer.from(await sandbox.readFile('bytes.bin')).equals(Buffer.from(every))).toBe(true);
      expect(Buffer.from(await sandbox.readFile('/tmp/random.bin')).equals(Buffer.from(random))).toBe(true);
      expect((await sandbox.exec('wc -c < bytes.bin')).stdout.trim()).toBe('256');
      await sandbox.writeFile('script.sh', '#!/bin/sh\necho ran "$1"\n', { mode: 0o755 });
      expect((await sandbox.exec('./script.sh ok')).stdout).toBe('ran ok\n');
      const written = await sandbox.exec('head -c 4 /dev/urandom > made.bin; printf "\\377\\000\\001" >> made.bin');
      expect(written.exitCode).toBe(0);
      const made = await sandbox.readFile('made.bin');
      expect(made.length).toBe(7);
      expect([...made.slice(4)]).toEqual([255, 0, 1]);
    });

    it('refuses to read a file that does not exist, with a SandboxError', async () => {
      const sandbox = await makeSandbox();
      const error = await sandbox.readFile('no/such/file').catch((caught: unknown) => caught);
      expect(isSandboxError(error)).toBe(true);
    });

    it('uploads and downloads a directory tree', async () => {
      const sandbox = await makeSandbox();
      const source = join(hostDir, 'upload-source');
      const binary = randomBytes(70_000);
      await mkdir(join(source, 'sub', 'deeper'), { recursive: true });
      await writeFile(join(source, 'a.txt'), 'alpha');
      await writeFile(join(source, 'sub', 'b.bin'), binary);
      await writeFile(join(source, 'sub', 'deeper', 'c.txt'), 'gamma');
      await sandbox.upload(source, 'uploaded');
      expect((await sandbox.exec('cat uploaded/a.txt uploaded/sub/deeper/c.txt')).stdout).toBe('alphagamma');
      expect((await sandbox.exec('wc -c < uploaded/sub/b.bin')).stdout.trim()).toBe('70000');

      await sandbox.exec('echo made-inside > uploaded/sub/new.txt');
      const target = join(hostDir, 'download-target');
      await sandbox.download('uploaded', target);
      expect(await readFile(join(target, 'a.txt'), 'utf8')).toBe('alpha');
      expect((await readFile(join(target, 'sub', 'b.bin'))).equals(binary)).toBe(true);
      expect(await readFile(join(target, 'sub', 'new.txt'), 'utf8')).toBe('made-inside\n');

      await writeFile(join(hostDir, 'single.txt'), 'one file');
      await sandbox.upload(join(hostDir, 'single.txt'), 'copies/single.txt');
      expect(text(await sandbox.readFile('copies/single.txt'))).toBe('one file');
      await sandbox.download('copies/single.txt', join(hostDir, 'single-back.txt'));
      expect(await readFile(join(hostDir, 'single-back.txt'), 'utf8')).toBe('one file');
    });

    it('kills the whole process tree on timeout, including a child that ignores SIGTERM and a grandchild', async () => {
      const sandbox = await makeSandbox();
      const result = await sandbox.exec(
        [
          'rm -f pids',
          `sh -c 'trap "" TERM; sleep 60 & echo $! >> pids; wait' & echo $! >> pids`,
          `sh -c 'sh -c "sleep 61 & echo \\$! >> pids; wait" & wait' & echo $! >> pids`,
          'echo started',
          'sleep 62',
        ].join('\n'),
        { timeoutMs: 1500 },
      );
      expect(result.timedOut).toBe(true);
      expect(result.exitCode).not.toBe(0);
      expect(result.stdout).toBe('started\n');
      expect((await sandbox.exec('wc -l < pids')).stdout.trim()).toBe('4');
      expect(await livePids(sandbox, 'pids')).toEqual([]);
      expect((await sandbox.exec('echo still usable')).stdout).toBe('still usable\n');
    });

    it('kills the command when the abort signal fires, and rejects', async () => {
      const sandbox = await makeSandbox();
      const controller = new AbortController();
      const running = sandbox.exec('echo $$ > abort-pid; sleep 60 & echo $! >> abort-pid; wait', { signal: controller.signal });
      for (let attempt = 0; attempt < 100; attempt++) {
        if ((await sandbox.exec('cat abort-pid 2>/dev/null | wc -l')).stdout.trim() === '2') break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      controller.abort(new TimeoutError('stop it'));
      await expect(running).rejects.toThrow();
      expect(await livePids(sandbox, 'abort-pid')).toEqual([]);
    });

    it('keeps concurrent sandboxes apart', async () => {
      const [first, second] = await Promise.all([makeSandbox(), makeSandbox()]);
      // bare-error: Promise.all of two sandboxes yields two
      if (!first || !second) throw new Error('unreachable');
      expect(first.id).not.toBe(second.id);
      await Promise.all([first.writeFile('same.txt', 'first'), second.writeFile('same.txt', 'second')]);
      await first.writeFile('only-first.txt', 'mine');
      const results = await Promise.all([
        first.exec('cat same.txt'),
        second.exec('cat same.txt'),
        second.exec('cat only-first.txt'),
        first.exec('sleep 0.2; echo first-done'),
        second.exec('sleep 0.2; echo second-done'),
      ]);
      expect(results.map((result) => result.stdout)).toEqual(['first', 'second', '', 'first-done\n', 'second-done\n']);
      expect(results[2]?.exitCode).not.toBe(0);
      expect(await outcome(second.readFile('only-first.txt'))).toBe('refused');
    });

    it('never reads or writes host files outside the sandbox through .. or symlinks', async () => {
      const sandbox = await makeSandbox();
      const secretPath = join(hostDir, 'secret.txt');
      await writeFile(secretPath, 'host secret');
      const climb = '../'.repeat(40);

      const readEscape = await outcome(sandbox.readFile(`${climb}${secretPath.slice(1)}`));
      expect(readEscape === 'refused' ? readEscape : text(readEscape)).not.toBe('host secret');

      await sandbox.exec(`ln -s ${secretPath} secret-link; ln -s ${hostDir} dir-link`);
      const linkRead = await outcome(sandbox.readFile('secret-link'));
      expect(linkRead === 'refused' ? linkRead : text(linkRead)).not.toBe('host secret');

      await outcome(sandbox.writeFile(`${climb}${join(hostDir, 'pwned-dotdot').slice(1)}`, 'x'));
      await outcome(sandbox.writeFile('dir-link/pwned-link', 'x'));
      await outcome(sandbox.writeFile('secret-link', 'overwritten'));
      expect(existsSync(join(hostDir, 'pwned-dotdot'))).toBe(false);
      expect(existsSync(join(hostDir, 'pwned-link'))).toBe(false);
      expect(await readFile(secretPath, 'utf8')).toBe('host secret');

      const downloaded = join(hostDir, 'downloaded-link');
      await outcome(sandbox.download('secret-link', downloaded));
      const leaked = existsSync(downloaded) ? await outcome(readFile(downloaded, 'utf8')) : 'refused';
      expect(leaked).not.toBe('host secret');
    });

    it.runIf(options.reachesHostLoopback !== false)('gives a URL for reaching the host', async () => {
      const sandbox = await makeSandbox();
      const url = await sandbox.reachHost('http://127.0.0.1:4318/v1');
      expect(() => new URL(url)).not.toThrow();
      expect(new URL(url).pathname).toBe('/v1');
    });

    it.runIf(options.reachesHostLoopback === false)(
      'refuses a host loopback URL it cannot reach, with a SandboxError',
      async () => {
        const sandbox = await makeSandbox();
        const error = await sandbox.reachHost('http://127.0.0.1:4318/v1').catch((caught: unknown) => caught);
        expect(isSandboxError(error)).toBe(true);
        expect(await sandbox.reachHost('https://api.example.com/v1')).toBe('https://api.example.com/v1');
      },
    );

    it('stops: alive() turns false, commands and file calls fail with a SandboxError, stop is idempotent', async () => {
      const sandbox = await makeSandbox();
      expect(await sandbox.alive()).toBe(true);
      await sandbox.exec('sleep 300 > /dev/null 2>&1 &');
      await sandbox.stop();
      expect(await sandbox.alive()).toBe(false);
      const execError = await sandbox.exec('echo hi').catch((caught: unknown) => caught);
      expect(isSandboxError(execError)).toBe(true);
      const readError = await sandbox.readFile('anything').catch((caught: unknown) => caught);
      expect(isSandboxError(readError)).toBe(true);
      await expect(sandbox.stop()).resolves.toBeUndefined();
    });

    it('leaves nothing behind once every sandbox stopped', async () => {
      const sandbox = await makeSandbox();
      await sandbox.writeFile('junk.bin', new Uint8Array(1000));
      await Promise.all(created.map((each) => each.stop()));
      for (const each of created) expect(await each.alive()).toBe(false);
      if (options.inspectLeftovers) expect(await options.inspectLeftovers(labels)).toEqual([]);
    });
  });
}
