import {
  CliHarnessOptionsSchema,
  type LaunchPlan,
  type NpmProgram,
  NpmProgramHarness,
  type PlanContext,
  type ProvisionedProgram,
  parseHarnessOptions,
  provisionedPathDirs,
  withoutV1,
  withV1,
} from '@troupe/harness-kit';
import type { Dialect } from '@troupe/verifiers';
import { z } from 'zod';

/** The pinned pi release (measured here: see docs/harnesses.md). */
export const PI_PROGRAM: NpmProgram = {
  id: 'pi',
  packageName: '@mariozechner/pi-coding-agent',
  version: '0.73.1',
  bin: 'pi',
  node: 'host',
};

/** Name of the environment variable that carries the rollout secret (`apiKey` in models.json names it). */
export const PI_KEY_ENV = 'TROUPE_INTERCEPTION_KEY';

/** Options of the `pi` harness. */
export const PiHarnessOptionsSchema = CliHarnessOptionsSchema.extend({
  /** npm version of `@mariozechner/pi-coding-agent` (default 0.73.1, the one verified here). */
  version: z.string().min(1).optional(),
  /** The API pi speaks to interception: `chat` (default, trainable), `responses` or `messages`. */
  transport: z.enum(['chat', 'responses', 'messages']).optional(),
  /** Tools allowed (`--tools`); default: pi's read, bash, edit, write. */
  tools: z.array(z.string().min(1)).optional(),
  /** Runs the program without a container (`local` runtime): for tests and trusted tasks only. */
  allowLocal: z.boolean().optional(),
}).strict();
export type PiHarnessOptions = z.infer<typeof PiHarnessOptionsSchema>;

const API_OF: Record<Dialect, string> = {
  chat: 'openai-completions',
  responses: 'openai-responses',
  messages: 'anthropic-messages',
};

/**
 * pi's `models.json`: one `troupe` provider at the interception endpoint. `apiKey` names the
 * environment variable holding the rollout secret, so the secret is never written to disk.
 */
export function piModelsJson(options: { baseUrl: string; model: string; transport: Dialect }): string {
  const baseUrl = options.transport === 'messages' ? withoutV1(options.baseUrl) : withV1(options.baseUrl);
  const provider: Record<string, unknown> = {
    baseUrl,
    api: API_OF[options.transport],
    apiKey: PI_KEY_ENV,
    models: [{ id: options.model }],
  };
  if (options.transport === 'messages') provider.compat = { supportsEagerToolInputStreaming: false };
  return `${JSON.stringify({ providers: { troupe: provider } }, null, 2)}\n`;
}

/** pi's `settings.json` with the agent- and SDK-level retries off (a 5xx otherwise costs ~12 requests). */
export const PI_SETTINGS_JSON = `${JSON.stringify({ retry: { enabled: false, provider: { maxRetries: 0 } } }, null, 2)}\n`;

/**
 * pi-coding-agent in print mode (`pi -p`), its calls sent to interception in the chosen dialect
 * (OpenAI chat by default). Its own agent dir, no session files, offline, stdin closed.
 */
export class PiHarness extends NpmProgramHarness<PiHarnessOptions> {
  private readonly transport: Dialect;

  constructor(options: PiHarnessOptions = {}) {
    const transport = options.transport ?? 'chat';
    super({ program: PI_PROGRAM, options, dialect: transport, appendsSystemPrompt: true });
    this.transport = transport;
  }

  protected plan({ launch, scratch, prompt, install }: PlanContext<ProvisionedProgram>): LaunchPlan {
    const agentDir = `${scratch}/pi-agent`;
    const argv = [install.binPath, '--provider', 'troupe', '--model', launch.endpoint.model, '--no-session', '--offline', '-p'];
    if (this.options.tools) argv.push('--tools', this.options.tools.join(','));
    if (prompt.system) argv.push('--append-system-prompt', prompt.system);
    // pi reads a leading `@` as a file reference and a leading `-` as a flag.
    argv.push(/^[@-]/.test(prompt.prompt) ? ` ${prompt.prompt}` : prompt.prompt);
    return {
      argv,
      env: { HOME: `${scratch}/home`, PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: '1', [PI_KEY_ENV]: launch.endpoint.secret },
      files: [
        {
          path: `${agentDir}/models.json`,
          content: piModelsJson({ baseUrl: launch.endpoint.baseUrl, model: launch.endpoint.model, transport: this.transport }),
        },
        { path: `${agentDir}/settings.json`, content: PI_SETTINGS_JSON },
      ],
      ...provisionedPathDirs(install),
    };
  }
}

/** Builds the harness from untyped options (validated; errors name the field). */
export function createHarness(options: unknown = {}): PiHarness {
  return new PiHarness(parseHarnessOptions({ harnessId: 'pi', schema: PiHarnessOptionsSchema, value: options }));
}
