import { lstat, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, posix, relative, resolve, sep } from 'node:path';
import { SandboxError } from '../errors/troupe-error.ts';
import type { Sandbox } from './runtime.ts';

/** Quotes one word for POSIX `sh`. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./=:@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** An argv as one `sh` command line. */
export function shellJoin(argv: string[]): string {
  return argv.map(shellQuote).join(' ');
}

/**
 * Copies a host file or directory into a sandbox with only `exec` and `writeFile` (for runtimes
 * whose API moves single files): directories are made with one `mkdir -p`, files written one by
 * one with their mode. Symlinks are skipped.
 */
export async function uploadTree(options: {
  sandbox: Pick<Sandbox, 'exec' | 'writeFile'>;
  hostPath: string;
  sandboxPath: string;
}): Promise<void> {
  const info = await lstat(options.hostPath).catch((error: unknown) => {
    throw new SandboxError(`upload source does not exist on the host: ${options.hostPath}`, { cause: error });
  });
  if (info.isFile()) {
    await options.sandbox.writeFile(options.sandboxPath, await readFile(options.hostPath), { mode: info.mode & 0o777 });
    return;
  }
  const directories: string[] = [options.sandboxPath];
  const files: Array<{ host: string; sandbox: string; mode: number }> = [];
  const walk = async (host: string, target: string): Promise<void> => {
    for (const name of (await readdir(host)).sort()) {
      const child = join(host, name);
      const childTarget = posix.join(target, name);
      const childInfo = await lstat(child);
      if (childInfo.isDirectory()) {
        directories.push(childTarget);
        await walk(child, childTarget);
      } else if (childInfo.isFile()) {
        files.push({ host: child, sandbox: childTarget, mode: childInfo.mode & 0o777 });
      }
    }
  };
  await walk(options.hostPath, options.sandboxPath);
  const made = await options.sandbox.exec(['mkdir', '-p', ...directories]);
  if (made.exitCode !== 0) throw new SandboxError(`cannot create directories in the sandbox: ${made.stderr.trim()}`);
  for (const file of files) await options.sandbox.writeFile(file.sandbox, await readFile(file.host), { mode: file.mode });
}

/**
 * Copies a sandbox file or directory to the host with only `exec` (`find` lists it) and
 * `readFile`. Names that would climb out of `hostPath` are refused; symlinks are not followed.
 */
export async function downloadTree(options: {
  sandbox: Pick<Sandbox, 'exec' | 'readFile'>;
  sandboxPath: string;
  hostPath: string;
}): Promise<void> {
  const listing = await options.sandbox.exec(
    `cd ${shellQuote(options.sandboxPath)} 2>/dev/null || { [ -f ${shellQuote(options.sandboxPath)} ] && echo FILE && exit 0; echo MISSING; exit 3; }; find . -type d; echo --files--; find . -type f`,
  );
  if (listing.exitCode !== 0) throw new SandboxError(`cannot download ${options.sandboxPath}: it does not exist`);
  if (listing.stdout.trim() === 'FILE') {
    await mkdir(dirname(options.hostPath), { recursive: true });
    await writeFile(options.hostPath, await options.sandbox.readFile(options.sandboxPath));
    return;
  }
  const [directoryPart = '', filePart = ''] = listing.stdout.split('--files--\n');
  const root = resolve(options.hostPath);
  const inside = (name: string) => {
    const target = resolve(root, name);
    if (target !== root && !target.startsWith(root + sep))
      throw new SandboxError(`refusing a sandbox name outside the download: ${name}`);
    return target;
  };
  for (const name of directoryPart.split('\n').filter(Boolean)) await mkdir(inside(name), { recursive: true });
  for (const name of filePart.split('\n').filter(Boolean)) {
    const target = inside(name);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, await options.sandbox.readFile(posix.join(options.sandboxPath, relative('.', name))));
  }
}
