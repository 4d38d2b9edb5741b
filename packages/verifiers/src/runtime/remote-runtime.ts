import { z } from 'zod';
import type { PluginContext } from '../agent/plugins.ts';
import { ConfigError, SandboxError } from '../errors/troupe-error.ts';
import { CreationLimiter, type CreationLimits, CreationLimitsSchema, type CreationSlot } from './creation-limiter.ts';
import { OpenSandboxes, remoteSandboxError } from './remote-sandbox.ts';
import type { Runtime, RuntimeCapabilities, Sandbox, SandboxOptions } from './runtime.ts';
import { SandboxOptionsSchema } from './runtime.ts';
import { parseRuntimeOptions } from './runtime-options.ts';
import { withoutSecrets } from './sandbox-env.ts';

/**
 * Options every API-key remote runtime takes (extend it with the provider's own): the key, injected
 * by the caller (see {@link apiKeyRuntimeEntry}; never read from the environment by the runtime),
 * where the provider's API is, and the creation limits.
 */
export const ApiKeyRuntimeOptionsSchema = CreationLimitsSchema.extend({
  /** The provider's API key. */
  apiKey: z.string().min(1),
  /** Base URL of the provider's API (default: the provider's own; set it for a proxy, self-hosting or tests). */
  apiUrl: z.string().url().optional(),
  /**
   * The environment variable the key was read from (set by {@link apiKeyRuntimeEntry}): errors name
   * it, never the key. Unset when the key came from the `apiKey` option.
   */
  apiKeyVar: z.string().min(1).optional(),
});

/** How long a preflight waits for the provider's API before calling it unreachable. */
const PREFLIGHT_TIMEOUT_MS = 15_000;

/** The HTTP status (or gRPC code as `grpc <n>`) an SDK's error carries, when it carries one. */
function statusOf(error: unknown): string | undefined {
  if (error === null || typeof error !== 'object') return undefined;
  const record = error as {
    statusCode?: unknown;
    status?: unknown;
    code?: unknown;
    response?: { status?: unknown };
  };
  for (const value of [record.statusCode, record.status, record.response?.status, record.code])
    if (typeof value === 'number' && value >= 100 && value < 600) return String(value);
  return undefined;
}

/**
 * Base of the runtimes whose sandboxes live at a provider or on a cluster (Daytona, E2B, Prime,
 * Kubernetes): the options are parsed with the runtime's schema (errors name `<id>.<field>`), a
 * creation waits for a slot of its {@link CreationLimiter} (scoped by the runtime id), the
 * sandbox's `env` loses every secret-looking name ({@link withoutSecrets}) before it reaches the
 * provider, the slot is freed when provisioning fails or the sandbox stops, and `close` stops every
 * sandbox still open. Subclasses only provision one sandbox.
 */
export abstract class RemoteRuntime<O extends CreationLimits, S extends Sandbox> implements Runtime {
  readonly id: string;
  abstract readonly capabilities: RuntimeCapabilities;
  /** The parsed runtime options. */
  protected readonly options: O;
  private readonly limiter: CreationLimiter;
  private readonly sandboxes = new OpenSandboxes<S>();

  constructor(init: { id: string; schema: z.ZodType<O>; options: unknown }) {
    this.id = init.id;
    this.options = parseRuntimeOptions({ schema: init.schema, value: init.options, what: init.id });
    this.limiter = new CreationLimiter(this.options, init.id);
  }

  /**
   * Creates one sandbox at the provider and returns how to wrap it around its creation slot.
   * `options` are parsed, and `options.env` is set and holds no secret-looking name. A failure
   * should leave nothing behind at the provider (delete what was half made); a `SandboxError` it
   * throws passes through, any other error becomes one naming the runtime.
   */
  protected abstract provision(options: SandboxOptions): Promise<(slot: CreationSlot) => S>;

