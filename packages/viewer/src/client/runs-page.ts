// The runs of a folder: one row per run (envs, models, episodes, per-role reward and pass@1,
// tokens, cost), each linking to its page, and a picker of two runs to compare.
import { h } from './dom.ts';
import { fmt } from './format.ts';
import { topbar } from './shell.ts';
import type { RunListEntry, RunsPageData } from './types.ts';

function runHref(name: string): string {
  return `runs/${encodeURIComponent(name)}/`;
}

function roleCell(run: RunListEntry): HTMLElement {
  return h(
    'span',
    { class: 'run-roles' },
    run.roles.map((role) =>
      h(
        'span',
        { class: 'chip', 'data-role': role.name, title: `${role.scored} scored traces${role.trainable ? ' · trainable' : ''}` },
        h('b', { text: role.name }),
        ` ${fmt.num(role.rewardMean)}`,
        role.passAt1 === null ? null : h('span', { class: 'muted', text: ` · pass@1 ${fmt.pct(role.passAt1)}` }),
      ),
    ),
  );
}

/**
 * The A/B picker: a radio per run and side, the compare button (a link only when two different
 * runs are picked) and a note of the pick. `update` refreshes the button and the note.
 */
function abPicker(runs: RunListEntry[]) {
  const picked = { a: runs[1]?.name ?? runs[0]?.name ?? '', b: runs[0]?.name ?? '' };
  const compareButton = h('a', { class: 'btn compare', text: 'Compare A with B' });
  const pickNote = h('span', { class: 'muted small pick-note' });
  const update = () => {
    const ok = picked.a !== '' && picked.b !== '' && picked.a !== picked.b;
    compareButton.classList.toggle('disabled', !ok);
    if (ok) compareButton.setAttribute('href', `compare?a=${encodeURIComponent(picked.a)}&b=${encodeURIComponent(picked.b)}`);
    else compareButton.removeAttribute('href');
    pickNote.textContent = ok ? `A: ${picked.a} · B: ${picked.b}` : 'pick two different runs as A and B';
  };
  const radio = (side: 'a' | 'b', name: string) =>
    h('input', {
      type: 'radio',
      name: side,
      value: name,
      'aria-label': `${side.toUpperCase()}: ${name}`,
      checked: picked[side] === name,
      onchange: () => {
        picked[side] = name;
        update();
      },
    });
  return { compareButton, pickNote, radio, update };
}

/** One run's row: its A and B radios, its link, and its totals (or why it could not be read). */
function runRow(run: RunListEntry, radio: (side: 'a' | 'b', name: string) => HTMLElement): HTMLElement {
  return h(
    'tr',
    { 'data-run': run.name, class: run.error ? 'failed' : '' },
    h('td', { class: 'pick' }, radio('a', run.name)),
    h('td', { class: 'pick' }, radio('b', run.name)),
    h('td', {}, h('a', { class: 'run-link', href: runHref(run.name), text: run.name })),
    run.error
      ? h('td', { class: 'err-text', colspan: 7, text: `unreadable: ${run.error}` })
      : [
          h('td', { class: 'muted', text: run.envs.join(', ') }),
          h('td', { class: 'muted', text: run.models.join(', ') }),
          h('td', {
            class: 'num',
            text: `${fmt.int(run.episodes)} (${fmt.pct(run.episodes ? run.okEpisodes / run.episodes : null)} ok)`,
          }),
          h('td', {}, roleCell(run)),
          h('td', { class: 'num', text: fmt.tokens(run.tokens) }),
          h('td', { class: 'num', text: fmt.cost(run.cost) }),
          h('td', { class: 'muted small', text: new Date(run.modifiedAt).toISOString().slice(0, 16).replace('T', ' ') }),
        ],
  );
}

/** Mounts the runs list into `app`. */
export function runsPage(options: { app: HTMLElement; data: RunsPageData }): void {
  const { app, data } = options;
  const { topbar: bar } = topbar({ title: data.folder, titleHint: 'folder of runs', meta: `${fmt.int(data.runs.length)} runs` });
  const picker = abPicker(data.runs);
  const rows = data.runs.map((run) => runRow(run, picker.radio));
  const table = h(
    'table',
    { class: 'mini-table runs-table' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ['A', 'B', 'run', 'env', 'model', 'episodes', 'reward by role', 'tokens', 'cost', 'modified'].map((label) =>
          h('th', { text: label }),
        ),
      ),
    ),
    h('tbody', {}, rows),
  );
  const card = h(
    'section',
    { class: 'card runs-card' },
    h(
      'div',
      { class: 'card-head' },
      h('h3', { text: 'Runs' }),
      h('span', { class: 'spacer' }),
      picker.pickNote,
      picker.compareButton,
    ),
    data.runs.length ? table : h('p', { class: 'muted', text: 'No run directory in this folder.' }),
  );
  app.append(bar, h('main', { class: 'view runs-view' }, h('div', { class: 'summary' }, card)));
  document.title = `${data.folder} · troupe`;
  picker.update();
}
