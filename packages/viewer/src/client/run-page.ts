// A run's page: summary and episode table (`#`), one episode (`#episode=<id>`).
import { h } from './dom.ts';
import { EpisodeSource } from './episode-source.ts';
import { EpisodeTable } from './episode-table.ts';
import { episodeHead, type TraceColumns, traceColumns } from './episode-view.ts';
import { fmt } from './format.ts';
import { Roles } from './roles.ts';
import { renderSummary } from './run-summary.ts';
import { topbar } from './shell.ts';
import type { EpisodeMode, EpisodeRow, PageTimings, ViewerIndex } from './types.ts';
import { problemCard } from './widgets.ts';

/** `Esc` back to the table, `[` and `]` to the previous / next episode of the (filtered, sorted) table. */
function bindEpisodeKeys(options: { episodeView: HTMLElement; rowsById: Map<string, EpisodeRow>; table: EpisodeTable }): void {
  const { episodeView, rowsById, table } = options;
  document.addEventListener('keydown', (event) => {
    if (episodeView.hidden || event.target instanceof HTMLInputElement || event.metaKey || event.ctrlKey || event.altKey) return;
    const id = document.body.dataset.episode;
    const row = id ? rowsById.get(id) : undefined;
    const visible = table.visibleRows;
    const position = row ? visible.indexOf(row) : -1;
    if (event.key === 'Escape') location.hash = '';
    else if (event.key === '[' && position > 0) location.hash = `episode=${encodeURIComponent(visible[position - 1]!.id)}`;
    else if (event.key === ']' && position >= 0 && position < visible.length - 1)
      location.hash = `episode=${encodeURIComponent(visible[position + 1]!.id)}`;
  });
}

/**
 * The episode pane: shows one episode in `view` (the latest request wins over slower loads), with
 * previous and next in the table's order; `clear` destroys the trace columns shown.
 */
function episodePane(options: {
  view: HTMLElement;
  source: EpisodeSource;
  roles: Roles;
  table: EpisodeTable;
  index: ViewerIndex;
  timings: PageTimings;
}) {
  const { view, source, roles, table, index, timings } = options;
  let columns: TraceColumns | null = null;
  let latest = 0;
  const clear = () => {
    columns?.destroy();
    columns = null;
  };

  /** Shows episode `id` (`row` its table row, if any); `started` is when it was asked for. */
  async function show(id: string, row: EpisodeRow | undefined, started: number): Promise<void> {
    const token = ++latest;
    if (!row) {
      clear();
      view.replaceChildren(
        problemCard('Episode not found', `No episode with id ${id} in this run.`, { href: '#', text: '← Episodes' }),
      );
      return;
    }
    view.replaceChildren(h('p', { class: 'muted pad', text: 'Loading episode…' }));
    let episode: Awaited<ReturnType<EpisodeSource['load']>>;
    try {
      episode = await source.load(row);
    } catch (error) {
      if (token !== latest) return;
      view.replaceChildren(problemCard('Could not load the episode', String((error as Error)?.message ?? error)));
      return;
    }
    if (token !== latest) return;
    clear();
    const visible = table.visibleRows;
    const position = visible.indexOf(row);
    const next = traceColumns(episode, roles);
    columns = next;
    view.replaceChildren(
      episodeHead({
        episode,
        row,
        prev: position > 0 ? visible[position - 1]! : null,
        next: position >= 0 && position < visible.length - 1 ? visible[position + 1]! : null,
      }),
      next.element,
    );
    next.mount();
    document.title = `${episode.task.key} · ${index.run.name} · troupe`;
    timings.episodeMs = performance.now() - started;
    document.body.dataset.episode = id;
  }

  return { show, clear };
}

/** Mounts the run page into `app` and starts routing on the URL fragment. */
export function runPage(options: {
  app: HTMLElement;
  index: ViewerIndex;
  mode: EpisodeMode & { runs?: string };
  timings: PageTimings;
}): void {
  const { app, index, mode, timings } = options;
  const rowsById = new Map(index.episodes.map((row) => [row.id, row]));
  const roles = new Roles(index.roles);
  const { crumbs, topbar: bar } = topbar({
    title: index.run.name,
    titleHint: 'run directory',
    meta: `${fmt.int(index.totals.episodes)} episodes · ${index.run.envs.join(', ') || 'no env'}`,
    runsHref: mode.runs,
  });
  const runView = h('main', { class: 'view run-view' });
  const episodeView = h('main', { class: 'view episode-view', hidden: true });
  app.append(bar, runView, episodeView);

  const table = new EpisodeTable({ index, roles });
  runView.append(renderSummary({ index, roles, onErrorType: (type) => table.applyFilter({ error: type }) }), table.element);
  const pane = episodePane({ view: episodeView, source: new EpisodeSource(mode), roles, table, index, timings });

  function showEpisode(id: string): void {
    const started = performance.now();
    runView.hidden = true;
    episodeView.hidden = false;
    const row = rowsById.get(id);
    crumbs.replaceChildren(h('span', { class: 'crumb-sep', text: '/' }), h('span', { text: row ? row.task : id }));
    void pane.show(id, row, started);
  }

  function showRun(): void {
    pane.clear();
    episodeView.hidden = true;
    episodeView.replaceChildren();
    runView.hidden = false;
    crumbs.replaceChildren();
    delete document.body.dataset.episode;
    document.title = `${index.run.name} · troupe`;
    table.renderRows(true);
  }

  function route(): void {
    const match = /^#episode=(.+)$/.exec(location.hash);
    if (match) {
      let id = match[1]!;
      try {
        id = decodeURIComponent(id);
      } catch {}
      showEpisode(id);
    } else showRun();
  }

  window.addEventListener('hashchange', route);
  bindEpisodeKeys({ episodeView, rowsById, table });

  table.refresh();
  route();
}
