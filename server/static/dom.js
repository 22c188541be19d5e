// A small element builder: every text goes in as text, never as HTML, and with its
// invisible characters shown (see `shown`).

/**
 * Bidirectional controls and zero-width characters: text an agent or a caller wrote can
 * use them to look like other text (an argument that reads "/tmp/safe" but is not), so
 * they are never rendered as they are.
 */
const INVISIBLE = /[\u00AD\u061C\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/g;
const PLAIN_ONLY = new Set(["OPTION", "TEXTAREA", "TITLE"]);

/** `\u202e` for U+202E. */
export function escaped(char) {
  return `\\u${char.codePointAt(0).toString(16).padStart(4, "0")}`;
}

/**
 * The text as nodes, each invisible character as its escape in a marked span
 * (`<span class="invisible-char">\u202e</span>`), so it shows where it is.
 */
export function shown(text) {
  const nodes = [];
  let last = 0;
  for (const match of text.matchAll(INVISIBLE)) {
    if (match.index > last) nodes.push(document.createTextNode(text.slice(last, match.index)));
    const mark = document.createElement("span");
    mark.className = "invisible-char";
    mark.title = `an invisible character, U+${match[0].codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}`;
    mark.textContent = escaped(match[0]);
    nodes.push(mark);
    last = match.index + match[0].length;
  }
  if (last < text.length) nodes.push(document.createTextNode(text.slice(last)));
  return nodes;
}

/**
 * h("button", {type: "button", class: "primary", on: {click}}, "Approve")
 * Props: `class`, `text`, `on` (event handlers), `hidden`, `disabled`, `checked`, `value`,
 * `open`; anything else is set as an attribute (`for`, `aria-*`, `data-*`, ...). Null,
 * undefined and false props and children are left out.
 */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "on") {
      for (const [event, handler] of Object.entries(value)) element.addEventListener(event, handler);
    } else if (name === "class") {
      element.className = value;
    } else if (name === "text") {
      append(element, [value]);
    } else if (["hidden", "disabled", "checked", "value", "open"].includes(name)) {
      element[name] = value;
    } else {
      element.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(element, child);
    else if (child instanceof Node) element.append(child);
    else if (PLAIN_ONLY.has(element.tagName)) element.append(String(child).replace(INVISIBLE, escaped));
    else element.append(...shown(String(child)));
  }
}

export const $ = (selector, root = document) => root.querySelector(selector);
export const $$ = (selector, root = document) => [...root.querySelectorAll(selector)];

/** A DOM id for any string (run ids, tool call ids), stable for one string. */
export function idFor(...parts) {
  return parts.map((p) => String(p ?? "").replace(/[^A-Za-z0-9_-]/g, "_")).join("--");
}

/** Replace the element's text, with its invisible characters shown. */
export function setText(element, text) {
  element.replaceChildren(...shown(String(text ?? "")));
}
