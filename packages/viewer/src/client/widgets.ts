// Small building blocks shared by the views: chips, badges, KPIs, bars, JSON blocks.
import { type Child, h } from './dom.ts';
import { fmt } from './format.ts';
import type { Roles } from './roles.ts';

export function rewardChip(roles: Roles, value: number | null | undefined, role: string): HTMLElement {
  if (value === null || value === undefined)
    return h('span', { class: 'reward-chip none', text: '—', title: 'no reward (unscored or errored)' });
  let cls: string;
  if (roles.unit(role)) cls = value >= 0.999 ? 'good' : value <= 0.001 ? 'bad' : 'mid';
  else cls = value > 0 ? 'good' : value < 0 ? 'bad' : 'mid';
  return h('span', { class: `reward-chip ${cls}`, text: fmt.num(value) });
}

export function badge(text: string, cls?: string, title?: string): HTMLElement {
  return h('span', { class: `badge ${cls || ''}`, text, title });
}

export function prettyJson(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

export function jsonDetails(label: string, value: unknown, open?: boolean): HTMLElement {
  return h(
    'details',
    { class: 'json', open: open || undefined },
    h('summary', { text: label }),
    h('pre', { class: 'code', text: prettyJson(value) }),
  );
}

export function kpi(label: string, value: string, sub?: string | null, cls?: string): HTMLElement {
  return h(
    'div',
    { class: `kpi ${cls || ''}` },
    h('div', { class: 'kpi-label', text: label }),
    h('div', { class: 'kpi-value', text: value }),
    sub ? h('div', { class: 'kpi-sub', text: sub }) : null,
  );
}

export function barList(entries: [string, number][], total: number, cls?: string): HTMLElement {
  return h(
    'div',
    { class: 'bar-list' },
    entries.map(([label, count]) =>
      h(
        'div',
        { class: 'bar-row', title: `${label}: ${count}` },
        h('span', { class: 'bar-label', text: label }),
        h(
          'span',
          { class: 'bar-track' },
          h('span', { class: `bar-fill ${cls || ''}`, style: `width:${total ? (100 * count) / total : 0}%` }),
        ),
        h('span', { class: 'bar-count', text: fmt.int(count) }),
      ),
    ),
  );
}

/** A labelled row of chips (`pass@k`, `rewards`, `metrics`). */
export function chipRow(label: string, chips: Child[]): HTMLElement {
  return h('div', { class: 'chips' }, h('span', { class: 'chips-label', text: label }), chips);
}

/** A panel shown in place of a view that cannot be shown (not found, failed to load). */
export function problemCard(title: string, message: string, back?: { href: string; text: string }): HTMLElement {
  return h(
    'div',
    { class: 'card pad' },
    h('h2', { text: title }),
    h('p', { class: 'err-text', text: message }),
    back ? h('a', { class: 'btn', href: back.href, text: back.text }) : null,
  );
}
