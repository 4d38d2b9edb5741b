// The run summary: KPIs, one card per role (reward histogram, pass@k, parts, metrics, tokens,
// stop conditions), errors by type, stop conditions and the run's files.
import { histogramSvg } from './charts.ts';
import { h } from './dom.ts';
import { fmt } from './format.ts';
import type { Roles } from './roles.ts';
import type { ViewerIndex, ViewerRoleSummary } from './types.ts';
import { badge, barList, chipRow, jsonDetails, kpi } from './widgets.ts';

export interface RunSummaryOptions {
  index: ViewerIndex;
  roles: Roles;
  /** Called when an error type is clicked (filters the table). */
  onErrorType: (type: string) => void;
}

/** A role's cost, with the single-call judges' share apart when they cost anything. */
function costText(tokens: ViewerRoleSummary['tokens']): string {
  if (!tokens.judgeCost) return fmt.cost(tokens.cost);
  return `${fmt.cost(tokens.cost)} (agent ${fmt.cost(tokens.cost - tokens.judgeCost)} · judges ${fmt.cost(tokens.judgeCost)})`;
}

/** The role's name, color dot, trainable or frozen, and its models and harnesses. */
function roleHead(role: ViewerRoleSummary, color: string): HTMLElement {
  return h(
    'div',
    { class: 'card-head' },
    h('span', { class: 'role-dot', style: `background:${color}` }),
    h('h3', { text: role.name }),
    badge(role.trainable ? 'trainable' : 'frozen', role.trainable ? 'trainable' : 'frozen'),
    h('span', { class: 'spacer' }),
    h('span', {
      class: 'muted small',
      text: [role.models.join(', '), role.harnesses.join(', ')].filter(Boolean).join(' · '),
    }),
  );
}

/** The mean reward (σ, scored and errored traces) beside the reward histogram. */
function roleReward(role: ViewerRoleSummary, color: string): HTMLElement {
  return h(
    'div',
    { class: 'role-body' },
    h(
      'div',
      { class: 'role-stat' },
      h('div', { class: 'big', text: fmt.num(role.rewardMean) }),
      h('div', {
        class: 'muted small',
        text: role.rewardStd === null ? 'mean reward' : `mean reward · σ ${fmt.num(role.rewardStd)}`,
      }),
      h('div', { class: 'muted small', text: `${fmt.int(role.scored)} scored of ${fmt.int(role.traces)} traces` }),
      role.errored ? h('div', { class: 'small err-text', text: `${fmt.int(role.errored)} errored (not counted)` }) : null,
    ),
    role.histogram
      ? histogramSvg(role.histogram, color)
      : h('div', { class: 'muted small no-hist', text: 'not scored: no rewards recorded' }),
  );
}

/** The chip rows of a role: pass@k, its reward parts and (the first 12) metrics; null for an empty row. */
function roleChips(role: ViewerRoleSummary): (HTMLElement | null)[] {
  const passAtK = role.passAtK.map((p) =>
    h(
      'span',
      { class: 'chip', title: `over ${p.tasks} tasks (reward = 1 passes)` },
      h('b', { text: `@${p.k}` }),
      ` ${fmt.pct(p.value)}`,
    ),
  );
  const parts = role.rewardParts.map((p) =>
    h(
      'span',
      { class: 'chip', title: `mean score over ${p.n} traces, weight ${p.weight}` },
      h('b', { text: p.name }),
      ` ${fmt.num(p.mean)} ×${fmt.num(p.weight)}`,
    ),
  );
  const metrics = role.metrics
    .slice(0, 12)
    .map((m) => h('span', { class: 'chip', title: `mean over ${m.n} traces` }, h('b', { text: m.name }), ` ${fmt.num(m.mean)}`));
  return [
    passAtK.length ? chipRow('pass@k', passAtK) : null,
    parts.length ? chipRow('rewards', parts) : null,
    metrics.length ? chipRow('metrics', metrics) : null,
  ];
}

/** Tokens in and out (and cost), and the mean turns per trace. */
function roleFoot(role: ViewerRoleSummary): HTMLElement {
  return h(
    'div',
    { class: 'role-foot small' },
    h('span', { class: 'muted', text: 'tokens ' }),
    `${fmt.tokens(role.tokens.prompt)} in · ${fmt.tokens(role.tokens.completion)} out${role.tokens.cost ? ` · ${costText(role.tokens)}` : ''}`,
    h('span', { class: 'muted', text: ' · turns ' }),
    `${fmt.num(role.turnsMean, 1)} / trace`,
  );
}

/** One role's card: head, reward, chip rows, tokens and its stop conditions. */
function roleCard(role: ViewerRoleSummary, roles: Roles): HTMLElement {
  const color = roles.color(role.name);
  const stops = Object.entries(role.stopConditions).sort((a, b) => b[1] - a[1]);
  return h(
    'section',
    { class: 'card role-card', 'data-role': role.name },
    roleHead(role, color),
    roleReward(role, color),
    ...roleChips(role),
    roleFoot(role),
    barList(stops, role.traces, 'stop'),
  );
}

