// A list card's "why": the first thing the run's user said, from its messages. Asked once
// per run, one run at a time, and kept: each costs the server a snapshot read, so a poll of
// the list asks for none of it.

import * as api from "./api.js";
import { h } from "./dom.js";
import { WHY } from "./queries.js";

const SHOWN_CHARS = 300; // the rest is in the line's title
const KEPT = 1000;
const known = new Map(); // run id -> the user's first words, or null: none to show
let asking = false;

/** Asks for the "why" of each run not known yet; `render()` once some are known. */
export async function learnWhy(runs, render) {
  if (asking) return;
  asking = true;
  try {
    for (const run of runs) {
      if (known.has(run.runId)) continue;
      const { data } = await api.query(WHY, { id: run.runId }, { once: true });
      const said = (data.agentRun?.messages ?? []).find((m) => m.role === "USER" && m.text?.trim());
      known.set(run.runId, said ? said.text.trim() : null);
      if (known.size > KEPT) known.delete(known.keys().next().value);
      render();
    }
  } catch {
    // asked again with the next page shown
  } finally {
    asking = false;
  }
}

/** What the card shows of it (also in the card's signature: it is drawn again once known). */
export function whyOf(run) {
  return known.get(run.runId) ?? null;
}

/** "User said: “please delete /tmp/customer.txt”", or nothing yet. */
export function whyLine(run) {
  const text = whyOf(run);
  if (!text) return null;
  const shown = text.length > SHOWN_CHARS ? `${text.slice(0, SHOWN_CHARS)}…` : text;
  return h("p", { class: "why", title: text }, h("span", { class: "why-label" }, "User said: "), h("q", {}, shown));
}
