import { isAbsolute, resolve } from 'node:path';
import type { Algorithm, FrozenModelReference, LogprobScorer, SftReplies } from '@troupe/prime-rl';
import { frozenCheckpointClient } from '@troupe/prime-rl/orchestrator';
import {
  ConfigError,
  type Env,
  type Message,
  type ModelClient,
  type ModelRequest,
  type ModelResponse,
  ProviderError,
  type Task,
} from '@troupe/verifiers';
import { readRunFileText } from '@troupe/verifiers/internal';
import { endpointTeacher } from './teacher-endpoint.ts';

/** What the given-replies client needs of the embedded policy client: its word tokenizer and context length. */
interface TokenizingClient extends ModelClient {
  tokenizer: {
    renderChat(options: { messages: readonly Message[]; generation?: boolean }): number[];
    encode(text: string): number[];
    decode(ids: readonly number[]): string;
    id(word: string): number;
    readonly eosId: number;
    toJSON(): { vocab: readonly string[] };
  };
  config: { contextLength: number };
  nextLogits(tokens: readonly number[]): Promise<Float32Array>;
}

function tokenizingClient(client: ModelClient, what: string): TokenizingClient {
  const candidate = client as Partial<TokenizingClient>;
  if (!candidate.tokenizer || !candidate.config)
    throw new ConfigError(
      `${what} needs the embedded policy (policy.engine = "embedded"): its tokenizer tokenises the given text`,
      {
        path: 'policy.engine',
      },
    );
  return candidate as TokenizingClient;
}

/** The text of the last user message of a conversation: the key a given reply is found by. */
function lastUserText(messages: readonly { role: string; content?: unknown }[]): string | null {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (message.role !== 'user') continue;
    const content = message.content;
    if (typeof content === 'string') return content;
    if (Array.isArray(content))
      return content
        .map((part) => (typeof (part as { text?: unknown }).text === 'string' ? (part as { text: string }).text : ''))
        .join('');
    return null;
  }
  return null;
}

/** A task's prompt as the key its episode's requests carry: a string prompt, or its messages' last user text. */
function taskPromptKey(task: Task): string | null {
  const prompt = (task.data as { prompt?: unknown }).prompt;
  if (typeof prompt === 'string') return prompt;
  if (Array.isArray(prompt)) return lastUserText(prompt as { role: string; content?: unknown }[]);
  return null;
}

/** Each trace's final reply by the user message before it, from an exported `traces.jsonl` (first wins). */
function repliesFromTraces(path: string, role: string | undefined, field: string): Map<string, string> {
  const text = readRunFileText(path);
  if (text === null) throw new ConfigError(`${field}.replies.traces: cannot read ${path}`, { path: `${field}.replies.traces` });
  const out = new Map<string, string>();
  for (const [index, line] of text.split('\n').entries()) {
    if (!line.trim()) continue;
    let episode: { traces?: { agent?: { name?: string }; ok?: boolean; nodes?: TraceNode[] }[] };
    try {
      episode = JSON.parse(line);
    } catch (error) {
      throw new ConfigError(`${field}.replies.traces: line ${index + 1} of ${path} is not JSON (${(error as Error).message})`, {
        path: `${field}.replies.traces`,
      });
    }
    for (const trace of episode.traces ?? []) {
      if (trace.ok === false || (role !== undefined && trace.agent?.name !== role)) continue;
      const nodes = trace.nodes ?? [];
      const last = [...nodes].reverse().find((node) => node.sampled && typeof node.message?.content === 'string');
      if (!last) continue;
      const chain: TraceNode['message'][] = [];
      for (let at: number | null | undefined = last.parent; typeof at === 'number'; at = nodes[at]?.parent)
        chain.unshift(nodes[at]?.message);
      const key = lastUserText(chain.filter((m): m is NonNullable<typeof m> => m !== undefined));
      if (key !== null && !out.has(key)) out.set(key, last.message?.content as string);
    }
  }
  if (out.size === 0)
    throw new ConfigError(`${field}.replies.traces: ${path} holds no ok trace with a reply${role ? ` of role ${role}` : ''}`, {
      path: `${field}.replies.traces`,
    });
  return out;
}

interface TraceNode {
  parent?: number | null;
  sampled?: boolean;
  message?: { role: string; content?: unknown };
}

/** An `sft` source's sampling source: a model client that answers with the given replies, and the env hook that registers each task's. */
export interface GivenReplies {
  /** Serves the source's roles on `main` in place of the policy. */
  client: ModelClient;
  /** The same replies for the roles on another trainable policy, tokenised by that policy's tokenizer. */
  clientFor(policy: () => ModelClient): ModelClient;
  /** Makes each episode's task reply (a task-field source) known while the episode runs. */
  track(env: Env): void;
}

