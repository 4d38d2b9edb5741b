import type { Dialect, HarnessCapabilities, Sandbox } from '@troupe/verifiers';
import { CliHarness, type HarnessInfo } from './cli-harness.ts';
import type { CliHarnessOptions } from './harness-options.ts';
import { defaultHarnessCacheDir } from './host-install.ts';
import { type NpmProgram, type ProvisionedProgram, provisionNpmProgram } from './npm-program.ts';

/** Options every npm-program harness reads besides the common ones. */
export interface NpmProgramHarnessOptions extends CliHarnessOptions {
  /** npm version of the program (default: the pinned one). */
  version?: string;
  /** Runs the program without a container (`local` runtime): for tests and trusted tasks only. */
  allowLocal?: boolean;
}

/** How the real npm CLIs are verified here (the default `verification` of their info). */
export const REAL_CLI_VERIFICATION = 'real CLI against the scripted model behind interception (local sandbox)';

/**
 * Base of the harnesses whose program is a pinned npm package run for real here (claude-code,
 * codex, openclaw, pi): the id is the program's, `options.version` overrides the pinned version,
 * the install is `provisionNpmProgram` into the host cache (`options.cacheDir`, default
 * `~/.cache/troupe/harnesses`), and it needs a container unless `options.allowLocal`.
 * Subclasses plan the run (and may map the result).
 */
export abstract class NpmProgramHarness<O extends NpmProgramHarnessOptions> extends CliHarness<ProvisionedProgram> {
  readonly id: string;
  readonly capabilities: HarnessCapabilities;
  readonly info: HarnessInfo;
  protected readonly options: O;
  /** The pinned program with the version actually installed. */
  protected readonly program: NpmProgram;

  constructor(spec: {
    /** The pinned program (its `id` is the harness id). */
    program: NpmProgram;
    options: O;
    dialect: Dialect;
    /** Whether the program appends the system prompt to its own. */
    appendsSystemPrompt: boolean;
    /** The `info.program` label (default `<packageName> <version>`). */
    label?: (program: NpmProgram) => string;
    /** The `info.verification` text (default `REAL_CLI_VERIFICATION`). */
    verification?: string;
  }) {
    super(spec.options);
    this.options = spec.options;
    this.program = { ...spec.program, version: spec.options.version ?? spec.program.version };
    this.id = spec.program.id;
    this.capabilities = {
      executesCode: true,
      needsContainer: !spec.options.allowLocal,
      supportsMcp: false,
      supportsResume: false,
      supportsSkills: false,
      appendsSystemPrompt: spec.appendsSystemPrompt,
    };
    this.info = {
      id: this.id,
      program: spec.label ? spec.label(this.program) : `${this.program.packageName} ${this.program.version}`,
      version: this.program.version,
      dialect: spec.dialect,
      verifiedHere: true,
      verification: spec.verification ?? REAL_CLI_VERIFICATION,
    };
  }

  protected install(context: {
    sandbox: Sandbox;
    log: (line: string) => void;
    signal: AbortSignal;
  }): Promise<ProvisionedProgram> {
    return provisionNpmProgram({
      ...context,
      program: this.program,
      cacheDir: this.options.cacheDir ?? defaultHarnessCacheDir(),
    });
  }
}

/** The launch plan's `pathDirs` for a provisioned program: present only when it has some. */
export function provisionedPathDirs(install: ProvisionedProgram): { pathDirs?: string[] } {
  return install.pathDirs.length ? { pathDirs: install.pathDirs } : {};
}
