import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { SandboxError } from '../errors/troupe-error.ts';
import { CreationLimiter, DEFAULT_SHARED_ACQUIRE_TIMEOUT_MS } from './creation-limiter.ts';
import { LocalRuntime } from './local-runtime.ts';
import { ensureOwnedDirectory, perUserTempDir } from './owned-directory.ts';

const root = mkdtempSync(join(tmpdir(), 'troupe-owned-'));
// Like the tmpdir itself: every user may create entries, the sticky bit keeps them apart.
chmodSync(root, 0o1777);
let n = 0;
const fresh = () => join(root, `case-${n++}`);
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  spawnSync('rm', ['-rf', root]);
});

/** As root (CI), another local user: `nobody`. Elsewhere these cases need a second uid and are skipped. */
const OTHER_UID = 65534;
const asRoot = process.getuid?.() === 0;

/** Makes `path` as the other user would: a real process running as that uid. */
function mkdirAsOtherUser(path: string, mode: string): void {
  const made = spawnSync('/bin/sh', ['-c', `mkdir -m ${mode} "$1"`, 'sh', path], { uid: OTHER_UID, gid: OTHER_UID });
  if (made.status !== 0) throw new Error(`mkdir as uid ${OTHER_UID}: ${made.stderr}`);
}

function refusal(work: () => unknown): string {
  try {
    work();
  } catch (error) {
    expect(SandboxError.isInstance(error)).toBe(true);
    return (error as Error).message;
  }
  throw new Error('not refused');
}

describe('ensureOwnedDirectory (shared state under the tmpdir is this user’s own)', () => {
  it('names a per-user folder and creates it 0700', () => {
    expect(perUserTempDir('troupe-limits')).toBe(join(tmpdir(), `troupe-limits-${process.getuid?.()}`));
    const dir = fresh();
    ensureOwnedDirectory(dir);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });

  it('refuses a group- or world-writable folder, naming it', () => {
    const dir = fresh();
    mkdirSync(dir);
    chmodSync(dir, 0o1777);
    expect(refusal(() => ensureOwnedDirectory(dir))).toMatch(new RegExp(`${dir}: writable by every user \\(mode 1?777\\)`));
    chmodSync(dir, 0o770);
    expect(refusal(() => ensureOwnedDirectory(dir))).toMatch(`${dir}: writable by its group`);
  });

  it('refuses a symlink in place of the folder', () => {
    const dir = fresh();
    mkdirSync(`${dir}-real`, { mode: 0o700 });
    symlinkSync(`${dir}-real`, dir);
    expect(refusal(() => ensureOwnedDirectory(dir))).toMatch(`${dir}: a symlink`);
  });

  it.skipIf(!asRoot && process.env.CI !== 'true')('refuses a folder another user created first, even 0700', () => {
    const dir = fresh();
    mkdirAsOtherUser(dir, '700');
    expect(lstatSync(dir).uid).toBe(OTHER_UID);
    expect(refusal(() => ensureOwnedDirectory(dir))).toMatch(`${dir}: owned by uid ${OTHER_UID}, not by this user`);
  });
});

describe('shared creation limits in a hostile tmpdir', () => {
  it.skipIf(!asRoot && process.env.CI !== 'true')(
    'refuses a limits folder or sandboxes root another user made world-writable, naming it',
    async () => {
      const limits = fresh();
      mkdirAsOtherUser(limits, '1777');
      expect(refusal(() => new CreationLimiter({ shared: 'x', sharedLimitsDir: limits, maxConcurrent: 1 }))).toMatch(
        `${limits}: owned by uid ${OTHER_UID}`,
      );
      const sandboxes = fresh();
      mkdirAsOtherUser(sandboxes, '1777');
      const runtime = new LocalRuntime({ root: sandboxes, sweep: false });
      await expect(runtime.createSandbox()).rejects.toThrow(`${sandboxes}: owned by uid ${OTHER_UID}`);
    },
  );

  it('replaces a planted rate symlink instead of writing through it: the victim file is untouched', async () => {
    const dir = fresh();
    const victim = join(root, `victim-${n++}`);
    writeFileSync(victim, 'precious', { mode: 0o600 });
    mkdirSync(join(dir, 'x'), { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    symlinkSync(victim, join(dir, 'x', 'rate'));
    const limiter = new CreationLimiter({ shared: 'x', sharedLimitsDir: dir, createsPerSecond: 100 });
    (await limiter.acquire()).release();
    expect(readFileSync(victim, 'utf8')).toBe('precious');
    expect(lstatSync(join(dir, 'x', 'rate')).isFile()).toBe(true);
  });

  it('reclaims a rate stamp an hour ahead instead of waiting for it', async () => {
    const dir = fresh();
    mkdirSync(join(dir, 'x'), { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    writeFileSync(join(dir, 'x', 'rate'), String(Date.now() + 3_600_000));
    const limiter = new CreationLimiter({ shared: 'x', sharedLimitsDir: dir, createsPerSecond: 10, acquireTimeoutMs: 5_000 });
    const started = Date.now();
    (await limiter.acquire()).release();
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('reclaims a slot whose pid is dead; a slot held by a live pid times out with a SandboxError naming it', async () => {
    const dir = fresh();
    mkdirSync(join(dir, 'x'), { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    const dead = spawnSync(process.execPath, ['-e', 'console.log(process.pid)']);
    writeFileSync(join(dir, 'x', 'slot-0'), `${String(dead.stdout).trim()} stale`);
    const limiter = new CreationLimiter({ shared: 'x', sharedLimitsDir: dir, maxConcurrent: 1, acquireTimeoutMs: 300 });
    (await limiter.acquire()).release();
    const live = spawn('sleep', ['60']);
    children.push(live);
    writeFileSync(join(dir, 'x', 'slot-0'), `${live.pid} planted`);
    await expect(limiter.acquire()).rejects.toThrow(
      new RegExp(
        `no sandbox slot free across processes \\(maxConcurrent=1; held: slot-0: pid ${live.pid}\\) within the acquire timeout`,
      ),
    );
  });

  it(`bounds a shared wait by default (${DEFAULT_SHARED_ACQUIRE_TIMEOUT_MS} ms) with no acquireTimeoutMs set`, async () => {
    const dir = fresh();
    mkdirSync(join(dir, 'x'), { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    const live = spawn('sleep', ['60']);
    children.push(live);
    writeFileSync(join(dir, 'x', 'slot-0'), `${live.pid} planted`);
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] });
    try {
      const limiter = new CreationLimiter({ shared: 'x', sharedLimitsDir: dir, maxConcurrent: 1 });
      const outcome = limiter.acquire().then(
        () => 'acquired',
        (error: Error) => error.message,
      );
      await vi.advanceTimersByTimeAsync(DEFAULT_SHARED_ACQUIRE_TIMEOUT_MS + 1_000);
      expect(await outcome).toMatch(/no sandbox slot free across processes .* within the acquire timeout/);
    } finally {
      vi.useRealTimers();
    }
  });
});
