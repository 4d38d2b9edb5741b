import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError, type Episode, EpisodeWriter, TrainerError } from '@troupe/verifiers';
import type { JsonValue } from '../algorithms/algorithm.ts';
import { GroupScorer } from '../algorithms/group-scorer.ts';
import { EmptyBatchesError, type EmptyBatchReason } from '../errors/empty-batches-error.ts';
import type { NamedWeight } from '../policy/config.ts';
import { BatchBuilder, type TrainingBatch } from '../samples/batch-builder.ts';
import { commitCheckpoint } from '../trainer/checkpoint.ts';
import type { OptimizerState } from '../trainer/optimizer-state.ts';
import { writeEmbeddedCheckpoint } from './embedded.ts';
import { type EvalSource, runEvalSources, runEvaluators } from './evaluation.ts';
import { DEFAULT_STOP_AFTER_FAILED_STEPS, FailedSteps } from './failed-steps.ts';
import { keepMetricsThrough } from './metrics-file.ts';
import { withPoolDraws } from './opponent-pool.ts';
import {
  checkPolicyBindings,
  episodesOfPolicy,
  MAIN_POLICY,
  type PolicyEngines,
  policiesOfSource,
  rolePolicies,
  routedEvaluationPolicy,
} from './policies.ts';
import { type PoolDraw, PoolSnapshots, poolMetrics } from './pool-snapshots.ts';
import { sourceMetrics, taskAt } from './sources.ts';
import { dropStaleEpisodes } from './stale-episodes.ts';
import { StepDispatcher } from './step-dispatcher.ts';
import type { EvaluationPolicy, Inference, ScoredGroup, StepMetrics, Trainer, TrainSource } from './types.ts';

export { EmptyBatchesError, type EmptyBatchReason } from '../errors/empty-batches-error.ts';
export { type EvalSource, ReplyProbabilitiesUnavailable } from './evaluation.ts';
export { DEFAULT_STOP_AFTER_FAILED_STEPS, TrainingStoppedError } from './failed-steps.ts';
export { MAIN_POLICY, type PolicyEngines } from './policies.ts';

/**
 * Empty batches in a row after which the run stops with {@link EmptyBatchesError} (prime-rl's
 * `MAX_CONSECUTIVE_EMPTY_BATCHES`, `src/prime_rl/orchestrator/orchestrator.py:99` at 559b447).
 */
export const MAX_CONSECUTIVE_EMPTY_BATCHES = 10;
export { sourceMetrics } from './sources.ts';

/**
 * A checkpoint as the orchestrator writes and resumes it, over its weights type `W` (tensors for
 * the embedded engines: then it is `trainer/checkpoint.ts`'s `Checkpoint`) and optimizer type `O`.
 */
export interface OrchestratorCheckpoint<W = NamedWeight[], O = OptimizerState> extends PolicyCheckpoint<W, O> {
  /** The training step it was taken after. */
  step: number;
  /** `{ orchestrator: OrchestratorState, run: runState }`. */
  state: Record<string, unknown>;
  /**
   * A run of several policies: every policy's part, by name (the fields above repeat the first
   * policy's). Absent for a run of one policy, whose part is the fields above.
   */
  policies?: Record<string, PolicyCheckpoint<W, O>>;
}

/** What a checkpoint holds of one trainable policy. */
export interface PolicyCheckpoint<W = NamedWeight[], O = OptimizerState> {
  weights: W;
  optimizer: O;
  /** Older policy versions still served to episodes in flight, oldest first. */
  inference?: { version: number; weights: W }[];
}

/** Orchestrator state saved in checkpoints: what the episodes of the step after the checkpoint start from. */
export interface OrchestratorState {
  /** Next task index per source. */
  cursors: Record<string, number>;
  /** Algorithm state per source. */
  algorithms: Record<string, JsonValue>;
  /** Evaluator state per source. */
  evaluators: Record<string, JsonValue>;
  /** Inference sampling RNG (of the first policy's engine). */
  rng: JsonValue;
  /** A run of several policies: each policy's inference sampling RNG, by name. */
  rngs?: Record<string, JsonValue>;
  /** Episodes played so far (in batches up to the checkpoint). */
  episodes: number;
  /** Trainer steps of the snapshots each opponent pool holds, by source then role (weights in the checkpoint's `inference` tensors). */
  pools?: Record<string, Record<string, number[]>>;
  /** A run of several policies: the trainer steps each policy has taken (a step without its samples does not train it). */
  policySteps?: Record<string, number>;
}

