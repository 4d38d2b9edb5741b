import type { Sandbox } from '@troupe/verifiers';
import { SandboxError } from '@troupe/verifiers';

/**
 * The argv prefix that writes stdin to the file named by its last argument (creating parent
 * directories). Files are written with `exec` rather than `sandbox.writeFile` so that an
 * absolute path means the same place to the file API and to the program on every runtime.
 */
export const WRITE_FILE_SCRIPT = 'mkdir -p "$(dirname "$1")" && cat > "$1" && chmod "$2" "$1"';

/** Writes `content` to the absolute sandbox path `path` (parents created). */
export async function writeSandboxFile(options: {
  sandbox: Sandbox;
  path: string;
  content: string;
  /** Octal mode string, default `600` (configs carry the rollout secret). */
  mode?: string;
  signal?: AbortSignal;
}): Promise<void> {
  const result = await options.sandbox.exec(['sh', '-c', WRITE_FILE_SCRIPT, 'write-file', options.path, options.mode ?? '600'], {
    stdin: options.content,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (result.exitCode !== 0) {
    throw new SandboxError(
      `could not write ${options.path} in sandbox ${options.sandbox.id}: ${result.stderr.trim() || `exit ${result.exitCode}`}`,
    );
  }
}

/**
 * Creates a fresh private directory for one run (HOME, config) under the sandbox's `$TMPDIR`
 * (else `/tmp`) and returns its absolute path.
 */
export async function makeScratchDir(options: { sandbox: Sandbox; label: string; signal?: AbortSignal }): Promise<string> {
  const template = `troupe-${options.label.replace(/[^A-Za-z0-9-]/g, '-')}-XXXXXXXX`;
  const result = await options.sandbox.exec(
    ['sh', '-c', `mkdir -p "\${TMPDIR:-/tmp}" && mktemp -d "\${TMPDIR:-/tmp}/${template}"`],
    {
      ...(options.signal ? { signal: options.signal } : {}),
    },
  );
  const path = result.stdout.trim();
  if (result.exitCode !== 0 || !path.startsWith('/')) {
    throw new SandboxError(
      `could not create a scratch directory in sandbox ${options.sandbox.id}: ${result.stderr.trim() || `exit ${result.exitCode}`}`,
    );
  }
  return path;
}

/** Removes a scratch directory made by `makeScratchDir` (best effort). */
export async function removeScratchDir(options: { sandbox: Sandbox; path: string }): Promise<void> {
  if (!/^\/.*\/troupe-[A-Za-z0-9-]+-[A-Za-z0-9]{8}$/.test(options.path)) return;
  await options.sandbox.exec(['rm', '-rf', options.path]).catch(() => undefined);
}
