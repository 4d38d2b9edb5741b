import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ConfigError } from '../errors/troupe-error.ts';

/**
 * The commands `troupe` runs from another package's bin, the way git runs `git-<command>`: the
 * core never imports that package (the walls stay), it finds the package installed in the user's
 * project (or beside this one) and spawns its bin with the arguments.
 */
export const DELEGATED_COMMANDS: Record<string, { package: string; bin: string }> = {
  view: { package: '@troupe/viewer', bin: 'troupe-viewer' },
  train: { package: '@troupe/trainer', bin: 'troupe-trainer' },
  crossplay: { package: '@troupe/trainer', bin: 'troupe-trainer' },
  'serve-inference': { package: '@troupe/trainer', bin: 'troupe-trainer' },
  'serve-trainer': { package: '@troupe/trainer', bin: 'troupe-trainer' },
};

/**
 * The bin file of `pkg` as installed from `folder` (its `package.json` `bin` entry), or null when not
 * installed. Looks in `node_modules` of `folder` and each folder above it, as Node resolves a
 * package, but never through NODE_PATH or global folders: the project's own install decides.
 */
function findBin(pkg: string, bin: string, folder: string): string | null {
  for (let dir = resolve(folder); ; dir = dirname(dir)) {
    const manifest = join(dir, 'node_modules', ...pkg.split('/'), 'package.json');
    if (existsSync(manifest)) {
      const bins = (JSON.parse(readFileSync(manifest, 'utf8')) as { bin?: string | Record<string, string> }).bin;
      const file = typeof bins === 'string' ? bins : bins?.[bin];
      return file ? resolve(dirname(manifest), file) : null;
    }
    if (dirname(dir) === dir) return null;
  }
}

/**
 * Runs a delegated command: the package's bin, found from the working directory first, then from
 * this package's own location (in this repository, the root's workspace links); a missing package is a config error naming what to install.
 * Resolves with the child's exit code (128 + n when a signal ended it).
 */
export async function delegatedCommand(
  command: string,
  args: string[],
  /** Where to look for the package, first to last (tests pass a project folder of their own). */
  folders: readonly string[] = [process.cwd(), import.meta.dirname],
): Promise<number> {
  const target = DELEGATED_COMMANDS[command];
  if (!target) throw new ConfigError(`unknown command ${JSON.stringify(command)}`);
  let bin: string | null = null;
  for (const folder of folders) bin ??= findBin(target.package, target.bin, folder);
  if (!bin)
    throw new ConfigError(
      `\`troupe ${command}\` is a command of ${target.package}, which is not installed here: npm install ${target.package}`,
    );
  const child = spawn(process.execPath, [bin, command, ...args], { stdio: 'inherit' });
  // A terminal's Ctrl-C reaches the child as well (one process group): this process waits for its
  // exit code; a signal sent to this process alone is passed on.
  const forward = (signal: NodeJS.Signals) => child.kill(signal);
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  for (const signal of signals) process.on(signal, forward);
  try {
    return await new Promise<number>((done, fail) => {
      child.once('error', fail);
      child.once('exit', (code, signal) => done(code ?? (signal === 'SIGINT' ? 130 : signal === 'SIGHUP' ? 129 : 143)));
    });
  } finally {
    for (const signal of signals) process.off(signal, forward);
  }
}
