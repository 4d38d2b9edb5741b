import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Message, Task, Taskset } from '@troupe/verifiers';
import { ConfigError } from '@troupe/verifiers';
import { exportOnnx } from '../inference/onnx-export.ts';
import type { OnnxRuntimeChoice } from '../inference/onnx-policy.ts';
import type { PolicyModelClient } from '../inference/policy-model-client.ts';
import { type NamedWeight, type PolicyConfig, PolicyConfigSchema } from '../policy/config.ts';
import { WordTokenizer } from '../policy/tokenizer.ts';
import { type Checkpoint, loadCheckpoint, resolveCheckpointDir, writeCheckpointFiles } from '../trainer/checkpoint.ts';
import type { TrainerConfigInput } from '../trainer/config.ts';
import type { TrainerHandle } from '../trainer/handle.ts';
import type { OptimizerState } from '../trainer/optimizer-state.ts';
import type { OrchestratorCheckpoint } from './orchestrator.ts';
import { scheduledStepOptions, type TrainerSchedule } from './schedule.ts';
import type { EvaluationPolicy, Inference, Trainer, TrainingHooks } from './types.ts';

/** What the embedded policy needs to know about one source to build its tokenizer and shape. */
export interface PolicySourceInfo {
  hooks?: TrainingHooks<never>;
  options: Record<string, unknown>;
  taskset: Taskset;
}

/** Shape, vocabulary and head options of the embedded policy. */
export interface EmbeddedPolicyOptions {
  sources: readonly PolicySourceInfo[];
  dModel: number;
  layers: number;
  heads: number;
  ffnMult: number;
  initStd?: number;
  seed: number;
  /** Tokens of a reply (the longest any role samples). */
  maxTokens: number;
  /** Tasks per source whose rendered prompts build the vocabulary (default 1,000). */
  vocabSample?: number;
  /** Extra words the tokenizer must know. */
  vocabulary?: readonly string[];
  /** Fixed context length (default: the longest conversation the sources declare, or the longest sampled prompt + reply). */
  contextLength?: number;
}

function taskTexts(task: Task): string[] {
  const out: string[] = [];
  const data = task.data as { prompt?: unknown; systemPrompt?: unknown };
  const add = (value: unknown) => {
    if (typeof value === 'string') out.push(value);
    else if (Array.isArray(value)) {
      for (const m of value) if (m && typeof (m as Message).content === 'string') out.push((m as { content: string }).content);
    }
  };
  add(data.systemPrompt);
  add(data.prompt);
  return out;
}

function taskMessages(task: Task): Message[] {
  const data = task.data as { prompt?: unknown; systemPrompt?: unknown };
  const messages: Message[] = [];
  if (typeof data.systemPrompt === 'string') messages.push({ role: 'system', content: data.systemPrompt });
  if (typeof data.prompt === 'string') messages.push({ role: 'user', content: data.prompt });
  else if (Array.isArray(data.prompt)) messages.push(...(data.prompt as Message[]));
  return messages;
}

function sampleTasks(taskset: Taskset, count: number): Task[] {
  const n = taskset.isInfinite ? count : Math.min(count, taskset.size);
  return Array.from({ length: n }, (_, i) => taskset.at(i));
}

/**
 * The embedded policy for any text env: a word tokenizer whose vocabulary is, in order, the
 * words each source's env declares (`training.vocabulary`), the configured `vocabulary`, and the
 * words of the rendered prompts of the first `vocabSample` tasks of every source; unknown words
 * map to `<unk>`. The chat template is the tokenizer's generic one. The reply head is the union
 * of the sources' `training.replyVocabulary` (plus `<eos>` for replies longer than one token), or
 * the whole vocabulary when no source restricts it.
 */
