import { type Dialect, defaultCapabilities, type HarnessCapabilities, type Sandbox } from '@troupe/verifiers';
import { z } from 'zod';
import { CliHarness, type HarnessInfo, type LaunchPlan, type PlanContext } from './cli-harness.ts';
import { CliHarnessOptionsSchema } from './harness-options.ts';
import { installScript, RECORDED_ONLY_VERIFICATION, SANDBOX_TOOL_ROOT } from './program-harness.ts';

/** Installs uv when missing (the Python original does the same), into `/var/tmp/troupe/tools/bin`. */
export const ENSURE_UV = [
  `export PATH="${SANDBOX_TOOL_ROOT}/bin:$PATH"`,
  `if ! command -v uv >/dev/null 2>&1; then curl -LsSf https://astral.sh/uv/install.sh | env UV_INSTALL_DIR=${SANDBOX_TOOL_ROOT}/bin UV_NO_MODIFY_PATH=1 sh; fi`,
].join('\n');

/** `uv tool install` of a pinned package into the shared tool root. */
export function uvToolInstall(spec: string, options: { python?: string; with?: string[] } = {}): string {
  const extra = (options.with ?? []).map((w) => ` --with ${JSON.stringify(w)}`).join('');
  return `${ENSURE_UV}\nUV_TOOL_DIR=${SANDBOX_TOOL_ROOT}/uv UV_TOOL_BIN_DIR=${SANDBOX_TOOL_ROOT}/bin uv tool install --python ${options.python ?? '3.12'}${extra} ${JSON.stringify(spec)}`;
}

/** Options of a harness whose program is installed inside the sandbox: the common ones and the version to install. */
export const SandboxProgramOptionsSchema = CliHarnessOptionsSchema.extend({
  /** The program version to install (default: the harness's pinned release). */
  version: z.string().min(1).optional(),
}).strict();
/**
 * The options of a sandbox-installed program harness: the common {@link CliHarnessOptions} plus
 * `version`, the program version to install (see {@link SandboxProgramOptionsSchema}).
 */
export type SandboxProgramOptions = z.infer<typeof SandboxProgramOptionsSchema>;

/**
 * The `HarnessInfo` of a sandbox-installed program whose tests check its commands against a
 * recording sandbox and never run it (`testedForReal: false`, `verification: RECORDED_ONLY_VERIFICATION`).
 */
export function recordedOnlyInfo(options: { id: string; program: string; version: string; dialect: Dialect }): HarnessInfo {
  const { id, program, version, dialect } = options;
  return { id, program, version, dialect, testedForReal: false, verification: RECORDED_ONLY_VERIFICATION };
}

/** A program installed by a script inside the sandbox (PyPI via uv, a vendor installer). */
export interface SandboxProgramSpec {
  id: string;
  info: HarnessInfo;
  /** Default: `containerCapabilities()`. */
  capabilities?: HarnessCapabilities;
  /** The install script (`sh`, `set -e`); runs once per sandbox under a lock. */
  installScript: string;
  /** Plans one run (config files, env, argv). `PATH` gets `/var/tmp/troupe/tools/bin` first. */
  plan: (context: PlanContext<void>) => LaunchPlan;
}

/**
 * A harness whose program is installed inside the sandbox by a script, built from a spec with a
 * ready `info` (the scaffold's shape; `defineProgramHarness` with `installScript` is the shorter
 * way). No host cache: PyPI and
 * vendor downloads happen in the sandbox, where the runtime's network policy applies).
 */
export class SandboxProgramHarness extends CliHarness<void> {
  readonly id: string;
  readonly capabilities: HarnessCapabilities;
  readonly info: HarnessInfo;
  private readonly spec: SandboxProgramSpec;

  constructor(spec: SandboxProgramSpec, common: ConstructorParameters<typeof CliHarness>[0] = {}) {
    super(common);
    this.spec = spec;
    this.id = spec.id;
    this.capabilities = spec.capabilities ?? containerCapabilities();
    this.info = spec.info;
  }

  protected async install(context: { sandbox: Sandbox; log: (line: string) => void; signal: AbortSignal }): Promise<void> {
    const installer = installScript(() => this.spec.installScript);
    await installer.install({ ...context, id: this.spec.id, version: this.spec.info.version, options: {} });
  }

  protected plan(context: PlanContext<void>): LaunchPlan {
    const plan = this.spec.plan(context);
    return { ...plan, pathDirs: [`${SANDBOX_TOOL_ROOT}/bin`, ...(plan.pathDirs ?? [])] };
  }
}

/** Capabilities of a container-only program that runs code (the usual external harness). */
export function containerCapabilities(overrides: Partial<HarnessCapabilities> = {}): HarnessCapabilities {
  return { ...defaultCapabilities, ...overrides };
}
