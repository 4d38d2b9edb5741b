// The pair view of a comparison: the same task's episode of A and of B next to each other, each
// with its trace columns, and the rollouts of each run to switch between.
import type { ComparedTask } from './compare-stats.ts';
import { pairHash } from './compare-task-table.ts';
import { h } from './dom.ts';
import type { EpisodeSource } from './episode-source.ts';
import { type TraceColumns, traceColumns } from './episode-view.ts';
import type { Roles } from './roles.ts';
import type { EpisodeRecord, EpisodeRow } from './types.ts';
import { problemCard, rewardChip } from './widgets.ts';

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

/** One run of the comparison: its name and where its episodes come from. */
export interface PairSide {
  name: string;
  source: EpisodeSource;
}

/** Shows a task's two episodes; `show` again replaces them. */
export class PairView {
  private columns: TraceColumns[] = [];
  private token = 0;

  constructor(
    private readonly element: HTMLElement,
    private readonly sides: { a: PairSide; b: PairSide },
    private readonly roles: Roles,
  ) {}

  /** Drops the shown episodes' lists. */
  clear(): void {
    for (const c of this.columns) c.destroy();
    this.columns = [];
  }

  private async load(rows: {
    a: EpisodeRow | null;
    b: EpisodeRow | null;
  }): Promise<{ a: EpisodeRecord | null; b: EpisodeRecord | null }> {
    const [a, b] = await Promise.all([
      rows.a ? this.sides.a.source.load(rows.a) : null,
      rows.b ? this.sides.b.source.load(rows.b) : null,
    ]);
    return { a, b };
  }

  private pane(
    side: 'a' | 'b',
    task: ComparedTask,
    rows: { a: EpisodeRow | null; b: EpisodeRow | null },
    episode: EpisodeRecord | null,
  ): HTMLElement {
    const row = rows[side];
    const head = paneHead({
      side,
      name: this.sides[side].name,
      task,
      row,
      other: rows[side === 'a' ? 'b' : 'a'],
      roles: this.roles,
    });
    if (!row || !episode)
      return h(
        'section',
        { class: 'compare-pane', 'data-side': side },
        head,
        h('p', { class: 'muted pad', text: 'This run has no episode of this task.' }),
      );
    const cols = traceColumns(episode, this.roles);
    this.columns.push(cols);
    return h('section', { class: 'compare-pane', 'data-side': side, 'data-episode': episode.id }, head, cols.element);
  }

  /** Shows `task` with the episodes `ids` (the first rollout of a side when its id is absent). */
  async show(task: ComparedTask, ids: { a: string | null; b: string | null }): Promise<void> {
    const mine = ++this.token;
    this.clear();
    this.element.replaceChildren(h('p', { class: 'muted pad', text: 'Loading episodes…' }));
    const pick = (side: 'a' | 'b') => {
      const id = ids[side];
      return (id !== null ? task[side].find((r) => r.id === id) : undefined) ?? task[side][0] ?? null;
    };
    const rows = { a: pick('a'), b: pick('b') };
    let episodes: { a: EpisodeRecord | null; b: EpisodeRecord | null };
    try {
      episodes = await this.load(rows);
    } catch (error) {
      if (mine === this.token)
        this.element.replaceChildren(problemCard('Could not load the episodes', String((error as Error)?.message ?? error)));
      return;
    }
    if (mine !== this.token) return;
    const panes = [this.pane('a', task, rows, episodes.a), this.pane('b', task, rows, episodes.b)];
    this.element.replaceChildren(
      h(
        'div',
        { class: 'episode-head' },
        h(
          'div',
          { class: 'episode-title' },
          h('a', { class: 'btn', href: '#', text: '← Comparison', title: 'back (Esc)' }),
          h('h2', { text: task.key }),
        ),
      ),
      h('div', { class: 'compare-panes' }, panes),
    );
    for (const c of this.columns) c.mount();
    document.body.dataset.pair = `${rows.a?.id ?? ''}|${rows.b?.id ?? ''}`;
  }
}
