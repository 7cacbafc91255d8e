// A small DOM builder. Everything the pages show goes through `h` and `text`: strings become
// Text nodes and attributes are set one by one, so data from the API (prompts, completions,
// names, tags) is never parsed as HTML.

export type Child = Node | string | number | null | undefined | false | readonly Child[];

type AttrValue = string | number | boolean | null | undefined;
export type Attrs = { [name: string]: AttrValue | ((ev: Event) => void) };

function append(parent: Node, child: Child): void {
  if (child === null || child === undefined || child === false) return;
  if (Array.isArray(child)) {
    for (const c of child as readonly Child[]) append(parent, c);
    return;
  }
  parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
}

/** Create an element: `h('a', { href: '#/usage', class: 'nav' }, 'Usage')`. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attrs | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [name, value] of Object.entries(attrs)) {
      if (typeof value === 'function') {
        el.addEventListener(name.replace(/^on/, '').toLowerCase(), value);
      } else if (value === true) {
        el.setAttribute(name, '');
      } else if (value !== false && value !== null && value !== undefined) {
        if (name === 'href' && !/^(#|\/(?!\/))/.test(String(value))) throw new Error(`refusing href ${String(value)}`);
        el.setAttribute(name, String(value));
      }
    }
  }
  for (const c of children) append(el, c);
  return el;
}

/** Replace an element's children. */
export function replace(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  for (const c of children) append(el, c);
}

/**
 * An identifier with line-break opportunities (`<wbr>`) after `/`, `_` and `.`, so a narrow
 * table cell breaks `test/model` or `upstream_overloaded` between their parts, not mid-word.
 */
export function breakable(text: string): Child[] {
  return text.split(/(?<=[/_.])/).flatMap((part, i) => (i === 0 ? [part] : [h('wbr'), part]));
}

/** A `<pre>` holding text exactly as given (whitespace kept, nothing interpreted). */
export function pre(text: string, cls = 'text'): HTMLPreElement {
  const el = h('pre', { class: cls });
  el.textContent = text;
  return el;
}

/** Form field value by name (trimmed); '' when absent. */
export function field(form: HTMLFormElement, name: string): string {
  const el = form.elements.namedItem(name);
  if (el instanceof HTMLInputElement || el instanceof HTMLSelectElement || el instanceof HTMLTextAreaElement) return el.value.trim();
  return '';
}

/** A labelled form control. */
export function labelled(label: string, control: HTMLElement, hint?: string): HTMLLabelElement {
  return h('label', { class: 'field' }, h('span', { class: 'field-label' }, label), control, hint ? h('span', { class: 'hint' }, hint) : null);
}

/** A `<select>` with options `[value, label]`, `selected` preselected. */
export function select(name: string, options: readonly (readonly [string, string])[], selected: string, attrs: Attrs = {}): HTMLSelectElement {
  return h('select', { name, ...attrs }, options.map(([value, label]) => h('option', { value, selected: value === selected }, label)));
}

/** Copy text to the clipboard; falls back to a hidden textarea where the async API is missing. */
export async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = h('textarea', { class: 'offscreen', readonly: true });
    area.value = text;
    document.body.appendChild(area);
    area.select();
    const ok = document.execCommand('copy');
    area.remove();
    return ok;
  }
}
