// Two runs side by side: run totals and per-role rewards, pass@k, tokens and cost with the
// difference (B − A), then every task with its episodes in each run; a task opens its two
// episodes next to each other (`#task=<key>&a=<id>&b=<id>`).
import { type ComparedTask, type ComparedValue, compareRoles, compareTasks, compareTotals, meanReward } from './compare-stats.ts';
import { h } from './dom.ts';
import { EpisodeSource } from './episode-source.ts';
import { type TraceColumns, traceColumns } from './episode-view.ts';
import { fmt } from './format.ts';
import { Roles } from './roles.ts';
import { topbar } from './shell.ts';
import type { ComparePageData, CompareSide, EpisodeMode, EpisodeRow, PageTimings } from './types.ts';
import { problemCard, rewardChip } from './widgets.ts';

/** Tasks listed at once (a filter narrows a longer list). */
const TASK_LIMIT = 400;

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

function comparedTable(rows: ComparedValue[], a: string, b: string): HTMLElement {
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

interface Side {
  data: CompareSide;
  source: EpisodeSource;
  byId: Map<string, EpisodeRow>;
}

/** Mounts the comparison page into `app` and routes on the URL fragment. */
export function comparePage(options: { app: HTMLElement; data: ComparePageData; timings: PageTimings }): void {
  const { app, data, timings } = options;
  const sides: { a: Side; b: Side } = {
    a: {
      data: data.a,
      source: new EpisodeSource(data.a.mode as EpisodeMode),
      byId: new Map(data.a.index.episodes.map((r) => [r.id, r])),
    },
    b: {
      data: data.b,
      source: new EpisodeSource(data.b.mode as EpisodeMode),
      byId: new Map(data.b.index.episodes.map((r) => [r.id, r])),
    },
  };
  const roles = new Roles([...data.a.index.roles, ...data.b.index.roles]);
  const tasks = compareTasks(data.a.index, data.b.index);
  const tasksByKey = new Map(tasks.map((t) => [t.key, t]));
  const { crumbs, topbar: bar } = topbar({
    title: `${data.a.name}  vs  ${data.b.name}`,
    titleHint: 'A vs B',
    meta: `${fmt.int(tasks.length)} tasks · ${fmt.int(data.a.index.totals.episodes)} + ${fmt.int(data.b.index.totals.episodes)} episodes`,
    runsHref: data.runsHref,
  });
  const summaryView = h('main', { class: 'view run-view compare-view' });
  const pairView = h('main', { class: 'view episode-view pair-view', hidden: true });
  app.append(bar, summaryView, pairView);

  const runLink = (side: 'a' | 'b') => {
    const s = sides[side].data;
    return h(
      'div',
      { class: `compare-run side-${side}` },
      h('b', { text: side.toUpperCase() }),
      ' ',
      s.href ? h('a', { href: s.href, text: s.name }) : h('span', { text: s.name }),
      h('span', {
        class: 'muted small',
        text: ` · ${s.index.run.envs.join(', ')} · ${fmt.int(s.index.totals.episodes)} episodes`,
      }),
    );
  };
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
  const taskCard = taskTable({ tasks, roles });
  summaryView.append(
    h(
      'div',
      { class: 'summary' },
      h('section', { class: 'card compare-head' }, runLink('a'), runLink('b')),
      h(
        'section',
        { class: 'card compare-totals' },
        h('div', { class: 'card-head' }, h('h3', { text: 'Runs' })),
        comparedTable(compareTotals(data.a.index, data.b.index), data.a.name, data.b.name),
      ),
      h('div', { class: 'role-grid' }, roleCards),
      taskCard,
    ),
  );

  let columns: TraceColumns[] = [];
  let token = 0;
  async function showPair(key: string, ids: { a: string | null; b: string | null }): Promise<void> {
    const started = performance.now();
    const mine = ++token;
    summaryView.hidden = true;
    pairView.hidden = false;
    crumbs.replaceChildren(h('span', { class: 'crumb-sep', text: '/' }), h('span', { text: key }));
    const task = tasksByKey.get(key);
    for (const c of columns) c.destroy();
    columns = [];
    if (!task) {
      pairView.replaceChildren(
        problemCard('Task not found', `No task ${key} in either run.`, { href: '#', text: '← Comparison' }),
      );
      return;
    }
    pairView.replaceChildren(h('p', { class: 'muted pad', text: 'Loading episodes…' }));
    const pick = (side: 'a' | 'b') => {
      const id = ids[side];
      return (id !== null ? task[side].find((r) => r.id === id) : undefined) ?? task[side][0] ?? null;
    };
    const rows = { a: pick('a'), b: pick('b') };
    let episodes: { a: Awaited<ReturnType<EpisodeSource['load']>> | null; b: Awaited<ReturnType<EpisodeSource['load']>> | null };
    try {
      const [ea, eb] = await Promise.all([
        rows.a ? sides.a.source.load(rows.a) : null,
        rows.b ? sides.b.source.load(rows.b) : null,
      ]);
      episodes = { a: ea, b: eb };
    } catch (error) {
      if (mine === token)
        pairView.replaceChildren(problemCard('Could not load the episodes', String((error as Error)?.message ?? error)));
      return;
    }
    if (mine !== token) return;
    const panes = (['a', 'b'] as const).map((side) => {
      const row = rows[side];
      const episode = episodes[side];
      const head = paneHead({ side, name: sides[side].data.name, task, row, other: rows[side === 'a' ? 'b' : 'a'], roles });
      if (!row || !episode)
        return h(
          'section',
          { class: 'compare-pane', 'data-side': side },
          head,
          h('p', { class: 'muted pad', text: 'This run has no episode of this task.' }),
        );
      const cols = traceColumns(episode, roles);
      columns.push(cols);
      return h('section', { class: 'compare-pane', 'data-side': side, 'data-episode': episode.id }, head, cols.element);
    });
    pairView.replaceChildren(
      h(
        'div',
        { class: 'episode-head' },
        h(
          'div',
          { class: 'episode-title' },
          h('a', { class: 'btn', href: '#', text: '← Comparison', title: 'back (Esc)' }),
          h('h2', { text: key }),
        ),
      ),
      h('div', { class: 'compare-panes' }, panes),
    );
    for (const c of columns) c.mount();
    document.title = `${key} · A vs B · troupe`;
    timings.episodeMs = performance.now() - started;
    document.body.dataset.pair = `${rows.a?.id ?? ''}|${rows.b?.id ?? ''}`;
  }

  function showSummary(): void {
    for (const c of columns) c.destroy();
    columns = [];
    pairView.hidden = true;
    pairView.replaceChildren();
    summaryView.hidden = false;
    crumbs.replaceChildren();
    delete document.body.dataset.pair;
    document.title = `${data.a.name} vs ${data.b.name} · troupe`;
  }

  function route(): void {
    const params = new URLSearchParams(location.hash.slice(1));
    const key = params.get('task');
    if (key !== null) void showPair(key, { a: params.get('a'), b: params.get('b') });
    else showSummary();
  }
  window.addEventListener('hashchange', route);
  document.addEventListener('keydown', (event) => {
    if (!pairView.hidden && event.key === 'Escape') location.hash = '';
  });
  route();
}

/** `#task=<key>&a=<id>&b=<id>` */
function pairHash(key: string, a: string | null | undefined, b: string | null | undefined): string {
  const params = new URLSearchParams({ task: key });
  if (a) params.set('a', a);
  if (b) params.set('b', b);
  return `#${params.toString()}`;
}

function paneHead(options: {
  side: 'a' | 'b';
  name: string;
  task: ComparedTask;
  row: EpisodeRow | null;
  other: EpisodeRow | null;
  roles: Roles;
}): HTMLElement {
  const { side, name, task, row, other, roles } = options;
  const episodes = task[side];
  return h(
    'div',
    { class: 'pane-head' },
    h('b', { class: `side-tag side-${side}`, text: side.toUpperCase() }),
    h('span', { class: 'pane-run', text: name }),
    row ? h('span', { class: 'muted small mono', text: row.id }) : null,
    h('span', { class: 'spacer' }),
    episodes.length > 1
      ? h(
          'span',
          { class: 'rollouts small' },
          h('span', { class: 'muted', text: 'rollout ' }),
          episodes.map((e) =>
            h('a', {
              class: `btn rollout ${e === row ? 'current' : ''}`,
              href: side === 'a' ? pairHash(task.key, e.id, other?.id) : pairHash(task.key, other?.id, e.id),
              text: e.group,
              title: e.id,
            }),
          ),
        )
      : null,
    row
      ? h(
          'span',
          { class: 'pane-rewards' },
          Object.entries(row.rewards).map(([role, value]) =>
            h('span', { class: 'pane-reward', title: role }, `${role} `, rewardChip(roles, value, role)),
          ),
        )
      : null,
  );
}

function episodeChips(rows: EpisodeRow[], role: string, roles: Roles, hrefOf: (row: EpisodeRow) => string): HTMLElement {
  return h(
    'span',
    { class: 'episode-chips' },
    rows.map((row) =>
      h(
        'a',
        { class: 'episode-chip', href: hrefOf(row), title: `${row.id} · rollout ${row.group}` },
        rewardChip(roles, row.rewards[role], role),
      ),
    ),
  );
}

/** The tasks of both runs with their episodes' rewards for one role, filterable and sortable by B − A. */
function taskTable(options: { tasks: ComparedTask[]; roles: Roles }): HTMLElement {
  const { tasks, roles } = options;
  const state = { text: '', role: roles.names[0] ?? '', sort: 'task' as 'task' | 'delta', both: false };
  const body = h('tbody', {});
  const count = h('span', { class: 'table-count' });
  const refresh = () => {
    const role = state.role;
    const words = state.text.toLowerCase().split(/\s+/).filter(Boolean);
    let shown = tasks.filter(
      (t) => (!state.both || (t.a.length && t.b.length)) && words.every((w) => t.key.toLowerCase().includes(w)),
    );
    const delta = (t: ComparedTask) => {
      const a = meanReward(t.a, role);
      const b = meanReward(t.b, role);
      return a === null || b === null ? null : b - a;
    };
    if (state.sort === 'delta')
      shown = [...shown].sort((x, y) => {
        const dx = delta(x);
        const dy = delta(y);
        if (dx === null) return dy === null ? 0 : 1;
        if (dy === null) return -1;
        return dx - dy;
      });
    count.textContent =
      shown.length === tasks.length
        ? `${fmt.int(tasks.length)} tasks`
        : `${fmt.int(shown.length)} of ${fmt.int(tasks.length)} tasks`;
    const rows = shown.slice(0, TASK_LIMIT).map((t) => {
      const a = meanReward(t.a, role);
      const b = meanReward(t.b, role);
      const d = delta(t);
      return h(
        'tr',
        { 'data-task': t.key },
        h('td', {}, h('a', { class: 'task-link', href: pairHash(t.key, t.a[0]?.id, t.b[0]?.id), text: t.key })),
        h(
          'td',
          {},
          episodeChips(t.a, role, roles, (row) => pairHash(t.key, row.id, t.b[0]?.id)),
        ),
        h('td', { class: 'num a', text: fmt.num(a) }),
        h(
          'td',
          {},
          episodeChips(t.b, role, roles, (row) => pairHash(t.key, t.a[0]?.id, row.id)),
        ),
        h('td', { class: 'num b', text: fmt.num(b) }),
        h('td', {
          class: `num delta ${d === null || Math.abs(d) < 1e-12 ? '' : d > 0 ? 'good-text' : 'bad-text'}`,
          text: fmt.delta(d),
        }),
      );
    });
    if (shown.length > TASK_LIMIT)
      rows.push(
        h(
          'tr',
          {},
          h('td', { colspan: 6, class: 'muted', text: `… ${fmt.int(shown.length - TASK_LIMIT)} more (filter to narrow)` }),
        ),
      );
    body.replaceChildren(...rows);
  };
  const roleSelect = h(
    'select',
    {
      name: 'compare-role',
      'aria-label': 'Role',
      onchange: () => {
        state.role = roleSelect.value;
        refresh();
      },
    },
    roles.names.map((name) => h('option', { value: name, text: name })),
  );
  const sortSelect = h(
    'select',
    {
      name: 'compare-sort',
      'aria-label': 'Sort',
      onchange: () => {
        state.sort = sortSelect.value as 'task' | 'delta';
        refresh();
      },
    },
    h('option', { value: 'task', text: 'task order' }),
    h('option', { value: 'delta', text: 'B − A, lowest first' }),
  );
  const search = h('input', {
    name: 'compare-text',
    type: 'search',
    placeholder: 'task…',
    'aria-label': 'Search tasks',
    oninput: () => {
      state.text = search.value.trim();
      refresh();
    },
  });
  const both = h('input', {
    type: 'checkbox',
    name: 'compare-both',
    onchange: () => {
      state.both = both.checked;
      refresh();
    },
  });
  refresh();
  return h(
    'section',
    { class: 'card table-card compare-tasks' },
    h(
      'div',
      { class: 'card-head' },
      h('h3', { text: 'Tasks' }),
      count,
      h('span', { class: 'spacer' }),
      h('span', { class: 'muted small', text: 'Click a task or an episode to open A and B side by side' }),
    ),
    h(
      'div',
      { class: 'filters' },
      h('label', { class: 'field grow' }, h('span', { text: 'Search' }), search),
      h('label', { class: 'field' }, h('span', { text: 'Role' }), roleSelect),
      h('label', { class: 'field' }, h('span', { text: 'Sort' }), sortSelect),
      h('label', { class: 'field check' }, both, h('span', { text: 'in both runs' })),
    ),
    h(
      'table',
      { class: 'mini-table task-compare' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['task', 'A episodes', 'A mean', 'B episodes', 'B mean', 'B − A'].map((label) => h('th', { text: label })),
        ),
      ),
      body,
    ),
  );
}
