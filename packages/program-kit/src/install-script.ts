import type { Sandbox } from '@troupe/verifiers';
import { SandboxError } from '@troupe/verifiers';
import { shellQuote } from './shell.ts';

/**
 * Runs an install script inside the sandbox once: skipped when `marker` exists, serialized by
 * `flock` on `<marker>.lock` where flock exists, and the marker is written only on success.
 * Used by programs installed from PyPI or a vendor installer inside the sandbox.
 */
export async function runInstallScript(options: {
  sandbox: Sandbox;
  /** Shell script (run by `sh -c`, `set -e`). */
  script: string;
  /** Absolute path of the file that marks a finished install. */
  marker: string;
  env?: Record<string, string>;
  timeoutMs?: number;
  log?: (line: string) => void;
  signal?: AbortSignal;
}): Promise<void> {
  const marker = shellQuote(options.marker);
  const body = `set -e\nif [ -e ${marker} ]; then exit 0; fi\n${options.script}\nmkdir -p "$(dirname ${marker})" && touch ${marker}`;
  const wrapped = `mkdir -p "$(dirname ${marker})"\nif command -v flock >/dev/null 2>&1; then exec flock ${shellQuote(`${options.marker}.lock`)} sh -c ${shellQuote(body)}; else exec sh -c ${shellQuote(body)}; fi`;
  options.log?.(`install: ${options.script.split('\n')[0]} …`);
  const result = await options.sandbox.exec(['sh', '-c', wrapped], {
    ...(options.env ? { env: options.env } : {}),
    timeoutMs: options.timeoutMs ?? 15 * 60_000,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (result.exitCode !== 0) {
    throw new SandboxError(
      `install failed in sandbox ${options.sandbox.id} (exit ${result.exitCode}): ${`${result.stdout}\n${result.stderr}`.trim().slice(-2000)}`,
    );
  }
}
