/**
 * Crash-safe checkpoints.
 *
 * A run directory `<out>` holds its checkpoints as versioned directories and names the current
 * one through a pointer:
 *
 * ```
 * <out>/checkpoints/step-<N>/            a complete checkpoint, never modified once named
 *     meta.json  tensors.bin  …          the caller's files (embedded engines: these two)
 *     manifest.json                      every other file's size and sha256, written last
 * <out>/checkpoints/.partial-step-<N>-<pid>-<k>/   being written; never read, removed later
 * <out>/checkpoint -> checkpoints/step-<N>         the current checkpoint (a relative symlink)
 * <out>/checkpoint-step-<N> -> checkpoints/step-<N>   a kept step (`keepCheckpoints`)
 * ```
 *
 * {@link commitCheckpoint} writes the files into a partial directory, writes `manifest.json`,
 * fsyncs every file and the directory, renames it to `step-<N>`, fsyncs `checkpoints/`, then
 * replaces each pointer by renaming a fresh symlink over it (atomic) and fsyncs `<out>`. A crash at
 * any point leaves the previous pointer naming the previous complete checkpoint, or the new pointer
 * naming the new one: some complete checkpoint always exists and `<out>/checkpoint` names it. After
 * the swap, versions no pointer names are removed, except the one `checkpoint` named before (so a
 * checkpoint found corrupt has a predecessor on disk).
 *
 * Readers pass `<out>/checkpoint` (or any checkpoint directory) to {@link loadCheckpoint} /
 * {@link readCheckpointFile}: a symlink is followed only when it has the shape troupe creates
 * (`checkpoints/step-<N>` beside it, a real directory); every file is opened without following
 * links and checked against the manifest, so a truncated or overwritten file is refused with a
 * {@link CheckpointError} naming it. Checkpoint directories written before manifests existed (a
 * plain `<out>/checkpoint/`) are read with size checks only, and replaced by the layout above on
 * the next commit. {@link findRunCheckpoint} is what `--resume` uses.
 */

import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, mkdir, open, readdir, readlink, rename, rm, symlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ConfigError } from '@troupe/verifiers';
import { z } from 'zod';
import type { NamedWeight } from '../policy/config.ts';
import { CheckpointError } from './checkpoint-error.ts';
import type { OptimizerState } from './optimizer-state.ts';

export { CheckpointError } from './checkpoint-error.ts';

/** Everything a run needs to resume exactly, besides the tensors. */
export const CheckpointMetaSchema = z.object({
  /** Always `troupe-checkpoint`. */
  kind: z.literal('troupe-checkpoint'),
  /** Format version. */
  version: z.literal(1),
  /** The training step the checkpoint was taken after. */
  step: z.number().int().nonnegative(),
  /** Policy and trainer configs, tokenizer, algorithm state, RNG state, loop state: JSON, owned by the caller. */
  state: z.record(z.string(), z.unknown()),
  /** Index of `tensors.bin`: one entry per float32 tensor, in file order. */
  tensors: z.array(
    z.object({
      /** `weights` (the policy), `m` / `v` (AdamW first / second moments), `inference` (an older policy version). */
      group: z.enum(['weights', 'm', 'v', 'inference']),
      /** Policy version of an `inference` tensor (weights an in-flight rollout was dispatched with). */
      version: z.number().int().nonnegative().optional(),
      /** The weight's name (as in `NamedWeight`). */
      name: z.string(),
      /** The tensor's dimensions. */
      shape: z.array(z.number().int().nonnegative()),
      /** Where the tensor starts in `tensors.bin`, in float32 elements (not bytes). */
      offset: z.number().int().nonnegative(),
    }),
  ),
  /** AdamW's step count (for bias correction). */
  optimizerStep: z.number().int().nonnegative(),
});
/** The parsed `meta.json` of a checkpoint directory; see {@link CheckpointMetaSchema}. */
export type CheckpointMeta = z.infer<typeof CheckpointMetaSchema>;