  async createSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
    const sandboxOptions = parseRuntimeOptions({ schema: SandboxOptionsSchema, value: options, what: 'sandbox' });
    const slot = await this.limiter.acquire();
    let build: (slot: CreationSlot) => S;
    try {
      build = await this.provision({ ...sandboxOptions, env: withoutSecrets(sandboxOptions.env) });
    } catch (error) {
      slot.release();
      throw remoteSandboxError({ runtime: this.id, operation: 'create', id: 'new', error });
    }
    return this.sandboxes.add(slot, build);
  }

  async close(): Promise<void> {
    await this.sandboxes.stopAll();
  }

  /**
   * The cheapest call of the provider's API that needs the credentials (list one sandbox, look an
   * app up): resolves when the API answered and accepted them, throws what the SDK threw otherwise.
   * A runtime without one has no preflight.
   */
  protected ping?(signal: AbortSignal): Promise<void>;

  /**
   * Whether an error of {@link ping} is the provider refusing the credentials. Default: an HTTP
   * 401 or 403 on the error (`statusCode`, `status`, `response.status` or `code`), or an error named
   * `AuthenticationError`; runtimes whose SDK says it otherwise (gRPC's UNAUTHENTICATED) override it.
   */
  protected refusesCredentials(error: unknown): boolean {
    const status = statusOf(error);
    return status === '401' || status === '403' || (error as Error | undefined)?.name === 'AuthenticationError';
  }

  /** Where the credentials came from, as errors name them: the key's variable, never the key. */
  protected credentialSource(): string {
    const { apiKeyVar } = this.options as { apiKeyVar?: string };
    return apiKeyVar ? `the key in ${apiKeyVar}` : `the ${this.id}.apiKey option`;
  }

  /** Where the API is, as errors name it. */
  protected apiLocation(): string {
    return (this.options as { apiUrl?: string }).apiUrl ?? `${this.id}'s API`;
  }

  /**
   * Before a run creates anything: the provider's API answers {@link ping} within 15 s and accepts
   * the credentials. Otherwise a `SandboxError` that names the variable the key came from (a
   * refusal) or the API's location and the cause (no answer); the key itself never appears.
   */
  async preflight(): Promise<void> {
    if (!this.ping) return;
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), PREFLIGHT_TIMEOUT_MS);
    });
    let failure: unknown;
    let answered = true;
    try {
      answered = (await Promise.race([this.ping(controller.signal), late])) !== 'late';
    } catch (error) {
      failure = error;
    } finally {
      clearTimeout(timer);
      controller.abort();
    }
    const { apiKey } = this.options as { apiKey?: string };
    const redact = (text: string) => (apiKey ? text.split(apiKey).join('***') : text);
    if (failure !== undefined && this.refusesCredentials(failure)) {
      const status = statusOf(failure);
      throw new SandboxError(
        redact(
          `${this.id}: ${this.apiLocation()} refused ${this.credentialSource()}${status ? ` (${status})` : ''}: ${(failure as Error).message ?? failure}; set a valid one there`,
        ),
      );
    }
    if (failure !== undefined || !answered) {
      const reason = answered
        ? ((failure as NodeJS.ErrnoException).code ?? (failure as Error).message ?? String(failure))
        : 'no answer in 15 s';
      throw new SandboxError(
        redact(`${this.id}: ${this.apiLocation()} does not answer (${reason}); check ${this.id}.apiUrl and the network`),
      );
    }
  }
}

/** A plugin's options as a plain table; anything else is a `ConfigError` (`runtime (<id>): options must be a table`). */
export function runtimeOptionsTable(options: unknown, id: string): Record<string, unknown> {
  if (options === null || typeof options !== 'object' || Array.isArray(options))
    throw new ConfigError(`runtime (${id}): options must be a table`);
  return options as Record<string, unknown>;
}

/**
 * A runtime class {@link apiKeyRuntimeEntry} builds: its plugin id and options schema as static
 * fields, and a constructor taking the parsed options.
 */
export interface ApiKeyRuntimeClass<O, R extends Runtime> {
  new (options: O): R;
  readonly id: string;
  readonly optionsSchema: z.ZodType<O>;
}

/**
 * The `createRuntime(options, context)` plugin entry of a runtime reached with an API key:
 * `runtime = { id = "<id>", apiKeyVar = "<KEY_VAR>", … }` in a config. The key is read from the named
 * variable (default `defaultKeyVar`) of the environment the caller passes (the CLI passes its own)
 * when the runtime is built, so it never sits in a config file or a trace; an `apiKey` option wins.
 */
export function apiKeyRuntimeEntry<O, R extends Runtime>(spec: {
  runtime: ApiKeyRuntimeClass<O, R>;
  defaultKeyVar: string;
}): (options?: unknown, context?: PluginContext) => R {
  const { runtime: RuntimeClass, defaultKeyVar } = spec;
  const id = RuntimeClass.id;
  return (options = {}, context = {}) => {
    const { apiKeyVar = defaultKeyVar, ...rest } = runtimeOptionsTable(options, id) as { apiKeyVar?: string } & Record<
      string,
      unknown
    >;
    const apiKey = rest.apiKey ?? context.env?.[apiKeyVar];
    if (!apiKey) throw new ConfigError(`runtime (${id}): set the API key in ${apiKeyVar} (or runtime.apiKeyVar)`);
    const source = rest.apiKey === undefined ? { apiKeyVar } : {};
    return new RuntimeClass(
      parseRuntimeOptions({ schema: RuntimeClass.optionsSchema, value: { ...rest, ...source, apiKey }, what: `runtime (${id})` }),
    );
  };
}
