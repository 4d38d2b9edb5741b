// The episode table: one row per episode, filtered (text, role, reward range, error, stop),
// sorted by any column, rendering only the rows on screen.
import { type Child, h } from './dom.ts';
import { fmt } from './format.ts';
import type { Roles } from './roles.ts';
import type { EpisodeRow, ViewerIndex } from './types.ts';
import { badge, rewardChip } from './widgets.ts';

const ROW_HEIGHT = 34;

type Filters = { text: string; role: string; min: string; max: string; error: string; stop: string };
type FilterName = keyof Filters;

interface Column {
  key: string;
  label: string;
  role?: string;
  width: string;
  num?: boolean;
  value: (row: EpisodeRow) => number | string | null;
  cell: (row: EpisodeRow) => Child;
}

/** The columns before the rewards: which episode (index, task, env, rollout). */
const EPISODE_COLUMNS: Column[] = [
  {
    key: 'i',
    label: '#',
    width: '64px',
    num: true,
    value: (r) => r.i,
    cell: (r) => h('span', { class: 'muted', text: r.i + 1 }),
  },
  {
    key: 'task',
    label: 'task',
    width: 'minmax(160px, 1.6fr)',
    value: (r) => r.task,
    cell: (r) =>
      h(
        'span',
        { class: 'task-cell', title: `${r.task}\n${r.id}` },
        h('span', { class: 'task-key', text: r.task }),
        h('span', { class: 'muted id-sub', text: r.id }),
      ),
  },
  {
    key: 'env',
    label: 'env',
    width: 'minmax(110px, 0.8fr)',
    value: (r) => r.env,
    cell: (r) => h('span', { class: 'muted', text: r.env }),
  },
  {
    key: 'group',
    label: 'rollout',
    width: '70px',
    num: true,
    value: (r) => r.group,
    cell: (r) => h('span', { text: r.group }),
  },
];

/** How the episode went: ok, errors, turns, tokens, time and stop conditions. */
const OUTCOME_COLUMNS: Column[] = [
  {
    key: 'ok',
    label: 'ok',
    width: '54px',
    value: (r) => (r.ok ? 1 : 0),
    cell: (r) => h('span', { class: r.ok ? 'ok-mark' : 'err-mark', text: r.ok ? '✓' : '✕', title: r.ok ? 'ok' : 'failed' }),
  },
  {
    key: 'errors',
    label: 'errors',
    width: 'minmax(120px, 1fr)',
    value: (r) => r.errors.join(','),
    cell: (r) =>
      h(
        'span',
        { class: 'err-list' },
        r.errors.map((e) => badge(e, 'err')),
      ),
  },
  {
    key: 'turns',
    label: 'turns',
    width: '64px',
    num: true,
    value: (r) => r.turns,
    cell: (r) => h('span', { text: fmt.int(r.turns) }),
  },
  {
    key: 'tokens',
    label: 'tokens',
    width: '78px',
    num: true,
    value: (r) => r.tokens,
    cell: (r) => h('span', { text: fmt.tokens(r.tokens) }),
  },
  {
    key: 'duration',
    label: 'time',
    width: '78px',
    num: true,
    value: (r) => r.durationMs,
    cell: (r) => h('span', { class: 'muted', text: fmt.ms(r.durationMs) }),
  },
  {
    key: 'stop',
    label: 'stop',
    width: 'minmax(110px, 0.9fr)',
    value: (r) => r.stops.join(','),
    cell: (r) => h('span', { class: 'muted small', text: r.stops.join(', ') }),
  },
];

/** One reward column per role, in the roles' order. */
function rewardColumns(roles: Roles): Column[] {
  return roles.names.map(
    (name): Column => ({
      key: `r:${name}`,
      label: name,
      role: name,
      width: '92px',
      num: true,
      value: (r) => (r.rewards[name] === undefined ? null : r.rewards[name]),
      cell: (r) => (name in r.rewards ? rewardChip(roles, r.rewards[name], name) : h('span', { class: 'muted faint', text: '' })),
    }),
  );
}

/** The table's columns: the episode, a reward per role, the outcome. */
function columnsFor(roles: Roles): Column[] {
  return [...EPISODE_COLUMNS, ...rewardColumns(roles), ...OUTCOME_COLUMNS];
}

/** The episode table card (filters, sortable header, virtual rows). */
export class EpisodeTable {
  /** The card to put on the page. */
  readonly element: HTMLElement;
  /** The rows that pass the filters, in table order (prev/next in the episode view follow it). */
  visibleRows: EpisodeRow[];