/** `manifest.json` of a checkpoint directory: size and sha256 of every other file in it. */
export const CheckpointManifestSchema = z.object({
  /** Always `troupe-checkpoint-manifest`. */
  kind: z.literal('troupe-checkpoint-manifest'),
  /** Format version. */
  version: z.literal(1),
  /** The step the checkpoint was taken after. */
  step: z.number().int().nonnegative(),
  /** Per file name (relative to the checkpoint directory): its size in bytes and sha256 (hex). */
  files: z.record(z.string(), z.object({ bytes: z.number().int().nonnegative(), sha256: z.string().regex(/^[0-9a-f]{64}$/) })),
});
/** The parsed `manifest.json`; see {@link CheckpointManifestSchema}. */
export type CheckpointManifest = z.infer<typeof CheckpointManifestSchema>;

/** Name of the manifest file in a checkpoint directory. */
export const CHECKPOINT_MANIFEST = 'manifest.json';
/** The folder of `<out>` holding the versioned checkpoint directories. */
export const CHECKPOINT_VERSIONS_DIR = 'checkpoints';
/** The pointer naming the current checkpoint of a run directory. */
export const CHECKPOINT_POINTER = 'checkpoint';

/** The target a troupe pointer may have: a version directory beside it. */
const POINTER_TARGET = /^checkpoints\/step-\d+(?:-\d+)?$/;
/** A version directory's name. */
const VERSION_NAME = /^step-(\d+)(?:-\d+)?$/;

/** A checkpoint in memory: what {@link saveCheckpoint} writes and {@link loadCheckpoint} returns. */
export interface Checkpoint {
  /** The training step it was taken after. */
  step: number;
  /** The caller's JSON state (configs, tokenizer, algorithm and RNG state, loop state). */
  state: Record<string, unknown>;
  /** The policy's weights. */
  weights: NamedWeight[];
  /** AdamW's step and moments. */
  optimizer: OptimizerState;
  /** Older policy versions still served to rollouts in flight (the orchestrator's `maxAsync`), oldest first. */
  inference?: { version: number; weights: NamedWeight[] }[];
}

/** Points of {@link commitCheckpoint} a test can stop at (as a crash there would). */
export type CheckpointCommitStage = 'files-written' | 'manifest-written' | 'version-named' | 'legacy-moved' | 'pointer-swapped';

/**
 * Writes the embedded engines' checkpoint files into `dir` (an existing directory): `meta.json`
 * (step, caller state, tensor index) and `tensors.bin` (float32 weights, then AdamW first and
 * second moments, then older inference versions). Not atomic by itself: {@link commitCheckpoint}
 * or {@link saveCheckpoint} make it so.
 */
export async function writeCheckpointFiles(
  options: {
    dir: string;
    /** Before each file name (`<prefix>meta.json`, `<prefix>tensors.bin`): one policy of several in one checkpoint. */
    prefix?: string;
  } & Checkpoint,
): Promise<void> {
  const prefix = options.prefix ?? '';
  const tensors: CheckpointMeta['tensors'] = [];
  const parts: Float32Array[] = [];
  let offset = 0;
  const add = (group: 'weights' | 'm' | 'v' | 'inference', list: NamedWeight[], version?: number) => {
    for (const w of list) {
      tensors.push({ group, name: w.name, shape: w.shape, offset, ...(version !== undefined ? { version } : {}) });
      parts.push(w.data);
      offset += w.data.length;
    }
  };
  add('weights', options.weights);
  add('m', options.optimizer.m);
  add('v', options.optimizer.v);
  for (const { version, weights } of options.inference ?? []) add('inference', weights, version);
  const all = new Float32Array(offset);
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.length;
  }
  const meta: CheckpointMeta = {
    kind: 'troupe-checkpoint',
    version: 1,
    step: options.step,
    state: options.state,
    tensors,
    optimizerStep: options.optimizer.step,
  };
  await writeNew(join(options.dir, `${prefix}tensors.bin`), new Uint8Array(all.buffer));
  await writeNew(join(options.dir, `${prefix}meta.json`), `${JSON.stringify(meta)}\n`);
}

/**
 * Writes a standalone checkpoint directory `dir` (e.g. a trainer broadcast): the files and
 * `manifest.json` in `<dir>.partial-<pid>`, fsynced, then renamed to `dir` (an existing `dir` is
 * removed first). Run checkpoints use {@link commitCheckpoint}, which never removes the current one
 * before the new one is named.
 */
