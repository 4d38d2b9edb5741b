// The top bar every page shares: brand, run name, breadcrumbs, a meta line.
import { h } from './dom.ts';

export interface Shell {
  crumbs: HTMLElement;
  topbar: HTMLElement;
}

/** The top bar. `runsHref` adds a link to the list of runs (a served folder). */
export function topbar(options: { title: string; titleHint: string; meta: string; runsHref?: string | undefined }): Shell {
  const crumbs = h('nav', { class: 'crumbs' });
  const bar = h(
    'header',
    { class: 'topbar' },
    h(
      'a',
      { class: 'brand', href: '#', title: 'Run summary and episodes' },
      h('span', { class: 'brand-mark', text: '◆' }),
      'troupe',
    ),
    options.runsHref
      ? h('a', { class: 'runs-link', href: options.runsHref, text: 'all runs', title: 'the runs in this folder' })
      : null,
    h('span', { class: 'run-name', text: options.title, title: options.titleHint }),
    crumbs,
    h('span', { class: 'spacer' }),
    h('span', { class: 'topbar-meta', text: options.meta }),
  );
  return { crumbs, topbar: bar };
}
