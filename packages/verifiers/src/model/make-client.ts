import type { ClientConfig } from '../agent/agent-config.ts';
import { OpenAICompatibleClient } from './openai-client.ts';

/**
 * Builds an OpenAI-compatible client for `troupe eval` and `troupe replay`; the API key is read
 * here, at the CLI layer, and nowhere else.
 */
export function makeClient(config: ClientConfig, model: string): OpenAICompatibleClient {
  // `-b URL` builds a client table without apiKeyVar: the documented default still applies.
  const apiKey = process.env[config.apiKeyVar ?? 'OPENAI_API_KEY'];
  return new OpenAICompatibleClient({
    baseUrl: config.baseUrl,
    apiKey: apiKey ?? 'EMPTY',
    model,
    ...(config.headers ? { headers: config.headers } : {}),
    retry: { maxRetries: config.maxRetries },
    ...(config.timeoutMs ? { timeoutMs: config.timeoutMs } : {}),
  });
}
