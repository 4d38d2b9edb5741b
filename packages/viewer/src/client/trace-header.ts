// The head of a trace column: role, reward, errors, reward parts, judge verdicts, metrics, usage,
// info and the tools offered.
import { h } from './dom.ts';
import { fmt } from './format.ts';
import type { Roles } from './roles.ts';
import type { EpisodeRecord, TraceRecord } from './types.ts';
import { badge, chipRow, jsonDetails, rewardChip } from './widgets.ts';

interface Verdict {
  name: string;
  verdict: unknown;
  reason?: string;
}

interface VerdictInfo {
  verdicts: Verdict[];
  /** The judge's trace, on the copy of a verdict a judged trace carries. */
  judgeTrace?: string;
}

function verdictOf(trace: TraceRecord): VerdictInfo | null {
  const verdict = trace.info?.verdict as Partial<VerdictInfo> | undefined;
  return verdict && Array.isArray(verdict.verdicts) ? (verdict as VerdictInfo) : null;
}

/** Σ score × weight over the trace's rewards; null when it has none. */
export function traceRewardOf(trace: TraceRecord): number | null {
  let total = 0;
  let any = false;
  for (const r of Object.values(trace.rewards)) {
    if (!r) continue;
    total += r.score * r.weight;
    any = true;
  }
  return any ? total : null;
}

function verdictList(verdicts: Verdict[], metrics: Record<string, number | null> | null): HTMLElement {
  return h(
    'ul',
    { class: 'verdicts' },
    verdicts.map((v) => {
      const score = metrics ? metrics[`judge/${v.name}`] : undefined;
      const positive = /^(yes|true|pass|correct|solved)$/i.test(String(v.verdict));
      const negative = /^(no|false|fail|incorrect|wrong)$/i.test(String(v.verdict));
      return h(
        'li',
        { class: 'verdict' },
        h(
          'div',
          { class: 'verdict-head' },
          h('b', { text: v.name }),
          h('span', { class: `verdict-tag ${positive ? 'good' : negative ? 'bad' : 'mid'}`, text: String(v.verdict) }),
          score !== undefined && score !== null ? h('span', { class: 'muted small', text: `score ${fmt.num(score)}` }) : null,
        ),
        h('div', { class: 'verdict-reason', text: v.reason || '' }),
      );
    }),
  );
}

function verdictBox(
  label: string,
  verdicts: Verdict[],
  metrics: Record<string, number | null> | null,
  own: boolean,
): HTMLElement {
  return h(
    'div',
    { class: `section verdict-box${own ? ' own' : ''}`, 'data-testid': own ? 'judge-verdicts' : 'verdicts-beside' },
    h('div', { class: 'section-label', text: label }),
    verdictList(verdicts, metrics),
  );
}

/**
 * The judge's verdicts: on the judge's own column, and beside the trace it judged. A judged
 * trace carries a copy of the verdict naming the judge's trace (`judgeTrace`): that copy is
 * about this trace, not written by it.
 */
function verdictBoxes(trace: TraceRecord, episode: EpisodeRecord): HTMLElement[] {
  const verdictInfo = verdictOf(trace);
  if (verdictInfo?.judgeTrace && verdictInfo.judgeTrace !== trace.id) {
    const judge = episode.traces.find((t) => t.id === verdictInfo.judgeTrace);
    return [
      verdictBox(
        `Verdicts on this trace, by ${judge ? judge.agent.name : 'the judge'}`,
        verdictInfo.verdicts,
        trace.metrics,
        false,
      ),
    ];
  }
  if (verdictInfo) return [verdictBox('Verdicts written by this judge', verdictInfo.verdicts, null, true)];
  const judgeMetrics = Object.keys(trace.metrics).filter((k) => k.startsWith('judge/'));
  const judges = episode.traces.filter((t) => {
    const info = verdictOf(t);
    return t !== trace && info && (!info.judgeTrace || info.judgeTrace === t.id);
  });
  if (!judges.length || !(judgeMetrics.length || episode.traces.length === 2)) return [];
  return judges.map((judge) =>
    verdictBox(`Verdicts on this trace, by ${judge.agent.name}`, verdictOf(judge)!.verdicts, trace.metrics, false),
  );
}

function usageLine(trace: TraceRecord): HTMLElement {
  let prompt = 0;
  let completion = 0;
  let cached = 0;
  let reasoning = 0;
  let cost = 0;
  let modelMs = 0;
  for (const call of trace.calls) {
    modelMs += call.durationMs;
    if (!call.usage) continue;
    prompt += call.usage.promptTokens;
    completion += call.usage.completionTokens;
    cached += call.usage.cachedInputTokens || 0;
    reasoning += call.usage.reasoningTokens || 0;
    cost += call.usage.cost || 0;
  }
  for (const u of trace.extraUsage || []) {
    prompt += u.promptTokens;
    completion += u.completionTokens;
    cost += u.cost || 0;
  }
  const turns = trace.nodes.filter((n) => n.sampled).length;
  const timing = Object.entries(trace.timing || {}).filter((entry): entry is [string, number] => typeof entry[1] === 'number');
  const failedCalls = trace.calls.filter((c) => c.error).length;
  const usageParts = [
    `${fmt.int(turns)} turn${turns === 1 ? '' : 's'}`,
    `${fmt.int(trace.calls.length)} call${trace.calls.length === 1 ? '' : 's'}${failedCalls ? ` (${failedCalls} failed)` : ''}`,
    `${fmt.int(prompt)} in · ${fmt.int(completion)} out tokens${cached ? ` · ${fmt.int(cached)} cached` : ''}${reasoning ? ` · ${fmt.int(reasoning)} reasoning` : ''}`,
    cost ? fmt.cost(cost) : null,
    `model ${fmt.ms(modelMs)}`,
    trace.endedAt ? `wall ${fmt.ms(trace.endedAt - trace.startedAt)}` : null,
  ].filter(Boolean);
  return h(
    'div',
    {
      class: 'usage-line',
      title: timing.length
        ? `stages: ${timing.map(([k, v]) => `${k} ${fmt.ms(v)}`).join(', ')}`
        : "usage summed over this trace's model calls",
    },
    h('span', { class: 'chips-label', text: 'usage' }),
    usageParts.join(' · '),
  );
}

