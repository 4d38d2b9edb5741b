import { ConfigError, type Episode, type ModelCallOptions, type ModelClient, type ModelRequest } from '@troupe/verifiers';
import { ReplyProbabilitiesUnavailable } from './evaluation.ts';
import type { EvaluationPolicy, Inference, Trainer, TrainSource } from './types.ts';

/** The name of the policy a role plays when its source binds none: the run's only trainable policy. */
export const MAIN_POLICY = 'main';

/** One trainable policy's engines: its own trainer and the inference that serves it. */
export interface PolicyEngines<W, O> {
  trainer: Trainer<W, O>;
  inference: Inference<W>;
}

/** The trainable policy role `role` of `source` plays (`main` unless the source binds another). */
export function policyOfRole(source: TrainSource, role: string): string {
  return source.policies?.[role] ?? MAIN_POLICY;
}

/** The policies the trainable roles of `source` play, in the order of its env's roles. */
export function policiesOfSource(source: TrainSource): string[] {
  const trainable = source.env.roles.filter((role) => !source.frozenRoles.has(role));
  return [...new Set(trainable.map((role) => policyOfRole(source, role)))];
}

/**
 * The policy each role of `source` plays, by role: the one its `policies` binds (a role may be
 * frozen on it: `trainable = false`), else `main` for a role that is not frozen; a role frozen and
 * unbound (a frozen model, checkpoint or pool) is left out.
 */
export function rolePolicies(source: TrainSource): Record<string, string> {
  const roles: Record<string, string> = {};
  for (const role of source.env.roles) {
    const bound = source.policies?.[role];
    if (bound !== undefined) roles[role] = bound;
    else if (!source.frozenRoles.has(role)) roles[role] = MAIN_POLICY;
  }
  return roles;
}

/**
 * Checks that every policy a source binds (a role's policy, a pool's `of`) is one of `names`; the
 * error names the source and role.
 */
export function checkPolicyBindings(sources: readonly TrainSource[], names: ReadonlySet<string>): void {
  const known = [...names].join(', ');
  for (const source of sources) {
    for (const [role, policy] of Object.entries(source.policies ?? {}))
      if (!names.has(policy))
        throw new ConfigError(
          `sources: ${source.name}.${role} binds policy ${policy}, which the run does not train (policies: ${known})`,
          {
            path: `sources.${source.name}.policies.${role}`,
          },
        );
    for (const { role, pool } of source.pools ?? [])
      if (!names.has(pool.config.of))
        throw new ConfigError(
          `sources: ${source.name}.${role} pools snapshots of policy ${pool.config.of}, which the run does not train (policies: ${known})`,
          {
            path: `sources.${source.name}.pools.${role}.of`,
          },
        );
  }
}

/**
 * The episodes of `group` as `policy` trains on them: each episode keeps only the traces of the
 * roles bound to `policy` (the others' traces are trained by their own policies). An episode
 * left with no trace is omitted. The views share the episodes' traces: advantages were assigned
 * on the whole group first, per source, as the algorithm sees roles, not policies.
 */
export function episodesOfPolicy(source: TrainSource, episodes: readonly Episode[], policy: string): Episode[] {
  const out: Episode[] = [];
  for (const episode of episodes) {
    const traces = episode.traces.filter((trace) => policyOfRole(source, trace.agent.name) === policy);
    if (traces.length === 0) continue;
    if (traces.length === episode.traces.length) {
      out.push(episode);
      continue;
    }
    const view = Object.create(episode) as Episode;
    Object.defineProperty(view, 'traces', { value: traces, enumerable: true });
    out.push(view);
  }
  return out;
}

/**
 * One client over several policies' evaluation clients: a request goes to the policy its `model`
 * names (a role's model name is the policy it binds), else to `fallback`. It has no reply
 * probabilities (they are one policy's): `replyProbabilities` rejects with
 * {@link ReplyProbabilitiesUnavailable}, so an evaluator needing them is skipped with that reason.
 */
export function routedEvaluationPolicy(policies: ReadonlyMap<string, EvaluationPolicy>, fallback: string): EvaluationPolicy {
  const pick = (model: string) => (policies.get(model) ?? policies.get(fallback)) as EvaluationPolicy;
  const client: ModelClient = {
    model: fallback,
    complete: (request: ModelRequest, options?: ModelCallOptions) => pick(request.model).client.complete(request, options),
  };
  const names = [...policies.keys()].join(', ');
  return {
    version: pick(fallback).version,
    client,
    // Reply probabilities are one policy's: an evaluator that needs them is skipped, saying why.
    replyProbabilities: () =>
      Promise.reject(
        new ReplyProbabilitiesUnavailable(
          `the source's roles play several policies (${names}); no one policy's reply probabilities`,
        ),
      ),
    loadRngState(state) {
      for (const policy of policies.values()) policy.loadRngState?.(state);
    },
  };
}