function warningsBox(warnings: string[]): HTMLElement | null {
  if (!warnings.length) return null;
  return h(
    'div',
    { class: 'warnings', role: 'alert' },
    h('b', { text: `${warnings.length} warning${warnings.length > 1 ? 's' : ''} while reading the run` }),
    h(
      'ul',
      {},
      warnings.slice(0, 20).map((w) => h('li', { text: w })),
    ),
  );
}

function kpis(index: ViewerIndex, roles: Roles): HTMLElement {
  const { totals } = index;
  const okShare = totals.episodes ? totals.okEpisodes / totals.episodes : null;
  const roleCount = roles.names.length;
  return h(
    'div',
    { class: 'kpis' },
    kpi('Episodes', fmt.int(totals.episodes), `${fmt.pct(okShare)} ok · ${fmt.int(totals.tasks)} tasks`),
    kpi('Traces', fmt.int(totals.traces), `${roleCount} role${roleCount === 1 ? '' : 's'}`),
    kpi(
      'Model calls',
      fmt.int(totals.calls),
      totals.failedCalls ? `${fmt.int(totals.failedCalls)} failed` : 'none failed',
      totals.failedCalls ? 'warn' : '',
    ),
    kpi(
      'Tokens',
      fmt.tokens(totals.tokens.prompt + totals.tokens.completion),
      `${fmt.tokens(totals.tokens.prompt)} in · ${fmt.tokens(totals.tokens.completion)} out${totals.tokens.cached ? ` · ${fmt.tokens(totals.tokens.cached)} cached` : ''}`,
    ),
    kpi(
      'Cost',
      fmt.cost(totals.tokens.cost),
      totals.tokens.costedCalls
        ? `${fmt.int(totals.tokens.costedCalls)} priced calls${totals.tokens.judgeCost ? ` · judges ${fmt.cost(totals.tokens.judgeCost)}` : ''}`
        : 'not reported',
    ),
    kpi(
      'Errors',
      fmt.int(index.errors.reduce((a, e) => a + e.count, 0)),
      index.errors.length
        ? index.errors
            .map((e) => e.type)
            .slice(0, 3)
            .join(', ')
        : 'none',
      index.errors.length ? 'bad' : 'good',
    ),
    kpi('Wall time', fmt.ms(totals.wallMs), `${fmt.ms(totals.episodeMsMean)} / episode`),
  );
}

function errorsCard(index: ViewerIndex, onErrorType: (type: string) => void): HTMLElement {
  return h(
    'section',
    { class: 'card errors-card' },
    h('div', { class: 'card-head' }, h('h3', { text: 'Errors by type' })),
    index.errors.length
      ? h(
          'table',
          { class: 'mini-table' },
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              h('th', { text: 'type' }),
              h('th', { text: 'count', class: 'num' }),
              h('th', { text: 'stages' }),
              h('th', { text: 'example' }),
            ),
          ),
          h(
            'tbody',
            {},
            index.errors.map((e) =>
              h(
                'tr',
                {},
                h(
                  'td',
                  {},
                  h('a', {
                    href: '#',
                    class: 'err-type',
                    text: e.type,
                    onclick: (ev: Event) => {
                      ev.preventDefault();
                      onErrorType(e.type);
                    },
                  }),
                ),
                h('td', { class: 'num', text: fmt.int(e.count) }),
                h('td', {
                  class: 'muted',
                  text: Object.entries(e.stages)
                    .map(([k, v]) => `${k} ${v}`)
                    .join(', '),
                }),
                h('td', { class: 'example', text: e.example, title: e.example }),
              ),
            ),
          ),
        )
      : h('p', { class: 'muted', text: 'No errors.' }),
  );
}

/** The summary part of a run page. */
export function renderSummary({ index, roles, onErrorType }: RunSummaryOptions): HTMLElement {
  const wrap = h('div', { class: 'summary' }, warningsBox(index.run.warnings), kpis(index, roles));
  wrap.append(
    h(
      'div',
      { class: 'role-grid' },
      index.roles.map((role) => roleCard(role, roles)),
    ),
  );
  const stopEntries = Object.entries(index.stopConditions).sort((a, b) => b[1] - a[1]);
  const stopTotal = stopEntries.reduce((a, [, c]) => a + c, 0);
  wrap.append(
    h(
      'div',
      { class: 'row-grid' },
      errorsCard(index, onErrorType),
      h(
        'section',
        { class: 'card' },
        h('div', { class: 'card-head' }, h('h3', { text: 'Stop conditions' })),
        barList(stopEntries, stopTotal, 'stop'),
      ),
      h(
        'section',
        { class: 'card' },
        h('div', { class: 'card-head' }, h('h3', { text: 'Run files' })),
        index.run.config
          ? jsonDetails('config.json (resolved config)', index.run.config)
          : h('p', { class: 'muted', text: 'No config.json.' }),
        index.run.summary ? jsonDetails('summary.json', index.run.summary) : h('p', { class: 'muted', text: 'No summary.json.' }),
      ),
    ),
  );
  return wrap;
}
