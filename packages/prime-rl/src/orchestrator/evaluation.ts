import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ModelClient } from '@troupe/verifiers';
import { EngineError } from '@troupe/verifiers';
import { sourceMetrics, taskAt } from './sources.ts';
import type { EvaluationPolicy, EvaluationResult, StepMetrics, TrainSource } from './types.ts';

/** Thrown by the stand-in `replyProbabilities` of a policy whose engine cannot read logits (vLLM): the evaluator is skipped. */
export class ReplyProbabilitiesUnavailable extends EngineError {}

/** `policy`, or a view of it whose `replyProbabilities` throws {@link ReplyProbabilitiesUnavailable}. */
function readablePolicy(policy: EvaluationPolicy): EvaluationPolicy {
  if (policy.replyProbabilities) return policy;
  const view = Object.create(policy) as EvaluationPolicy;
  view.replyProbabilities = () =>
    Promise.reject(new ReplyProbabilitiesUnavailable('the inference engine cannot report reply probabilities'));
  return view;
}

/**
 * A source evaluated every `interval` steps (and at the last step), never trained on: its first
 * `groups` tasks are played by a separate policy at the new weights, handed to `useClient`
 * (the env's trainable roles must call that client); metrics go under `eval/<name>/…`.
 */
export interface EvalSource {
  source: TrainSource;
  interval: number;
  groups: number;
  useClient(client: ModelClient): void;
}

/**
 * Runs each of `sources`' evaluators on its policy at the step's weights (`policyFor`; each role's
 * own policy from `rolesFor`, so a seat is read from the policy bound to it): metrics into
 * `line` under `eval/<source>/…`, artifacts written into `out`, the time under `time/eval`. A
 * source whose evaluator needs reply probabilities the engine cannot give joins `unreadable`
 * and is skipped from then on, with a logged note.
 */
export async function runEvaluators(options: {
  sources: readonly TrainSource[];
  /** The policy (at the step's weights) a source is evaluated with. */
  policyFor: (source: TrainSource) => Promise<EvaluationPolicy>;
  /** Each role's own policy (at the step's weights), for the roles a policy of the run plays. */
  rolesFor?: (source: TrainSource) => Promise<Record<string, EvaluationPolicy>>;
  step: number;
  out: string;
  line: StepMetrics;
  unreadable: Set<string>;
  log: (line: string) => void;
}): Promise<void> {
  const { sources, policyFor, rolesFor, step, out, line, unreadable, log } = options;
  const t3 = performance.now();
  for (const source of sources) {
    if (unreadable.has(source.name)) continue;
    const policy = readablePolicy(await policyFor(source));
    const roles = rolesFor
      ? Object.fromEntries(Object.entries(await rolesFor(source)).map(([role, p]) => [role, readablePolicy(p)]))
      : undefined;
    let result: EvaluationResult | undefined;
    try {
      result = await source.evaluator?.evaluate({ policy, step, ...(roles ? { roles } : {}) });
    } catch (error) {
      if (!(error instanceof ReplyProbabilitiesUnavailable)) throw error;
      unreadable.add(source.name);
      log(`eval/${source.name}: evaluator skipped for the rest of the run (${error.message})`);
      continue;
    }
    for (const [key, value] of Object.entries(result?.metrics ?? {})) line[`eval/${source.name}/${key}`] = value;
    for (const [file, content] of Object.entries(result?.artifacts ?? {})) await writeFile(join(out, file), content);
  }
  line['time/eval'] = performance.now() - t3;
}

/**
 * Plays each of the `due` eval sources' first `groups` tasks with its policy at the step's weights
 * (version `step`): its `train/…` source metrics into `line` as `eval/…`, the time under
 * `time/eval_sources`.
 */
export async function runEvalSources(options: {
  due: readonly EvalSource[];
  /** The policy (at the step's weights) a source is played with. */
  policyFor: (source: TrainSource) => Promise<EvaluationPolicy>;
  step: number;
  line: StepMetrics;
}): Promise<void> {
  const { due, policyFor, line } = options;
  const t4 = performance.now();
  for (const evaluation of due) {
    evaluation.useClient((await policyFor(evaluation.source)).client);
    const { source } = evaluation;
    const played = await Promise.all(
      Array.from({ length: evaluation.groups }, (_, index) => {
        const task = taskAt(source, index);
        return Promise.all(
          Array.from({ length: source.groupSize }, (_, i) =>
            source.env.runEpisode({ task, group: { id: `eval-${source.name}-${index}`, index: i } }),
          ),
        );
      }),
    );
    for (const [key, value] of Object.entries(sourceMetrics(source.name, played.flat()))) {
      line[key.replace(/^train\//, 'eval/')] = value;
    }
  }
  line['time/eval_sources'] = performance.now() - t4;
}
