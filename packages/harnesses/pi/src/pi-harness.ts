import { defineProgramHarness, npmPackage, withoutV1, withV1 } from '@troupe/program-kit';
import type { Dialect } from '@troupe/verifiers';
import { z } from 'zod';

/** Name of the environment variable that carries the rollout secret (`apiKey` in models.json names it). */
export const PI_KEY_ENV = 'TROUPE_INTERCEPTION_KEY';

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
 * pi-coding-agent (`@mariozechner/pi-coding-agent` on npm, pinned 0.73.1, the one verified) in
 * print mode (`pi -p`), its calls sent to interception in the chosen dialect (OpenAI chat by
 * default). Its own agent dir, no session files, offline, stdin closed.
 */
export const PiHarness = defineProgramHarness({
  id: 'pi',
  defaultVersion: '0.73.1',
  options: {
    /** The API pi speaks to interception: `chat` (default, trainable), `responses` or `messages`. */
    transport: z.enum(['chat', 'responses', 'messages']).optional(),
    /** Tools allowed (`--tools`); default: pi's read, bash, edit, write. */
    tools: z.array(z.string().min(1)).optional(),
  },
  dialect: (options) => options.transport ?? 'chat',
  program: (version) => `@mariozechner/pi-coding-agent ${version}`,
  install: npmPackage({ packageName: '@mariozechner/pi-coding-agent', bin: 'pi', node: 'host' }),
  capabilities: { appendsSystemPrompt: true },
  launch: ({ launch, scratch, prompt, install, options }) => {
    const agentDir = `${scratch}/pi-agent`;
    const argv = [install.binPath, '--provider', 'troupe', '--model', launch.endpoint.model, '--no-session', '--offline', '-p'];
    if (options.tools) argv.push('--tools', options.tools.join(','));
    if (prompt.system) argv.push('--append-system-prompt', prompt.system);
    // pi reads a leading `@` as a file reference and a leading `-` as a flag.
    argv.push(/^[@-]/.test(prompt.prompt) ? ` ${prompt.prompt}` : prompt.prompt);
    const { baseUrl, model } = launch.endpoint;
    return {
      argv,
      env: { HOME: `${scratch}/home`, PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: '1', [PI_KEY_ENV]: launch.endpoint.secret },
      files: [
        { path: `${agentDir}/models.json`, content: piModelsJson({ baseUrl, model, transport: options.transport ?? 'chat' }) },
        { path: `${agentDir}/settings.json`, content: PI_SETTINGS_JSON },
      ],
    };
  },
});

/** Builds the harness from untyped options (validated; errors name the field). */
export const { createHarness } = PiHarness;
