import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { compileFunction } from 'node:vm';
import type { TsProtoServiceDefinition } from 'nice-grpc';

/** The two gRPC services of Modal's API, as the installed SDK's own generated code defines them. */
export interface ModalDefinitions {
  /** `modal.client.ModalClient`: the control plane (`api.proto`). */
  ModalClientDefinition: TsProtoServiceDefinition;
  /** `modal.task_command_router.TaskCommandRouter`: per-task exec and stdio (`task_command_router.proto`). */
  TaskCommandRouterDefinition: TsProtoServiceDefinition;
}

/**
 * Loads the service definitions (method paths and the ts-proto message codecs generated from
 * Modal's `.proto` files) out of the installed `modal` package, so the double encodes and decodes
 * exactly the bytes the SDK sends. The SDK bundles them without exporting them: its CommonJS build
 * is evaluated once more as a function body with its own `require`, and the two definitions are
 * returned from that scope. Nothing of the SDK is copied into this repository.
 */
export function loadModalDefinitions(): ModalDefinitions {
  const requireFromHere = createRequire(import.meta.url);
  const entry = requireFromHere.resolve('modal');
  const source = readFileSync(entry, 'utf8');
  const body = `${source}\nreturn { ModalClientDefinition, TaskCommandRouterDefinition };`;
  const evaluate = compileFunction(body, ['exports', 'require', 'module', '__filename', '__dirname'], { filename: entry });
  const module = { exports: {} };
  const definitions = evaluate(module.exports, createRequire(entry), module, entry, dirname(entry)) as ModalDefinitions;
  if (!definitions.ModalClientDefinition?.methods || !definitions.TaskCommandRouterDefinition?.methods)
    throw new Error(`the installed modal SDK (${entry}) no longer defines ModalClientDefinition / TaskCommandRouterDefinition`);
  return definitions;
}
