// @troupe/runtime-kubernetes: the runtime, its sandbox and options, and its plugin entry (`createRuntime`).
export {
  exitCodeOf,
  KubernetesRuntimeOptionsSchema,
  type KubernetesRuntimeOptions,
  KubernetesSandbox,
  KubernetesRuntime,
} from './kubernetes-runtime.ts';

import { homedir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { ConfigError, type PluginContext } from '@troupe/verifiers';
import { runtimeOptionsTable } from '@troupe/verifiers/internal';
import { KubernetesRuntime, type KubernetesRuntimeOptions } from './kubernetes-runtime.ts';

/**
 * Plugin entry: `runtime = { id = "kubernetes", namespace = "…", image = "…", kubeconfig = "…" }` in a
 * config. The cluster comes from the `kubeconfig` file named in the options, else from `KUBECONFIG` in
 * the environment the caller passes (the CLI passes its own), else from `~/.kube/config`.
 */
export function createRuntime(options: unknown = {}, context: PluginContext = {}): KubernetesRuntime {
  const { kubeconfig, context: kubeContext, ...rest } = runtimeOptionsTable(options, 'kubernetes');
  if (kubeconfig !== undefined && typeof kubeconfig !== 'string')
    throw new ConfigError('runtime (kubernetes).kubeconfig: expected a file path');
  if (kubeContext !== undefined && typeof kubeContext !== 'string')
    throw new ConfigError('runtime (kubernetes).context: expected a context name');
  const file = kubeconfig ?? context.env?.KUBECONFIG?.split(':')[0] ?? join(homedir(), '.kube', 'config');
  const kubeConfig = new KubeConfig();
  try {
    kubeConfig.loadFromFile(file);
  } catch (error) {
    throw new ConfigError(`runtime (kubernetes): cannot read the kubeconfig ${file}: ${(error as Error).message}`);
  }
  if (kubeContext) kubeConfig.setCurrentContext(kubeContext);
  return new KubernetesRuntime({ ...(rest as KubernetesRuntimeOptions), kubeConfig });
}