  private readonly index: ViewerIndex;
  private readonly roles: Roles;
  private readonly columns: Column[];
  private readonly gridTemplate: string;
  private readonly filters: Filters = { text: '', role: '', min: '', max: '', error: '', stop: '' };
  private readonly sort = { key: 'i', dir: 1 };
  private readonly controls: Partial<Record<FilterName, HTMLInputElement | HTMLSelectElement>> = {};
  private readonly tableCount = h('span', { class: 'table-count' });
  private readonly headRow: HTMLElement;
  private readonly tableBody = h('div', { class: 'tbody', tabindex: 0 });
  private readonly tableInner = h('div', { class: 'tbody-inner' });
  private readonly tableWindow = h('div', { class: 'tbody-window' });
  private readonly emptyNote = h('div', { class: 'table-empty', hidden: true, text: 'No episode matches these filters.' });
  /** Everything the free-text filter searches, built on first use. */
  private readonly searchTexts = new Map<EpisodeRow, string>();
  private rowsPending = false;
  private renderedRange = '';

  constructor(options: { index: ViewerIndex; roles: Roles }) {
    this.index = options.index;
    this.roles = options.roles;
    this.visibleRows = options.index.episodes;
    this.columns = columnsFor(this.roles);
    this.gridTemplate = this.columns.map((c) => c.width).join(' ');
    this.headRow = h('div', { class: 'trow thead', style: `grid-template-columns:${this.gridTemplate}` });
    this.tableInner.append(this.tableWindow);
    this.tableBody.append(this.tableInner);
    this.tableBody.addEventListener(
      'scroll',
      () => {
        if (this.rowsPending) return;
        this.rowsPending = true;
        requestAnimationFrame(() => {
          this.rowsPending = false;
          this.renderRows(false);
        });
      },
      { passive: true },
    );
    window.addEventListener('resize', () => this.renderRows(true));
    this.element = h(
      'section',
      { class: 'card table-card' },
      h(
        'div',
        { class: 'card-head' },
        h('h3', { text: 'Episodes' }),
        this.tableCount,
        h('span', { class: 'spacer' }),
        h('span', { class: 'muted small', text: 'Click a row to open the episode · sort by clicking a column' }),
      ),
      this.filterBar(),
      h('div', { class: 'table' }, this.headRow, this.tableBody, this.emptyNote),
    );
  }

  private renderHead(): void {
    const { sort } = this;
    this.headRow.replaceChildren(
      ...this.columns.map((col) =>
        h(
          'button',
          {
            class: `th ${col.num ? 'num' : ''} ${sort.key === col.key ? 'sorted' : ''}`,
            'data-key': col.key,
            title: col.role ? `reward of ${col.role} (mean over its traces); click to sort` : 'click to sort',
            onclick: () => {
              if (sort.key === col.key) sort.dir = -sort.dir;
              else {
                sort.key = col.key;
                sort.dir = col.num || col.role ? -1 : 1;
                if (col.key === 'i') sort.dir = 1;
              }
              this.refresh();
            },
          },
          col.role ? h('span', { class: 'role-dot', style: `background:${this.roles.color(col.role)}` }) : null,
          col.label,
          sort.key === col.key ? h('span', { class: 'sort-arrow', text: sort.dir > 0 ? ' ▲' : ' ▼' }) : null,
        ),
      ),
    );
  }

  private searchText(row: EpisodeRow): string {
    let text = this.searchTexts.get(row);
    if (text === undefined) {
      text = [row.id, row.env, row.task, ...Object.keys(row.rewards), ...row.errors, row.text].join(' ').toLowerCase();
      this.searchTexts.set(row, text);
    }
    return text;
  }

  private matches(row: EpisodeRow): boolean {
    const { filters } = this;
    if (filters.role && !(filters.role in row.rewards)) return false;
    if (filters.error === '__none') {
      if (row.errors.length) return false;
    } else if (filters.error === '__any') {
      if (row.ok) return false;
    } else if (filters.error && !row.errors.includes(filters.error)) return false;
    if (filters.stop && !row.stops.includes(filters.stop)) return false;
    const min = filters.min === '' ? null : Number(filters.min);
    const max = filters.max === '' ? null : Number(filters.max);
    if (min !== null || max !== null) {
      const values = filters.role ? [row.rewards[filters.role]] : Object.values(row.rewards);
      const inRange = values.some(
        (v) => v !== null && v !== undefined && (min === null || v >= min) && (max === null || v <= max),
      );
      if (!inRange) return false;
    }
    if (filters.text) {
      const words = filters.text.toLowerCase().split(/\s+/).filter(Boolean);
      const text = this.searchText(row);
      for (const word of words) if (!text.includes(word)) return false;
    }
    return true;
  }

