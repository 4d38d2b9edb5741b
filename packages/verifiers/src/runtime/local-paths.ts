import { lstat, realpath } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { SandboxError } from '../errors/troupe-error.ts';

/**
 * Confines paths of the file APIs to one directory on the host, the local sandbox's filesystem
 * root. Rules:
 * - a relative path is relative to the workdir;
 * - an absolute path that already lies under the root (such as `sandbox.workdir`) is taken as is;
 * - any other absolute path is read inside the root (`/tmp/x` → `<root>/tmp/x`);
 * - a path whose `..` climbs out of the root, or that reaches outside through a symlink, is
 *   refused with a `SandboxError` naming it.
 */
export class LocalPaths {
  /**
   * @param root the sandbox root, already passed through `realpath`.
   * @param workdir an absolute directory under `root`.
   */
  constructor(
    readonly root: string,
    readonly workdir: string,
  ) {}

  /** True when `hostPath` (absolute, normalized) is the root or lies under it. */
  contains(hostPath: string): boolean {
    return hostPath === this.root || hostPath.startsWith(this.root + sep);
  }

  /** The host path a sandbox path names, without touching the disk. */
  lexical(path: string): string {
    if (typeof path !== 'string' || path.length === 0) throw new SandboxError('empty sandbox path');
    if (path.includes('\0')) throw new SandboxError(`sandbox path contains a NUL byte: ${JSON.stringify(path)}`);
    let absolute: string;
    if (isAbsolute(path)) {
      const normalized = resolve(path);
      absolute = this.contains(normalized) ? normalized : resolve(join(this.root, path));
    } else {
      absolute = resolve(this.workdir, path);
    }
    if (!this.contains(absolute)) throw new SandboxError(`path escapes the sandbox: ${path}`);
    return absolute;
  }

  /**
   * The host path a sandbox path names once symlinks are followed: the deepest existing
   * ancestor goes through `realpath` and must stay under the root; components that do not
   * exist yet are appended unchanged. Open the result with `O_NOFOLLOW`.
   */
  async real(path: string): Promise<string> {
    const lexicalPath = this.lexical(path);
    const missing: string[] = [];
    let existing = lexicalPath;
    for (;;) {
      try {
        await lstat(existing);
        break;
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT' && code !== 'ENOTDIR')
          throw new SandboxError(`cannot inspect sandbox path ${path}`, { cause: error });
        missing.unshift(basename(existing));
        existing = dirname(existing);
      }
    }
    let resolved: string;
    try {
      resolved = await realpath(existing);
    } catch (error) {
      throw new SandboxError(`sandbox path ${path} goes through a dangling symlink`, { cause: error });
    }
    if (!this.contains(resolved)) throw new SandboxError(`path escapes the sandbox through a symlink: ${path}`);
    return join(resolved, ...missing);
  }
}
