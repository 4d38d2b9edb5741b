import { Episode, Trace } from '@troupe/verifiers';
import { sampledAdvantage } from '@troupe/verifiers/internal';

/** One model turn of a fixture trace: prompt (scaffold) tokens then sampled completion tokens. */
export interface FixtureTurn {
  prompt?: number[];
  completion: number[];
  /** Node id of the sampled node this turn continues; null (default for the first turn) = new branch. */
  tokenParent?: number | null;
  logprobs?: number[];
}

let counter = 0;

/** A trace for tests: one sampled node per turn (node id = turn index), one reward `score`. */
export function makeTrace(options: {
  role?: string;
  reward?: number;
  trainable?: boolean;
  ok?: boolean;
  turns?: FixtureTurn[];
  id?: string;
}): Trace {
  const trace = new Trace({
    id: options.id ?? `trace-${++counter}`,
    task: { key: 'k', hash: 'h', data: {} },
    agent: { name: options.role ?? 'solver', trainable: options.trainable ?? true },
  });
  const turns = options.turns ?? [{ prompt: [1, 2], completion: [3] }];
  turns.forEach((turn, index) => {
    const prompt = turn.prompt ?? [];
    trace.nodes.push({
      id: index,
      parent: index === 0 ? null : index - 1,
      message: { role: 'assistant', content: `turn ${index}` },
      sampled: true,
      timestamp: 0,
      tokenIds: [...prompt, ...turn.completion],
      mask: [...prompt.map(() => false), ...turn.completion.map(() => true)],
      logprobs: turn.logprobs ?? turn.completion.map(() => -0.5),
      tokenParent: turn.tokenParent === undefined ? (index === 0 ? null : index - 1) : turn.tokenParent,
    });
  });
  if (options.reward !== undefined) trace.recordReward('score', options.reward);
  if (options.ok === false) trace.recordError(new Error('boom'), 'agent');
  return trace;
}

/** An episode of a group holding the given traces. */
export function makeEpisode(options: {
  traces: Trace[];
  env?: string;
  groupId?: string;
  index?: number;
  id?: string;
}): Episode {
  const episode = new Episode({
    id: options.id ?? `episode-${++counter}`,
    env: { id: options.env ?? 'env' },
    task: { key: 'k', hash: 'h', data: {} },
    group: { id: options.groupId ?? 'group', index: options.index ?? 0 },
  });
  episode.traces.push(...options.traces);
  return episode;
}

/** Scalar advantage of a trace (its first sampled token's), or undefined when it has none. */
export function advantageOf(trace: Trace): number | undefined {
  for (const node of trace.nodes) {
    const advantage = sampledAdvantage(node, 0);
    if (advantage !== undefined) return advantage;
  }
  return undefined;
}
