import type {
  Dialect,
  ExecResult,
  Harness,
  HarnessCapabilities,
  HarnessLaunchContext,
  HarnessResult,
  Sandbox,
} from '@troupe/verifiers';
import { type PromptParts, promptParts } from './prompt.ts';
import { makeScratchDir, removeScratchDir, writeSandboxFile } from './sandbox-files.ts';

/** Facts about a harness, for docs and the README table. */
export interface HarnessInfo {
  /** The harness id (`troupe eval --harness <id>`). */
  id: string;
  /** The program and the pinned version, e.g. `@openai/codex 0.171.0`. */
  program: string;
  /** The version installed (the pinned default unless the options chose another). */
  version: string;
  /** The API dialect its model calls use. */
  dialect: Dialect;
  /**
   * True when its integration test runs the real program (against a scripted model behind
   * interception); false when the tests only check its commands against a recording sandbox.
   */
  testedForReal: boolean;
  /** How its tests verify it, or why they cannot run it (one sentence, for the docs table). */
  verification: string;
}

/** A file the program needs before it starts (its own config). */
export interface PlannedFile {
  /** Absolute path inside the sandbox. */
  path: string;
  content: string;
  /** Octal mode, default `600`. */
  mode?: string;
}

/** Everything needed to start the program once: written files, then one command. */
export interface LaunchPlan {
  argv: string[];
  env: Record<string, string>;
  files: PlannedFile[];
  /** Directories put first on PATH (e.g. the Node the program needs). */
  pathDirs?: string[];
  /** Working directory (default: the sandbox workdir). */
  cwd?: string;
  /**
   * In a container, run `argv[0]` as a setgid copy of itself (see {@link SEALED_EXEC_SCRIPT}): the
   * kernel then makes the program non-dumpable, so its `/proc/<pid>/environ`, memory and file
   * descriptors are closed to the commands it runs (no `CAP_SYS_PTRACE` in a default container).
   */
  sealed?: boolean;
}

/**
 * Runs `$1` (a program binary) as a setgid copy of itself, made once beside it (`<bin>.sealed`,
 * group 65534, mode 2755), with the remaining arguments; the original binary when the copy cannot
 * be made (a non-root container user, a `nosuid` mount). Executing a file whose group differs
 * from the caller's makes the process non-dumpable (the kernel's `suid_dumpable`, 0 by default),
 * which closes its `/proc/<pid>/{environ,mem,fd}` and `ptrace` to processes without
 * `CAP_SYS_PTRACE`; the commands it runs exec ordinary binaries and are dumpable again.
 */
const SEALED_EXEC_SCRIPT = [
  'b="$1"; shift; s="$b.sealed"',
  '[ -g "$s" ] || { cp "$b" "$s.$$" && chgrp 65534 "$s.$$" && chmod 2755 "$s.$$" && mv -f "$s.$$" "$s"; } 2>/dev/null',
  '[ -g "$s" ] && exec "$s" "$@"',
  'rm -f "$s.$$"; exec "$b" "$@"',
].join('\n');

/** What `plan` receives. */
export interface PlanContext<I> {
  launch: HarnessLaunchContext;
  /** A fresh private directory for this run (HOME, config dirs). */
  scratch: string;
  prompt: PromptParts;
  install: I;
}

/** Exit code reported when the program is killed for running past `timeoutMs` (as `timeout(1)`). */
export const TIMEOUT_EXIT_CODE = 124;

/** The shell line that prepends `$1` to PATH, then runs the remaining arguments. */
export const WITH_PATH_SCRIPT = 'PATH="$1:$PATH"; export PATH; shift; exec "$@"';

/**
 * Base of every external-program harness: `setup` installs the program once per sandbox,
 * `launch` makes a scratch HOME, writes the program's own config (pointing its model calls at
 * the interception endpoint with the rollout secret), runs one non-interactive command with
 * stdin closed, and maps the exit. Subclasses say how to install and what to run.
 */
export abstract class CliHarness<I> implements Harness {
  abstract readonly id: string;
  abstract readonly capabilities: HarnessCapabilities;
  abstract readonly info: HarnessInfo;
  private readonly installs = new WeakMap<Sandbox, Promise<I>>();

  constructor(
    protected readonly common: { timeoutMs?: number; env?: Record<string, string>; extraArgs?: string[]; keepScratch?: boolean },
  ) {}

  /** Installs the program into the sandbox (or finds it installed) and says where it is. */
  protected abstract install(context: { sandbox: Sandbox; log: (line: string) => void; signal: AbortSignal }): Promise<I>;

  /** The files and command of one run. */
  protected abstract plan(context: PlanContext<I>): LaunchPlan | Promise<LaunchPlan>;

  /** Turns the program's exit into the harness result (default: as is; a timeout is exit 124). */
  protected mapResult(result: ExecResult): HarnessResult {
    if (result.timedOut) {
      return {
        exitCode: TIMEOUT_EXIT_CODE,
        stdout: result.stdout,
        stderr: `${result.stderr}\n[troupe] ${this.id} killed after its timeout`.trim(),
      };
    }
    return { exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr };
  }

  async setup(context: { sandbox: Sandbox; log: (line: string) => void; signal: AbortSignal }): Promise<void> {
    await this.installed(context);
  }

  async launch(context: HarnessLaunchContext): Promise<HarnessResult> {
    const { sandbox, signal } = context;
    const install = await this.installed({ sandbox, log: context.log, signal });
    const scratch = await makeScratchDir({ sandbox, label: this.id.replace(/_/g, '-'), signal });
    try {
      const plan = await this.plan({ launch: context, scratch, prompt: promptParts(context.messages), install });
      for (const file of plan.files) {
        await writeSandboxFile({
          sandbox,
          path: file.path,
          content: file.content,
          ...(file.mode ? { mode: file.mode } : {}),
          signal,
        });
      }
      const program = plan.sealed && sandbox.runtime !== 'local' ? ['/bin/sh', '-c', SEALED_EXEC_SCRIPT, 'sealed'] : [];
      const argv = [...program, ...plan.argv, ...(this.common.extraArgs ?? [])];
      const command = plan.pathDirs?.length ? ['sh', '-c', WITH_PATH_SCRIPT, 'launch', plan.pathDirs.join(':'), ...argv] : argv;
      context.log(`${this.id}: running ${plan.argv[0]} in ${plan.cwd ?? sandbox.workdir}`);
      const result = await sandbox.exec(command, {
        cwd: plan.cwd ?? sandbox.workdir,
        env: { ...(this.common.env ?? {}), ...plan.env },
        stdin: '',
        signal,
        ...(this.common.timeoutMs ? { timeoutMs: this.common.timeoutMs } : {}),
      });
      return this.mapResult(result);
    } finally {
      if (!this.common.keepScratch) await removeScratchDir({ sandbox, path: scratch });
    }
  }

  private installed(context: { sandbox: Sandbox; log: (line: string) => void; signal: AbortSignal }): Promise<I> {
    let pending = this.installs.get(context.sandbox);
    if (!pending) {
      pending = this.install(context);
      this.installs.set(context.sandbox, pending);
      pending.catch(() => this.installs.delete(context.sandbox));
    }
    return pending;
  }
}

/** `http://host:port/v1` → `http://host:port` (for SDKs that append `/v1/...` themselves). */
export function withoutV1(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
}

/** `http://host:port` or `…/v1/` → `http://host:port/v1`. */
export function withV1(baseUrl: string): string {
  const trimmed = baseUrl.replace(/\/+$/, '');
  return trimmed.endsWith('/v1') ? trimmed : `${trimmed}/v1`;
}