/** Options of {@link Orchestrator}. */
export interface OrchestratorOptions<W = NamedWeight[], O = OptimizerState> {
  sources: readonly TrainSource[];
  evalSources?: readonly EvalSource[];
  /**
   * The trainer of the run's one policy (`main`); `W` is what the orchestrator holds of each
   * policy version (it never reads it, only hands it on). Give `trainer` and `inference`, or `policies`.
   */
  trainer?: Trainer<W, O>;
  /** The inference engine of the run's one policy (`main`). */
  inference?: Inference<W>;
  /**
   * Several trainable policies, by name, each with its own trainer and inference: the sources'
   * `policies` bind roles to them; each step trains every policy that has samples, on the traces
   * of its roles only (advantages are assigned per source first). Metrics of the trainers are
   * logged as `trainer/<policy>/<key>` when there is more than one.
   */
  policies?: Readonly<Record<string, PolicyEngines<W, O>>>;
  maxSteps: number;
  /**
   * A wall-clock budget in seconds: the run stops at the first step boundary at or after it, and
   * that step is evaluated and checkpointed as a last step is. The schedules still run over
   * `maxSteps`, so `--resume` continues the same run. Default: no budget.
   */
  maxSeconds?: number;
  /** Groups dispatched per step, shared across sources by `ratio`. */
  groupsPerStep: number;
  /** Steps the collections may run ahead of the trainer (default 1; 0 = on-policy). */
  maxAsync?: number;
  /**
   * An episode more than this many steps behind the step that trains it is dropped (default 8);
   * steps that passed while it waited in the queue count. Its group is rescored without it, or
   * dropped whole, as its algorithm's `staleEpisodes` says.
   */
  maxOffPolicySteps?: number;
  /** prime-rl's zero-advantage filter (default true). */
  filterZeroAdvantages?: boolean;
  /**
   * Steps in a row whose every episode failed after which the run stops with
   * {@link TrainingStoppedError} (default {@link DEFAULT_STOP_AFTER_FAILED_STEPS}, 5); the run's
   * first step failing whole stops it at once. Such episodes never reach the trainer.
   */
  stopAfterFailedSteps?: number;
  /** The endpoints the run's roles call (policy servers, frozen models), named when the run stops. */
  endpoints?: readonly string[];
  /** Run each source's evaluator every N steps and at the last step (default 1). */
  evalEvery?: number;
  /** Checkpoint every N steps and at the last step (default 25); 0 = never. */
  checkpointEvery?: number;
  /** Also keep a copy of the checkpoint of these steps, as `checkpoint-step-<N>/` (e.g. for cross-play). */
  keepCheckpoints?: readonly number[];
  /** Seed of the opponent pools' draws and snapshot sampling (default 0). */
  seed?: number;
  /** Run directory: `metrics.jsonl`, evaluator artifacts, `checkpoint/`. */
  out: string;
  /**
   * Every N-th step's episodes — its scored groups, the episodes with their advantages and each
   * call's policy version — is appended to `<out>/traces.jsonl`, one Episode per line as
   * `troupe eval` writes them, so `troupe view <out>` opens the training run (default 0: none).
   */
  tracesEvery?: number;
  /** Caller state saved in each checkpoint under `run` (config, tokenizer, …). */
  runState?: Record<string, unknown>;
  /** Continue from this checkpoint (loaded with `loadCheckpoint`); the trainer and inference must already hold its weights. */
  resume?: OrchestratorCheckpoint<W, O>;
  /**
   * Writes a checkpoint's files into `dir`, a fresh directory the orchestrator then commits
   * (`commitCheckpoint`: manifest, fsync, `<out>/checkpoint` swapped to it). Default:
   * `writeEmbeddedCheckpoint`, the embedded engines' tensors (every policy's). With an external trainer it holds this
   * orchestrator's state and the broadcast step; the weights and optimizer live in that trainer's
   * own checkpoints.
   */
  writeCheckpoint?: (options: { dir: string } & OrchestratorCheckpoint<W, O>) => Promise<void>;
  onStep?: (metrics: StepMetrics) => void;
  log?: (line: string) => void;
}

/** What a finished run reports. */
export interface OrchestratorResult {
  /** The last step trained: `maxSteps`, or earlier when `maxSeconds` stopped the run. */
  steps: number;
  episodes: number;
  seconds: number;
  /** The last metrics line. */
  last: StepMetrics;
}

/** One step's scored groups, played at one policy version (`collectStep`). */
interface StepEpisodes {
  groups: ScoredGroup[];
  ms: number;
  version: number;
  /** State after these episodes: where the next step's start (saved with the checkpoint of this step). */
  after: Omit<OrchestratorState, 'evaluators' | 'episodes' | 'pools' | 'policySteps'>;
  /** Per pool role: `pool/<source>/<role>/…` metrics of these episodes' draws. */
  poolMetrics: Record<string, number>;
}

