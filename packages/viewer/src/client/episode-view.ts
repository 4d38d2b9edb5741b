// An episode: its head (task, status, navigation, task data, errors) and one column per trace,
// side by side, each a virtual list of the trace's messages.
import { h } from './dom.ts';
import { fmt } from './format.ts';
import { renderItem } from './message-view.ts';
import type { Roles } from './roles.ts';
import { errorLines, traceHeader } from './trace-header.ts';
import { estimateItem, type TraceItem, traceItems } from './trace-items.ts';
import type { EpisodeRecord, EpisodeRow, TraceRecord } from './types.ts';
import { VirtualList } from './virtual-list.ts';
import { badge, jsonDetails } from './widgets.ts';

/** Trace columns of an episode; `mount` starts their lists once the element is in the document. */
export interface TraceColumns {
  element: HTMLElement;
  mount: () => void;
  destroy: () => void;
}

/** One column per trace of `episode`, side by side. */
export function traceColumns(episode: EpisodeRecord, roles: Roles): TraceColumns {
  const element = h('div', { class: `trace-columns ${episode.traces.length > 3 ? 'many' : ''}` });
  if (episode.traces.length === 0) element.append(h('p', { class: 'muted pad', text: 'This episode has no traces.' }));
  const pending: { scroller: HTMLElement; items: TraceItem[]; trace: TraceRecord }[] = [];
  for (const trace of episode.traces) {
    const items = traceItems(trace);
    const scroller = h('div', { class: 'trace-scroll' });
    element.append(
      h(
        'section',
        {
          class: 'trace-column',
          'data-agent': trace.agent.name,
          'data-trace': trace.id,
          style: `--role:${roles.color(trace.agent.name)}`,
        },
        scroller,
      ),
    );
    pending.push({ scroller, items, trace });
  }
  let lists: VirtualList[] = [];
  return {
    element,
    // Lists are created once the columns are in the document (they need the viewport height).
    mount: () => {
      lists = pending.map(({ scroller, items, trace }) => {
        const list = new VirtualList({
          scroller,
          count: items.length + 1,
          estimate: (i) => (i === 0 ? 320 : estimateItem(items[i - 1]!)),
          render: (i) => (i === 0 ? traceHeader(trace, episode, roles) : renderItem(trace, items[i - 1]!)),
        });
        scroller.dataset.items = String(items.length);
        return list;
      });
    },
    destroy: () => {
      for (const list of lists) list.destroy();
      lists = [];
    },
  };
}

/** The head of an episode view: back link, prev/next, task, status, ids, task data and errors. */
export function episodeHead(options: {
  episode: EpisodeRecord;
  row: EpisodeRow;
  prev: EpisodeRow | null;
  next: EpisodeRow | null;
}): HTMLElement {
  const { episode, row, prev, next } = options;
  const navLink = (target: EpisodeRow | null, text: string, key: string) =>
    target
      ? h('a', { class: 'btn', href: `#episode=${encodeURIComponent(target.id)}`, text, title: `${target.task} (${key})` })
      : h('span', { class: 'btn disabled', text });
  return h(
    'div',
    { class: 'episode-head' },
    h(
      'div',
      { class: 'episode-title' },
      h('a', { class: 'btn', href: '#', text: '← Episodes', title: 'back to the table (Esc)' }),
      navLink(prev, '‹ prev', '['),
      navLink(next, 'next ›', ']'),
      h('h2', { text: episode.task.key }),
      episode.ok ? badge('ok', 'ok') : badge('failed', 'err'),
      h('span', {
        class: 'muted small',
        text: `${episode.env.id} · rollout ${episode.group.index} of group ${episode.group.id}${episode.attempt ? ` · attempt ${episode.attempt}` : ''}`,
      }),
      h('span', { class: 'spacer' }),
      h('span', { class: 'muted small mono', text: episode.id, title: 'episode id (the URL fragment links here)' }),
      h('span', {
        class: 'muted small',
        text: `${fmt.ms(episode.endedAt === null ? null : episode.endedAt - episode.startedAt)} · ${fmt.tokens(row.tokens)} tokens`,
      }),
    ),
    h(
      'div',
      { class: 'episode-meta' },
      jsonDetails('task data', episode.task.data, false),
      episode.errors.length ? errorLines(episode.errors, 'episode-errors') : null,
    ),
  );
}
