import { closeSync, constants, lstatSync, mkdirSync, openSync, readSync, writeSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { SandboxError } from '../errors/troupe-error.ts';
import { openRegularFile } from '../util/open-regular-file.ts';

/**
 * `<os tmpdir>/<name>-<uid>`: this user's own folder of shared state (lock files, sandbox roots).
 * The tmpdir is shared with every local user; the uid in the name keeps users apart, and
 * {@link ensureOwnedDirectory} refuses the folder when someone else made it first.
 */
export function perUserTempDir(name: string): string {
  const uid = process.getuid?.();
  return join(tmpdir(), `${name}-${uid ?? userInfo().username.replace(/[^A-Za-z0-9._-]/g, '_')}`);
}

/**
 * Creates `path` (mode 0700, parents too) when missing, then checks it as troupe does on every use
 * of shared state: a real directory (not a symlink), owned by this process's user, and neither
 * group- nor world-writable. Throws a `SandboxError` naming the path and what is wrong otherwise;
 * another user's folder is never used, whoever created it first.
 */
export function ensureOwnedDirectory(path: string): void {
  try {
    mkdirSync(path, { recursive: true, mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw new SandboxError(`cannot create ${path}`, { cause: error });
  }
  const stat = lstatSync(path);
  if (stat.isSymbolicLink())
    throw new SandboxError(`${path}: a symlink; troupe keeps shared state only in a real directory it owns`);
  if (!stat.isDirectory()) throw new SandboxError(`${path}: not a directory`);
  const uid = process.getuid?.();
  if (uid !== undefined && stat.uid !== uid)
    throw new SandboxError(
      `${path}: owned by uid ${stat.uid}, not by this user (uid ${uid}); troupe refuses shared state another user controls (remove it, or name another directory)`,
    );
  if (process.platform !== 'win32' && (stat.mode & 0o022) !== 0)
    throw new SandboxError(
      `${path}: writable by ${stat.mode & 0o002 ? 'every user' : 'its group'} (mode ${(stat.mode & 0o777).toString(8)}); troupe refuses shared state others can write (chmod 700 it)`,
    );
}

/** Most bytes {@link readSmallFile} reads. */
const SMALL_FILE_BYTES = 4096;

/**
 * Reads a small state file (a slot holder, a rate stamp) without following a symlink and without
 * blocking on a FIFO; null when it is missing. Throws a `SandboxError` naming it when it is not a
 * regular file.
 */
export function readSmallFile(path: string): string | null {
  const fd = openRegularFile(path, (refusal) => {
    if (refusal.kind === 'symlink') return new SandboxError(`${path}: a symlink; troupe's state files are never followed`);
    if (refusal.kind === 'not-regular') return new SandboxError(`${path}: not a regular file`);
    return new SandboxError(`cannot read ${path}`, { cause: refusal.cause });
  });
  if (fd === null) return null;
  try {
    const buffer = Buffer.alloc(SMALL_FILE_BYTES);
    const bytes = readSync(fd, buffer, 0, SMALL_FILE_BYTES, 0);
    return buffer.subarray(0, bytes).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** Creates `path` exclusively (never through a link, never over an existing file) with mode 0600 and writes `text`; false when it exists. */
export function createExclusive(path: string, text: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw new SandboxError(`cannot create ${path}`, { cause: error });
  }
  try {
    const data = Buffer.from(text);
    let at = 0;
    while (at < data.length) at += writeSync(fd, data, at);
  } finally {
    closeSync(fd);
  }
  return true;
}
