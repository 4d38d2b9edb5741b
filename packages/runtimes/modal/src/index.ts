// @troupe/runtime-modal: the runtime, its sandbox and options, and its plugin entry (`createRuntime`).
export { ModalRuntimeOptionsSchema, type ModalRuntimeOptions, ModalSandbox, ModalRuntime } from './modal-runtime.ts';

import { ConfigError, type PluginContext, parseRuntimeOptions } from '@troupe/verifiers';
import { runtimeOptionsTable } from '@troupe/verifiers/internal';
import { ModalRuntime } from './modal-runtime.ts';

/**
 * Plugin entry: `runtime = { id = "modal", image = "python:3.12-slim", … }` in a config. Modal's
 * token is a pair, read from the environment the caller passes (the CLI passes its own) when the
 * runtime is built, so it never sits in a config file or a trace: the secret from `apiKeyVar`
 * (default `MODAL_TOKEN_SECRET`), the id from `tokenIdVar` (default `MODAL_TOKEN_ID`).
 * `apiKey` / `tokenId` options win.
 */
export function createRuntime(options: unknown = {}, context: PluginContext = {}): ModalRuntime {
  const {
    apiKeyVar = 'MODAL_TOKEN_SECRET',
    tokenIdVar = 'MODAL_TOKEN_ID',
    ...rest
  } = runtimeOptionsTable(options, ModalRuntime.id) as { apiKeyVar?: string; tokenIdVar?: string } & Record<string, unknown>;
  const apiKey = rest.apiKey ?? context.env?.[apiKeyVar];
  const tokenId = rest.tokenId ?? context.env?.[tokenIdVar];
  if (!apiKey) throw new ConfigError(`runtime (modal): set the token secret in ${apiKeyVar} (or runtime.apiKeyVar)`);
  if (!tokenId) throw new ConfigError(`runtime (modal): set the token id in ${tokenIdVar} (or runtime.tokenIdVar)`);
  return new ModalRuntime(
    parseRuntimeOptions({
      schema: ModalRuntime.optionsSchema,
      value: {
        ...rest,
        apiKey,
        tokenId,
        ...(rest.apiKey === undefined && rest.tokenId === undefined && { apiKeyVar, tokenIdVar }),
      },
      what: 'runtime (modal)',
    }),
  );
}
