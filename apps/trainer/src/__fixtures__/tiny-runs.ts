// Run configs at test size: a shipped config file read as a user's would be, with `--set`s applied.
import { DEFAULT_CONFIG } from '../default-config.ts';
import { applySet, readRunConfigFile } from '../run-config.ts';

/** The policy and trainer of a test run: d_model 8, 2 heads, no worker thread. */
const TINY_POLICY = ['trainer.worker_thread=false', 'policy.d_model=8', 'policy.heads=2', 'policy.ffn_mult=1'];

/** The run config file `path` with a tiny policy (d_model 8, 2 heads, trainer in this thread), then each `key=value` of `sets` applied. */
export async function tinyConfig(path: string, sets: readonly string[]): Promise<Record<string, unknown>> {
  const config = await readRunConfigFile(path);
  for (const set of [...TINY_POLICY, ...sets]) applySet(config, set);
  return config;
}

/** The default config (Kuhn poker) at test size: 2 steps of 2 groups × 2 hands, a checkpoint each step; then `overrides`. */
export function tinyKuhn(overrides: readonly string[] = []): Promise<Record<string, unknown>> {
  return tinyConfig(DEFAULT_CONFIG, [
    'max_steps=2',
    'groups_per_step=2',
    'checkpoint_every=1',
    'train.source.0.group_size=2',
    ...overrides,
  ]);
}