/**
 * The sampling source of an `sft` source (prime-rl's sft samples from a frozen model,
 * `src/prime_rl/orchestrator/algo/sft.py` at 559b447; here the "model" replies with given text): a
 * model client that answers a request with the reply given for its prompt — the task's `field`
 * (registered while the task's episode runs), or the reply an exported trace gave to the same
 * user message — tokenised by the embedded policy's tokenizer, with `<eos>` when the reply is
 * shorter than `maxTokens`, and logprob 0 on each token (a deterministic source). A prompt with no
 * given reply, or a reply with a word the policy does not know, fails the call (the episode is
 * recorded as failed; the run goes on).
 */
export function givenReplies(options: {
  replies: SftReplies;
  main: () => ModelClient;
  field: string;
  baseDir: string;
}): GivenReplies {
  const { replies, field } = options;
  const fromTraces =
    'traces' in replies
      ? repliesFromTraces(
          isAbsolute(replies.traces) ? replies.traces : resolve(options.baseDir, replies.traces),
          replies.role,
          field,
        )
      : null;
  const active = new Map<string, { reply: string | null; count: number }>();
  let served = 0;
  const clientFor = (student: () => ModelClient): ModelClient => ({
    model: 'given-replies',
    async complete(request: ModelRequest): Promise<ModelResponse> {
      const policy = tokenizingClient(student(), `${field}.algorithm (sft)`);
      const key = lastUserText(request.messages);
      const reply = key === null ? undefined : (fromTraces?.get(key) ?? active.get(key)?.reply ?? undefined);
      if (reply === undefined || reply === null)
        throw new ProviderError(
          `sft: no given reply for the prompt ${JSON.stringify((key ?? '').slice(0, 80))}${
            'field' in replies ? ` (its task has no string field '${replies.field}')` : ' in the traces file'
          }`,
          { statusCode: 404 },
        );
      const { tokenizer } = policy;
      const prompt = tokenizer.renderChat({ messages: request.messages, generation: true });
      const maxTokens = request.sampling.maxTokens ?? 1;
      const words = tokenizer.encode(reply);
      const unknown = tokenizer.id('<unk>');
      if (words.includes(unknown))
        throw new ProviderError(
          `sft: the given reply ${JSON.stringify(reply.slice(0, 80))} has a word the policy's vocabulary lacks`,
          {
            statusCode: 400,
          },
        );
      const completion = words.length < maxTokens ? [...words, tokenizer.eosId] : words.slice(0, maxTokens);
      if (prompt.length + completion.length > policy.config.contextLength)
        throw new ProviderError(
          `sft: prompt and given reply are ${prompt.length + completion.length} tokens, over the context ${policy.config.contextLength}`,
          { statusCode: 400 },
        );
      return {
        id: `given-${(++served).toString(36)}`,
        model: request.model,
        message: { role: 'assistant', content: tokenizer.decode(completion) },
        finishReason: words.length < maxTokens ? 'stop' : 'length',
        usage: { promptTokens: prompt.length, completionTokens: completion.length },
        promptTokenIds: prompt,
        completionTokenIds: completion,
        completionLogprobs: completion.map(() => 0),
      };
    },
  });
  const track = (env: Env) => {
    if (!('field' in replies)) return;
    const runEpisode = env.runEpisode.bind(env);
    env.runEpisode = async (episodeOptions) => {
      const key = taskPromptKey(episodeOptions.task);
      if (key === null) return runEpisode(episodeOptions);
      const value = (episodeOptions.task.data as Record<string, unknown>)[replies.field];
      const entry = active.get(key) ?? { reply: typeof value === 'string' ? value : null, count: 0 };
      entry.count++;
      active.set(key, entry);
      try {
        return await runEpisode(episodeOptions);
      } finally {
        if (--entry.count === 0) active.delete(key);
      }
    };
  };
  return { client: clientFor(options.main), clientFor, track };
}

/**
 * Connects an algorithm's frozen model (opd's teacher): an endpoint (see `connectEndpointTeacher`),
 * or a run checkpoint served by onnxruntime, scoring a token sequence with one forward pass per position (batched) —
 * log-softmax of the next-token logits at temperature 1, 0 for the first token (prime-rl's
 * prefill scoring, `src/prime_rl/utils/client.py:479-514` at 559b447). The teacher must share the
 * student's tokenizer: checked at the first score.
 */