export function embeddedPolicy(options: EmbeddedPolicyOptions): { tokenizer: WordTokenizer; policy: PolicyConfig } {
  const vocabSample = options.vocabSample ?? 1000;
  const corpus: string[] = [];
  for (const source of options.sources) corpus.push(...(source.hooks?.vocabulary?.(source.options as never) ?? []));
  corpus.push(...(options.vocabulary ?? []));
  const samples = options.sources.map((s) => sampleTasks(s.taskset, vocabSample));
  for (const tasks of samples) for (const task of tasks) corpus.push(...taskTexts(task));
  let tokenizer = WordTokenizer.fromCorpus({ corpus });
  const heads = options.sources.map((s) => s.hooks?.replyVocabulary?.(s.options as never));
  const restricted = heads.some((h) => h !== undefined);
  if (restricted) {
    // Reply words must be tokens even if no prompt contains them.
    const missing = heads.flat().filter((w): w is string => w !== undefined && tokenizer.id(w) === 1);
    if (missing.length) tokenizer = WordTokenizer.fromCorpus({ corpus: [...corpus, ...missing] });
  }
  const renderLength = (messages: readonly Message[]) => tokenizer.renderChat({ messages }).length;
  let longest = 0;
  options.sources.forEach((source, s) => {
    const declared = source.hooks?.maxSequence?.({
      options: source.options as never,
      renderLength,
      maxTokens: options.maxTokens,
    });
    if (declared !== undefined) longest = Math.max(longest, declared);
    else
      for (const task of samples[s] ?? []) longest = Math.max(longest, renderLength(taskMessages(task)) + options.maxTokens + 1);
  });
  const contextLength = options.contextLength ?? Math.max(8, Math.ceil(longest / 8) * 8);
  const outputTokens = restricted
    ? [
        ...new Set([
          ...heads.flat().flatMap((w) => (w === undefined ? [] : [tokenizer.id(w)])),
          ...(options.maxTokens > 1 ? [tokenizer.eosId] : []),
        ]),
      ]
    : undefined;
  const policy = PolicyConfigSchema.parse({
    vocabSize: tokenizer.size,
    contextLength,
    dModel: options.dModel,
    layers: options.layers,
    heads: options.heads,
    ffnMult: options.ffnMult,
    ...(options.initStd !== undefined ? { initStd: options.initStd } : {}),
    ...(outputTokens ? { outputTokens } : {}),
    seed: options.seed,
  });
  return { tokenizer, policy };
}

// The engines load on first use: importing `@troupe/prime-rl/orchestrator` (say, to drive prime-rl's
// own trainer and vLLM over the wire) loads neither tfjs nor onnxruntime.
const trainerHandles = () => import('../trainer/handle.ts');
const policyModelClient = async () => (await import('../inference/policy-model-client.ts')).PolicyModelClient;

/** The embedded tfjs trainer (worker thread by default) as the orchestrator's {@link Trainer}. */
export async function embeddedTrainer(options: {
  policy: PolicyConfig;
  weights: NamedWeight[];
  optimizer?: OptimizerState;
  trainer: TrainerConfigInput;
  schedule: TrainerSchedule;
  workerThread: boolean;
  log?: (line: string) => void;
}): Promise<Trainer> {
  const init = {
    policy: options.policy,
    weights: options.weights,
    trainer: options.trainer,
    ...(options.optimizer ? { optimizer: options.optimizer } : {}),
  };
  const { localTrainer, workerTrainer } = await trainerHandles();
  let handle: TrainerHandle;
  let where = 'this thread';
  if (options.workerThread) {
    try {
      handle = await workerTrainer(init);
      where = 'worker thread';
    } catch (error) {
      options.log?.(`worker thread unavailable (${(error as Error).message.split('\n')[0]}); training in this thread`);
      handle = await localTrainer(init);
    }
  } else handle = await localTrainer(init);
  const betas = options.trainer.betas ?? [0.9, 0.999];
  return {
    description: `tfjs ${handle.backend} (${where})`,
    async step({ samples, step }) {
      const stepOptions = scheduledStepOptions(options.schedule, step - 1);
      const { metrics, weights } = await handle.train(samples, stepOptions);
      return {
        weights,
        metrics: trainerStepMetrics(metrics, stepOptions, betas),
      };
    },
    async state() {
      return { weights: await handle.weights(), optimizer: await handle.optimizerState() };
    },
    close: () => handle.close(),
  };
}

/** Reply probabilities of the embedded policy: first-token logits of each reply, softmax over the candidates. */
function replyProbabilities(client: PolicyModelClient) {
  return async ({ messages, replies }: { messages: readonly Message[]; replies: readonly string[] }) => {
    const logits = await client.nextLogits(client.tokenizer.renderChat({ messages }));
    const values = replies.map((r) => logits[client.tokenizer.encode(r)[0] ?? 1] as number);
    const max = Math.max(...values);
    const exps = values.map((v) => Math.exp(v - max));
    const sum = exps.reduce((a, b) => a + b, 0);
    return exps.map((e) => e / sum);
  };
}