/** What one run carries from step to step. */
interface RunState<W> {
  /** The step the run starts after (0, or the resumed checkpoint's). */
  start: number;
  metricsPath: string;
  /** Next task index per source. */
  cursors: Record<string, number>;
  /** Episodes played so far. */
  episodes: number;
  /** Policy versions still to be served (version → policy → weights). */
  published: Map<number, Map<string, W>>;
  /** Trainer steps each policy has taken. */
  policySteps: Record<string, number>;
  /** Sources whose evaluator needs reply probabilities the engine cannot give. */
  unreadable: Set<string>;
  log: (line: string) => void;
}

/**
 * Splits `total` groups across sources by ratio (largest remainder, ties to the earlier
 * source), so every step mixes the sources the same way.
 */
export function allocateGroups(ratios: readonly number[], total: number): number[] {
  const sum = ratios.reduce((a, b) => a + b, 0);
  const exact = ratios.map((r) => (r / sum) * total);
  const counts = exact.map(Math.floor);
  let left = total - counts.reduce((a, b) => a + b, 0);
  const order = exact.map((x, i) => ({ i, r: x - Math.floor(x) })).sort((a, b) => b.r - a.r || a.i - b.i);
  for (const { i } of order) {
    if (left-- <= 0) break;
    counts[i] = (counts[i] ?? 0) + 1;
  }
  return counts;
}

/**
 * The training orchestrator (prime-rl's): each step it dispatches groups from its sources,
 * runs every episode through a `GroupScorer` (failed episodes marked, the algorithm's hooks),
 * drops episodes older than `maxOffPolicySteps` (queue time counted), cuts one batch with a `BatchBuilder`
 * (zero-advantage filter), trains one `Trainer` step, and serves the new weights through the
 * `Inference`. Steps' episodes are collected one step after another, each step pinned to one policy
 * version: step m's use version max(0, m − 1 − maxAsync), so with `maxAsync` 1 step m+1's play
 * while step m trains. Checkpoints hold the weights, optimizer, the versions still to be served,
 * the algorithm and evaluator state per source, taskset cursors and the sampling RNG: a resumed
 * run continues identically. Nothing here knows an env: evaluation is each source's
 * `evaluator`, and every metric is keyed by source and role.
 */
export class Orchestrator<W = NamedWeight[], O = OptimizerState> {
  private readonly options: OrchestratorOptions<W, O>;
  private readonly maxAsync: number;
  private readonly maxOffPolicySteps: number;
  private readonly scorers: Map<string, GroupScorer>;
  private readonly pools: PoolSnapshots<W>;
  private readonly stopAfterFailedSteps: number;
  private readonly failed: FailedSteps;
  /** Every trainable policy's engines, by name (`main` alone for a run of one policy). */
  private readonly engines: Map<string, PolicyEngines<W, O>>;
  /** More than one policy: trainer metrics under `trainer/<policy>/…`, checkpoints with `policies`. */
  private readonly several: boolean;

  constructor(options: OrchestratorOptions<W, O>) {
    this.options = options;
    this.stopAfterFailedSteps = options.stopAfterFailedSteps ?? DEFAULT_STOP_AFTER_FAILED_STEPS;
    this.failed = new FailedSteps({ stopAfter: this.stopAfterFailedSteps, endpoints: options.endpoints ?? [] });
    this.maxAsync = options.maxAsync ?? 1;
    this.maxOffPolicySteps = options.maxOffPolicySteps ?? 8;
    this.engines = engineMap(options);
    this.several = this.engines.size > 1;
    const names = new Set<string>();
    for (const source of options.sources) {
      if (names.has(source.name))
        throw new ConfigError(`sources: two sources are named ${source.name}; give one a name`, { path: 'sources' });
      names.add(source.name);
    }
    checkPolicyBindings(options.sources, new Set(this.engines.keys()));
    this.scorers = new Map(
      options.sources.map((s) => [s.name, new GroupScorer({ algorithm: s.algorithm, groupSize: s.groupSize })]),
    );
    this.pools = new PoolSnapshots({
      sources: options.sources,
      inferenceOf: (policy) => (this.engines.get(policy) as PolicyEngines<W, O>).inference,
      seed: options.seed ?? 0,
    });
  }

