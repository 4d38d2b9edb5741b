// Per-token display of a sampled node: every token id of the node (the prompt scaffold since the
// previous sampled node, then the sampled completion), its loss mask, the inference logprob
// (coloured by value) and, when a training algorithm set them, the advantages.
import { h } from './dom.ts';
import { fmt } from './format.ts';
import type { MessageNode } from './types.ts';

/** One token of a node, with what the trace records about it. */
export interface TokenInfo {
  /** Position in the node's `tokenIds`. */
  position: number;
  id: number;
  /** True on sampled completion tokens (the loss mask). */
  sampled: boolean;
  /** Inference logprob (sampled tokens only). */
  logprob: number | null;
  /** Advantage (sampled tokens of a training run only). */
  advantage: number | null;
}

/** The node's tokens with mask, logprob and advantage aligned (logprobs/advantages are per sampled token). */
export function nodeTokens(node: MessageNode): TokenInfo[] {
  const ids = node.tokenIds ?? [];
  const out: TokenInfo[] = [];
  let sampledIndex = 0;
  for (let position = 0; position < ids.length; position++) {
    const sampled = node.mask ? node.mask[position] === true : true;
    const logprob = sampled ? (node.logprobs?.[sampledIndex] ?? null) : null;
    const advantage = sampled ? ((node.advantages !== undefined ? node.advantages[sampledIndex] : node.advantage) ?? null) : null;
    if (sampled) sampledIndex++;
    out.push({ position, id: ids[position]!, sampled, logprob, advantage });
  }
  return out;
}

/** Background colour for a logprob: red (p → 0) through yellow to green (p = 1). */
export function logprobColor(logprob: number): string {
  const p = Math.exp(Math.min(0, logprob));
  return `hsl(${Math.round(120 * p)} 70% 80%)`;
}

/** Background colour for an advantage: blue above 0, red below, by |advantage| / `scale`. */
export function advantageColor(advantage: number, scale: number): string {
  const t = scale > 0 ? Math.min(1, Math.abs(advantage) / scale) : 0;
  const hue = advantage >= 0 ? 215 : 0;
  return `hsl(${hue} 80% ${Math.round(96 - 36 * t)}%)`;
}

type ColourBy = 'logprob' | 'advantage';

function tokenTitle(token: TokenInfo, version: string | null): string {
  const parts = [`token ${token.position}: id ${token.id}`, token.sampled ? 'sampled (mask 1)' : 'prompt (mask 0)'];
  if (token.logprob !== null) parts.push(`logprob ${token.logprob.toFixed(4)} (p ${Math.exp(token.logprob).toFixed(3)})`);
  if (token.advantage !== null) parts.push(`advantage ${fmt.num(token.advantage, 4)}`);
  if (version !== null) parts.push(`policy v${version}`);
  return parts.join(' · ');
}

function statLine(tokens: TokenInfo[], version: string | null): string {
  const sampled = tokens.filter((t) => t.sampled);
  const logprobs = sampled.map((t) => t.logprob).filter((v): v is number => v !== null);
  const advantages = sampled.map((t) => t.advantage).filter((v): v is number => v !== null);
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
  const parts = [`${fmt.int(tokens.length - sampled.length)} prompt`, `${fmt.int(sampled.length)} sampled`];
  if (logprobs.length) parts.push(`mean logprob ${fmt.num(mean(logprobs))}`, `min ${fmt.num(Math.min(...logprobs))}`);
  if (advantages.length) parts.push(`mean advantage ${fmt.num(mean(advantages))}`);
  parts.push(version === null ? 'policy version not recorded' : `policy v${version}`);
  return parts.join(' · ');
}

function paint(grid: HTMLElement, tokens: TokenInfo[], by: ColourBy, scale: number): void {
  const spans = grid.children;
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    const el = spans[i] as HTMLElement;
    let color = '';
    if (by === 'logprob' && token.logprob !== null) color = logprobColor(token.logprob);
    else if (by === 'advantage' && token.advantage !== null) color = advantageColor(token.advantage, scale);
    el.style.background = color;
  }
  grid.dataset.colour = by;
}

function legend(by: ColourBy, scale: number): HTMLElement {
  if (by === 'advantage')
    return h(
      'span',
      { class: 'tok-legend' },
      h('span', { class: 'tok', style: `background:${advantageColor(-scale, scale)}`, text: fmt.num(-scale) }),
      h('span', { class: 'tok', style: `background:${advantageColor(0, scale)}`, text: '0' }),
      h('span', { class: 'tok', style: `background:${advantageColor(scale, scale)}`, text: `+${fmt.num(scale)}` }),
    );
  return h(
    'span',
    { class: 'tok-legend' },
    [0.05, 0.5, 0.95].map((p) => h('span', { class: 'tok', style: `background:${logprobColor(Math.log(p))}`, text: `p ${p}` })),
  );
}

/** The token grid of a node, with a colour-by switch (logprob, or advantage when recorded). */
export function tokenGrid(node: MessageNode, version: string | null): HTMLElement {
  const tokens = nodeTokens(node);
  const hasAdvantages = tokens.some((t) => t.advantage !== null);
  const scale = Math.max(0, ...tokens.map((t) => Math.abs(t.advantage ?? 0)));
  const grid = h(
    'div',
    { class: 'tok-grid' },
    tokens.map((t) =>
      h('span', {
        class: `tok ${t.sampled ? 'sampled' : 'prompt'}`,
        'data-token': t.id,
        'data-mask': t.sampled ? 1 : 0,
        'data-logprob': t.logprob ?? undefined,
        'data-advantage': t.advantage ?? undefined,
        title: tokenTitle(t, version),
        text: t.id,
      }),
    ),
  );
  const legendSlot = h('span', {});
  const colourBy = (by: ColourBy) => {
    paint(grid, tokens, by, scale);
    legendSlot.replaceChildren(legend(by, scale));
  };
  const select = h(
    'select',
    { name: 'colour-by', 'aria-label': 'colour tokens by', onchange: () => colourBy(select.value as ColourBy) },
    h('option', { value: 'logprob', text: 'logprob' }),
    hasAdvantages ? h('option', { value: 'advantage', text: 'advantage' }) : null,
  );
  const view = h(
    'div',
    { class: 'tok-view' },
    h(
      'div',
      { class: 'tok-bar small' },
      h('span', { class: 'muted tok-stats', text: statLine(tokens, version) }),
      h('span', { class: 'spacer' }),
      h('label', { class: 'muted' }, 'colour by ', select),
      legendSlot,
    ),
    grid,
    h('div', {
      class: 'muted small',
      text: 'Token ids as the server returned them; grey: prompt tokens (mask 0), not trained on.',
    }),
  );
  colourBy('logprob');
  return view;
}

/** A folded "Tokens" block of a sampled node; the grid is built when first opened. */
export function tokenDetails(node: MessageNode, version: string | null): HTMLElement {
  const tokens = node.tokenIds ?? [];
  const sampled = node.mask ? node.mask.filter(Boolean).length : tokens.length;
  const body = h('div', {});
  const el = h(
    'details',
    { class: 'tokens', 'data-testid': 'tokens' },
    h('summary', {
      text: `Tokens · ${fmt.int(sampled)} sampled of ${fmt.int(tokens.length)}${node.advantages || node.advantage !== undefined ? ' · advantages' : ''}`,
    }),
    body,
  );
  el.addEventListener('toggle', () => {
    if (el.open && !body.childElementCount) body.append(tokenGrid(node, version));
  });
  return el;
}
