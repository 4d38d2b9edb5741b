import { z } from 'zod';
import type { PluginContext } from '../agent/plugins.ts';
import { ConfigError } from '../errors/troupe-error.ts';
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
});

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
    return new RuntimeClass(
      parseRuntimeOptions({ schema: RuntimeClass.optionsSchema, value: { ...rest, apiKey }, what: `runtime (${id})` }),
    );
  };
}