export async function saveCheckpoint(options: { dir: string } & Checkpoint): Promise<void> {
  const partial = `${options.dir}.partial-${process.pid}`;
  await rm(partial, { recursive: true, force: true });
  await mkdir(partial, { recursive: true });
  await writeCheckpointFiles({ ...options, dir: partial });
  await sealCheckpointDir({ dir: partial, step: options.step });
  await rm(options.dir, { recursive: true, force: true });
  await rename(partial, options.dir);
  await fsyncPath(dirname(options.dir));
}

/**
 * Commits a checkpoint of step `step` to the run directory `out` (layout in this module's doc):
 * `write` fills a fresh directory, then the manifest is written, everything fsynced, the directory
 * named `checkpoints/step-<N>` and each of `pointers` (default `['checkpoint']`; e.g.
 * `checkpoint-step-<N>` for a kept step) swapped to it atomically. Returns the version directory.
 */
export async function commitCheckpoint(options: {
  out: string;
  step: number;
  /** Fills `dir` (empty, already created) with the checkpoint's files. */
  write: (dir: string) => Promise<void>;
  pointers?: readonly string[];
  /** For crash tests: called at each stage; throwing there leaves the disk as a crash would. */
  onStage?: (stage: CheckpointCommitStage) => void | Promise<void>;
}): Promise<string> {
  const { out, step } = options;
  const stage = options.onStage ?? (() => {});
  const versions = join(out, CHECKPOINT_VERSIONS_DIR);
  await mkdir(versions, { recursive: true });
  await assertRealDirectory(versions);
  let k = 0;
  let partial = join(versions, `.partial-step-${step}-${process.pid}-${k}`);
  while (await exists(partial)) partial = join(versions, `.partial-step-${step}-${process.pid}-${++k}`);
  await mkdir(partial);
  await options.write(partial);
  await stage('files-written');
  await sealCheckpointDir({ dir: partial, step });
  await stage('manifest-written');
  const named = await namedVersions(out);
  let name = `step-${step}`;
  if (await exists(join(versions, name))) {
    // Written before by a run that crashed before naming it (or named by a kept pointer): keep it, use a fresh name.
    if (named.has(name)) {
      for (k = 1; await exists(join(versions, `step-${step}-${k}`)); k++);
      name = `step-${step}-${k}`;
    } else await rm(join(versions, name), { recursive: true, force: true });
  }
  await rename(partial, join(versions, name));
  await fsyncPath(versions);
  await stage('version-named');
  // Kept after the swap: what `checkpoint` named (or, without a pointer, what a resume would take).
  const previous = (await pointerTarget(join(out, CHECKPOINT_POINTER))) ?? (await newestVersion({ versions, except: name }));
  for (const pointer of options.pointers ?? [CHECKPOINT_POINTER]) await swapPointer({ out, pointer, name, stage });
  await fsyncPath(out);
  await stage('pointer-swapped');
  await removeUnnamed({ out, keep: new Set([name, ...(previous ? [previous] : [])]) });
  return join(versions, name);
}

/** Points `<out>/<pointer>` at `checkpoints/<name>` by renaming a fresh symlink over it; moves a legacy directory there aside first. */
async function swapPointer(options: {
  out: string;
  pointer: string;
  name: string;
  stage: (stage: CheckpointCommitStage) => void | Promise<void>;
}): Promise<void> {
  const { out, pointer, name } = options;
  if (!/^checkpoint(?:-step-\d+)?$/.test(pointer))
    throw new ConfigError(`checkpoint pointer "${pointer}": not checkpoint or checkpoint-step-<N>`, { path: 'pointer' });
  const path = join(out, pointer);
  const stat = await lstat(path).catch(() => null);
  if (stat?.isDirectory()) {
    // A checkpoint directory of the layout before manifests: kept (complete) until the next commit removes it.
    await rename(path, join(out, CHECKPOINT_VERSIONS_DIR, `legacy-${pointer}-${process.pid}`));
    await options.stage('legacy-moved');
  } else if (stat && !stat.isSymbolicLink()) {
    throw new CheckpointError({
      path,
      message: `${path}: not a checkpoint pointer troupe created (a ${kindOf(stat)}); move it away`,
    });
  }
  const fresh = join(out, `.${pointer}.next-${process.pid}`);
  await rm(fresh, { force: true });
  await symlink(`${CHECKPOINT_VERSIONS_DIR}/${name}`, fresh);
  await rename(fresh, path);
}