function errorLines(errors: TraceRecord['errors'], cls: string): HTMLElement {
  return h(
    'div',
    { class: cls },
    errors.map((e) =>
      h(
        'div',
        { class: 'trace-error' },
        h('b', { text: e.type }),
        e.stage ? h('span', { class: 'muted', text: ` [${e.stage}]` }) : null,
        `: ${e.message}`,
      ),
    ),
  );
}

export { errorLines };

/** The trace's role, trainable or frozen, ok or error and reward; under it model, harness, runtime and stop. */
function traceTitle(trace: TraceRecord, roles: Roles, color: string): HTMLElement[] {
  return [
    h(
      'div',
      { class: 'trace-title' },
      h('span', { class: 'role-dot', style: `background:${color}` }),
      h('h3', { text: trace.agent.name }),
      badge(trace.agent.trainable ? 'trainable' : 'frozen', trace.agent.trainable ? 'trainable' : 'frozen'),
      trace.ok ? badge('ok', 'ok') : badge('error', 'err'),
      h('span', { class: 'spacer' }),
      h(
        'span',
        { class: 'reward-big', title: 'trace reward = Σ score × weight' },
        h('span', { class: 'muted small', text: 'reward ' }),
        rewardChip(roles, traceRewardOf(trace), trace.agent.name),
      ),
    ),
    h('div', {
      class: 'muted small trace-sub',
      text: [
        trace.agent.model,
        trace.agent.harness && `harness ${trace.agent.harness}`,
        trace.agent.runtime && `runtime ${trace.agent.runtime}`,
        `stop: ${trace.stopCondition ?? 'none'}`,
      ]
        .filter(Boolean)
        .join(' · '),
    }),
  ];
}

/** A chip per reward (score × weight, or null when not scored); null when the trace has none. */
function rewardChips(trace: TraceRecord): HTMLElement | null {
  const rewardEntries = Object.entries(trace.rewards);
  if (!rewardEntries.length) return null;
  return chipRow(
    'rewards',
    rewardEntries.map(([name, r]) =>
      h(
        'span',
        { class: 'chip', 'data-reward': name, title: r ? `score ${r.score} × weight ${r.weight}` : 'not scored (null)' },
        h('b', { text: name }),
        r ? ` ${fmt.num(r.score)}` : ' null',
        r ? h('span', { class: 'muted', text: ` ×${fmt.num(r.weight)}` }) : null,
      ),
    ),
  );
}

/** The trace's info but its verdict: inline when short, else a collapsed JSON view; null when empty. */
function infoLine(trace: TraceRecord): HTMLElement | null {
  const info = Object.fromEntries(Object.entries(trace.info || {}).filter(([k]) => k !== 'verdict'));
  if (!Object.keys(info).length) return null;
  const compact = JSON.stringify(info);
  return compact.length <= 110
    ? h(
        'div',
        { class: 'usage-line' },
        h('span', { class: 'chips-label', text: 'info' }),
        h('code', { class: 'inline-code', text: compact }),
      )
    : jsonDetails('info', info, false);
}

/** The head card of a trace column. */
export function traceHeader(trace: TraceRecord, episode: EpisodeRecord, roles: Roles): HTMLElement {
  const color = roles.color(trace.agent.name);
  const card = h('div', { class: 'trace-head', style: `--role:${color}` });
  card.append(...traceTitle(trace, roles, color));
  if (trace.errors.length) card.append(errorLines(trace.errors, 'trace-errors'));
  const rewards = rewardChips(trace);
  if (rewards) card.append(rewards);
  card.append(...verdictBoxes(trace, episode));
  const metricEntries = Object.entries(trace.metrics);
  if (metricEntries.length)
    card.append(
      chipRow(
        'metrics',
        metricEntries.map(([k, v]) => h('span', { class: 'chip', 'data-metric': k }, h('b', { text: k }), ` ${fmt.num(v)}`)),
      ),
    );
  card.append(usageLine(trace));
  const info = infoLine(trace);
  if (info) card.append(info);
  if (trace.tools?.length)
    card.append(
      jsonDetails(`tools offered (${trace.tools.length}): ${trace.tools.map((t) => t.name).join(', ')}`, trace.tools, false),
    );
  return card;
}