  /** Re-applies the filters and the sort, and renders from the top. */
  refresh(): void {
    const col = this.columns.find((c) => c.key === this.sort.key) ?? this.columns[0]!;
    const all = this.index.episodes;
    const rows = all.filter((row) => this.matches(row));
    const dir = this.sort.dir;
    const keyed = rows.map((row): [number | string | null, EpisodeRow] => [col.value(row), row]);
    keyed.sort((a, b) => {
      const x = a[0];
      const y = b[0];
      if (x === y) return a[1].i - b[1].i;
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      if (typeof x === 'string') return dir * x.localeCompare(String(y));
      return dir * (x - Number(y));
    });
    this.visibleRows = keyed.map((k) => k[1]);
    const shown = this.visibleRows.length;
    this.tableCount.textContent =
      shown === all.length ? `${fmt.int(shown)} episodes` : `${fmt.int(shown)} of ${fmt.int(all.length)} episodes`;
    this.tableInner.style.height = `${shown * ROW_HEIGHT}px`;
    this.emptyNote.hidden = shown > 0;
    this.renderHead();
    this.tableBody.scrollTop = 0;
    this.renderRows(true);
  }

  /** Renders the rows in view (all of them again when `force`). */
  renderRows(force: boolean): void {
    const { tableBody, visibleRows } = this;
    const top = tableBody.scrollTop;
    const height = tableBody.clientHeight || 600;
    const start = Math.max(0, Math.floor(top / ROW_HEIGHT) - 8);
    const end = Math.min(visibleRows.length, Math.ceil((top + height) / ROW_HEIGHT) + 8);
    const range = `${start}:${end}`;
    if (!force && range === this.renderedRange) return;
    this.renderedRange = range;
    this.tableWindow.style.transform = `translateY(${start * ROW_HEIGHT}px)`;
    const out: HTMLElement[] = [];
    for (let k = start; k < end; k++) {
      const row = visibleRows[k]!;
      out.push(
        h(
          'a',
          {
            class: `trow ${row.ok ? '' : 'failed'} ${k % 2 ? 'odd' : ''}`,
            href: `#episode=${encodeURIComponent(row.id)}`,
            'data-id': row.id,
            style: `grid-template-columns:${this.gridTemplate}`,
          },
          this.columns.map((c) => h('span', { class: `td ${c.num ? 'num' : ''}` }, c.cell(row))),
        ),
      );
    }
    this.tableWindow.replaceChildren(...out);
  }

  private select(name: FilterName, label: string, options: [string, string][]): HTMLElement {
    const el = h(
      'select',
      {
        name,
        'aria-label': label,
        onchange: () => {
          this.filters[name] = el.value;
          this.refresh();
        },
      },
      options.map(([value, text]) => h('option', { value, text })),
    );
    this.controls[name] = el;
    return h('label', { class: 'field' }, h('span', { text: label }), el);
  }

  private input(name: FilterName, label: string, attrs: Record<string, string>): HTMLElement {
    let timer = 0;
    const el = h('input', {
      name,
      'aria-label': label,
      ...attrs,
      oninput: () => {
        clearTimeout(timer);
        timer = window.setTimeout(() => {
          this.filters[name] = el.value.trim();
          this.refresh();
        }, 120);
      },
    });
    this.controls[name] = el;
    return h('label', { class: `field ${attrs.type === 'number' ? 'narrow' : 'grow'}` }, h('span', { text: label }), el);
  }

  /** Sets filters (from the summary's links) and scrolls to the table. */
  applyFilter(next: Partial<Filters>): void {
    Object.assign(this.filters, next);
    for (const [key, value] of Object.entries(next)) {
      const control = this.controls[key as FilterName];
      if (control) control.value = value;
    }
    this.refresh();
    this.element.scrollIntoView({ block: 'start' });
  }

  private filterBar(): HTMLElement {
    const errorTypes = this.index.errors.map((e) => e.type);
    const stopNames = Object.keys(this.index.stopConditions).sort();
    return h(
      'div',
      { class: 'filters' },
      this.input('text', 'Search', { type: 'search', placeholder: 'task, episode id, error message…' }),
      this.select('role', 'Role', [['', 'all roles'], ...this.roles.names.map((r): [string, string] => [r, r])]),
      this.input('min', 'Reward ≥', { type: 'number', step: 'any', placeholder: 'min' }),
      this.input('max', 'Reward ≤', { type: 'number', step: 'any', placeholder: 'max' }),
      this.select('error', 'Errors', [
        ['', 'any'],
        ['__none', 'no errors'],
        ['__any', 'failed episodes'],
        ...errorTypes.map((e): [string, string] => [e, e]),
      ]),
      this.select('stop', 'Stop condition', [['', 'any'], ...stopNames.map((e): [string, string] => [e, e])]),
      h('button', {
        class: 'btn clear',
        text: 'Clear',
        onclick: () => {
          for (const key of Object.keys(this.filters) as FilterName[]) {
            this.filters[key] = '';
            const control = this.controls[key];
            if (control) control.value = '';
          }
          this.refresh();
        },
      }),
    );
  }
}
