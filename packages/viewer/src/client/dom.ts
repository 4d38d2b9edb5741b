// DOM helpers. Everything user-provided is written with textContent, never parsed as HTML.

/** A child of `h`: nodes, text, nested arrays; null, undefined and false are skipped. */
export type Child = Node | string | number | null | undefined | false | Child[];

/** Attribute values; null, undefined and false leave the attribute out, true sets it empty. */
export type Props = Record<string, unknown>;

/** Creates an element. `props`: class, text, style, on<event> listeners, other attributes. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props?: Props | null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (props) {
    for (const key in props) {
      const value = props[key];
      if (value === undefined || value === null || value === false) continue;
      if (key === 'class') el.className = String(value);
      else if (key === 'text') el.textContent = String(value);
      else if (key === 'style') el.style.cssText = String(value);
      else if (key.startsWith('on')) el.addEventListener(key.slice(2), value as EventListener);
      else el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  appendChildren(el, children);
  return el;
}

function appendChildren(el: Element, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) appendChildren(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

const SVG = 'http://www.w3.org/2000/svg';

/** Creates an SVG element with attributes. */
export function s(tag: string, attrs?: Record<string, string | number> | null, ...children: (Node | null)[]): SVGElement {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs ?? {})) el.setAttribute(key, String(value));
  for (const child of children) if (child) el.append(child);
  return el;
}

/** Parses the JSON of a `<script type="application/json" id=...>` element. */
export function readJsonScript<T>(id: string): T {
  const el = document.getElementById(id);
  // bare-error: browser page code: shown in the page, never thrown to a caller of troupe
  if (!el) throw new Error(`the page has no #${id} data`);
  return JSON.parse(el.textContent ?? 'null') as T;
}
