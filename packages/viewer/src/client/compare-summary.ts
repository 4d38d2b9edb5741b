// The summary of a comparison: the two runs, their totals and one card per role, each quantity
// of A and B with the difference B − A.
import type { ComparedValue } from './compare-stats.ts';
import { compareRoles, compareTotals } from './compare-stats.ts';
import { h } from './dom.ts';
import { fmt } from './format.ts';
import type { Roles } from './roles.ts';
import type { ComparePageData, CompareSide } from './types.ts';

function formatValue(value: number | null, kind: ComparedValue['kind']): string {
  if (value === null) return '—';
  if (kind === 'int') return fmt.int(value);
  if (kind === 'pct') return fmt.pct(value);
  if (kind === 'tokens') return fmt.tokens(value);
  if (kind === 'cost') return value ? fmt.cost(value) : '$0';
  if (kind === 'ms') return fmt.ms(value);
  return fmt.num(value);
}

function formatDelta(d: number, kind: ComparedValue['kind']): string {
  if (kind === 'pct') return `${d > 0 ? '+' : d < 0 ? '−' : ''}${(Math.abs(d) * 100).toFixed(1)} pt`;
  if (d === 0) return '0';
  const sign = d > 0 ? '+' : '−';
  if (kind === 'cost') return `${sign}${fmt.cost(Math.abs(d))}`;
  if (kind === 'ms') return `${sign}${fmt.ms(Math.abs(d))}`;
  if (kind === 'tokens') return `${sign}${fmt.tokens(Math.abs(d))}`;
  return fmt.delta(d);
}

function deltaCell(row: ComparedValue): HTMLElement {
  if (row.a === null || row.b === null) return h('td', { class: 'num delta muted', text: '—' });
  const d = row.b - row.a;
  let cls = '';
  if (row.higherIsBetter !== undefined && Math.abs(d) > 1e-12) cls = d > 0 === row.higherIsBetter ? 'good-text' : 'bad-text';
  return h('td', { class: `num delta ${cls}`, text: formatDelta(d, row.kind) });
}

export function comparedTable(rows: ComparedValue[], a: string, b: string): HTMLElement {
  return h(
    'table',
    { class: 'mini-table compare-table' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', { text: '' }),
        h('th', { class: 'num', text: `A ${a}`, title: a }),
        h('th', { class: 'num', text: `B ${b}`, title: b }),
        h('th', { class: 'num', text: 'B − A' }),
      ),
    ),
    h(
      'tbody',
      {},
      rows.map((row) =>
        h(
          'tr',
          { 'data-metric': row.key },
          h('td', { text: row.label }),
          h('td', { class: 'num a', text: formatValue(row.a, row.kind) }),
          h('td', { class: 'num b', text: formatValue(row.b, row.kind) }),
          deltaCell(row),
        ),
      ),
    ),
  );
}

function runLink(side: 'a' | 'b', s: CompareSide): HTMLElement {
  return h(
    'div',
    { class: `compare-run side-${side}` },
    h('b', { text: side.toUpperCase() }),
    ' ',
    s.href ? h('a', { href: s.href, text: s.name }) : h('span', { text: s.name }),
    h('span', { class: 'muted small', text: ` · ${s.index.run.envs.join(', ')} · ${fmt.int(s.index.totals.episodes)} episodes` }),
  );
}

/** The runs, their totals and the per-role cards. */
export function compareSummary(data: ComparePageData, roles: Roles): HTMLElement[] {
  const roleCards = compareRoles(data.a.index, data.b.index).map(({ name, rows }) =>
    h(
      'section',
      { class: 'card compare-role', 'data-role': name },
      h(
        'div',
        { class: 'card-head' },
        h('span', { class: 'role-dot', style: `background:${roles.color(name)}` }),
        h('h3', { text: name }),
      ),
      comparedTable(rows, data.a.name, data.b.name),
    ),
  );
  return [
    h('section', { class: 'card compare-head' }, runLink('a', data.a), runLink('b', data.b)),
    h(
      'section',
      { class: 'card compare-totals' },
      h('div', { class: 'card-head' }, h('h3', { text: 'Runs' })),
      comparedTable(compareTotals(data.a.index, data.b.index), data.a.name, data.b.name),
    ),
    h('div', { class: 'role-grid' }, roleCards),
  ];
}