  async run(): Promise<OrchestratorResult> {
    const started = performance.now();
    const { options } = this;
    const run = await this.prepare();
    const dispatcher = new StepDispatcher<StepEpisodes>({
      start: run.start,
      maxSteps: options.maxSteps,
      maxAsync: this.maxAsync,
      // A resumed run plays at no version older than its checkpoint holds (an external trainer's
      // holds only its own step: prime-rl serves v{resume step} first, `orchestrator/orchestrator.py:331-376`).
      firstVersion: Math.min(...run.published.keys()),
      play: async ({ step, version }) => {
        for (const [name, { inference }] of this.engines) {
          if (inference.version === version) continue;
          const weights = run.published.get(version)?.get(name);
          if (weights === undefined)
            throw new TrainerError(`orchestrator: version ${version} of policy ${name} is no longer held`);
          await inference.updateWeights({ weights, version });
        }
        return this.collectStep({ cursors: run.cursors, version, step });
      },
    });
    let last: StepMetrics = {};
    let stepsDone = run.start;
    try {
      for (let n = run.start + 1; n <= options.maxSteps; n++) {
        const { line, final } = await this.step({ run, dispatcher, n, started });
        last = line;
        stepsDone = n;
        if (final && n < options.maxSteps) {
          run.log(`step ${n}: time budget of ${options.maxSeconds} s reached; stopping (--resume continues)`);
          break;
        }
      }
    } finally {
      await dispatcher.stop();
    }
    return { steps: stepsDone, episodes: run.episodes, seconds: (performance.now() - started) / 1000, last };
  }

  /** The run directory, and the run's state: resumed from `options.resume`, or fresh at step 0; every source's env checked by its algorithm. */
  private async prepare(): Promise<RunState<W>> {
    const { sources, out, resume } = this.options;
    await mkdir(out, { recursive: true });
    const start = resume?.step ?? 0;
    const run: RunState<W> = {
      start,
      metricsPath: join(out, 'metrics.jsonl'),
      cursors: Object.fromEntries(sources.map((s) => [s.name, 0])),
      episodes: 0,
      published: new Map(),
      policySteps: Object.fromEntries([...this.engines.keys()].map((name) => [name, start])),
      unreadable: new Set(),
      log: this.options.log ?? (() => {}),
    };
    if (resume) {
      await this.resumeFrom(resume, run);
    } else {
      const initial = new Map<string, W>();
      for (const [name, { trainer }] of this.engines) initial.set(name, (await trainer.state()).weights);
      run.published.set(0, initial);
      await this.pools.take(0, initial, true);
      await writeFile(run.metricsPath, '');
    }
    for (const source of sources) {
      source.algorithm.validateEnv?.({
        id: source.env.id,
        roles: source.env.roles,
        trainableRoles: source.env.roles.filter(
          (r) => !source.frozenRoles.has(r) && source.env.baseAgents[r]?.trainable !== false,
        ),
      });
    }
    return run;
  }

  /** Restores the cursors, algorithm, evaluator and RNG state, the served versions and the pools of `resume`; drops metrics of later steps. */
  private async resumeFrom(resume: OrchestratorCheckpoint<W, O>, run: RunState<W>): Promise<void> {
    const { sources } = this.options;
    const state = resume.state.orchestrator as OrchestratorState;
    Object.assign(run.cursors, state.cursors);
    run.episodes = state.episodes;
    Object.assign(run.policySteps, state.policySteps ?? {});
    for (const source of sources) {
      const algorithmState = state.algorithms[source.name];
      if (algorithmState !== undefined && algorithmState !== null) source.algorithm.loadState?.(algorithmState);
      const evaluatorState = state.evaluators[source.name];
      if (evaluatorState !== undefined && evaluatorState !== null) source.evaluator?.loadState?.(evaluatorState);
    }
    const parts = resume.policies ?? { [[...this.engines.keys()][0] as string]: resume };
    const held = new Map<string, Map<number, W>>();
    for (const [name, { inference }] of this.engines) {
      const part = parts[name];
      if (!part)
        throw new TrainerError(`checkpoint: holds no policy ${name} (it holds ${Object.keys(parts).join(', ')})`, {
          step: resume.step,
        });
      inference.loadRngState(state.rngs?.[name] ?? state.rng);
      const versions = new Map((part.inference ?? []).map(({ version, weights }) => [version, weights]));
      versions.set(resume.step, part.weights);
      held.set(name, versions);
      for (const [version, weights] of versions) {
        if (!run.published.has(version)) run.published.set(version, new Map());
        run.published.get(version)?.set(name, weights);
      }
    }
    // Only versions every policy holds can be served; pool snapshots come from `held` alone.
    for (const [version, byPolicy] of run.published) if (byPolicy.size < this.engines.size) run.published.delete(version);
    await this.pools.restore(held, state.pools);
    // Steps after the checkpoint are played again: drop their metrics so each step appears once.
    await keepMetricsThrough(run.metricsPath, run.start);
  }

