import type { Dialect, ExecResult, HarnessCapabilities, HarnessResult, Sandbox } from '@troupe/verifiers';
import { z } from 'zod';
import { CliHarness, type HarnessInfo, type LaunchPlan, type PlanContext } from './cli-harness.ts';
import { type CliHarnessOptions, CliHarnessOptionsSchema, parseHarnessOptions } from './harness-options.ts';
import { defaultHarnessCacheDir } from './host-install.ts';
import { runInstallScript } from './install-script.ts';
import { type NpmProgram, type ProvisionedProgram, provisionNpmProgram } from './npm-program.ts';

/** Where programs installed inside a sandbox live (uv tools, vendor binaries). */
export const SANDBOX_TOOL_ROOT = '/var/tmp/troupe/tools';

/**
 * Why the sandbox-installed programs are not run by their tests, and what the tests check instead
 * (the default `info.verification` of {@link installScript} programs).
 */
export const RECORDED_ONLY_VERIFICATION =
  'not run by the tests: the install downloads from PyPI / the vendor, out of reach of the test sandbox; commands and config checked against a recording sandbox';

/** How the real npm CLIs are verified (the default `verification` of their info). */
export const REAL_CLI_VERIFICATION = 'real CLI against the scripted model behind interception (local sandbox)';

/** What an installer is told about the harness it installs for. */
export interface InstallRequest<O> {
  sandbox: Sandbox;
  log: (line: string) => void;
  signal: AbortSignal;
  id: string;
  version: string;
  options: O;
}

/**
 * How a program gets into a sandbox, made by {@link installScript} or {@link npmPackage}. `I` is
 * what the install returns (handed to `launch`), `X` the options it adds to every harness using it.
 */
export interface ProgramInstaller<I, X> {
  /** The option fields it adds (e.g. `allowLocal`). */
  readonly optionsShape: z.ZodRawShape;
  /** Whether the program needs a container under these options. */
  needsContainer(options: X): boolean;
  /** Whether the program's integration test runs it for real (`info.testedForReal`). */
  readonly testedForReal: boolean;
  /** The default `info.verification`. */
  readonly verification: string;
  install(request: InstallRequest<X & CliHarnessOptions>): Promise<I>;
  /** Directories put first on PATH for the launch. */
  pathDirs(install: I): string[];
}

/**
 * A program installed inside the sandbox by a shell script (PyPI via uv, a vendor installer): the
 * script runs once per sandbox under a marker `/var/tmp/troupe/tools/.installed-<id>-<version>`,
 * `/var/tmp/troupe/tools/bin` goes first on PATH, it always needs a container, and it is not run
 * for real by its tests (the downloads are out of reach of the test machine).
 */
export function installScript<O = unknown>(
  script: (version: string, options: O) => string,
): ProgramInstaller<void, Record<never, never>> & { readonly script: typeof script } {
  return {
    script,
    optionsShape: {},
    needsContainer: () => true,
    testedForReal: false,
    verification: RECORDED_ONLY_VERIFICATION,
    install: (request) =>
      runInstallScript({
        sandbox: request.sandbox,
        script: script(request.version, request.options as O),
        marker: `${SANDBOX_TOOL_ROOT}/.installed-${request.id}-${request.version}`,
        log: request.log,
        signal: request.signal,
      }),
    pathDirs: () => [`${SANDBOX_TOOL_ROOT}/bin`],
  };
}

/** The option an npm program adds: running it without a container. */
const NpmOptionsShape = {
  /** Runs the program without a container (`local` runtime): for tests and trusted tasks only. */
  allowLocal: z.boolean().optional(),
};

/**
 * A program distributed on npm and run for real by its tests: installed once per machine into the
 * host cache (`options.cacheDir`, default `~/.cache/troupe/harnesses`) with `provisionNpmProgram`
 * and uploaded to container sandboxes; it needs a container unless `options.allowLocal`.
 */
export function npmPackage(
  pkg: Omit<NpmProgram, 'id' | 'version'>,
): ProgramInstaller<ProvisionedProgram, { allowLocal?: boolean }> & Readonly<Omit<NpmProgram, 'id' | 'version'>> {
  return {
    ...pkg,
    optionsShape: NpmOptionsShape,
    needsContainer: (options) => !options.allowLocal,
    testedForReal: true,
    verification: REAL_CLI_VERIFICATION,
    install: ({ sandbox, log, signal, id, version, options }) =>
      provisionNpmProgram({
        sandbox,
        log,
        signal,
        program: { ...pkg, id, version },
        cacheDir: options.cacheDir ?? defaultHarnessCacheDir(),
      }),
    pathDirs: (install) => install.pathDirs,
  };
}

/** The options of a program harness: the common ones, `version`, the installer's and its own. */
export type ProgramHarnessOptions<S extends z.ZodRawShape, X> = CliHarnessOptions & {
  /** The program version to install (default: the harness's `defaultVersion`). */
  version?: string;
} & X &
  z.infer<z.ZodObject<S>>;

/** What a program harness's `launch` receives: the plan context, its parsed options and the version. */
export interface ProgramLaunchContext<O, I> extends PlanContext<I> {
  options: O;
  version: string;
}

