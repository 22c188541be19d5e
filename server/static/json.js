// JSON shown readably: short values on one line, objects and arrays as lists of their
// members, and long values folded (<details>) so that one large payload does not push
// every other run off the screen.

import { h } from "./dom.js";

const INLINE = 72; // a value whose JSON is at most this long is shown on one line
const FOLD = 360; // a nested value longer than this is folded
const FOLD_TOP = 2400; // and so is a whole value longer than this
const LONG_STRING = 2000; // a string longer than this shows its start, and the rest on demand
const STRING_START = 600;

export function renderJson(value, depth = 0) {
  if (value === null || typeof value !== "object") return scalar(value);
  const compact = JSON.stringify(value);
  if (compact.length <= INLINE) return h("code", { class: "json json-inline" }, compact);
  const members = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  const list = h(
    "dl",
    { class: "json json-members" },
    members.map(([key, member]) => [
      h("dt", {}, Array.isArray(value) ? `[${key}]` : key),
      h("dd", {}, renderJson(member, depth + 1)),
    ]),
  );
  if (shownLength(value) <= (depth === 0 ? FOLD_TOP : FOLD)) return list;
  const what = Array.isArray(value) ? `${members.length} items` : `${members.length} keys`;
  return h(
    "details",
    { class: "json-fold" },
    h("summary", {}, `${Array.isArray(value) ? "[…]" : "{…}"} ${what}, ${compact.length} characters`),
    list,
  );
}

function scalar(value) {
  if (typeof value === "string" && value.length > LONG_STRING) return longString(value);
  if (typeof value === "string" && value.length > INLINE) {
    return h("pre", { class: "json json-string" }, value); // a question is read whole
  }
  const type = value === null ? "null" : typeof value;
  return h("code", { class: `json json-${type}` }, JSON.stringify(value) ?? "undefined");
}

/** How long a value shows: a long string counts as its start (the rest is on demand). */
function shownLength(value) {
  const shown = (key, member) =>
    typeof member === "string" && member.length > LONG_STRING ? member.slice(0, STRING_START) : member;
  return JSON.stringify(value, shown).length;
}

/** A long text: its start is shown, and says how much more there is ("Show all"). */
function longString(value) {
  return h(
    "div",
    { class: "json-long" },
    h("pre", { class: "json json-string" }, `${value.slice(0, STRING_START)}…`),
    h(
      "details",
      { class: "json-fold" },
      h("summary", {}, `Show all ${value.length} characters`),
      h("pre", { class: "json json-string" }, value),
    ),
  );
}

/** The value as pretty JSON, for a text area the user edits. */
export function pretty(value) {
  return JSON.stringify(value ?? {}, null, 2);
}

/**
 * The text parsed as JSON: {ok: true, value} or {ok: false, message}. Checked here, in the
 * page, before anything is sent.
 */
export function parseJson(text) {
  if (!text.trim()) return { ok: false, message: "Enter a JSON value, for example {\"name\": \"Lisbon\"}." };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return { ok: false, message: `This is not JSON: ${error.message}` };
  }
}
