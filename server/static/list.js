// The list of runs as cards, updated in place, and the agent filter's options.

import { runCard, runtimeName } from "./cards.js";
import { $, h } from "./dom.js";
import { state } from "./state.js";
import { whyOf } from "./why.js";

let wantFocus = null; // {key, run}: the element (data-focus) that had focus before a render
const cards = new Map(); // run id -> {card, signature}

/** The agent filter's options: every agent, with how many of its runs wait. */
export function showAgents(agents) {
  const select = $("#f-agent");
  const signature = JSON.stringify(agents);
  if (select.dataset.signature === signature) return;
  select.dataset.signature = signature;
  const current = state.filters.agent;
  const options = agents.map((a) =>
    h("option", { value: a.id }, `${a.id} (${runtimeName(a.runtime)}, ${a.suspendedRuns} waiting)`),
  );
  if (current && !agents.some((a) => a.id === current)) options.push(h("option", { value: current }, current));
  select.replaceChildren(h("option", { value: "" }, "All agents"), ...options);
  select.value = current;
}

function cardSignature(run) {
  const mine = (key) => key === run.runId || key.startsWith(`${run.runId}/`);
  return JSON.stringify([
    run,
    state.view,
    state.role,
    state.roleKnown,
    state.selected.has(run.runId),
    [...state.busy].filter(mine),
    [...state.notes].filter(([key]) => mine(key)),
    [...state.open].filter(mine),
    whyOf(run),
  ]);
}

/** Cards updated in place: a card is rebuilt only when its run (or what the page shows
 * about it) changed, so that polling never takes away what the user is typing or where
 * the keyboard focus is. */
export function renderList(runs, act) {
  const container = $("#runs");
  const focused = document.activeElement;
  if (focused?.dataset?.focus) {
    wantFocus = { key: focused.dataset.focus, run: focused.closest("article.run")?.dataset.run };
  }
  const before = [...cards.keys()];
  let previous = null;
  for (const run of runs) {
    const signature = cardSignature(run);
    let entry = cards.get(run.runId);
    if (!entry || entry.signature !== signature) {
      const card = runCard(run, act);
      entry?.card.replaceWith(card);
      entry = { card, signature };
      cards.set(run.runId, entry);
    }
    const next = previous ? previous.nextElementSibling : container.firstElementChild;
    if (next !== entry.card) container.insertBefore(entry.card, next);
    previous = entry.card;
  }
  const shown = new Set(runs.map((run) => run.runId));
  for (const [id, entry] of cards) {
    if (!shown.has(id)) {
      entry.card.remove();
      cards.delete(id);
    }
  }
  restoreFocus(before);
}

/** Focus back where it was before a card was rebuilt; when its run left the list, on the
 * next run's heading (else the list's). */
function restoreFocus(before) {
  if (!wantFocus) return;
  const active = document.activeElement;
  if (active && active !== document.body && active.dataset?.focus !== wantFocus.key) {
    wantFocus = null; // the user moved on
    return;
  }
  const target = document.querySelector(`[data-focus="${CSS.escape(wantFocus.key)}"]`);
  if (target?.disabled) return; // its request is in flight: focused again once it is back
  if (target) {
    if (target !== active) target.focus();
  } else {
    const gone = before.indexOf(wantFocus.run);
    const near = [...before.slice(gone + 1), ...before.slice(0, gone).reverse()];
    const id = cards.has(wantFocus.run) ? wantFocus.run : near.find((run) => cards.has(run));
    (id ? cards.get(id).card.querySelector("h3") : $("#runs-heading")).focus();
  }
  wantFocus = null;
}

export function clearCards() {
  for (const entry of cards.values()) entry.card.remove();
  cards.clear();
}