/** Everything that is a program harness's own; {@link defineProgramHarness} makes the rest. */
export interface ProgramHarnessSpec<S extends z.ZodRawShape, I, X> {
  /** The harness id (`harness = "<id>"`; package `@troupe/harness-<kebab-id>`). */
  id: string;
  /** The pinned program version (`options.version` overrides it). */
  defaultVersion: string;
  /** The harness's own option fields, beside the common ones, `version` and the installer's. */
  options?: S;
  /** The API dialect of its model calls (may depend on the options). */
  dialect: Dialect | ((options: ProgramHarnessOptions<S, X>) => Dialect);
  /** The `info.program` label for a version, e.g. `Poolside pool 1.0.15 (vendor binary)`. */
  program: (version: string, options: ProgramHarnessOptions<S, X>) => string;
  /** How the program gets into the sandbox: {@link installScript} or {@link npmPackage}. */
  install: ProgramInstaller<I, X>;
  /** The files, env and argv of one run (the installer's PATH entries are prepended). */
  launch: (context: ProgramLaunchContext<ProgramHarnessOptions<S, X>, I>) => LaunchPlan;
  /** Reads the program's own success report (the default already maps a timeout to exit 124). */
  mapResult?: (mapped: HarnessResult, result: ExecResult) => HarnessResult;
  /** Capabilities beside the defaults (executes code, container per the installer, nothing else). */
  capabilities?: Partial<HarnessCapabilities>;
  /** The `info.verification` text (default: the installer's). */
  verification?: string;
}

/**
 * A harness made by {@link defineProgramHarness}: a {@link CliHarness} whose install, plan and
 * result mapping come from its spec.
 */
export class ProgramHarness<O extends CliHarnessOptions & { version?: string }, I> extends CliHarness<I> {
  readonly id: string;
  readonly capabilities: HarnessCapabilities;
  readonly info: HarnessInfo;
  /** The parsed options. */
  readonly options: O;
  /** The version installed. */
  readonly version: string;
  // biome-ignore lint/suspicious/noExplicitAny: the spec's option types are checked where it is defined
  private readonly spec: ProgramHarnessSpec<any, I, any>;

  // biome-ignore lint/suspicious/noExplicitAny: as above
  constructor(spec: ProgramHarnessSpec<any, I, any>, options: O) {
    super(options);
    this.spec = spec;
    this.options = options;
    this.id = spec.id;
    this.version = options.version ?? spec.defaultVersion;
    this.capabilities = {
      executesCode: true,
      needsContainer: spec.install.needsContainer(options),
      supportsMcp: false,
      supportsResume: false,
      supportsSkills: false,
      appendsSystemPrompt: false,
      ...spec.capabilities,
    };
    this.info = {
      id: spec.id,
      program: spec.program(this.version, options),
      version: this.version,
      dialect: typeof spec.dialect === 'function' ? spec.dialect(options) : spec.dialect,
      testedForReal: spec.install.testedForReal,
      verification: spec.verification ?? spec.install.verification,
    };
  }

  protected install(context: { sandbox: Sandbox; log: (line: string) => void; signal: AbortSignal }): Promise<I> {
    return this.spec.install.install({ ...context, id: this.id, version: this.version, options: this.options });
  }

  protected plan(context: PlanContext<I>): LaunchPlan {
    const plan = this.spec.launch({ ...context, options: this.options, version: this.version });
    const pathDirs = [...this.spec.install.pathDirs(context.install), ...(plan.pathDirs ?? [])];
    return { ...plan, ...(pathDirs.length ? { pathDirs } : {}) };
  }

  protected override mapResult(result: ExecResult): HarnessResult {
    const mapped = super.mapResult(result);
    return this.spec.mapResult ? this.spec.mapResult(mapped, result) : mapped;
  }
}

/** The class {@link defineProgramHarness} returns: construct with typed options, or `createHarness(unknown)`. */
export interface ProgramHarnessClass<O extends CliHarnessOptions & { version?: string }, I, Inst> {
  new (options?: O): ProgramHarness<O, I>;
  readonly prototype: ProgramHarness<O, I>;
  readonly id: string;
  readonly defaultVersion: string;
  /** The installer of the spec (an npm program's `packageName`, an install script). */
  readonly installer: Inst;
  /** The strict zod schema of the options. */
  readonly optionsSchema: z.ZodType<O>;
  /** The plugin entry: validates untyped options (errors name the harness and the field) and builds the harness. */
  readonly createHarness: (options?: unknown) => ProgramHarness<O, I>;
}

/**
 * Defines a harness for an external program from what is its own (id, pinned version, install,
 * launch plan, option fields, result reading). Export the class and its `createHarness`:
 *
 * ```ts
 * export const PoolHarness = defineProgramHarness({ id: 'pool', defaultVersion: '1.0.15', … });
 * export const { createHarness } = PoolHarness;
 * ```
 */
export function defineProgramHarness<
  S extends z.ZodRawShape = Record<never, never>,
  I = void,
  X = Record<never, never>,
  Inst extends ProgramInstaller<I, X> = ProgramInstaller<I, X>,
>(spec: ProgramHarnessSpec<S, I, X> & { install: Inst }): ProgramHarnessClass<ProgramHarnessOptions<S, X>, I, Inst> {
  type O = ProgramHarnessOptions<S, X>;
  const optionsSchema = CliHarnessOptionsSchema.extend({
    /** The program version to install (default: the harness's pinned release). */
    version: z.string().min(1).optional(),
    ...spec.install.optionsShape,
    ...(spec.options ?? {}),
  }).strict() as unknown as z.ZodType<O>;
  const Defined = class extends ProgramHarness<O, I> {
    static readonly id = spec.id;
    static readonly defaultVersion = spec.defaultVersion;
    static readonly installer = spec.install;
    static readonly optionsSchema = optionsSchema;
    static readonly createHarness = (options: unknown = {}): ProgramHarness<O, I> =>
      new Defined(parseHarnessOptions({ harnessId: spec.id, schema: optionsSchema, value: options }));

    constructor(options: O = {} as O) {
      super(spec, options);
    }
  };
  return Defined;
}
