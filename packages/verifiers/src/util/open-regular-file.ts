import { closeSync, constants, fstatSync, openSync } from 'node:fs';

/** Why {@link openRegularFile} refused a path; the caller turns it into its own error class. */
export type OpenRefusal =
  | { kind: 'symlink' }
  | { kind: 'not-regular'; what: string }
  | { kind: 'error'; code: string; cause: unknown };

/**
 * Opens `path` read-only as troupe opens any file someone else may have written: never through a
 * symlink (`O_NOFOLLOW`), never blocking on a FIFO (`O_NONBLOCK`), and only a regular file. Returns
 * the descriptor (the caller closes it), null when the path does not exist, or throws what
 * `refuse` makes of the refusal, so each layer keeps its own error class and wording.
 */
export function openRegularFile(path: string, refuse: (refusal: OpenRefusal) => Error): number | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    if (code === 'ELOOP') throw refuse({ kind: 'symlink' });
    throw refuse({ kind: 'error', code: code ?? (error as Error).message, cause: error });
  }
  const stat = fstatSync(fd);
  if (stat.isFile()) return fd;
  closeSync(fd);
  const what = stat.isFIFO() ? 'a FIFO' : stat.isDirectory() ? 'a directory' : stat.isSocket() ? 'a socket' : 'a special file';
  throw refuse({ kind: 'not-regular', what });
}
