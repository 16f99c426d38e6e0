// Minimal element builders for the page: plain DOM and SVG, no framework.
type Attrs = Record<string, string | number | boolean | undefined>;
type Child = Node | string | null | undefined | false;

function apply(e: Element, attrs: Attrs, children: Child[]): void {
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== false) e.setAttribute(k, v === true ? '' : String(v));
  for (const c of children) if (c !== null && c !== undefined && c !== false) e.append(c);
}

/** An HTML element with attributes and children (falsy children are skipped). */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  apply(e, attrs, children);
  return e;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/** An SVG element with attributes and children. */
export function s<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): SVGElementTagNameMap[K] {
  const e = document.createElementNS(SVG_NS, tag) as SVGElementTagNameMap[K];
  apply(e, attrs, children);
  return e;
}
