// The tasks of two compared runs: each task's episodes in A and in B (reward chips for one role),
// their means and B − A; filterable, sortable by B − A.
import { type ComparedTask, meanReward } from './compare-stats.ts';
import { h } from './dom.ts';
import { fmt } from './format.ts';
import type { Roles } from './roles.ts';
import type { EpisodeRow } from './types.ts';
import { rewardChip } from './widgets.ts';

/** Tasks listed at once (a filter narrows a longer list). */
const TASK_LIMIT = 400;

/** `#task=<key>&a=<id>&b=<id>` */
export function pairHash(key: string, a: string | null | undefined, b: string | null | undefined): string {
  const params = new URLSearchParams({ task: key });
  if (a) params.set('a', a);
  if (b) params.set('b', b);
  return `#${params.toString()}`;
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

/** B − A of a task's mean reward for `role` (null when either run has no scored episode of it). */
function taskDelta(task: ComparedTask, role: string): number | null {
  const a = meanReward(task.a, role);
  const b = meanReward(task.b, role);
  return a === null || b === null ? null : b - a;
}

function taskRow(t: ComparedTask, role: string, roles: Roles): HTMLElement {
  const d = taskDelta(t, role);
  return h(
    'tr',
    { 'data-task': t.key },
    h('td', {}, h('a', { class: 'task-link', href: pairHash(t.key, t.a[0]?.id, t.b[0]?.id), text: t.key })),
    h(
      'td',
      {},
      episodeChips(t.a, role, roles, (row) => pairHash(t.key, row.id, t.b[0]?.id)),
    ),
    h('td', { class: 'num a', text: fmt.num(meanReward(t.a, role)) }),
    h(
      'td',
      {},
      episodeChips(t.b, role, roles, (row) => pairHash(t.key, t.a[0]?.id, row.id)),
    ),
    h('td', { class: 'num b', text: fmt.num(meanReward(t.b, role)) }),
    h('td', {
      class: `num delta ${d === null || Math.abs(d) < 1e-12 ? '' : d > 0 ? 'good-text' : 'bad-text'}`,
      text: fmt.delta(d),
    }),
  );
}

interface TaskFilter {
  text: string;
  role: string;
  sort: 'task' | 'delta';
  both: boolean;
}

/** The tasks that pass the filter, in the chosen order. */
function filterTasks(tasks: ComparedTask[], state: TaskFilter): ComparedTask[] {
  const words = state.text.toLowerCase().split(/\s+/).filter(Boolean);
  const shown = tasks.filter(
    (t) => (!state.both || (t.a.length && t.b.length)) && words.every((w) => t.key.toLowerCase().includes(w)),
  );
  if (state.sort !== 'delta') return shown;
  return shown.sort((x, y) => {
    const dx = taskDelta(x, state.role);
    const dy = taskDelta(y, state.role);
    if (dx === null) return dy === null ? 0 : 1;
    if (dy === null) return -1;
    return dx - dy;
  });
}

/** The search box, role and sort pickers and the "in both runs" switch; each change calls `refresh`. */
function taskFilters(state: TaskFilter, roles: Roles, refresh: () => void): HTMLElement {
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
        state.sort = sortSelect.value as TaskFilter['sort'];
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
  return h(
    'div',
    { class: 'filters' },
    h('label', { class: 'field grow' }, h('span', { text: 'Search' }), search),
    h('label', { class: 'field' }, h('span', { text: 'Role' }), roleSelect),
    h('label', { class: 'field' }, h('span', { text: 'Sort' }), sortSelect),
    h('label', { class: 'field check' }, both, h('span', { text: 'in both runs' })),
  );
}

/** The tasks of both runs with their episodes' rewards for one role, filterable and sortable by B − A. */
export function taskTable(options: { tasks: ComparedTask[]; roles: Roles }): HTMLElement {
  const { tasks, roles } = options;
  const state: TaskFilter = { text: '', role: roles.names[0] ?? '', sort: 'task', both: false };
  const body = h('tbody', {});
  const count = h('span', { class: 'table-count' });
  const refresh = () => {
    const shown = filterTasks(tasks, state);
    count.textContent =
      shown.length === tasks.length
        ? `${fmt.int(tasks.length)} tasks`
        : `${fmt.int(shown.length)} of ${fmt.int(tasks.length)} tasks`;
    const rows = shown.slice(0, TASK_LIMIT).map((t) => taskRow(t, state.role, roles));
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
  const filters = taskFilters(state, roles, refresh);
  refresh();
  const head = ['task', 'A episodes', 'A mean', 'B episodes', 'B mean', 'B − A'].map((label) => h('th', { text: label }));
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
    filters,
    h('table', { class: 'mini-table task-compare' }, h('thead', {}, h('tr', {}, head)), body),
  );
}