  /**
   * Training step `n`: takes its episodes, cuts one batch per policy (rolling again while every
   * batch is empty: no step ships without samples), trains every policy that has samples,
   * publishes the new weights (waking the episodes waiting for them), evaluates, appends the
   * metrics line and checkpoints.
   */
  private async step(options: {
    run: RunState<W>;
    dispatcher: StepDispatcher<StepEpisodes>;
    n: number;
    started: number;
  }): Promise<{ line: StepMetrics; final: boolean }> {
    const { run, dispatcher, n, started } = options;
    const { maxSteps, maxSeconds, onStep } = this.options;
    const stepStart = performance.now();
    const { collected, batches, dropped, stale, empty, collectMs } = await this.fullBatch({ run, dispatcher, n });
    const t1 = performance.now();
    const { weights, trainMetrics } = await this.train({ run, batches });
    const trainMs = performance.now() - t1;
    await this.publish({ run, n, weights });
    dispatcher.trainerDone(n);
    run.episodes += collected.groups.reduce((a, g) => a + g.episodes.length, 0);
    const line: StepMetrics = {
      step: n,
      episodes: run.episodes,
      policy_version: collected.version,
      'off_policy/staleness': n - 1 - collected.version,
      'off_policy/dropped': dropped,
      'batch/stale_episodes_dropped': stale.episodes,
      'batch/stale_groups_dropped': stale.groups,
      ...batchMetrics([...batches.values()]),
      'batch/empty_steps': empty['failed-episodes'] + empty['zero-advantages'] + empty['off-policy'],
      'batch/empty_steps/failed_episodes': empty['failed-episodes'],
      'batch/empty_steps/zero_advantages': empty['zero-advantages'],
      'batch/empty_steps/off_policy': empty['off-policy'],
    };
    if (this.several)
      for (const [name, batch] of batches) {
        line[`batch/${name}/samples`] = batch.samples.length;
        line[`trainer/${name}/step`] = run.policySteps[name] ?? 0;
      }
    for (const source of this.options.sources) {
      const sourceEpisodes = collected.groups.filter((g) => g.source === source.name).flatMap((g) => g.episodes);
      Object.assign(line, sourceMetrics(source.name, sourceEpisodes));
    }
    Object.assign(line, collected.poolMetrics);
    Object.assign(line, trainMetrics);
    const final = n === maxSteps || (maxSeconds !== undefined && (performance.now() - started) / 1000 >= maxSeconds);
    await this.evaluate({ run, line, weights, n, final });
    line['time/collect'] = collectMs;
    line['time/train'] = trainMs;
    line['time/step'] = performance.now() - stepStart;
    line['time/elapsed'] = (performance.now() - started) / 1000;
    await appendFile(run.metricsPath, `${JSON.stringify(line)}\n`);
    onStep?.(line);
    await this.checkpoint({ run, collected, n, final });
    return { line, final };
  }

  /**
   * Trains every policy whose batch has samples one more step of its own, one policy after
   * another (each trainer has its own thread, and the next step's episodes play meanwhile: one at
   * a time keeps a run of N policies on the cores a run of one uses); a policy without samples
   * keeps its weights. Returns every policy's weights after the step and the trainers' metrics
   * (`trainer/<key>`, or `trainer/<policy>/<key>` with several policies).
   */
  private async train(options: { run: RunState<W>; batches: ReadonlyMap<string, TrainingBatch> }) {
    const { run, batches } = options;
    const latest = run.published.get(Math.max(...run.published.keys())) as Map<string, W>;
    const weights = new Map(latest);
    const trainMetrics: StepMetrics = {};
    for (const [name, batch] of batches) {
      if (batch.samples.length === 0) continue;
      const step = (run.policySteps[name] ?? 0) + 1;
      const { trainer } = this.engines.get(name) as PolicyEngines<W, O>;
      const result = await trainer.step({ samples: batch.samples, step });
      run.policySteps[name] = step;
      weights.set(name, result.weights);
      const prefix = this.several ? `trainer/${name}/` : 'trainer/';
      for (const [key, value] of Object.entries(result.metrics)) trainMetrics[`${prefix}${key}`] = value;
    }
    return { weights, trainMetrics };
  }

