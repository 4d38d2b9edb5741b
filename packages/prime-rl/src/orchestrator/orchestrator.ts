import { appendFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Episode, ModelClient } from '@troupe/verifiers';
import type { JsonValue } from '../algorithms/algorithm.ts';
import { GroupScorer } from '../algorithms/group-scorer.ts';
import { flattenRoleMetrics, roleMetrics } from '../metrics/role-metrics.ts';
import type { NamedWeight } from '../policy/config.ts';
import { BatchBuilder } from '../samples/batch-builder.ts';
import { saveCheckpoint } from '../trainer/checkpoint.ts';
import type { OptimizerState } from '../trainer/trainer.ts';
import { hashSeed, hashUniform, type OpponentPool, type PoolSnapshot, withPoolDraws } from './opponent-pool.ts';
import type { EvaluationPolicy, Inference, ScoredGroup, StepMetrics, Trainer, TrainSource } from './types.ts';

/**
 * A checkpoint as the orchestrator writes and resumes it, over its weights type `W` (tensors for
 * the embedded engines: then it is `trainer/checkpoint.ts`'s `Checkpoint`) and optimizer type `O`.
 */
export interface OrchestratorCheckpoint<W = NamedWeight[], O = OptimizerState> {
  /** The training step it was taken after. */
  step: number;
  /** `{ orchestrator: OrchestratorState, run: runState }`. */
  state: Record<string, unknown>;
  weights: W;
  optimizer: O;
  /** Older policy versions still served to rollouts in flight, oldest first. */
  inference?: { version: number; weights: W }[];
}

/** Thrown by the stand-in `replyProbabilities` of a policy whose engine cannot read logits (vLLM): the evaluator is skipped. */
export class ReplyProbabilitiesUnavailable extends Error {
  override readonly name = 'ReplyProbabilitiesUnavailable';
}

/** `policy`, or a view of it whose `replyProbabilities` throws {@link ReplyProbabilitiesUnavailable}. */
function readablePolicy(policy: EvaluationPolicy): EvaluationPolicy {
  if (policy.replyProbabilities) return policy;
  const view = Object.create(policy) as EvaluationPolicy;
  view.replyProbabilities = () =>
    Promise.reject(new ReplyProbabilitiesUnavailable('the inference engine cannot report reply probabilities'));
  return view;
}

