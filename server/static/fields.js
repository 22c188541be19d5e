// The controls of a card whose state outlives a poll: buttons that say when their request
// is in flight, and fields whose text (a draft) is kept while the list is drawn again.

import { h, idFor } from "./dom.js";
import { state } from "./state.js";

export function button(text, focusKey, busy, describedBy, onClick, kind = "") {
  return h("button", { type: "button", class: kind, disabled: busy, "data-focus": focusKey, "aria-describedby": describedBy, on: { click: onClick } }, text);
}

export function draftInput(tag, id, draftKey, props) {
  const refused = state.invalid.get(id);
  return h(tag, {
    id,
    ...props,
    autocomplete: "off",
    value: state.drafts.get(draftKey) ?? "",
    "data-focus": draftKey,
    "aria-invalid": refused ? "true" : null,
    "aria-describedby": refused ? idFor("note", refused) : null,
    on: {
      input: (e) => {
        state.drafts.set(draftKey, e.target.value);
        if (state.invalid.delete(id)) e.target.removeAttribute("aria-invalid");
      },
    },
  });
}

export function draft(key) {
  return state.drafts.get(key) ?? "";
}

/** The props of a <details> whose being open (`key`) outlives a poll. */
export function folded(key) {
  const toggle = (e) => (e.target.open ? state.open.add(key) : state.open.delete(key));
  return { open: state.open.has(key), on: { toggle } };
}

/** The answer last said about `key` (a run, a call, a run's review or notes), if any. */
export function told(key) {
  const said = state.notes.get(key);
  if (!said) return null;
  return h("p", { class: `note-${said.tone}`, id: idFor("note", key), role: said.alert ? "alert" : null }, said.text);
}