  /**
   * Step `n`'s episodes and a batch with samples for at least one policy. prime-rl's rule (`src/prime_rl/orchestrator/
   * orchestrator.py:640-652` at 559b447): an empty batch is never shipped and the step number does
   * not advance; the orchestrator keeps collecting, and stops after
   * {@link MAX_CONSECUTIVE_EMPTY_BATCHES} empty batches in a row ({@link EmptyBatchesError}: every
   * advantage 0, or every group off-policy). A collection whose every episode failed is not cut at all:
   * it is collected again too, under its own rule ({@link FailedSteps}: the run's first step, or
   * `stopAfterFailedSteps` in a row, stop the run with {@link TrainingStoppedError}). Each is logged
   * with its cause, counted in the step's `batch/empty_steps/*` metrics, and its episodes counted
   * in `episodes`.
   */
  private async fullBatch(options: { run: RunState<W>; dispatcher: StepDispatcher<StepEpisodes>; n: number }) {
    const { run, dispatcher, n } = options;
    const empty: Record<EmptyBatchReason, number> = { 'failed-episodes': 0, 'zero-advantages': 0, 'off-policy': 0 };
    // Stale episodes and groups dropped over all of the step's collections (an empty one's included).
    const stale = { episodes: 0, groups: 0 };
    let collected = await dispatcher.take(n);
    let collectMs = collected.ms;
    let emptyInARow = 0;
    for (;;) {
      const episodes = collected.groups.reduce((sum, group) => sum + group.episodes.length, 0);
      if (this.failed.observe(collected.groups, n)) {
        empty['failed-episodes']++;
        run.log(
          `step ${n}: every episode failed (${episodes} episodes); not sent to the trainer, collecting again (failed steps in a row: ${this.failed.inARow}/${this.stopAfterFailedSteps})`,
        );
      } else {
        const { batches, drop } = await this.cutBatches(collected, n, run.log);
        stale.episodes += drop.episodes;
        stale.groups += drop.groupsDropped;
        const dropped = drop.groupsDropped;
        if ([...batches.values()].some((batch) => batch.samples.length > 0))
          return { collected, batches, dropped, stale, empty, collectMs };
        const reason: EmptyBatchReason = dropped === collected.groups.length && dropped > 0 ? 'off-policy' : 'zero-advantages';
        empty[reason]++;
        emptyInARow++;
        run.log(
          `step ${n}: empty batch after ${episodes} episodes (${reason}); not sent to the trainer, collecting again (consecutive empty batches: ${emptyInARow}/${MAX_CONSECUTIVE_EMPTY_BATCHES})`,
        );
        if (emptyInARow >= MAX_CONSECUTIVE_EMPTY_BATCHES)
          throw new EmptyBatchesError({ step: n, consecutive: emptyInARow, reason, counts: empty });
      }
      run.episodes += episodes;
      collected = await dispatcher.again(n);
      collectMs += collected.ms;
    }
  }

  /**
   * One batch per policy of the step's groups, less the episodes more than `maxOffPolicySteps` behind step
   * `n` (`dropStaleEpisodes`: counted at the step that consumes them, queue time included). Each
   * policy's batch holds the traces of the roles bound to it.
   */
  private async cutBatches(collected: StepEpisodes, n: number, log: (line: string) => void) {
    const drop = await dropStaleEpisodes({
      groups: collected.groups,
      step: n,
      maxOffPolicySteps: this.maxOffPolicySteps,
      algorithmOf: (name) => (this.scorers.get(name) as GroupScorer).algorithm,
    });
    const sources = new Map(this.options.sources.map((source) => [source.name, source]));
    const batches = new Map<string, TrainingBatch>();
    for (const name of this.engines.keys()) {
      const builder = new BatchBuilder({
        batchSize: Number.MAX_SAFE_INTEGER,
        filterZeroAdvantages: this.options.filterZeroAdvantages ?? true,
      });
      // Each group's samples are routed to its algorithm's loss component (rl, ce or ref_kl).
      for (const group of drop.groups)
        builder.addEpisodes(
          this.several ? episodesOfPolicy(sources.get(group.source) as TrainSource, group.episodes, name) : group.episodes,
          { actionLoss: this.scorers.get(group.source)?.algorithm.actionLoss ?? 'rl' },
        );
      batches.set(name, builder.flush() ?? EMPTY_BATCH);
    }
    if (drop.episodes)
      log(
        `step ${n}: dropped ${drop.episodes} episode(s) more than ${this.maxOffPolicySteps} steps off-policy (${drop.groupsDropped} group(s) whole)`,
      );
    return { batches, drop };
  }

  /** Serves `weights` (by policy) as version `n`, forgets versions no episode can use, and snapshots them into the pools due one. */
  private async publish(options: { run: RunState<W>; n: number; weights: Map<string, W> }): Promise<void> {
    const { run, n, weights } = options;
    run.published.set(n, weights);
    for (const version of run.published.keys()) if (version < n - this.maxAsync) run.published.delete(version);
    // Snapshots before waking the dispatcher: the episodes at version n draw from a pool that holds step n.
    if (this.pools.states.length) {
      await this.pools.take(n, weights);
      this.pools.evict(Math.max(0, n - this.maxAsync));
    }
  }

  /**
   * The evaluators (every `evalEvery` steps) and eval sources (every `interval`) due at step `n`,
   * all at the final step. A source is evaluated with the policy its trainable roles play; one
   * whose roles play several gets a client that sends each role's calls to its own policy.
   */
  private async evaluate(options: {
    run: RunState<W>;
    line: StepMetrics;
    weights: Map<string, W>;
    n: number;
    final: boolean;
  }): Promise<void> {
    const { run, line, weights, n, final } = options;
    const { sources, evalEvery, evalSources, out } = this.options;
    const evaluated = sources.filter((s) => s.evaluator);
    if ((n % (evalEvery ?? 1) === 0 || final) && evaluated.length) {
      const { policyFor, rolesFor } = this.evaluationPolicies(weights, n, 1_000_003 + n);
      await runEvaluators({
        sources: evaluated,
        policyFor,
        rolesFor,
        step: n,
        out,
        line,
        unreadable: run.unreadable,
        log: run.log,
      });
    }
    const due = (evalSources ?? []).filter((e) => n % e.interval === 0 || final);
    if (due.length)
      await runEvalSources({ due, policyFor: this.evaluationPolicies(weights, n, 2_000_003 + n).policyFor, step: n, line });
  }