/** Version names some troupe pointer in `out` names (`checkpoint`, `checkpoint-step-<N>`). */
async function namedVersions(out: string): Promise<Set<string>> {
  const named = new Set<string>();
  for (const entry of await readdir(out).catch(() => [] as string[])) {
    if (!/^checkpoint(?:-step-\d+)?$/.test(entry)) continue;
    const target = await pointerTarget(join(out, entry));
    if (target) named.add(target);
  }
  return named;
}

/** The version name a troupe pointer at `path` names, or null (absent, a directory, or not of troupe's shape). */
async function pointerTarget(path: string): Promise<string | null> {
  const target = await readlink(path).catch(() => null);
  return target && POINTER_TARGET.test(target) ? target.slice(CHECKPOINT_VERSIONS_DIR.length + 1) : null;
}

/** Removes version directories no pointer names (but `keep`), legacy ones and partial ones of dead processes. */
async function removeUnnamed(options: { out: string; keep: Set<string> }): Promise<void> {
  const versions = join(options.out, CHECKPOINT_VERSIONS_DIR);
  const named = await namedVersions(options.out);
  for (const entry of await readdir(versions)) {
    const partial = /^\.partial-step-\d+-(\d+)-\d+$/.exec(entry);
    const stale =
      (partial && !processAlive(Number(partial[1]))) ||
      (VERSION_NAME.test(entry) && !named.has(entry) && !options.keep.has(entry)) ||
      (/^legacy-/.test(entry) && !options.keep.has(entry) && [...named].length > 0);
    if (stale) await rm(join(versions, entry), { recursive: true, force: true });
  }
}

