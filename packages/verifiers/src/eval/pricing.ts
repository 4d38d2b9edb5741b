import { z } from 'zod';
import type { Usage } from '../model/model-client.ts';
import type { TraceRecord } from '../trace/trace-schema.ts';

/**
 * The price of one model, in USD per million tokens. `cachedInput` defaults to `input`,
 * `reasoning` to `output` (reasoning tokens are part of the completion tokens and are billed as
 * output unless a separate price is given).
 */
export const ModelPriceSchema = z
  .object({
    input: z.number().nonnegative(),
    output: z.number().nonnegative(),
    cachedInput: z.number().nonnegative().optional(),
    reasoning: z.number().nonnegative().optional(),
  })
  .strict();
/**
 * One model's price in USD per million tokens (`input`, `output`, optional `cachedInput` and
 * `reasoning`); see {@link ModelPriceSchema}.
 */
export type ModelPrice = z.infer<typeof ModelPriceSchema>;

/** `[prices."<model>"]` tables of a config: model name → price per million tokens. */
export const PriceTableSchema = z.record(z.string(), ModelPriceSchema);
/** Model name → {@link ModelPrice} (USD per million tokens). */
export type PriceTable = z.infer<typeof PriceTableSchema>;

/**
 * The cost of one call's usage in USD: the provider's own `cost` when it sent one, else the
 * price table's entry for `model`, else undefined (unknown, never a silent 0).
 */
export function usageCost(usage: Usage, model: string | undefined, prices: PriceTable | undefined): number | undefined {
  if (usage.cost !== undefined) return usage.cost;
  const price = model !== undefined ? prices?.[model] : undefined;
  if (!price) return undefined;
  const cached = usage.cachedInputTokens ?? 0;
  const reasoning = Math.min(usage.reasoningTokens ?? 0, usage.completionTokens);
  const plainOutput = usage.completionTokens - reasoning;
  return (
    (usage.promptTokens * price.input +
      cached * (price.cachedInput ?? price.input) +
      plainOutput * price.output +
      reasoning * (price.reasoning ?? price.output)) /
    1_000_000
  );
}

/** One single-call judge's model call, kept on `trace.info.judgeCalls` apart from the agent's calls. */
export interface JudgeCallRecord {
  /** The judge's name (its reward name). */
  judge: string;
  model: string;
  usage?: Usage;
  durationMs: number;
  /** The judge's raw reply text (absent when the call failed). */
  reply?: string;
  error?: { type: string; message: string };
}

/** The judge calls recorded on a trace (`trace.info.judgeCalls`). */
export function judgeCallsOf(trace: Pick<TraceRecord, 'info'>): JudgeCallRecord[] {
  const calls = trace.info.judgeCalls;
  return Array.isArray(calls) ? (calls as JudgeCallRecord[]) : [];
}

/** A cost split: the agent's own model calls, and single-call judges' calls scoring it. */
export interface CostSplit {
  /** USD of the agent's calls; null when no call has a known cost. */
  agent: number | null;
  /** USD of the judge calls scoring this role's traces; null when none has a known cost. */
  judge: number | null;
  /** Calls whose cost is unknown (no provider cost and no price for the model). */
  unpriced: number;
}

/** The cost of one trace: its agent calls and its judge calls, apart. */
export function traceCost(trace: Pick<TraceRecord, 'calls' | 'info'>, prices: PriceTable | undefined): CostSplit {
  const split: CostSplit = { agent: null, judge: null, unpriced: 0 };
  for (const call of trace.calls) {
    if (!call.usage) continue;
    const cost = usageCost(call.usage, call.model, prices);
    if (cost === undefined) split.unpriced++;
    else split.agent = (split.agent ?? 0) + cost;
  }
  for (const call of judgeCallsOf(trace)) {
    if (!call.usage) continue;
    const cost = usageCost(call.usage, call.model, prices);
    if (cost === undefined) split.unpriced++;
    else split.judge = (split.judge ?? 0) + cost;
  }
  return split;
}

/** Adds two cost splits (null + null stays null). */
export function addCost(a: CostSplit, b: CostSplit): CostSplit {
  const add = (x: number | null, y: number | null) => (x === null ? y : y === null ? x : x + y);
  return { agent: add(a.agent, b.agent), judge: add(a.judge, b.judge), unpriced: a.unpriced + b.unpriced };
}

/** The cost of a run: per role (agent and judge apart), and the run's totals. */
export function runCost(
  traces: Iterable<Pick<TraceRecord, 'calls' | 'info' | 'agent'>>,
  prices: PriceTable | undefined,
): { byRole: Record<string, CostSplit>; total: CostSplit } {
  const byRole: Record<string, CostSplit> = {};
  let total: CostSplit = { agent: null, judge: null, unpriced: 0 };
  for (const trace of traces) {
    const cost = traceCost(trace, prices);
    const role = trace.agent.name;
    byRole[role] = addCost(byRole[role] ?? { agent: null, judge: null, unpriced: 0 }, cost);
    total = addCost(total, cost);
  }
  return { byRole, total };
}