  /**
   * A source's evaluation policy at `weights` (version `n`), and each of its roles' own (the roles a
   * policy of the run plays, trainable or not), each policy's built once and on first use.
   */
  private evaluationPolicies(weights: ReadonlyMap<string, W>, n: number, seed: number) {
    const made = new Map<string, Promise<EvaluationPolicy>>();
    const of = (name: string) => {
      if (!made.has(name)) {
        const { inference } = this.engines.get(name) as PolicyEngines<W, O>;
        made.set(name, inference.evaluationPolicy({ weights: weights.get(name) as W, version: n, seed }));
      }
      return made.get(name) as Promise<EvaluationPolicy>;
    };
    const policyFor = async (source: TrainSource): Promise<EvaluationPolicy> => {
      const names = this.several ? policiesOfSource(source) : [...this.engines.keys()];
      if (names.length === 1) return of(names[0] as string);
      const policies = new Map<string, EvaluationPolicy>();
      for (const name of names.length ? names : [...this.engines.keys()]) policies.set(name, await of(name));
      return routedEvaluationPolicy(policies, names[0] ?? MAIN_POLICY);
    };
    const rolesFor = async (source: TrainSource): Promise<Record<string, EvaluationPolicy>> => {
      // One policy: every role on a policy plays it, whatever its name.
      const only = [...this.engines.keys()][0] as string;
      const roles: Record<string, EvaluationPolicy> = {};
      for (const [role, name] of Object.entries(rolePolicies(source))) {
        const played = this.several ? name : only;
        if (this.engines.has(played)) roles[role] = await of(played);
      }
      return roles;
    };
    return { policyFor, rolesFor };
  }

  /** Writes the checkpoint of step `n` when due (`checkpointEvery`, the final step) and the kept copy when `keepCheckpoints` lists it. */
  private async checkpoint(options: { run: RunState<W>; collected: StepEpisodes; n: number; final: boolean }): Promise<void> {
    const { run, collected, n, final } = options;
    const { sources, out } = this.options;
    const every = this.options.checkpointEvery ?? 25;
    const due = every > 0 && (n % every === 0 || final);
    const keep = this.options.keepCheckpoints?.includes(n) ?? false;
    if (!due && !keep) return;
    const { pools, versions } = this.pools.checkpointed(run.published, n);
    const state: OrchestratorState = {
      ...collected.after,
      episodes: run.episodes,
      evaluators: Object.fromEntries(sources.map((s) => [s.name, s.evaluator?.state?.() ?? null])),
      ...(this.pools.states.length ? { pools } : {}),
      ...(this.several ? { policySteps: { ...run.policySteps } } : {}),
    };
    const parts: Record<string, PolicyCheckpoint<W, O>> = {};
    for (const [name, { trainer }] of this.engines) {
      const trainerState = await trainer.state();
      const held = versions.get(name) ?? new Map<number, W>();
      parts[name] = {
        weights: trainerState.weights,
        optimizer: trainerState.optimizer,
        inference: [...held.entries()].sort((a, b) => a[0] - b[0]).map(([version, w]) => ({ version, weights: w })),
      };
    }
    const first = parts[[...this.engines.keys()][0] as string] as PolicyCheckpoint<W, O>;
    const checkpoint: OrchestratorCheckpoint<W, O> = {
      step: n,
      state: { orchestrator: state, run: this.options.runState ?? {} },
      ...first,
      ...(this.several ? { policies: parts } : {}),
    };
    const write =
      this.options.writeCheckpoint ??
      (writeEmbeddedCheckpoint as unknown as NonNullable<OrchestratorOptions<W, O>['writeCheckpoint']>);
    // One version directory, named by `checkpoint` when due and by `checkpoint-step-<n>` when kept.
    const pointers = [...(due ? ['checkpoint'] : []), ...(keep ? [`checkpoint-step-${n}`] : [])];
    await commitCheckpoint({ out, step: n, pointers, write: (dir) => write({ dir, ...checkpoint }) });
  }