/** Orchestrator state saved in checkpoints: what the rollout after the checkpointed step starts from. */
export interface OrchestratorState {
  /** Next task index per source. */
  cursors: Record<string, number>;
  /** Algorithm state per source. */
  algorithms: Record<string, JsonValue>;
  /** Evaluator state per source. */
  evaluators: Record<string, JsonValue>;
  /** Inference sampling RNG. */
  rng: JsonValue;
  /** Episodes played so far (in batches up to the checkpoint). */
  episodes: number;
  /** Trainer steps of the snapshots each opponent pool holds, by source then role (weights in the checkpoint's `inference` tensors). */
  pools?: Record<string, Record<string, number[]>>;
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

/** Options of {@link Orchestrator}. */
export interface OrchestratorOptions<W = NamedWeight[], O = OptimizerState> {
  sources: readonly TrainSource[];
  evalSources?: readonly EvalSource[];
  /** The trainer; `W` is what the orchestrator holds of each policy version (it never reads it, only hands it on). */
  trainer: Trainer<W, O>;
  inference: Inference<W>;
  maxSteps: number;
  /**
   * A wall-clock budget in seconds: the run stops at the first step boundary at or after it, and
   * that step is evaluated and checkpointed as a last step is. The schedules still run over
   * `maxSteps`, so `--resume` continues the same run. Default: no budget.
   */
  maxSeconds?: number;
  /** Groups dispatched per step, shared across sources by `ratio`. */
  groupsPerStep: number;
  /** Steps the rollouts may run ahead of the trainer (default 1; 0 = on-policy). */
  maxAsync?: number;
  /** A group whose policy is more than this many steps behind the trainer is dropped whole (default 8). */
  maxOffPolicySteps?: number;
  /** prime-rl's zero-advantage filter (default true). */
  filterZeroAdvantages?: boolean;
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
   * Every N-th step's rollout — its scored groups, the episodes with their advantages and each
   * call's policy version — is appended to `<out>/traces.jsonl`, one Episode per line as
   * `troupe eval` writes them, so `troupe view <out>` opens the training run (default 0: none).
   */
  tracesEvery?: number;
  /** Caller state saved in each checkpoint under `run` (config, tokenizer, …). */
  runState?: Record<string, unknown>;
  /** Continue from this checkpoint (loaded with `loadCheckpoint`); the trainer and inference must already hold its weights. */
  resume?: OrchestratorCheckpoint<W, O>;
  /**
   * Writes a checkpoint directory (default: `saveCheckpoint`, the embedded engines' tensors). With
   * an external trainer it holds this orchestrator's state and the broadcast step; the weights and
   * optimizer live in that trainer's own checkpoints.
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

interface Rollout {
  groups: ScoredGroup[];
  ms: number;
  version: number;
  /** State after this rollout: where the next one starts (saved with the checkpoint of this step). */
  after: Omit<OrchestratorState, 'evaluators' | 'episodes' | 'pools'>;
  /** Per pool role: `pool/<source>/<role>/…` metrics of this rollout's draws. */
  poolMetrics: Record<string, number>;
}

/** One pool's running state: its source and role, and the snapshots it holds (oldest first). */
interface PoolState<W> {
  source: string;
  role: string;
  pool: OpponentPool;
  snapshots: (PoolSnapshot & { weights: W })[];
}

interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {});
  return { promise, resolve, reject };
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
 * drops groups older than `maxOffPolicySteps`, cuts one batch with a `BatchBuilder`
 * (zero-advantage filter), trains one `Trainer` step, and serves the new weights through the
 * `Inference`. Rollouts run one after another, each pinned to one policy version: rollout m
 * uses version max(0, m − 1 − maxAsync), so with `maxAsync` 1 the rollout for step m+1 plays
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
  private readonly pools: PoolState<W>[];

  constructor(options: OrchestratorOptions<W, O>) {
    this.options = options;
    this.maxAsync = options.maxAsync ?? 1;
    this.maxOffPolicySteps = options.maxOffPolicySteps ?? 8;
    const names = new Set<string>();
    for (const source of options.sources) {
      if (names.has(source.name)) throw new RangeError(`sources: two sources are named ${source.name}; give one a name`);
      names.add(source.name);
    }
    this.scorers = new Map(
      options.sources.map((s) => [s.name, new GroupScorer({ algorithm: s.algorithm, groupSize: s.groupSize })]),
    );
    this.pools = options.sources.flatMap((source) =>
      (source.pools ?? []).map(({ role, pool }) => {
        if (!source.frozenRoles.has(role))
          throw new RangeError(`sources: ${source.name}.${role} plays an opponent pool, so it must be one of its frozenRoles`);
        return { source: source.name, role, pool, snapshots: [] };
      }),
    );
  }

  /** Adds a snapshot of the policy at trainer step `step` to every pool due one. */
  private async takeSnapshots(step: number, weights: W, force = false): Promise<void> {
    const { inference } = this.options;
    for (const state of this.pools) {
      if (!force && step % state.pool.config.every !== 0) continue;
      if (state.snapshots.some((s) => s.step === step)) continue;
      const policy = await inference.evaluationPolicy({
        weights,
        version: step,
        seed: hashSeed([this.options.seed ?? 0, 'pool', state.source, state.role, step]),
      });
      state.snapshots.push({ step, policy, weights });
      state.snapshots.sort((a, b) => a.step - b.step);
    }
  }

  /** The snapshots a rollout at policy `version` draws from: the newest `keep` taken at or before it. */
  private poolView(state: PoolState<W>, version: number): PoolState<W>['snapshots'] {
    return state.snapshots.filter((s) => s.step <= version).slice(-state.pool.config.keep);
  }

  /** Drops the snapshots no rollout at `version` or later can draw. */
  private evictSnapshots(version: number): void {
    for (const state of this.pools) {
      const oldest = this.poolView(state, version)[0]?.step ?? 0;
      state.snapshots = state.snapshots.filter((s) => s.step >= oldest);
    }
  }

  async run(): Promise<OrchestratorResult> {
    const started = performance.now();
    const { options } = this;
    const { sources, trainer, inference, out } = options;
    const log = options.log ?? (() => {});
    await mkdir(out, { recursive: true });
    const metricsPath = join(out, 'metrics.jsonl');
    const resume = options.resume;
    const start = resume?.step ?? 0;
    const cursors: Record<string, number> = Object.fromEntries(sources.map((s) => [s.name, 0]));
    let episodes = 0;
    // Policy versions still to be served (version → weights).
    const published = new Map<number, W>();
    if (resume) {
      const state = resume.state.orchestrator as OrchestratorState;
      Object.assign(cursors, state.cursors);
      episodes = state.episodes;
      for (const source of sources) {
        const algorithmState = state.algorithms[source.name];
        if (algorithmState !== undefined && algorithmState !== null) source.algorithm.loadState?.(algorithmState);
        const evaluatorState = state.evaluators[source.name];
        if (evaluatorState !== undefined && evaluatorState !== null) source.evaluator?.loadState?.(evaluatorState);
      }
      inference.loadRngState(state.rng);
      for (const { version, weights } of resume.inference ?? []) published.set(version, weights);
      published.set(start, resume.weights);
      const held = new Map((resume.inference ?? []).map(({ version, weights }) => [version, weights]));
      held.set(start, resume.weights);
      for (const pool of this.pools) {
        for (const step of state.pools?.[pool.source]?.[pool.role] ?? [0]) {
          const weights = held.get(step);
          if (!weights)
            throw new Error(`checkpoint: opponent pool ${pool.source}.${pool.role} snapshot of step ${step} is missing`);
          const policy = await inference.evaluationPolicy({
            weights,
            version: step,
            seed: hashSeed([options.seed ?? 0, 'pool', pool.source, pool.role, step]),
          });
          pool.snapshots.push({ step, policy, weights });
        }
      }
      // Steps after the checkpoint are played again: drop their metrics so each step appears once.
      const lines = (await readFile(metricsPath, 'utf8').catch(() => '')).split('\n');
      const kept = lines.filter((line) => {
        try {
          return line.trim() !== '' && (JSON.parse(line) as { step: number }).step <= start;
        } catch {
          return false;
        }
      });
      await writeFile(metricsPath, kept.map((line) => `${line}\n`).join(''));
    } else {
      const initial = (await trainer.state()).weights;
      published.set(0, initial);
      await this.takeSnapshots(0, initial, true);
      await writeFile(metricsPath, '');
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

    const ready: Deferred<Rollout>[] = Array.from({ length: options.maxSteps + 1 }, () => deferred<Rollout>());
    let trainerStep = start;
    let waiters: { target: number; resolve: () => void }[] = [];
    const untilTrainerStep = (target: number) =>
      trainerStep >= target ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ target, resolve }));
    let stopped = false;
    const dispatcher = (async () => {
      for (let m = start + 1; m <= options.maxSteps && !stopped; m++) {
        try {
          await untilTrainerStep(m - 1 - this.maxAsync);
          const version = Math.max(0, m - 1 - this.maxAsync);
          if (inference.version !== version) {
            const weights = published.get(version);
            if (!weights) throw new Error(`orchestrator: policy version ${version} is no longer held`);
            await inference.updateWeights({ weights, version });
          }
          ready[m]?.resolve(await this.rollout({ cursors, version, step: m }));
        } catch (error) {
          for (let k = m; k <= options.maxSteps; k++) ready[k]?.reject(error);
          return;
        }
      }
    })();

    let last: StepMetrics = {};
    let stepsDone = start;
    // Sources whose evaluator needs reply probabilities the engine cannot give.
    const unreadable = new Set<string>();
    try {
      for (let n = start + 1; n <= options.maxSteps; n++) {
        const stepStart = performance.now();
        const rollout = await (ready[n] as Deferred<Rollout>).promise;
        // Release the step's episodes once consumed (a 700-step run held them all and ran out of heap).
        ready[n] = undefined as unknown as Deferred<Rollout>;
        const builder = new BatchBuilder({
          batchSize: Number.MAX_SAFE_INTEGER,
          filterZeroAdvantages: options.filterZeroAdvantages ?? true,
        });
        const kept: Episode[] = [];
        let dropped = 0;
        for (const group of rollout.groups) {
          if (n - 1 - group.version > this.maxOffPolicySteps) {
            dropped++;
            continue;
          }
          builder.addEpisodes(group.episodes);
          for (const e of group.episodes) kept.push(e);
        }
        if (dropped) log(`step ${n}: dropped ${dropped} group(s) more than ${this.maxOffPolicySteps} steps off-policy`);
        const batch = builder.flush();
        const samples = batch?.samples ?? [];
        const t1 = performance.now();
        let weights: W;
        let trainMetrics: Record<string, number> = {};
        if (samples.length > 0) {
          const result = await trainer.step({ samples, step: n });
          weights = result.weights;
          trainMetrics = result.metrics;
        } else {
          log(`step ${n}: empty batch (every advantage 0); weights unchanged`);
          weights = published.get(n - 1) ?? (await trainer.state()).weights;
        }
        const trainMs = performance.now() - t1;
        published.set(n, weights);
        for (const version of published.keys()) if (version < n - this.maxAsync) published.delete(version);
        // Snapshots before waking the dispatcher: the rollout at version n draws from a pool that holds step n.
        if (this.pools.length) {
          await this.takeSnapshots(n, weights);
          this.evictSnapshots(Math.max(0, n - this.maxAsync));
        }
        trainerStep = n;
        const woken = waiters.filter((w) => w.target <= n);
        waiters = waiters.filter((w) => w.target > n);
        for (const w of woken) w.resolve();

        const played = rollout.groups.reduce((a, g) => a + g.episodes.length, 0);
        episodes += played;
        const line: StepMetrics = {
          step: n,
          episodes,
          policy_version: rollout.version,
          'off_policy/staleness': n - 1 - rollout.version,
          'off_policy/dropped': dropped,
          'batch/samples': samples.length,
          'batch/traces': batch?.numTraces ?? 0,
          'batch/tokens': batch?.numTokens ?? 0,
          'batch/dropped_samples': batch?.droppedSamples ?? 0,
          'batch/masked_tokens': batch?.maskedTokens ?? 0,
        };
        for (const source of sources) {
          const sourceEpisodes = rollout.groups.filter((g) => g.source === source.name).flatMap((g) => g.episodes);
          Object.assign(line, sourceMetrics(source.name, sourceEpisodes));
        }
        Object.assign(line, rollout.poolMetrics);
        for (const [key, value] of Object.entries(trainMetrics)) line[`trainer/${key}`] = value;
        const final =
          n === options.maxSteps ||
          (options.maxSeconds !== undefined && (performance.now() - started) / 1000 >= options.maxSeconds);
        const evaluate = n % (options.evalEvery ?? 1) === 0 || final;
        const evaluated = sources.filter((s) => s.evaluator);
        if (evaluate && evaluated.length) {
          const t3 = performance.now();
          const policy = readablePolicy(await inference.evaluationPolicy({ weights, version: n, seed: 1_000_003 + n }));
          for (const source of evaluated) {
            if (unreadable.has(source.name)) continue;
            let result: Awaited<ReturnType<NonNullable<TrainSource['evaluator']>['evaluate']>> | undefined;
            try {
              result = await source.evaluator?.evaluate({ policy, step: n });
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
        const dueEval = (options.evalSources ?? []).filter((e) => n % e.interval === 0 || final);
        if (dueEval.length) {
          const t4 = performance.now();
          const policy = await inference.evaluationPolicy({ weights, version: n, seed: 2_000_003 + n });
          for (const evaluation of dueEval) {
            evaluation.useClient(policy.client);
            const { source } = evaluation;
            const played = await Promise.all(
              Array.from({ length: evaluation.groups }, (_, index) => {
                const size = source.taskset.isInfinite ? Number.POSITIVE_INFINITY : source.taskset.size;
                const task = source.taskset.at(Number.isFinite(size) ? index % size : index);
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
        line['time/rollout'] = rollout.ms;
        line['time/train'] = trainMs;
        line['time/step'] = performance.now() - stepStart;
        line['time/elapsed'] = (performance.now() - started) / 1000;
        await appendFile(metricsPath, `${JSON.stringify(line)}\n`);
        last = line;
        options.onStep?.(line);
        const every = options.checkpointEvery ?? 25;
        const keep = options.keepCheckpoints?.includes(n) ?? false;
        if ((every > 0 && (n % every === 0 || final)) || keep) {
          const pools: Record<string, Record<string, number[]>> = {};
          const versions = new Map([...published.entries()].filter(([version]) => version < n));
          for (const pool of this.pools) {
            pools[pool.source] ??= {};
            (pools[pool.source] as Record<string, number[]>)[pool.role] = pool.snapshots.map((s) => s.step);
            for (const snapshot of pool.snapshots) {
              if (snapshot.step < n && !versions.has(snapshot.step)) {
                versions.set(snapshot.step, snapshot.weights);
              }
            }
          }
          const state: OrchestratorState = {
            ...rollout.after,
            episodes,
            evaluators: Object.fromEntries(sources.map((s) => [s.name, s.evaluator?.state?.() ?? null])),
            ...(this.pools.length ? { pools } : {}),
          };
          const trainerState = await trainer.state();
          const inferenceVersions = [...versions.entries()]
            .sort((a, b) => a[0] - b[0])
            .map(([version, w]) => ({ version, weights: w }));
          const checkpoint = {
            step: n,
            state: { orchestrator: state, run: options.runState ?? {} },
            weights: trainerState.weights,
            optimizer: trainerState.optimizer,
            inference: inferenceVersions,
          };
          const write =
            options.writeCheckpoint ?? (saveCheckpoint as unknown as NonNullable<OrchestratorOptions<W, O>['writeCheckpoint']>);
          if (every > 0 && (n % every === 0 || final)) await write({ dir: join(out, 'checkpoint'), ...checkpoint });
          if (keep) await write({ dir: join(out, `checkpoint-step-${n}`), ...checkpoint });
        }
        stepsDone = n;
        if (final && n < options.maxSteps) {
          log(`step ${n}: time budget of ${options.maxSeconds} s reached; stopping (--resume continues)`);
          break;
        }
      }
    } finally {
      stopped = true;
      trainerStep = Number.POSITIVE_INFINITY;
      for (const w of waiters) w.resolve();
      await dispatcher;
    }
    return { steps: stepsDone, episodes, seconds: (performance.now() - started) / 1000, last };
  }

  /** One rollout at one policy version: every source's share of the step's groups, scored. */
  private async rollout(options: { cursors: Record<string, number>; version: number; step: number }): Promise<Rollout> {
    const { cursors, version, step } = options;
    const t0 = performance.now();
    const { sources, inference } = this.options;
    const seed = this.options.seed ?? 0;
    // Each pool's view for this rollout, its snapshots reseeded so the rollout samples the same on resume.
    const views = new Map<PoolState<W>, PoolSnapshot[]>();
    for (const pool of this.pools) {
      const view = this.poolView(pool, version);
      if (view.length === 0) throw new Error(`orchestrator: opponent pool ${pool.source}.${pool.role} holds no snapshot`);
      for (const snapshot of view)
        snapshot.policy.loadRngState?.(hashSeed([seed, 'sample', pool.source, pool.role, step, snapshot.step]));
      views.set(pool, view);
    }
    const ages = new Map<PoolState<W>, number[]>();
    const counts = allocateGroups(
      sources.map((s) => s.ratio),
      this.options.groupsPerStep,
    );
    const dispatched: { source: TrainSource; episodes: Promise<Episode[]> }[] = [];
    sources.forEach((source, s) => {
      for (let k = 0; k < (counts[s] ?? 0); k++) {
        const index = cursors[source.name] ?? 0;
        cursors[source.name] = index + 1;
        const size = source.taskset.isInfinite ? Number.POSITIVE_INFINITY : source.taskset.size;
        const task = source.taskset.at(Number.isFinite(size) ? index % size : index);
        const id = `${source.name}-${index}`;
        const pools = this.pools.filter((p) => p.source === source.name);
        dispatched.push({
          source,
          episodes: Promise.all(
            Array.from({ length: source.groupSize }, (_, i) => {
              if (pools.length === 0) return source.env.runEpisode({ task, group: { id, index: i } });
              const draws = new Map<OpponentPool, PoolSnapshot>();
              for (const pool of pools) {
                const view = views.get(pool) as PoolSnapshot[];
                const u = hashUniform([seed, 'draw', source.name, pool.role, step, index, i]);
                const snapshot = view[pool.pool.pick(view.length, u)] as PoolSnapshot;
                draws.set(pool.pool, snapshot);
                const list = ages.get(pool) ?? [];
                list.push(version - snapshot.step);
                ages.set(pool, list);
              }
              return withPoolDraws(draws, () => source.env.runEpisode({ task, group: { id, index: i } }));
            }),
          ),
        });
      }
    });
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
      const lines = groups.flatMap((g) => g.episodes.map((episode) => `${JSON.stringify(episode)}\n`));
      await appendFile(join(this.options.out, 'traces.jsonl'), lines.join(''));
    }
    const poolMetrics: Record<string, number> = {};
    for (const [pool, view] of views) {
      const list = ages.get(pool) ?? [];
      poolMetrics[`pool/${pool.source}/${pool.role}/size`] = view.length;
      poolMetrics[`pool/${pool.source}/${pool.role}/snapshot_age/mean`] = list.length
        ? list.reduce((a, b) => a + b, 0) / list.length
        : 0;
    }
    return {
      groups,
      version,
      poolMetrics,
      ms: performance.now() - t0,
      after: {
        cursors: { ...cursors },
        algorithms: Object.fromEntries(sources.map((s) => [s.name, s.algorithm.state?.() ?? null])),
        rng: inference.rngState(),
      },
    };
  }
}

/**
 * prime-rl's per-source metric keys: `train/<source>/<role>/reward/mean`, `…/advantage/std`,
 * `…/is_trainable/mean`, `…/metric/<name>/mean` (each trace metric), and `train/<source>/episodes`.
 */
export function sourceMetrics(source: string, episodes: readonly Episode[]): Record<string, number> {
  const out = flattenRoleMetrics({ metrics: roleMetrics({ episodes }), prefix: `train/${source}` });
  const byRole = new Map<string, { traces: number; trainable: number; metrics: Map<string, number[]> }>();
  for (const episode of episodes) {
    for (const trace of episode.traces) {
      let role = byRole.get(trace.agent.name);
      if (!role) {
        role = { traces: 0, trainable: 0, metrics: new Map() };
        byRole.set(trace.agent.name, role);
      }
      role.traces++;
      if (trace.agent.trainable && trace.ok) role.trainable++;
      for (const [name, value] of Object.entries(trace.metrics)) {
        if (typeof value !== 'number' || !Number.isFinite(value)) continue;
        const list = role.metrics.get(name) ?? [];
        list.push(value);
        role.metrics.set(name, list);
      }
    }
  }
  for (const [name, role] of byRole) {
    out[`train/${source}/${name}/is_trainable/mean`] = role.trainable / role.traces;
    for (const [metric, values] of role.metrics) {
      out[`train/${source}/${name}/metric/${metric}/mean`] = values.reduce((a, b) => a + b, 0) / values.length;
    }
  }
  out[`train/${source}/episodes`] = episodes.length;
  out[`train/${source}/failed_episodes`] = episodes.filter((e) => !e.ok).length;
  return out;
}
