import { execFile } from 'node:child_process';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { HarnessError } from '@troupe/verifiers';

/** The default host cache of harness installs: `~/.cache/troupe/harnesses`. */
export function defaultHarnessCacheDir(): string {
  return join(homedir(), '.cache', 'troupe', 'harnesses');
}

const MARKER = '.troupe-installed.json';

/** What `installNpmPackages` leaves behind. */
export interface HostInstall {
  /** `npm install --prefix` directory: `<cache>/<key>`. */
  prefix: string;
  /** `<prefix>/node_modules/.bin`. */
  binDir: string;
  /** True when this call ran npm (false: the cache already held it). */
  installed: boolean;
}

/**
 * Installs pinned npm packages once per machine into `<cacheDir>/<key>` (`npm install
 * --prefix`). Concurrent callers (other processes too) wait on a lock directory; the install
 * goes to a temporary prefix renamed into place, so a half-finished install is never used.
 * `nodeBinDir` runs npm under another Node (engines checks and native builds see that Node).
 */
export async function installNpmPackages(options: {
  cacheDir: string;
  /** Directory name of the install, e.g. `codex@0.171.0`. */
  key: string;
  /** `name@version` specs. */
  specs: string[];
  nodeBinDir?: string;
  /** Environment of the npm process (the CLI layer's environment; defaults to this process's). */
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
  signal?: AbortSignal;
  /** Give up waiting for another installer after this long (default 15 minutes). */
  lockTimeoutMs?: number;
}): Promise<HostInstall> {
  const prefix = join(options.cacheDir, options.key);
  const result = (installed: boolean): HostInstall => ({ prefix, binDir: join(prefix, 'node_modules', '.bin'), installed });
  if (await isInstalled(prefix, options.specs)) return result(false);
  await mkdir(options.cacheDir, { recursive: true });
  const lock = `${prefix}.lock`;
  await acquireLock({
    lock,
    timeoutMs: options.lockTimeoutMs ?? 15 * 60_000,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  try {
    if (await isInstalled(prefix, options.specs)) return result(false);
    const staging = `${prefix}.staging-${process.pid}`;
    await rm(staging, { recursive: true, force: true });
    await mkdir(staging, { recursive: true });
    options.log?.(`installing ${options.specs.join(' ')} into ${prefix}`);
    const env = { ...(options.env ?? process.env) };
    if (options.nodeBinDir) env.PATH = `${options.nodeBinDir}${delimiter}${env.PATH ?? ''}`;
    const npmArgs = [
      'install',
      '--prefix',
      staging,
      '--no-audit',
      '--no-fund',
      '--no-save',
      '--loglevel=error',
      ...options.specs,
    ];
    const npm = options.nodeBinDir ? (['node', [npmCliPath(), ...npmArgs]] as const) : (['npm', npmArgs] as const);
    await run({ file: npm[0], args: [...npm[1]], env, ...(options.signal ? { signal: options.signal } : {}) });
    await writeFile(join(staging, MARKER), JSON.stringify({ specs: options.specs, at: new Date().toISOString() }));
    await rm(prefix, { recursive: true, force: true });
    await rename(staging, prefix);
    return result(true);
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}

/** The npm CLI script of the Node running this process (used to run npm under another Node). */
function npmCliPath(): string {
  return join(dirname(dirname(process.execPath)), 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js');
}

async function isInstalled(prefix: string, specs: string[]): Promise<boolean> {
  try {
    const marker = JSON.parse(await readFile(join(prefix, MARKER), 'utf8')) as { specs?: string[] };
    return JSON.stringify(marker.specs) === JSON.stringify(specs);
  } catch {
    return false;
  }
}

async function acquireLock(options: { lock: string; timeoutMs: number; signal?: AbortSignal }): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    try {
      await mkdir(options.lock);
      await writeFile(join(options.lock, 'pid'), String(process.pid));
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    if (await lockIsStale(options.lock)) {
      await rm(options.lock, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline) throw new HarnessError(`timed out waiting for the install lock ${options.lock}`);
    if (options.signal?.aborted) throw new HarnessError(`install aborted while waiting for ${options.lock}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** A lock whose owner process is gone (or with no pid after a minute) is stale. */
async function lockIsStale(lock: string): Promise<boolean> {
  try {
    const pid = Number(await readFile(join(lock, 'pid'), 'utf8'));
    // bare-error: caught just below (a lock without a pid is stale)
    if (!Number.isInteger(pid) || pid <= 0) throw new Error('no pid');
    try {
      process.kill(pid, 0);
      return false;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'ESRCH';
    }
  } catch {
    const info = await stat(lock).catch(() => null);
    return info !== null && Date.now() - info.mtimeMs > 60_000;
  }
}

function run(options: { file: string; args: string[]; env: NodeJS.ProcessEnv; signal?: AbortSignal }): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(
      options.file,
      options.args,
      { env: options.env, maxBuffer: 64 * 1024 * 1024, ...(options.signal ? { signal: options.signal } : {}) },
      (error, _stdout, stderr) => {
        if (error)
          reject(
            new HarnessError(
              `${options.file} ${options.args.slice(0, 2).join(' ')} … failed: ${String(stderr).trim().slice(-2000) || error.message}`,
              { cause: error },
            ),
          );
        else resolve();
      },
    );
  });
}
