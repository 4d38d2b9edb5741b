import { existsSync, lstatSync, readdirSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { createAlgorithm, Sft } from '@troupe/prime-rl';
import {
  embeddedInference,
  embeddedPolicy,
  embeddedTrainer,
  frozenCheckpointClient,
  initWeights,
  loadEmbeddedCheckpoint,
  ModelRouter,
  OpponentPool,
  Orchestrator,
  type OrchestratorCheckpoint,
  type OrchestratorOptions,
  type PolicyEngines,
  type StepMetrics,
  splitCheckpointPolicy,
  type TrainingHooks,
  TrainingStoppedError,
  type TrainSource,
  type WeightsHandle,
} from '@troupe/prime-rl/orchestrator';
import type { NamedWeight, PolicyConfig } from '@troupe/prime-rl/policy';
import { findRunCheckpoint, type OptimizerState, readCheckpointFile } from '@troupe/prime-rl/trainer';
import {
  ConfigError,
  Env,
  type Episode,
  loadTaskset,
  type ModelClient,
  OpenAICompatibleClient,
  preflightRuntimes,
  type Taskset,
  TrainerError,
} from '@troupe/verifiers';
import { snakeConfigKeys } from '@troupe/verifiers/internal';
import { checkExternalMaxAsync } from './emit-prime-rl.ts';
import { FailureWatch, TrainingInterruptedError } from './failure-watch.ts';
import { registerGameRuntime } from './game-runtime.ts';
import { writeReport } from './report.ts';
import { resolveEnv } from './resolve-env.ts';
import {
  isTrainedRole,
  parseRunConfig,
  type ResolvedPolicy,
  type RunConfig,
  resolvedPolicies,
  type SourceConfig,
  underField,
} from './run-config.ts';
import { type GivenReplies, givenReplies, setupAlgorithm } from './supervision.ts';
import { vocabularyWarnings, ZeroRewardWatch } from './vocabulary-watch.ts';
import { checkLaggingResume, externalEngines, wireInference, wireTrainer } from './wire-engines.ts';

export type { StepMetrics };

/** Options of {@link train}. */
export interface TrainOptions {
  /** The run config (raw: TOML/JSON object, snake_case or camelCase keys). */
  config: unknown;
  out: string;
  /** Continue the run in `out` from its checkpoint. */
  resume?: boolean;
  /** Replace the run in `out` (refused with `resume`, and for a folder that holds no run). */
  clean?: boolean;
  /** Aborted: the run stops at the next step boundary with {@link TrainingInterruptedError}. */
  signal?: AbortSignal;
  /** Directory module paths in `env` are relative to (the config file's; default the working directory). */
  baseDir?: string;
  onStep?: (metrics: StepMetrics) => void;
  log?: (line: string) => void;
}

/** What a finished run reports. */
export interface TrainResult {
  steps: number;
  episodes: number;
  seconds: number;
  trainer: string;
  last: StepMetrics;
  config: RunConfig;
  /** Episodes that failed over the run (the CLI exits 3 when there are any). */
  failedEpisodes: number;
  /** The run's checkpoint directory, or null when none was written (`checkpoint_every = 0`). */
  checkpoint: string | null;
}

/** What a folder holds that makes it a training run's directory. */
const RUN_FILES = new Set(['config.json', 'metrics.jsonl', 'checkpoint', 'checkpoints', 'report.html']);

/**
 * Checks `out` before anything is built: a folder that holds a run is refused unless `resume`
 * continues it or `clean` replaces it; `clean` never replaces a folder that holds no run.
 * Returns whether the folder must be emptied before the run writes (done only once the config,
 * sources and engines are up, so a bad config leaves it as it was).
 */
function checkRunDir(out: string, options: { resume: boolean; clean: boolean }): { replace: boolean } {
  if (options.resume && options.clean)
    throw new ConfigError('--clean: refused with --resume (--clean replaces the run that --resume continues)');
  if (!existsSync(out)) {
    if (options.resume) throw new ConfigError(`--resume: ${out} does not exist`);
    return { replace: false };
  }
  if (!lstatSync(out).isDirectory()) throw new ConfigError(`--run-dir: ${out} is not a directory`);
  const entries = readdirSync(out);
  if (entries.length === 0 || options.resume) return { replace: false };
  const isRun = entries.some((entry) => RUN_FILES.has(entry));
  if (!options.clean)
    throw new ConfigError(
      `--run-dir: ${out} already holds ${isRun ? 'a run' : 'files'} (--resume continues it; --clean replaces it)`,
    );
  if (!isRun)
    throw new ConfigError(
      `--clean: ${out} holds no training run (no ${[...RUN_FILES].join(', ')}); it is not replaced — pick another --run-dir`,
    );
  return { replace: true };
}

interface BuiltSource {
  source: TrainSource;
  hooks?: TrainingHooks;
  options: Record<string, unknown>;
  taskset: Taskset;
}

async function frozenClient(binding: SourceConfig['roles'][string], field: string): Promise<ModelClient | null> {
  if (binding.model) {
    return new OpenAICompatibleClient({
      baseUrl: binding.model.baseUrl,
      apiKey: binding.model.apiKey ?? 'none',
      model: binding.model.name,
    });
  }
  if (binding.checkpoint) {
    // `<dir>#<policy>`: one policy of a checkpoint of several.
    const { dir, policy } = splitCheckpointPolicy(binding.checkpoint);
    if (!existsSync(join(dir, 'meta.json'))) throw new ConfigError(`${field}.checkpoint: no checkpoint in ${dir}`);
    const maxTokens = Number((binding as { sampling?: { maxTokens?: number } }).sampling?.maxTokens ?? 1);
    try {
      return await frozenCheckpointClient({ dir, maxTokens, seed: 17, ...(policy ? { policy } : {}) });
    } catch (error) {
      throw new ConfigError(`${field}.${(error as Error).message}`, { path: `${field}.checkpoint` });
    }
  }
  return null;
}

/** sft's route of the roles on each trainable policy: the given replies, tokenised by that policy's tokenizer (null: not a policy name). */
function givenRepliesByPolicy(
  replies: GivenReplies,
  policyClient: (name: string) => ModelClient | null,
): (name: string) => ModelClient | null {
  const given = new Map<string, ModelClient>();
  return (name) => {
    const client = policyClient(name);
    if (!client) return null;
    let route = given.get(name);
    if (!route) {
      route = replies.clientFor(() => policyClient(name) ?? client);
      given.set(name, route);
    }
    return route;
  };
}

async function buildSource(options: {
  config: SourceConfig;
  field: string;
  run: RunConfig;
  baseDir: string;
  main: () => ModelClient;
  /** The client of a trainable policy other than `main`, by name (null before the engines are up). */
  policyClient?: (name: string) => ModelClient | null;
  /** The trainable policies the config defines (`resolvedPolicies`). */
  defined: ReadonlyMap<string, ResolvedPolicy>;
  /** Train sources may bind opponent pools; eval sources may not. */
  poolsAllowed: boolean;
  /** Sees every finished episode of the source (train sources). */
  watch?: Pick<FailureWatch, 'observe'>;
}): Promise<BuiltSource> {
  const { config, field } = options;
  const { definition, training } = await resolveEnv(config.env, { baseDir: options.baseDir, field: `${field}.env` });
  const roleNames = Object.keys(definition.roles);
  for (const role of Object.keys(config.roles)) {
    if (!roleNames.includes(role))
      throw new ConfigError(`${field}.roles.${role}: env ${definition.id} has no such role (roles: ${roleNames.join(', ')})`);
  }
  const frozen = new Map<string, ModelClient>();
  const frozenRoles = new Set<string>();
  const pools: { role: string; pool: OpponentPool }[] = [];
  const policies: Record<string, string> = {};
  const roleConfigs: Record<string, unknown> = {};
  const name = config.name ?? definition.id;
  for (const role of roleNames) {
    const {
      policy: _policy,
      model: _model,
      checkpoint: _checkpoint,
      pool: poolConfig,
      trainable: _trainable,
      ...agent
    } = config.roles[role] ?? {};
    const binding = config.roles[role] ?? {};
    if (poolConfig && !options.poolsAllowed)
      throw new ConfigError(
        `${field}.roles.${role}.pool: an eval source cannot bind an opponent pool (pools are drawn in training rollouts)`,
      );
    const pool = poolConfig ? new OpponentPool({ name: `pool:${name}/${role}`, config: poolConfig }) : null;
    if (pool) pools.push({ role, pool });
    const client = pool ?? (await frozenClient(binding, `${field}.roles.${role}`));
    const policyName = binding.policy ?? 'main';
    const modelName = pool ? pool.model : client ? `frozen:${name}/${role}` : policyName;
    if (client) frozen.set(modelName, client);
    else policies[role] = policyName;
    if (!isTrainedRole(binding)) frozenRoles.add(role);
    // A role on a policy other than main samples with that policy's settings unless it sets its own.
    const played = client ? undefined : options.defined.get(policyName);
    const sampling =
      played && policyName !== 'main'
        ? {
            sampling: {
              temperature: played.policy.temperature,
              maxTokens: played.policy.maxTokens,
              ...((agent as { sampling?: object }).sampling ?? {}),
            },
          }
        : {};
    roleConfigs[role] = {
      harness: 'null',
      runtime: 'game',
      ...agent,
      ...sampling,
      model: modelName,
      ...(isTrainedRole(binding) ? {} : { trainable: false }),
    };
  }
  let algorithm: ReturnType<typeof createAlgorithm>;
  try {
    algorithm = createAlgorithm(config.algorithm);
  } catch (error) {
    throw underField(field, error);
  }
  // A train source's algorithm (eval sources only play): sft serves its trainable roles the given
  // replies instead of sampling; opd connects its teacher (supervision.ts).
  const trainSource = options.poolsAllowed;
  // Each trainable policy by name (main, or one of [policies]): its client once its engines are up.
  const clientOf = (name: string) => (name === 'main' ? null : (options.policyClient?.(name) ?? null)) ?? options.main();
  if (trainSource) {
    // The policies the source trains: each engine must suit the algorithm; opd's teacher must share the tokenizer.
    const trained = [...new Set(roleNames.filter((r) => !frozenRoles.has(r) && policies[r]).map((r) => policies[r] as string))];
    const external = trained.find((n) => (options.defined.get(n)?.policy.engine ?? options.run.policy.engine) === 'external');
    const student = trained[0] ?? 'main';
    await setupAlgorithm({
      algorithm,
      main: () => clientOf(student),
      field,
      baseDir: options.baseDir,
      engine: external || (trained.length === 0 && options.run.policy.engine === 'external') ? 'external' : 'embedded',
      policy: external ?? student,
    });
  }
  const replies =
    trainSource && algorithm instanceof Sft
      ? givenReplies({ replies: algorithm.replies, main: options.main, field, baseDir: options.baseDir })
      : null;
  // sft serves the given replies to the roles on every policy, each tokenised by that policy's tokenizer.
  const policyClient = options.policyClient;
  const policyRoute = replies && policyClient ? givenRepliesByPolicy(replies, policyClient) : policyClient;
  const router = new ModelRouter({
    main: replies ? () => replies.client : options.main,
    frozen,
    ...(policyRoute ? { policies: policyRoute } : {}),
  });
  let env: Env;
  try {
    env = await Env.create({
      definition,
      config: { id: definition.id, ...config.options, ...roleConfigs },
      run: {
        model: 'main',
        client: router,
        sampling: { temperature: options.run.policy.temperature, maxTokens: options.run.policy.maxTokens },
      },
    });
  } catch (error) {
    throw new ConfigError(`${field}: ${(error as Error).message.replace(/\benv\./g, `${field}.options.`)}`);
  }
  replies?.track(env);
  if (options.watch) {
    const watch = options.watch;
    const runEpisode = env.runEpisode.bind(env);
    env.runEpisode = async (episodeOptions) => {
      const episode = await runEpisode(episodeOptions);
      watch.observe(name, episode);
      return episode;
    };
  }
  const taskset = config.taskset ? await loadTaskset(config.taskset) : await definition.taskset?.(env.options);
  if (!taskset) throw new ConfigError(`${field}.taskset: env ${definition.id} has no taskset of its own; name one`);
  const evaluator = training?.evaluator?.(env.options);
  return {
    source: {
      name,
      env,
      taskset,
      algorithm,
      groupSize: config.groupSize,
      ratio: config.ratio,
      frozenRoles,
      policies,
      ...(pools.length ? { pools } : {}),
      ...(evaluator ? { evaluator } : {}),
    },
    ...(training ? { hooks: training } : {}),
    options: env.options,
    taskset,
  };
}

/**
 * Trains the run a config describes with the embedded engines (tfjs trainer in a worker thread,
 * onnxruntime inference) through prime-rl's orchestrator; writes `metrics.jsonl`, evaluator
 * artifacts, `config.json`, `report.html` and `checkpoint/` under `out`. `resume` continues
 * from `out/checkpoint` (the checkpoint's config, with this config's `maxSteps`).
 */
export async function train(options: TrainOptions): Promise<TrainResult> {
  registerGameRuntime();
  const log = options.log ?? (() => {});
  const { replace } = checkRunDir(options.out, { resume: options.resume ?? false, clean: options.clean ?? false });
  // --resume never starts fresh: no checkpoint is an error (findRunCheckpoint also finds one a crash left unnamed).
  const checkpointDir = options.resume ? await findRunCheckpoint({ out: options.out }) : null;
  if (options.resume && !checkpointDir)
    throw new ConfigError(
      `--resume: no checkpoint in ${options.out} (no ${join(options.out, 'checkpoint')}); run without --resume to start this run fresh`,
    );
  const external = checkpointDir ? await loadExternalCheckpoint(checkpointDir) : null;
  const restored = checkpointDir && !external ? await loadEmbeddedCheckpoint(checkpointDir) : null;
  if (checkpointDir && !restored && !external)
    throw new ConfigError(`--resume: ${checkpointDir} holds no meta.json or ${EXTERNAL_CHECKPOINT_FILE}`);
  const resumed = restored?.checkpoint ?? null;
  const requested = parseRunConfig(options.config);
  const runState = (restored?.run ?? external?.state.run) as { config: RunConfig } | undefined;
  const config: RunConfig = runState
    ? { ...runState.config, maxSteps: requested.maxSteps, maxSeconds: requested.maxSeconds }
    : requested;
  checkExternalMaxAsync(config);
  const baseDir = options.baseDir ?? process.cwd();
  const defined = resolvedPolicies(config);
  // Each trainable policy's client once its engines are up (`main` through mainClient).
  const policyClients = new Map<string, ModelClient>();
  let mainClient: ModelClient | null = null;
  const main = () => {
    if (!mainClient) throw new TrainerError('the policy is not ready');
    return mainClient;
  };
  const endpoints = new Map<string, string[]>();
  for (const [i, source] of config.train.source.entries()) {
    const urls = Object.values(source.roles).flatMap((binding) => (binding.model ? [binding.model.baseUrl] : []));
    endpoints.set(source.name ?? String(i), [...urls, ...(config.inference?.baseUrls ?? [])]);
  }
  const watch = new FailureWatch();
  const zeroReward = new ZeroRewardWatch(log);
  const observer = {
    observe: (name: string, episode: Episode) => {
      watch.observe(name, episode);
      zeroReward.observe(episode);
    },
  };
  const built: BuiltSource[] = [];
  for (const [i, source] of config.train.source.entries()) {
    built.push(
      await buildSource({
        config: source,
        field: `train.source[${i}]`,
        run: config,
        baseDir,
        main,
        policyClient: (name) => (name === 'main' ? null : (policyClients.get(name) ?? null)),
        defined,
        poolsAllowed: true,
        watch: observer,
      }),
    );
  }
  const evalSources: { built: BuiltSource; use: (client: ModelClient) => void }[] = [];
  for (const [i, source] of (config.eval?.source ?? []).entries()) {
    let evalClient: ModelClient | null = null;
    const builtEval = await buildSource({
      config: source,
      field: `eval.source[${i}]`,
      run: config,
      baseDir,
      defined,
      poolsAllowed: false,
      main: () => {
        if (!evalClient) throw new TrainerError('no evaluation policy yet');
        return evalClient;
      },
    });
    evalSources.push({ built: builtEval, use: (client) => (evalClient = client) });
  }
  // Every runtime the roles use answers (a Docker engine, …) before the run directory exists.
  await preflightRuntimes([...built, ...evalSources.map((e) => e.built)].map((b) => b.source.env));
  const maxTokens = Math.max(
    config.policy.maxTokens,
    ...config.train.source.flatMap((s) =>
      Object.values(s.roles).map((r) => Number((r as { sampling?: { maxTokens?: number } }).sampling?.maxTokens ?? 0)),
    ),
  );
  const orchestratorOptions = {
    sources: built.map((b) => b.source),
    evalSources: evalSources.map((e) => ({
      source: e.built.source,
      interval: config.eval?.interval ?? 10,
      groups: config.eval?.groups ?? 8,
      useClient: e.use,
    })),
    maxSteps: config.maxSteps,
    ...(config.maxSeconds !== undefined ? { maxSeconds: config.maxSeconds } : {}),
    groupsPerStep: config.groupsPerStep,
    maxAsync: config.maxAsync,
    maxOffPolicySteps: config.maxOffPolicySteps,
    filterZeroAdvantages: config.filterZeroAdvantages,
    stopAfterFailedSteps: config.stopAfterFailedSteps,
    endpoints: [...new Set([...endpoints.values()].flat())],
    evalEvery: config.train.evalEvery,
    checkpointEvery: config.checkpointEvery,
    tracesEvery: config.tracesEvery,
    keepCheckpoints: config.keepCheckpoints,
    seed: config.seed,
    out: options.out,
    onStep: (metrics: StepMetrics) => {
      options.onStep?.(metrics);
      zeroReward.onStep(metrics);
      if (options.signal?.aborted) {
        // The link is troupe's own pointer to the newest complete checkpoint; without it nothing resumes.
        const resumable = existsSync(join(options.out, 'checkpoint'));
        throw new TrainingInterruptedError(
          resumable
            ? `interrupted after step ${metrics.step}; --resume continues from the last checkpoint`
            : `interrupted after step ${metrics.step}, before any checkpoint was written (checkpoint_every sets how often); run again to start over`,
          Number(metrics.step),
        );
      }
    },
    log,
  } satisfies Omit<OrchestratorOptions, 'trainer' | 'inference'>;
  const trained = trainedPolicies({ defined, sources: built.map((b) => b.source) });
  if (trained.length > 1 || (trained.length === 1 && trained[0] !== 'main')) {
    if (trained.some((name) => defined.get(name)?.policy.engine === 'external')) {
      if (checkpointDir && !external?.policies)
        throw new ConfigError(`--resume: ${checkpointDir} is not a checkpoint of a run of several external policies`);
      const engines = await severalExternalPolicies({
        names: trained,
        defined,
        log,
        resume: external?.policies,
        runStep: external?.step ?? 0,
        checkpointEvery: config.checkpointEvery,
      });
      for (const [name, engine] of Object.entries(engines.policies)) policyClients.set(name, engine.inference.client);
      mainClient = engines.policies[trained[0] as string]?.inference.client ?? null;
      const orchestrator = await openRun(
        { out: options.out, config, replace, close: engines.close },
        () =>
          new Orchestrator<WeightsHandle, null>({
            ...orchestratorOptions,
            policies: engines.policies,
            runState: { config },
            writeCheckpoint: writeExternalCheckpoint,
            ...(external ? { resume: external } : {}),
          }),
      );
      return await runToEnd({
        orchestrator,
        trainer: { description: engines.description, close: engines.close },
        inference: {},
        config,
        out: options.out,
        watch,
        zeroReward,
      });
    }
    const engines = await severalPolicies({
      names: trained,
      defined,
      config,
      sources: [...built, ...evalSources.map((e) => e.built)],
      restored,
      maxTokens,
      log,
    });
    for (const [name, engine] of Object.entries(engines.policies)) policyClients.set(name, engine.inference.client);
    mainClient = engines.policies[trained[0] as string]?.inference.client ?? null;
    const orchestrator = await openRun(
      { out: options.out, config, replace, close: engines.close },
      () =>
        new Orchestrator({
          ...orchestratorOptions,
          policies: engines.policies,
          runState: engines.runState,
          ...(restored ? { resume: restored.checkpoint } : {}),
        }),
    );
    return await runToEnd({
      orchestrator,
      trainer: { description: engines.description, close: engines.close },
      inference: {},
      config,
      out: options.out,
      watch,
      zeroReward,
    });
  }
  if (config.policy.engine === 'external') {
    if (config.transport.type === 'in-process' || !config.inference)
      throw new ConfigError('policy.engine: "external" needs [transport] and [inference]');
    const engines = await externalEngines({
      transport: config.transport,
      inference: config.inference,
      temperature: config.policy.temperature,
      ...(external ? { resumeStep: external.step } : {}),
      log,
    });
    mainClient = engines.inference.client;
    const orchestrator = await openRun(
      { out: options.out, config, replace, close: () => closeBoth(engines) },
      () =>
        new Orchestrator<WeightsHandle, null>({
          ...orchestratorOptions,
          trainer: engines.trainer,
          inference: engines.inference,
          runState: { config },
          ...(external ? { resume: external } : {}),
          writeCheckpoint: writeExternalCheckpoint,
        }),
    );
    return await runToEnd({
      orchestrator,
      trainer: engines.trainer,
      inference: engines.inference,
      config,
      out: options.out,
      watch,
      zeroReward,
    });
  }
  const shape = embeddedPolicy({
    sources: [...built, ...evalSources.map((e) => e.built)].map((b) => ({
      ...(b.hooks ? { hooks: b.hooks as never } : {}),
      options: b.options,
      taskset: b.taskset,
    })),
    dModel: config.policy.dModel,
    layers: config.policy.layers,
    heads: config.policy.heads,
    ffnMult: config.policy.ffnMult,
    initStd: config.policy.initStd,
    seed: config.seed,
    maxTokens,
    vocabSample: config.policy.vocabSample,
    vocabulary: config.policy.vocabulary,
    ...(config.policy.contextLength !== undefined ? { contextLength: config.policy.contextLength } : {}),
  });
  const tokenizer = restored?.tokenizer ?? shape.tokenizer;
  const policy = restored?.policy ?? shape.policy;
  for (const line of vocabularyWarnings({
    sources: built.map((b) => ({ name: b.source.name, taskset: b.taskset })),
    tokenId: (word) => tokenizer.id(word),
    unknownId: tokenizer.id('<unk>'),
    outputTokens: policy.outputTokens,
    sample: config.policy.vocabSample,
  }))
    log(line);
  const weights = resumed?.weights ?? initWeights(policy);
  const { workerThread, trainerConfig, schedule } = trainerParts(config.trainer, config.maxSteps);
  const transport = config.transport.type === 'in-process' ? null : config.transport;
  if (transport && resumed) throw new ConfigError('transport: --resume continues in-process runs only');
  const wire = transport
    ? await wireTrainer({
        transport,
        tokenizer,
        policy,
        trainer: trainerConfig,
        schedule,
        temperature: config.policy.temperature,
        startTimeoutMs: (config.inference?.startTimeoutSeconds ?? 600) * 1000,
        log,
      })
    : null;
  const trainer =
    wire ??
    (await embeddedTrainer({
      policy,
      weights,
      ...(resumed ? { optimizer: resumed.optimizer } : {}),
      trainer: trainerConfig,
      schedule,
      workerThread,
      log,
    }));
  const embedded = await embeddedInference({
    tokenizer,
    policy,
    weights,
    version: resumed?.step ?? 0,
    seed: config.seed * 7919 + 1,
    maxTokens,
    maxBatch: config.policy.maxBatch,
    maxWaitMs: config.policy.maxWaitMs,
    runtime: config.policy.onnxRuntime,
  });
  const inference =
    transport && config.inference
      ? await wireInference({
          inference: config.inference,
          outputDir: transport.outputDir,
          local: embedded,
          log,
        })
      : embedded;
  mainClient = inference.client;
  log(
    `trainer: ${trainer.description}; inference: ${inference === embedded ? `${embedded.policyClient.runtime} (1 thread)` : config.inference?.baseUrls.join(', ')}; policy: vocabulary ${tokenizer.size}, context ${policy.contextLength}, head ${policy.outputTokens?.length ?? tokenizer.size} tokens`,
  );
  const orchestrator = await openRun(
    { out: options.out, config, replace, close: () => closeBoth({ trainer, inference }) },
    () =>
      new Orchestrator({
        ...orchestratorOptions,
        trainer,
        inference,
        runState: { config, tokenizer: tokenizer.toJSON(), policy },
        ...(resumed ? { resume: resumed } : {}),
      }),
  );
  return await runToEnd({ orchestrator, trainer, inference, config, out: options.out, watch, zeroReward });
}

/**
 * The trainable policies a run trains, in the config's order (`main` first): those a train source's
 * role plays or an opponent pool snapshots. A policy under `[policies]` that none plays is a
 * `ConfigError` naming it.
 */
function trainedPolicies(options: { defined: ReadonlyMap<string, ResolvedPolicy>; sources: readonly TrainSource[] }): string[] {
  const used = new Set<string>();
  for (const source of options.sources) {
    for (const [role, policy] of Object.entries(source.policies ?? {})) if (!source.frozenRoles.has(role)) used.add(policy);
    for (const { pool } of source.pools ?? []) used.add(pool.config.of);
  }
  for (const name of options.defined.keys())
    if (name !== 'main' && !used.has(name))
      throw new ConfigError(`policies.${name}: no role of a train source plays it (bind one with policy = "${name}")`, {
        path: `policies.${name}`,
      });
  // A policy only frozen roles play is served, not trained: it needs engines all the same.
  for (const source of options.sources) for (const policy of Object.values(source.policies ?? {})) used.add(policy);
  return [...options.defined.keys()].filter((name) => used.has(name));
}

/**
 * The embedded engines of a run of several policies (or of one policy not named `main`): per
 * policy its own shape (`[policies.<name>]`), tokenizer, tfjs trainer in a worker thread and
 * onnxruntime inference, from the checkpoint when resuming. The trainers take turns (the
 * orchestrator trains one policy at a time), so a run of N policies keeps one trainer thread and
 * the rollout thread busy, as a run of one does.
 */
// Long: builds each policy's shape, trainer and inference in turn, closing what was built when one fails.
async function severalPolicies(options: {
  names: readonly string[];
  defined: ReadonlyMap<string, ResolvedPolicy>;
  config: RunConfig;
  sources: readonly BuiltSource[];
  restored: Awaited<ReturnType<typeof loadEmbeddedCheckpoint>>;
  maxTokens: number;
  log: (line: string) => void;
}) {
  const { names, defined, config, restored, log } = options;
  const policies: Record<string, PolicyEngines<NamedWeight[], OptimizerState>> = {};
  const shapes: Record<string, { tokenizer: unknown; policy: PolicyConfig }> = {};
  const closers: (() => Promise<void>)[] = [];
  const descriptions: string[] = [];
  const close = async () => {
    for (const closer of closers.splice(0).reverse()) await closer().catch(() => {});
  };
  try {
    for (const [i, name] of names.entries()) {
      const resolved = defined.get(name) as ResolvedPolicy;
      const field = name === 'main' ? 'policy' : `policies.${name}`;
      if (resolved.policy.engine !== 'embedded' || resolved.transport.type !== 'in-process' || resolved.inference)
        throw new ConfigError(
          `${field}: a run of several policies trains each with the embedded in-process engines (engine = "embedded", no [transport] or [inference])`,
          { path: field },
        );
      const p = resolved.policy;
      const shape = embeddedPolicy({
        sources: options.sources.map((b) => ({
          ...(b.hooks ? { hooks: b.hooks as never } : {}),
          options: b.options,
          taskset: b.taskset,
        })),
        dModel: p.dModel,
        layers: p.layers,
        heads: p.heads,
        ffnMult: p.ffnMult,
        initStd: p.initStd,
        seed: config.seed + i * 7907,
        maxTokens: Math.max(options.maxTokens, p.maxTokens),
        vocabSample: p.vocabSample,
        vocabulary: p.vocabulary,
        ...(p.contextLength !== undefined ? { contextLength: p.contextLength } : {}),
      });
      const saved = restored?.policies?.[name];
      const part = restored?.checkpoint.policies?.[name];
      if (restored && (!saved || !part))
        throw new ConfigError(`--resume: the checkpoint holds no policy ${name}`, { path: field });
      const tokenizer = saved?.tokenizer ?? shape.tokenizer;
      const policy = saved?.policy ?? shape.policy;
      const weights = part?.weights ?? initWeights(policy);
      const { workerThread, trainerConfig, schedule } = trainerParts(resolved.trainer, config.maxSteps);
      const trainer = await embeddedTrainer({
        policy,
        weights,
        ...(part ? { optimizer: part.optimizer } : {}),
        trainer: trainerConfig,
        schedule,
        workerThread,
        log,
      });
      closers.push(() => trainer.close());
      const inference = await embeddedInference({
        tokenizer,
        policy,
        weights,
        version: restored?.checkpoint.step ?? 0,
        seed: config.seed * 7919 + 1 + i * 104_729,
        maxTokens: Math.max(options.maxTokens, p.maxTokens),
        maxBatch: p.maxBatch,
        maxWaitMs: p.maxWaitMs,
        runtime: p.onnxRuntime,
      });
      closers.push(async () => inference.close?.());
      policies[name] = { trainer, inference };
      shapes[name] = { tokenizer: tokenizer.toJSON(), policy };
      descriptions.push(`${name}: ${trainer.description}, d_model ${policy.dModel}, ${policy.layers} layer(s)`);
    }
  } catch (error) {
    await close();
    throw error;
  }
  const first = shapes[names[0] as string] as { tokenizer: unknown; policy: PolicyConfig };
  const description = `${names.length} policies (${descriptions.join('; ')})`;
  log(`trainer: ${description}; inference: onnxruntime, one session per policy`);
  return {
    policies,
    description,
    close,
    runState: { config, tokenizer: first.tokenizer, policy: first.policy, policies: shapes },
  };
}

/**
 * The external engines of a run of several policies: per policy its own prime-rl trainer (its
 * `[policies.<name>.transport]` `output_dir`) and its own inference servers
 * (`[policies.<name>.inference]` base URLs and served model), as one external policy has
 * (`externalEngines`). Every policy must be external.
 */
async function severalExternalPolicies(options: {
  names: readonly string[];
  defined: ReadonlyMap<string, ResolvedPolicy>;
  log: (line: string) => void;
  /** Resuming: each policy's broadcast in the checkpoint (its trainer must resume at that step). */
  resume?: Record<string, { weights: WeightsHandle }> | undefined;
  /** Resuming: the run's step (a policy may lag it). */
  runStep: number;
  checkpointEvery: number;
}) {
  const policies: Record<string, PolicyEngines<WeightsHandle, null>> = {};
  const closers: (() => Promise<void>)[] = [];
  const close = async () => {
    for (const closer of closers.splice(0).reverse()) await closer().catch(() => {});
  };
  const outputDirs = new Map<string, string>();
  try {
    for (const name of options.names) {
      const resolved = options.defined.get(name) as ResolvedPolicy;
      const field = name === 'main' ? 'policy' : `policies.${name}`;
      const { transport, inference } = resolved;
      if (resolved.policy.engine !== 'external' || transport.type === 'in-process' || !inference)
        throw new ConfigError(
          `${field}.engine: every policy of a run with an external policy must be external, with its own [${field === 'policy' ? '' : `${field}.`}transport] and [${field === 'policy' ? '' : `${field}.`}inference]`,
          { path: `${field}.engine` },
        );
      const clash = [...outputDirs].find(([, dir]) => resolve(dir) === resolve(transport.outputDir));
      if (clash)
        throw new ConfigError(
          `${name === 'main' ? 'transport' : `policies.${name}.transport`}.output_dir: ${transport.outputDir} is policy ${clash[0]}'s too; each policy's trainer needs its own`,
          { path: `${field}.transport.output_dir` },
        );
      outputDirs.set(name, transport.outputDir);
      const resumeStep = options.resume?.[name]?.weights.step;
      if (options.resume && resumeStep === undefined)
        throw new ConfigError(`--resume: the checkpoint holds no policy ${name}`, { path: field });
      if (resumeStep)
        await checkLaggingResume(name, {
          outputDir: transport.outputDir,
          policyStep: resumeStep,
          runStep: options.runStep,
          checkpointEvery: options.checkpointEvery,
        });
      const engines = await externalEngines({
        transport,
        inference,
        temperature: resolved.policy.temperature,
        log: options.log,
        // A policy its trainer never stepped resumes from the servers' start-up weights.
        ...(resumeStep ? { resumeStep } : {}),
      });
      closers.push(async () => {
        await engines.trainer.close();
        await engines.inference.close?.();
      });
      policies[name] = engines;
    }
  } catch (error) {
    await close();
    throw error;
  }
  const description = `${options.names.length} policies on external engines (${options.names.map((name) => `${name}: ${outputDirs.get(name)}`).join('; ')})`;
  return { policies, description, close };
}

/** The first write of a run: the folder (emptied first when `--clean` replaces a run) and its `config.json`. */
async function writeRunConfig(options: { out: string; config: RunConfig; replace: boolean }): Promise<void> {
  if (options.replace) await rm(options.out, { recursive: true, force: true });
  await mkdir(options.out, { recursive: true });
  await writeFile(join(options.out, 'config.json'), `${JSON.stringify(snakeConfigKeys(options.config), null, 2)}\n`);
}

/**
 * The checkpoint of an external-engine run: the orchestrator's state and the broadcast step (each
 * policy's, with several); the weights and optimizer live in the trainers' own checkpoints.
 */
async function writeExternalCheckpoint(options: { dir: string } & OrchestratorCheckpoint<WeightsHandle, null>): Promise<void> {
  const { dir, step, state, weights, inference, policies } = options;
  await mkdir(dir, { recursive: true });
  const body = {
    step,
    broadcast: weights,
    inference: inference ?? [],
    ...(policies ? { policies: Object.fromEntries(Object.entries(policies).map(([name, part]) => [name, part.weights])) } : {}),
    state,
  };
  // Written whole then renamed: a crash never leaves half a checkpoint.
  const path = join(dir, EXTERNAL_CHECKPOINT_FILE);
  await writeFile(`${path}.tmp`, `${JSON.stringify(body, null, 2)}\n`);
  await rename(`${path}.tmp`, path);
}

/** Where an external-engine run's checkpoint keeps the orchestrator's state and the broadcast step. */
const EXTERNAL_CHECKPOINT_FILE = 'orchestrator.json';

/**
 * The orchestrator's checkpoint of an external-engine run (`orchestrator.json`, checked against the
 * checkpoint's manifest), as the orchestrator resumes it: the step S, its state, and the broadcast
 * of S as the only policy version held (the trainer may have removed older broadcasts, and
 * prime-rl's orchestrator serves v{S} first on resume). Null for a checkpoint of the embedded engines.
 */
async function loadExternalCheckpoint(dir: string): Promise<OrchestratorCheckpoint<WeightsHandle, null> | null> {
  if (!existsSync(join(dir, EXTERNAL_CHECKPOINT_FILE))) return null;
  const text = (await readCheckpointFile({ dir, name: EXTERNAL_CHECKPOINT_FILE })).toString('utf8');
  const body = JSON.parse(text) as { step?: unknown; broadcast?: unknown; state?: unknown; policies?: unknown };
  const broadcast = body.broadcast as Partial<WeightsHandle> | undefined;
  if (body.policies !== undefined) return severalExternalCheckpoint(dir, body);
  if (
    !Number.isInteger(body.step) ||
    (body.step as number) < 1 ||
    typeof body.state !== 'object' ||
    body.state === null ||
    broadcast?.step !== body.step ||
    typeof broadcast?.dir !== 'string'
  )
    throw new ConfigError(`--resume: ${join(dir, EXTERNAL_CHECKPOINT_FILE)} is not an orchestrator checkpoint of troupe`);
  return {
    step: body.step as number,
    state: body.state as Record<string, unknown>,
    weights: { step: body.step as number, dir: broadcast.dir },
    optimizer: null,
    inference: [],
  };
}

/**
 * The checkpoint of a run of several external policies: every policy's broadcast handle (the step
 * its own trainer reached, at most the run's step), as the orchestrator resumes it.
 */
function severalExternalCheckpoint(
  dir: string,
  body: { step?: unknown; state?: unknown; policies?: unknown },
): OrchestratorCheckpoint<WeightsHandle, null> {
  const bad = () =>
    new ConfigError(`--resume: ${join(dir, EXTERNAL_CHECKPOINT_FILE)} is not an orchestrator checkpoint of troupe`);
  const step = body.step;
  if (!Number.isInteger(step) || (step as number) < 1 || typeof body.state !== 'object' || body.state === null) throw bad();
  if (typeof body.policies !== 'object' || body.policies === null) throw bad();
  const policies: NonNullable<OrchestratorCheckpoint<WeightsHandle, null>['policies']> = {};
  for (const [name, handle] of Object.entries(body.policies as Record<string, Partial<WeightsHandle>>)) {
    if (!Number.isInteger(handle?.step) || (handle.step as number) > (step as number) || typeof handle?.dir !== 'string')
      throw bad();
    policies[name] = { weights: { step: handle.step as number, dir: handle.dir }, optimizer: null, inference: [] };
  }
  const first = Object.values(policies)[0];
  if (!first) throw bad();
  return { step: step as number, state: body.state as Record<string, unknown>, ...first, policies };
}

/**
 * A `[trainer]` table in its three parts: where the trainer runs (`worker_thread`), the trainer's
 * own config, and the lr / reference-KL schedule over the run's `max_steps`.
 */
function trainerParts(trainer: RunConfig['trainer'], maxSteps: number) {
  const { workerThread, lrFinalFraction, lrDecayFraction, momentumAtFloor, refKlTauStart, refKlDecayFraction, ...trainerConfig } =
    trainer;
  const schedule = {
    maxSteps,
    lr: trainerConfig.lr,
    lrFinalFraction,
    lrDecayFraction,
    momentumAtFloor,
    refKlTauStart,
    refKlTau: trainerConfig.refKlTau,
    refKlDecayFraction,
  };
  return { workerThread, trainerConfig, schedule };
}

/**
 * Writes the run's `config.json` and builds its orchestrator; when either fails, the engines just
 * started are closed before the error goes on, so no worker or socket outlives a refused run.
 */
async function openRun<O>(
  options: { out: string; config: RunConfig; replace: boolean; close: () => Promise<void> },
  build: () => O,
): Promise<O> {
  try {
    await writeRunConfig(options);
    return build();
  } catch (error) {
    await options.close();
    throw error;
  }
}

/** Closes a trainer, then its inference. */
async function closeBoth(engines: {
  trainer: { close(): Promise<void> };
  inference: { close?(): Promise<void> };
}): Promise<void> {
  await engines.trainer.close();
  await engines.inference.close?.();
}

/** Runs the orchestrator, then the report; closes the engines whatever happens. */
async function runToEnd(options: {
  orchestrator: { run(): ReturnType<Orchestrator['run']> };
  trainer: { description: string; close(): Promise<void> };
  inference: { close?(): Promise<void> };
  config: RunConfig;
  out: string;
  watch: FailureWatch;
  zeroReward: ZeroRewardWatch;
}): Promise<TrainResult> {
  const { trainer, inference } = options;
  try {
    let result: Awaited<ReturnType<Orchestrator['run']>>;
    try {
      result = await options.orchestrator.run();
    } catch (error) {
      // A stopped or interrupted run still gets its report of the steps it wrote.
      if (existsSync(join(options.out, 'metrics.jsonl'))) await writeReport({ out: options.out }).catch(() => {});
      // Every advantage 0 because every reward was 0 (the vocabulary trap): the stop names that cause.
      const stop = error as { name?: string; reason?: string; step?: number; consecutive?: number; message?: string };
      const zero =
        stop.name === 'EmptyBatchesError' && stop.reason === 'zero-advantages' ? options.zeroReward.emptyBatchesCause() : null;
      if (zero)
        throw new TrainingStoppedError({
          step: stop.step ?? 0,
          consecutive: stop.consecutive ?? 0,
          endpoints: [],
          message: `${stop.message}; ${zero}`,
          cause: error,
        });
      throw error;
    }
    await writeReport({ out: options.out });
    const checkpoint = join(options.out, 'checkpoint');
    return {
      steps: result.steps,
      episodes: result.episodes,
      seconds: result.seconds,
      trainer: trainer.description,
      last: result.last,
      config: options.config,
      failedEpisodes: options.watch.failedEpisodes,
      checkpoint: existsSync(checkpoint) ? checkpoint : null,
    };
  } finally {
    await closeBoth({ trainer, inference });
  }
}

/** Reads `metrics.jsonl`. */
export async function readMetrics(out: string): Promise<StepMetrics[]> {
  const text = await readFile(join(out, 'metrics.jsonl'), 'utf8');
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as StepMetrics);
}
