import type { ExecOptions, ExecResult } from '@troupe/verifiers';
import { SandboxError } from '@troupe/verifiers';
import { ExecOutputCollector, guardExec, killCommand, sleep, wrapWithPidFile } from '@troupe/verifiers/internal';
import type Docker from 'dockerode';

/** What {@link runDockerExec} needs. */
export interface DockerExecRun {
  docker: Docker;
  container: Docker.Container;
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  options: ExecOptions;
  pidFile: string;
  maxOutputBytes: number;
  /** How often the exec is inspected while its output streams (to notice a main process that exited). */
  pollMs?: number;
  /** How long output may keep streaming after the main process exited (a background child holding stdout). */
  closeGraceMs?: number;
}

/**
 * One `docker exec` with demultiplexed stdout / stderr, stdin closed unless given, and the exit
 * code read by polling exec inspect until it stops running. Timeout or abort SIGKILLs the exec's
 * process group (through a second exec), so a child ignoring SIGTERM and grandchildren die too.
 */
export async function runDockerExec(run: DockerExecRun): Promise<ExecResult> {
  const { options } = run;
  const started = performance.now();
  if (options.signal?.aborted) throw options.signal.reason;
  const hasStdin = options.stdin !== undefined;
  const exec = await run.container.exec({
    Cmd: wrapWithPidFile(run.argv, run.pidFile),
    AttachStdin: hasStdin,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
    WorkingDir: run.cwd,
    Env: Object.entries(run.env).map(([name, value]) => `${name}=${value}`),
  });
  const stream = await exec.start({ hijack: true, stdin: hasStdin });
  const stdout = new ExecOutputCollector(run.maxOutputBytes, options.onStdout);
  const stderr = new ExecOutputCollector(run.maxOutputBytes, options.onStderr);
  run.docker.modem.demuxStream(stream, stdout, stderr);
  if (hasStdin) {
    stream.write(typeof options.stdin === 'string' ? options.stdin : Buffer.from(options.stdin as Uint8Array));
    stream.end();
  }

  let killing: Promise<void> | undefined;
  const kill = () => {
    killing ??= (async () => {
      try {
        const killer = await run.container.exec({ Cmd: killCommand(run.pidFile), AttachStdout: false, AttachStderr: false });
        await killer.start({ Detach: true });
      } catch {
        // The container may already be gone; stop() removes it anyway.
      }
    })();
    return killing;
  };
  const guard = guardExec({ timeoutMs: options.timeoutMs, signal: options.signal, kill: () => void kill() });

  try {
    const ended = new Promise<void>((resolve) => {
      stream.once('end', () => resolve());
      stream.once('close', () => resolve());
      stream.once('error', () => resolve());
    });
    // Inspect while streaming: if the main process exited but a background child keeps the
    // output open, stop reading after a grace period instead of waiting for the child.
    let streaming = true;
    const watcher = (async () => {
      while (streaming) {
        await Promise.race([ended, sleep(run.pollMs ?? 500)]);
        if (!streaming) return;
        const info = await exec.inspect().catch(() => undefined);
        if (info && !info.Running) {
          await Promise.race([ended, sleep(run.closeGraceMs ?? 1000)]);
          stream.destroy();
          return;
        }
      }
    })();
    await ended;
    streaming = false;
    await watcher;
    if (killing) await killing;
    if (guard.aborted) throw options.signal?.reason ?? new SandboxError('exec aborted');
    let info = await exec.inspect();
    for (let attempt = 0; info.Running && attempt < 200; attempt++) {
      await sleep(attempt < 10 ? 10 : 50);
      info = await exec.inspect();
    }
    const result: ExecResult = {
      exitCode: info.ExitCode ?? (guard.timedOut ? 137 : 1),
      stdout: stdout.text(),
      stderr: stderr.text(),
      timedOut: guard.timedOut,
      durationMs: performance.now() - started,
    };
    if (stdout.truncated || stderr.truncated) result.truncated = true;
    return result;
  } finally {
    guard.dispose();
  }
}
