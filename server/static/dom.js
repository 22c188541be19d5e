// A small element builder: every text goes in as text, never as HTML.

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
      element.textContent = value;
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
    else element.append(child instanceof Node ? child : String(child));
  }
}

export const $ = (selector, root = document) => root.querySelector(selector);
export const $$ = (selector, root = document) => [...root.querySelectorAll(selector)];

/** A DOM id for any string (run ids, tool call ids), stable for one string. */
export function idFor(...parts) {
  return parts.map((p) => String(p ?? "").replace(/[^A-Za-z0-9_-]/g, "_")).join("--");
}