export async function connectTeacher(options: {
  reference: FrozenModelReference;
  student: () => ModelClient;
  field: string;
  baseDir: string;
  /** Where an endpoint teacher's `apiKeyVar` is read (default `process.env`). */
  env?: NodeJS.ProcessEnv;
}): Promise<LogprobScorer> {
  if ('baseUrl' in options.reference) return connectEndpointTeacher({ ...options, reference: options.reference });
  const dir = isAbsolute(options.reference.checkpoint)
    ? options.reference.checkpoint
    : resolve(options.baseDir, options.reference.checkpoint);
  const where = `${options.field}.algorithm.teacher.checkpoint`;
  let frozen: ModelClient;
  try {
    frozen = await frozenCheckpointClient({ dir, maxTokens: 1, seed: 17 });
  } catch (error) {
    throw new ConfigError(`${where}: ${(error as Error).message.replace(/^checkpoint: /, '')}`, { path: where, cause: error });
  }
  const teacher = tokenizingClient(frozen, where);
  let checked = false;
  return {
    async score(tokenIds) {
      if (!checked) {
        const student = tokenizingClient(options.student(), where);
        if (JSON.stringify(student.tokenizer.toJSON().vocab) !== JSON.stringify(teacher.tokenizer.toJSON().vocab))
          throw new ConfigError(`${where}: the teacher's tokenizer differs from the student's`, { path: where });
        checked = true;
      }
      const positions = tokenIds.map((_, j) => j).slice(1);
      const logprobs = await Promise.all(
        positions.map(async (j) => {
          const logits = await teacher.nextLogits(tokenIds.slice(0, j));
          let top = Number.NEGATIVE_INFINITY;
          for (const x of logits) if (x > top) top = x;
          let sum = 0;
          for (const x of logits) sum += Math.exp(x - top);
          return (logits[tokenIds[j] as number] as number) - top - Math.log(sum);
        }),
      );
      return [0, ...logprobs];
    },
  };
}

/**
 * Connects an endpoint teacher (a served model, prime-rl's teacher kind): the API key is read here,
 * from the variable `apiKeyVar` names (a named variable that is unset is refused before anything
 * runs; the key is never recorded), and one tiny scoring call checks the server, key and model. The server must serve the student's tokenizer: this cannot be
 * checked from here beyond the server's own refusal of an out-of-vocabulary token id.
 */
async function connectEndpointTeacher(options: {
  reference: Extract<FrozenModelReference, { baseUrl: string }>;
  field: string;
  env?: NodeJS.ProcessEnv;
}): Promise<LogprobScorer> {
  const { reference } = options;
  const field = `${options.field}.algorithm.teacher`;
  let apiKey: string | undefined;
  if (reference.apiKeyVar !== undefined) {
    apiKey = (options.env ?? process.env)[reference.apiKeyVar];
    if (!apiKey)
      throw new ConfigError(`${field}.api_key_var: the environment variable ${reference.apiKeyVar} is not set`, {
        path: `${field}.api_key_var`,
      });
  }
  const scorer = endpointTeacher({
    baseUrl: reference.baseUrl,
    model: reference.model,
    apiKey,
    timeoutMs: reference.timeoutMs,
    field,
  });
  // One scoring of a one-token prompt before any rollout: an unreachable server, a wrong key or
  // an unknown model ends the run here, naming the endpoint, instead of failing every episode.
  try {
    await scorer.score([0]);
  } catch (error) {
    // The message names the endpoint, model and failure already; no cause (the CLI would print it twice).
    throw new ConfigError((error as Error).message, { path: field });
  }
  return scorer;
}

/**
 * Connects what a source's algorithm needs before rollouts (opd's teacher). `sft` and `opd` read
 * the embedded policy's tokenizer (the given replies are tokenised by it; the teacher must share
 * it): with `policy.engine = "external"` (or `policies.<name>.engine` for the policy the source's
 * roles play, `policy`) they are refused here, before anything runs.
 */
export async function setupAlgorithm(options: {
  algorithm: Algorithm;
  /** The client of the policy the source trains (the student whose tokenizer opd's teacher must share). */
  main: () => ModelClient;
  field: string;
  baseDir: string;
  engine: 'embedded' | 'external';
  /** The policy whose `engine` that is (default `main`: `policy.engine`). */
  policy?: string;
}): Promise<void> {
  const { algorithm, field } = options;
  const engineField = options.policy && options.policy !== 'main' ? `policies.${options.policy}.engine` : 'policy.engine';
  if (options.engine === 'external' && (algorithm.actionLoss ?? 'rl') !== 'rl')
    throw new ConfigError(
      `${field}.algorithm.type: ${algorithm.type} needs the embedded policy's tokenizer; with ${engineField} = "external" use an rl algorithm`,
      { path: `${field}.algorithm.type` },
    );
  await algorithm.setup?.({
    connect: (reference) => connectTeacher({ reference, student: options.main, field, baseDir: options.baseDir }),
  });
}
