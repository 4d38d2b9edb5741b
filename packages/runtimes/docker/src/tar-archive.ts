import { createReadStream, constants as fsConstants } from 'node:fs';
import { lstat, mkdir, open, readdir, readlink, realpath, symlink } from 'node:fs/promises';
import { dirname, join, posix, resolve, sep } from 'node:path';
import { Readable } from 'node:stream';
import { SandboxError } from '@troupe/verifiers';
import tar from 'tar-stream';

/** A tar archive holding one regular file called `name`. */
export function packFile(options: { name: string; data: Uint8Array; mode: number }): Readable {
  const pack = tar.pack();
  pack.entry({ name: options.name, size: options.data.length, mode: options.mode, type: 'file' }, Buffer.from(options.data));
  pack.finalize();
  return Readable.from(pack);
}

/**
 * A tar archive of a host file or directory whose top entry is called `name` (so it lands at
 * `<extract dir>/<name>`). Symlinks are stored as links, never followed.
 */
export function packHostPath(options: { hostPath: string; name: string }): Readable {
  const pack = tar.pack();
  const add = async (hostPath: string, name: string): Promise<void> => {
    const info = await lstat(hostPath);
    const mode = info.mode & 0o7777;
    if (info.isSymbolicLink()) {
      await entry(pack, { name, type: 'symlink', linkname: await readlink(hostPath), mode });
    } else if (info.isDirectory()) {
      await entry(pack, { name, type: 'directory', mode });
      for (const child of (await readdir(hostPath)).sort()) await add(join(hostPath, child), `${name}/${child}`);
    } else if (info.isFile()) {
      await new Promise<void>((resolveEntry, rejectEntry) => {
        const sink = pack.entry({ name, type: 'file', size: info.size, mode }, (error) =>
          error ? rejectEntry(error) : resolveEntry(),
        );
        createReadStream(hostPath).on('error', rejectEntry).pipe(sink);
      });
    }
  };
  add(options.hostPath, options.name).then(
    () => pack.finalize(),
    (error: unknown) => pack.destroy(error as Error),
  );
  return Readable.from(pack);
}

function entry(pack: tar.Pack, header: Partial<tar.Header> & { name: string }): Promise<void> {
  return new Promise((resolveEntry, rejectEntry) =>
    pack.entry(header as tar.Header, (error) => (error ? rejectEntry(error) : resolveEntry())),
  );
}

async function collect(stream: AsyncIterable<unknown>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * The first entry of a tar stream: its header and, for a regular file, its bytes. The header is
 * looked at first: anything but a regular file, or a file larger than `maxBytes`, is returned
 * (or refused) without reading a byte of its content, and the archive stream is closed.
 */
export async function readFirstEntry(
  archive: NodeJS.ReadableStream,
  options: { maxBytes?: number } = {},
): Promise<{ header: tar.Header; data: Buffer }> {
  const extract = tar.extract();
  (archive as Readable).pipe(extract as unknown as NodeJS.WritableStream);
  for await (const item of extract) {
    const tooLarge = options.maxBytes !== undefined && (item.header.size ?? 0) > options.maxBytes;
    if (item.header.type !== 'file' || tooLarge) {
      (archive as Readable).unpipe?.(extract);
      extract.destroy();
      (archive as Readable).destroy?.();
      if (tooLarge) throw new SandboxError(`the file is ${item.header.size} bytes (limit ${options.maxBytes})`);
      return { header: item.header, data: Buffer.alloc(0) };
    }
    const data = await collect(item);
    (archive as Readable).unpipe?.(extract);
    extract.destroy();
    (archive as Readable).destroy?.();
    return { header: item.header, data };
  }
  throw new SandboxError('the sandbox returned an empty archive');
}

/**
 * Extracts a tar stream whose entries all start with `topName` into `hostPath` (the top entry
 * becomes `hostPath`). Refuses entries that climb out with `..` or absolute names, and never
 * writes through a symlink (links are recreated as links, files opened with `O_NOFOLLOW`).
 */
export async function extractToHost(options: {
  archive: NodeJS.ReadableStream;
  topName: string;
  hostPath: string;
  /** Refuse the download once its files' sizes (from the tar headers, before their bytes) pass this. */
  maxBytes?: number;
}): Promise<void> {
  const root = resolve(options.hostPath);
  let total = 0;
  const extract = tar.extract();
  (options.archive as Readable).pipe(extract as unknown as NodeJS.WritableStream);
  let realRoot: string | undefined;
  for await (const item of extract) {
    const header = item.header;
    const name = posix.normalize(header.name).replace(/\/+$/, '');
    const parts = name.split('/');
    if (parts[0] !== options.topName || parts.includes('..') || posix.isAbsolute(name)) {
      item.resume();
      throw new SandboxError(`refusing archive entry outside the download: ${header.name}`);
    }
    if (header.type === 'file') total += header.size ?? 0;
    if (options.maxBytes !== undefined && total > options.maxBytes) {
      (options.archive as Readable).destroy?.();
      throw new SandboxError(`the download is over ${options.maxBytes} bytes (limit)`);
    }
    const target = parts.length === 1 ? root : join(root, ...parts.slice(1));
    await mkdir(dirname(target), { recursive: true });
    if (parts.length > 1) {
      realRoot ??= await realpath(root);
      const parent = await realpath(dirname(target));
      if (parent !== realRoot && !parent.startsWith(realRoot + sep)) {
        item.resume();
        throw new SandboxError(`refusing to write through a symlink: ${header.name}`);
      }
    }
    const mode = (header.mode ?? 0o644) & 0o7777;
    if (header.type === 'directory') {
      await mkdir(target, { recursive: true, mode });
      item.resume();
    } else if (header.type === 'symlink' && header.linkname) {
      await symlink(header.linkname, target);
      item.resume();
    } else if (header.type === 'file') {
      const handle = await open(
        target,
        fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_TRUNC | fsConstants.O_NOFOLLOW,
        mode,
      );
      try {
        for await (const chunk of item) await handle.write(chunk as Buffer);
        await handle.chmod(mode);
      } finally {
        await handle.close();
      }
    } else {
      item.resume();
    }
  }
}