  /** One step's episodes at one policy version: every source's share of the step's groups, scored. */
  private async collectStep(options: { cursors: Record<string, number>; version: number; step: number }): Promise<StepEpisodes> {
    const { cursors, version, step } = options;
    const t0 = performance.now();
    const { sources } = this.options;
    const inference = ([...this.engines.values()][0] as PolicyEngines<W, O>).inference;
    const draw = this.pools.drawFor(version, step);
    const dispatched = this.dispatchGroups(cursors, draw);
    const groups: ScoredGroup[] = [];
    for (const { source, episodes } of dispatched) {
      const scorer = this.scorers.get(source.name) as GroupScorer;
      let group: Episode[] | null = null;
      for (const episode of await episodes) {
        for (const trace of episode.traces) if (source.frozenRoles.has(trace.agent.name)) trace.agent.trainable = false;
        group = await scorer.addEpisode(episode);
      }
      if (group) groups.push({ source: source.name, version, episodes: group });
    }
    const tracesEvery = this.options.tracesEvery ?? 0;
    if (tracesEvery > 0 && step % tracesEvery === 0 && groups.length > 0) {
      // Streamed, one line per episode (never one string per step or per episode); an episode too
      // large for one line is written as a failed stand-in naming its size.
      const writer = new EpisodeWriter(join(this.options.out, 'traces.jsonl'));
      try {
        for (const group of groups) for (const episode of group.episodes) writer.write(episode);
      } finally {
        writer.close();
      }
    }
    return {
      groups,
      version,
      poolMetrics: poolMetrics(draw),
      ms: performance.now() - t0,
      after: {
        cursors: { ...cursors },
        algorithms: Object.fromEntries(sources.map((s) => [s.name, s.algorithm.state?.() ?? null])),
        rng: inference.rngState(),
        ...(this.several
          ? { rngs: Object.fromEntries([...this.engines].map(([name, engines]) => [name, engines.inference.rngState()])) }
          : {}),
      },
    };
  }

  /** Starts every source's share of the step's groups (`ratio`), advancing its cursor; each episode's opponents drawn from its pools. */
  private dispatchGroups(
    cursors: Record<string, number>,
    draw: PoolDraw<W>,
  ): { source: TrainSource; episodes: Promise<Episode[]> }[] {
    const { sources, groupsPerStep } = this.options;
    const counts = allocateGroups(
      sources.map((s) => s.ratio),
      groupsPerStep,
    );
    const dispatched: { source: TrainSource; episodes: Promise<Episode[]> }[] = [];
    sources.forEach((source, s) => {
      for (let k = 0; k < (counts[s] ?? 0); k++) {
        const index = cursors[source.name] ?? 0;
        cursors[source.name] = index + 1;
        const task = taskAt(source, index);
        const id = `${source.name}-${index}`;
        const pools = this.pools.ofSource(source.name);
        dispatched.push({
          source,
          episodes: Promise.all(
            Array.from({ length: source.groupSize }, (_, i) => {
              if (pools.length === 0) return source.env.runEpisode({ task, group: { id, index: i } });
              const draws = this.pools.pick({ source, pools, draw, index, i });
              return withPoolDraws(draws, () => source.env.runEpisode({ task, group: { id, index: i } }));
            }),
          ),
        });
      }
    });
    return dispatched;
  }
}

/** A policy's batch in a step that has no samples for it. */
const EMPTY_BATCH: TrainingBatch = Object.freeze({ samples: [], numTraces: 0, numTokens: 0, droppedSamples: 0, maskedTokens: 0 });

/** `batch/*` metrics of a step: the sums over its policies' batches. */
function batchMetrics(batches: readonly TrainingBatch[]): StepMetrics {
  const sum = (key: keyof Omit<TrainingBatch, 'samples'>) => batches.reduce((a, b) => a + b[key], 0);
  return {
    'batch/samples': batches.reduce((a, b) => a + b.samples.length, 0),
    'batch/traces': sum('numTraces'),
    'batch/tokens': sum('numTokens'),
    'batch/dropped_samples': sum('droppedSamples'),
    'batch/masked_tokens': sum('maskedTokens'),
  };
}

/** The run's policies by name: `policies`, or `trainer` and `inference` as `main`; exactly one of the two forms. */
function engineMap<W, O>(options: OrchestratorOptions<W, O>): Map<string, PolicyEngines<W, O>> {
  const single = options.trainer !== undefined || options.inference !== undefined;
  if (options.policies && single)
    throw new ConfigError('orchestrator: give trainer and inference (one policy) or policies, not both', { path: 'policies' });
  if (options.policies) {
    const entries = Object.entries(options.policies);
    if (entries.length === 0) throw new ConfigError('orchestrator: policies is empty', { path: 'policies' });
    return new Map(entries);
  }
  if (!options.trainer || !options.inference)
    throw new ConfigError('orchestrator: give trainer and inference (one policy) or policies', { path: 'trainer' });
  return new Map([[MAIN_POLICY, { trainer: options.trainer, inference: options.inference }]]);
}
