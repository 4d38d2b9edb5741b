// Two runs side by side: run totals and per-role rewards, pass@k, tokens and cost with the
// difference (B − A), then every task with its episodes in each run; a task opens its two
// episodes next to each other (`#task=<key>&a=<id>&b=<id>`).
import { PairView } from './compare-pair-view.ts';
import { compareTasks } from './compare-stats.ts';
import { compareSummary } from './compare-summary.ts';
import { taskTable } from './compare-task-table.ts';
import { h } from './dom.ts';
import { EpisodeSource } from './episode-source.ts';
import { fmt } from './format.ts';
import { Roles } from './roles.ts';
import { topbar } from './shell.ts';
import type { ComparePageData, EpisodeMode, PageTimings } from './types.ts';
import { problemCard } from './widgets.ts';

/** The pair view in `element`: run A's and run B's episodes, each loaded from its own run. */
function pairViewOf(element: HTMLElement, data: ComparePageData, roles: Roles): PairView {
  return new PairView(
    element,
    {
      a: { name: data.a.name, source: new EpisodeSource(data.a.mode as EpisodeMode) },
      b: { name: data.b.name, source: new EpisodeSource(data.b.mode as EpisodeMode) },
    },
    roles,
  );
}

/** `Esc` back to the comparison from a pair of episodes. */
function bindPairKeys(pairElement: HTMLElement): void {
  document.addEventListener('keydown', (event) => {
    if (!pairElement.hidden && event.key === 'Escape') location.hash = '';
  });
}

/** Mounts the comparison page into `app` and routes on the URL fragment. */
export function comparePage(options: { app: HTMLElement; data: ComparePageData; timings: PageTimings }): void {
  const { app, data, timings } = options;
  const roles = new Roles([...data.a.index.roles, ...data.b.index.roles]);
  const tasks = compareTasks(data.a.index, data.b.index);
  const tasksByKey = new Map(tasks.map((t) => [t.key, t]));
  const { crumbs, topbar: bar } = topbar({
    title: `${data.a.name}  vs  ${data.b.name}`,
    titleHint: 'A vs B',
    meta: `${fmt.int(tasks.length)} tasks · ${fmt.int(data.a.index.totals.episodes)} + ${fmt.int(data.b.index.totals.episodes)} episodes`,
    runsHref: data.runsHref,
  });
  const summaryView = h(
    'main',
    { class: 'view run-view compare-view' },
    h('div', { class: 'summary' }, compareSummary(data, roles), taskTable({ tasks, roles })),
  );
  const pairElement = h('main', { class: 'view episode-view pair-view', hidden: true });
  app.append(bar, summaryView, pairElement);
  const pair = pairViewOf(pairElement, data, roles);

  const showPair = async (key: string, ids: { a: string | null; b: string | null }) => {
    const started = performance.now();
    summaryView.hidden = true;
    pairElement.hidden = false;
    crumbs.replaceChildren(h('span', { class: 'crumb-sep', text: '/' }), h('span', { text: key }));
    const task = tasksByKey.get(key);
    if (!task) {
      pair.clear();
      pairElement.replaceChildren(
        problemCard('Task not found', `No task ${key} in either run.`, { href: '#', text: '← Comparison' }),
      );
      return;
    }
    await pair.show(task, ids);
    document.title = `${key} · A vs B · troupe`;
    timings.episodeMs = performance.now() - started;
  };
  const showSummary = () => {
    pair.clear();
    pairElement.hidden = true;
    pairElement.replaceChildren();
    summaryView.hidden = false;
    crumbs.replaceChildren();
    delete document.body.dataset.pair;
    document.title = `${data.a.name} vs ${data.b.name} · troupe`;
  };
  const route = () => {
    const params = new URLSearchParams(location.hash.slice(1));
    const key = params.get('task');
    if (key !== null) void showPair(key, { a: params.get('a'), b: params.get('b') });
    else showSummary();
  };
  window.addEventListener('hashchange', route);
  bindPairKeys(pairElement);
  route();
}