/** The embedded onnxruntime policy client as the orchestrator's {@link Inference}. */
export async function embeddedInference(options: {
  tokenizer: WordTokenizer;
  policy: PolicyConfig;
  weights: NamedWeight[];
  version: number;
  seed: number;
  maxTokens: number;
  maxBatch?: number;
  maxWaitMs?: number;
  /** Which onnxruntime runs the policy (default `auto`: onnxruntime-node when installed, else onnxruntime-web). */
  runtime?: OnnxRuntimeChoice;
}): Promise<Inference & { readonly policyClient: PolicyModelClient }> {
  const Client = await policyModelClient();
  const make = (weights: NamedWeight[], version: number, seed: number) =>
    Client.create({
      tokenizer: options.tokenizer,
      config: options.policy,
      onnx: exportOnnx({ config: options.policy, weights }),
      version,
      maxBatch: options.maxBatch ?? 512,
      maxWaitMs: options.maxWaitMs ?? 0,
      maxTokens: options.maxTokens,
      seed,
      ...(options.runtime ? { runtime: options.runtime } : {}),
    });
  const client = await make(options.weights, options.version, options.seed);
  return {
    client,
    policyClient: client,
    get version() {
      return client.version;
    },
    async updateWeights({ weights, version }) {
      await client.updateWeights({ onnx: exportOnnx({ config: options.policy, weights }), version });
    },
    async evaluationPolicy({ weights, version, seed }): Promise<EvaluationPolicy> {
      const evaluation = await make(weights, version, seed);
      return {
        version,
        client: evaluation,
        replyProbabilities: replyProbabilities(evaluation),
        loadRngState(state) {
          if (typeof state === 'number') evaluation.rng.state = state;
        },
      };
    },
    rngState: () => client.rng.state,
    loadRngState(state) {
      if (typeof state === 'number') client.rng.state = state;
    },
  };
}

/** A run checkpoint of the embedded engines, with the tokenizer and policy shape it was trained with. */
export interface EmbeddedRunCheckpoint {
  /** The checkpoint (of a run of several policies: the first policy's part, and every part in `policies`). */
  checkpoint: Checkpoint & { policies?: Record<string, Checkpoint> };
  tokenizer: WordTokenizer;
  policy: PolicyConfig;
  /** The caller's run state (`runState` of the orchestrator), e.g. its config. */
  run: Record<string, unknown>;
  /** A run of several policies: each policy's tokenizer and shape, by name, in the run's order. */
  policies?: Record<string, { tokenizer: WordTokenizer; policy: PolicyConfig }>;
}

/** The prefix of policy `name`'s files in a checkpoint of several policies (the first policy's files have none). */
export function policyFilePrefix(name: string): string {
  return `policy-${name}.`;
}

/**
 * Writes the embedded engines' checkpoint files into `dir`: `meta.json` and `tensors.bin` (the
 * run's state, and the weights, optimizer and in-flight versions of its one policy — of the first
 * policy when there are several); with several, every other policy's part as
 * `policy-<name>.meta.json` and `policy-<name>.tensors.bin`. The orchestrator's `commitCheckpoint`
 * then lists every file in the manifest, so each is checked on resume.
 */
export async function writeEmbeddedCheckpoint(options: { dir: string } & OrchestratorCheckpoint): Promise<void> {
  const { policies, ...first } = options;
  await writeCheckpointFiles(first);
  for (const [name, part] of Object.entries(policies ?? {}).slice(1))
    await writeCheckpointFiles({
      dir: options.dir,
      prefix: policyFilePrefix(name),
      step: options.step,
      state: { policy: name },
      ...part,
    });
}

/**
 * Loads the checkpoint the orchestrator wrote for the embedded engines at `dir` (a checkpoint
 * directory or a run's `<out>/checkpoint` pointer); null when there is none (no directory, or one
 * without `meta.json`). A corrupt one throws a `CheckpointError` naming the file.
 */
export async function loadEmbeddedCheckpoint(dir: string): Promise<EmbeddedRunCheckpoint | null> {
  const resolved = await resolveCheckpointDir(dir);
  if (!resolved || !existsSync(join(resolved, 'meta.json'))) return null;
  const checkpoint: EmbeddedRunCheckpoint['checkpoint'] = await loadCheckpoint({ dir: resolved });
  const run = (checkpoint.state.run ?? {}) as {
    tokenizer?: unknown;
    policy?: unknown;
    policies?: Record<string, { tokenizer?: unknown; policy?: unknown }>;
  };
  const loaded: EmbeddedRunCheckpoint = {
    checkpoint,
    tokenizer: WordTokenizer.fromJSON(run.tokenizer),
    policy: PolicyConfigSchema.parse(run.policy),
    run: run as Record<string, unknown>,
  };
  if (run.policies && typeof run.policies === 'object') {
    const names = Object.keys(run.policies);
    checkpoint.policies = {};
    loaded.policies = {};
    for (const [i, name] of names.entries()) {
      const shape = run.policies[name] ?? {};
      loaded.policies[name] = {
        tokenizer: WordTokenizer.fromJSON(shape.tokenizer),
        policy: PolicyConfigSchema.parse(shape.policy),
      };
      checkpoint.policies[name] = i === 0 ? checkpoint : await loadCheckpoint({ dir: resolved, prefix: policyFilePrefix(name) });
    }
  }
  return loaded;
}