/** Writes `manifest.json` (size and sha256 of every file in `dir`) and fsyncs the files, the manifest and `dir`. */
async function sealCheckpointDir(options: { dir: string; step: number }): Promise<void> {
  const files: CheckpointManifest['files'] = {};
  for (const entry of (await readdir(options.dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
    if (entry.name === CHECKPOINT_MANIFEST) continue;
    if (!entry.isFile()) {
      const path = join(options.dir, entry.name);
      throw new CheckpointError({ path, message: `${path}: a checkpoint holds plain files only` });
    }
    const handle = await open(join(options.dir, entry.name), constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      const bytes = await handle.readFile();
      await handle.sync();
      files[entry.name] = { bytes: bytes.byteLength, sha256: createHash('sha256').update(bytes).digest('hex') };
    } finally {
      await handle.close();
    }
  }
  const manifest: CheckpointManifest = { kind: 'troupe-checkpoint-manifest', version: 1, step: options.step, files };
  await writeNew(join(options.dir, CHECKPOINT_MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
  await fsyncPath(options.dir);
}

/**
 * The directory a checkpoint path names: itself when it is a directory, the version directory
 * when it is a pointer troupe created (a symlink to `checkpoints/step-<N>` beside it, itself a real
 * directory); null when nothing is there. Any other symlink is refused, naming it.
 */
export async function resolveCheckpointDir(path: string): Promise<string | null> {
  const stat = await lstat(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return null;
    throw error;
  });
  if (!stat) return null;
  if (stat.isDirectory()) return path;
  if (!stat.isSymbolicLink())
    throw new CheckpointError({ path, message: `${path}: not a checkpoint directory (a ${kindOf(stat)})` });
  const target = await readlink(path);
  if (!POINTER_TARGET.test(target))
    throw new CheckpointError({
      path,
      message: `${path}: a symlink troupe did not create (to ${JSON.stringify(target)}; troupe's point at checkpoints/step-<N> beside them); not followed`,
    });
  const versions = join(dirname(path), CHECKPOINT_VERSIONS_DIR);
  await assertRealDirectory(versions);
  const dir = join(dirname(path), target);
  const targetStat = await lstat(dir).catch(() => null);
  if (!targetStat) throw new CheckpointError({ path, message: `${path}: points at ${target}, which is missing` });
  if (!targetStat.isDirectory())
    throw new CheckpointError({ path: dir, message: `${dir}: not a directory (a ${kindOf(targetStat)}); not followed` });
  return dir;
}

/**
 * The checkpoint a run directory resumes from: `<out>/checkpoint` when it is there, else the
 * newest complete version under `<out>/checkpoints/` (a crash while moving a legacy directory
 * aside); null when the run has none.
 */
export async function findRunCheckpoint(options: { out: string }): Promise<string | null> {
  const pointer = join(options.out, CHECKPOINT_POINTER);
  if (await resolveCheckpointDir(pointer)) return pointer;
  const name = await newestVersion({ versions: join(options.out, CHECKPOINT_VERSIONS_DIR) });
  return name ? join(options.out, CHECKPOINT_VERSIONS_DIR, name) : null;
}

/** The name of the newest version directory under `versions` with a manifest (complete), but `except`. */
async function newestVersion(options: { versions: string; except?: string }): Promise<string | null> {
  const names = (await readdir(options.versions).catch(() => [] as string[]))
    .filter((n) => VERSION_NAME.test(n) && n !== options.except)
    .sort((a, b) => Number(VERSION_NAME.exec(b)?.[1]) - Number(VERSION_NAME.exec(a)?.[1]));
  for (const name of names) if (await exists(join(options.versions, name, CHECKPOINT_MANIFEST))) return name;
  return null;
}

/** The manifest of a checkpoint directory (already resolved), or null for one written before manifests. */
async function readManifest(dir: string): Promise<CheckpointManifest | null> {
  const path = join(dir, CHECKPOINT_MANIFEST);
  const bytes = await readRegularFile(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return null;
    throw error;
  });
  if (!bytes) return null;
  return parseJson({
    path,
    text: bytes.toString('utf8'),
    schema: CheckpointManifestSchema,
    what: 'a troupe checkpoint manifest',
  });
}

/**
 * Reads one file of a checkpoint (`dir`: a checkpoint directory or troupe pointer), opened without
 * following links and checked against the manifest's size and sha256. Throws a
 * {@link CheckpointError} naming the file when it is missing, truncated or altered.
 */
export async function readCheckpointFile(options: { dir: string; name: string }): Promise<Buffer> {
  const dir = await resolveCheckpointDir(options.dir);
  if (!dir) throw new CheckpointError({ path: options.dir, message: `${options.dir}: no checkpoint there` });
  return readVerified({ dir, manifest: await readManifest(dir), name: options.name });
}

async function readVerified(options: { dir: string; manifest: CheckpointManifest | null; name: string }): Promise<Buffer> {
  const path = join(options.dir, options.name);
  const expected = options.manifest?.files[options.name];
  if (options.manifest && !expected)
    throw new CheckpointError({ path, message: `${path}: not listed in ${CHECKPOINT_MANIFEST}; the checkpoint is incomplete` });
  const bytes = await readRegularFile(path).catch((error: NodeJS.ErrnoException) => {
    if (CheckpointError.isInstance(error)) throw error;
    throw new CheckpointError({ path, message: `${path}: cannot be read (${error.code ?? error.message})`, cause: error });
  });
  if (expected) {
    if (bytes.byteLength !== expected.bytes)
      throw new CheckpointError({
        path,
        message: `${path}: ${bytes.byteLength} bytes, the manifest says ${expected.bytes} (truncated or overwritten)`,
      });
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    if (sha256 !== expected.sha256)
      throw new CheckpointError({
        path,
        message: `${path}: sha256 ${sha256.slice(0, 12)}… does not match the manifest's ${expected.sha256.slice(0, 12)}… (overwritten or corrupt)`,
      });
  }
  return bytes;
}

/**
 * Reads a checkpoint written by {@link commitCheckpoint} or {@link saveCheckpoint} (`dir`: a
 * checkpoint directory or a troupe pointer such as `<out>/checkpoint`). Throws a
 * {@link CheckpointError} naming the file when one is missing, truncated, fails its checksum, or
 * `meta.json` is not a troupe checkpoint of version 1.
 */
export async function loadCheckpoint(options: {
  dir: string;
  /** The files' prefix, as {@link writeCheckpointFiles} was given it (one policy of several). */
  prefix?: string;
}): Promise<Checkpoint> {
  const dir = await resolveCheckpointDir(options.dir);
  if (!dir) throw new CheckpointError({ path: options.dir, message: `${options.dir}: no checkpoint there` });
  const prefix = options.prefix ?? '';
  const manifest = await readManifest(dir);
  const metaPath = join(dir, `${prefix}meta.json`);
  const meta = parseJson({
    path: metaPath,
    text: (await readVerified({ dir, manifest, name: `${prefix}meta.json` })).toString('utf8'),
    schema: CheckpointMetaSchema,
    what: 'a troupe checkpoint of version 1',
  });
  const bytes = await readVerified({ dir, manifest, name: `${prefix}tensors.bin` });
  const tensorsPath = join(dir, `${prefix}tensors.bin`);
  const elements = meta.tensors.reduce((end, t) => Math.max(end, t.offset + t.shape.reduce((a, b) => a * b, 1)), 0);
  if (bytes.byteLength !== elements * 4)
    throw new CheckpointError({
      path: tensorsPath,
      message: `${tensorsPath}: ${bytes.byteLength} bytes, meta.json's tensors need ${elements * 4} (truncated or from another checkpoint)`,
    });
  const all = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  const groups: Record<'weights' | 'm' | 'v', NamedWeight[]> = { weights: [], m: [], v: [] };
  const inference = new Map<number, NamedWeight[]>();
  for (const t of meta.tensors) {
    const size = t.shape.reduce((a, b) => a * b, 1);
    const weight = { name: t.name, shape: t.shape, data: all.slice(t.offset, t.offset + size) };
    if (t.group === 'inference') {
      const version = t.version ?? 0;
      if (!inference.has(version)) inference.set(version, []);
      inference.get(version)?.push(weight);
    } else groups[t.group].push(weight);
  }
  return {
    step: meta.step,
    state: meta.state,
    weights: groups.weights,
    optimizer: { step: meta.optimizerStep, m: groups.m, v: groups.v },
    ...(inference.size ? { inference: [...inference].map(([version, weights]) => ({ version, weights })) } : {}),
  };
}

function parseJson<T>(options: { path: string; text: string; schema: z.ZodType<T>; what: string }): T {
  let value: unknown;
  try {
    value = JSON.parse(options.text);
  } catch (error) {
    throw new CheckpointError({
      path: options.path,
      message: `${options.path}: not JSON (${(error as Error).message}); truncated?`,
      cause: error,
    });
  }
  const parsed = options.schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new CheckpointError({
      path: options.path,
      message: `${options.path}: not ${options.what} (${issue?.path.join('.') || '(root)'}: ${issue?.message})`,
      cause: parsed.error,
    });
  }
  return parsed.data;
}

/** Reads a regular file without following a symlink in its last component. */
async function readRegularFile(path: string): Promise<Buffer> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(
    (error: NodeJS.ErrnoException) => {
      if (error.code === 'ELOOP')
        throw new CheckpointError({ path, message: `${path}: a symlink; checkpoint files are never followed` });
      throw error;
    },
  );
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new CheckpointError({ path, message: `${path}: not a regular file (a ${kindOf(stat)})` });
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/** Creates `path` (refusing an existing file or link), writes `data` and fsyncs it. */
async function writeNew(path: string, data: string | Uint8Array): Promise<void> {
  const handle = await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function fsyncPath(path: string): Promise<void> {
  const handle = await open(path, constants.O_RDONLY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function assertRealDirectory(path: string): Promise<void> {
  const stat = await lstat(path);
  if (!stat.isDirectory())
    throw new CheckpointError({ path, message: `${path}: not a directory (a ${kindOf(stat)}); not followed` });
}

async function exists(path: string): Promise<boolean> {
  return (await lstat(path).catch(() => null)) !== null;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function kindOf(stat: {
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
  isFIFO(): boolean;
  isSocket(): boolean;
}): string {
  if (stat.isSymbolicLink()) return 'symlink';
  if (stat.isFIFO()) return 'FIFO';
  if (stat.isSocket()) return 'socket';
  if (stat.isDirectory()) return 'directory';
  return stat.isFile() ? 'file' : 'special file';
}