/** A frozen copy of an embedded policy from a run checkpoint, as a model client (for roles bound to `checkpoint = <dir>`). */
export async function frozenCheckpointClient(options: {
  dir: string;
  maxTokens: number;
  seed: number;
  /** Which policy of a checkpoint of several (required there; a checkpoint of one policy has only its own). */
  policy?: string;
}): Promise<PolicyModelClient> {
  const loaded = await loadEmbeddedCheckpoint(options.dir);
  if (!loaded) throw new ConfigError(`checkpoint: no checkpoint in ${options.dir}`, { path: 'checkpoint' });
  const { tokenizer, policy, weights } = checkpointPolicy(loaded, options.dir, options.policy);
  const Client = await policyModelClient();
  return Client.create({
    tokenizer,
    config: policy,
    onnx: exportOnnx({ config: policy, weights }),
    maxTokens: options.maxTokens,
    seed: options.seed,
  });
}

/**
 * One policy of a loaded checkpoint: `name` of a checkpoint of several policies (a `ConfigError`
 * naming the ones it holds when `name` is absent or not among them), the only one otherwise.
 */
function checkpointPolicy(loaded: EmbeddedRunCheckpoint, dir: string, name: string | undefined) {
  const names = Object.keys(loaded.policies ?? {});
  if (names.length === 0) {
    if (name !== undefined && name !== 'main')
      throw new ConfigError(`checkpoint: ${dir} holds one policy, not ${name}`, { path: 'checkpoint' });
    return { tokenizer: loaded.tokenizer, policy: loaded.policy, weights: loaded.checkpoint.weights };
  }
  const shape = name === undefined ? undefined : loaded.policies?.[name];
  const part = name === undefined ? undefined : loaded.checkpoint.policies?.[name];
  if (!shape || !part)
    throw new ConfigError(
      `checkpoint: ${dir} holds the policies ${names.join(', ')}; name one as ${dir}#<policy>${name === undefined ? '' : ` (not ${name})`}`,
      { path: 'checkpoint' },
    );
  return { tokenizer: shape.tokenizer, policy: shape.policy, weights: part.weights };
}

/** Splits `<dir>#<policy>` (one policy of a checkpoint of several) into the directory and the policy name. */
export function splitCheckpointPolicy(reference: string): { dir: string; policy?: string } {
  const hash = reference.lastIndexOf('#');
  if (hash <= 0 || !/^[a-z][a-z0-9_-]*$/.test(reference.slice(hash + 1))) return { dir: reference };
  return { dir: reference.slice(0, hash), policy: reference.slice(hash + 1) };
}

/**
 * A frozen copy of an embedded policy from a run checkpoint as an {@link EvaluationPolicy}: its
 * model client, exact reply probabilities (for evaluators that compute a game's exact exploitability) and a
 * settable sampling RNG.
 */
export async function checkpointEvaluationPolicy(options: {
  dir: string;
  maxTokens: number;
  seed: number;
  /** Which policy of a checkpoint of several. */
  policy?: string;
}): Promise<EvaluationPolicy & { client: PolicyModelClient }> {
  const client = await frozenCheckpointClient(options);
  const loaded = await loadEmbeddedCheckpoint(options.dir);
  return {
    version: loaded?.checkpoint.step ?? 0,
    client,
    replyProbabilities: replyProbabilities(client),
    loadRngState(state) {
      if (typeof state === 'number') client.rng.state = state;
    },
  };
}

export { initWeights } from '../policy/config.ts';

/**
 * One trainer step's metrics under the keys the orchestrator logs as `trainer/<key>`: the step's
 * scheduled `lr`, `ref_kl_tau` and `beta1` (the optimizer's default β₁ when unscheduled), the
 * loss terms, token counts and throughput (`gflops`: GFLOP/s of the step's forward + backward).
 */
export function trainerStepMetrics(
  metrics: Awaited<ReturnType<TrainerHandle['train']>>['metrics'],
  options: ReturnType<typeof scheduledStepOptions>,
  betas: readonly number[],
): Record<string, number> {
  return {
    lr: options.lr ?? 0,
    ref_kl_tau: options.refKlTau ?? 0,
    beta1: options.beta1 ?? betas[0] ?? 0.9,
    loss: metrics.loss,
    rl_loss: metrics.rlLoss,
    ref_kl: metrics.refKl,
    entropy: metrics.entropy,
    mismatch_kl: metrics.mismatchKl,
    masked_fraction: metrics.maskedFraction,
    ce_loss: metrics.ceLoss,
    teacher_loss: metrics.teacherLoss,
    teacher_kl: metrics.teacherKl,
    grad_norm: metrics.gradNorm,
    tokens: metrics.tokens,
    rl_tokens: metrics.rlTokens,
    ce_tokens: metrics.ceTokens,
    ref_kl_tokens: metrics.refKlTokens,
    padded_tokens: metrics.paddedTokens,
    gflops: metrics.flops / metrics.ms / 1e6,
  };
}
