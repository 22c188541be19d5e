// Reviewing together, on a run's card: who reviews it until when, a review started, ended
// or handed over, and the run's notes. A note is what a person wrote: shown as text (h()
// appends text, never HTML), its line breaks kept.

import { ago, clock, until } from "./answers.js";
import { h } from "./dom.js";
import { button, draft, draftInput, folded, told } from "./fields.js";
import { may, state } from "./state.js";

/**
 * The card's part of reviews and notes. `deciding`: the run waits here (review controls
 * are offered); `act.review(run, action, input, key, draftKey)` sends one.
 */
export function reviewing(run, id, act, deciding) {
  const waiting = run.status === "SUSPENDED";
  return h(
    "section",
    { class: "reviewing", "aria-label": "Review and notes" },
    deciding && waiting && may("APPROVER") ? controls(run, id, act) : null,
    notes(run, id, act),
  );
}

/** Whether the reader reviews the run now. */
export function reviewedByMe(run) {
  return Boolean(run.inReviewBy) && run.inReviewBy === state.person;
}

/** "Being reviewed by key:bob until 14:05 (in 12 min).", in the card's head. */
export function inReview(run) {
  if (!run.inReviewBy || run.status !== "SUSPENDED") return null;
  const iso = run.inReviewUntil;
  const who = reviewedByMe(run) ? "You are reviewing it" : `Being reviewed by ${run.inReviewBy}`;
  return h(
    "p",
    { class: "in-review" },
    `${who} until ${clock(iso)} (`,
    h("time", { datetime: iso, title: new Date(iso).toLocaleString(), "data-until": iso }, until(iso)),
    ").",
  );
}

function controls(run, id, act) {
  const key = `${run.runId}/review`;
  const busy = state.busy.has(key);
  const mine = reviewedByMe(run);
  const other = Boolean(run.inReviewBy) && !mine;
  const title = `${id}-title`;
  const send = (action, input = {}, draftKey = null) =>
    act.review(run, action, { runId: run.runId, ...input }, key, draftKey);
  const toId = `${id}-hand-over`;
  return h(
    "div",
    { class: "controls review-controls" },
    h(
      "div",
      { class: "actions" },
      other ? null : button(mine ? "Extend review" : "Start review", `${key}/start`, busy, title, () => send("START_REVIEW")),
      mine || (other && may("ADMIN")) ? button("End review", `${key}/end`, busy, title, () => send("END_REVIEW")) : null,
    ),
    mine || may("ADMIN")
      ? h(
          "details",
          { class: "hand-over", ...folded(`${key}/to`) },
          h("summary", { "data-focus": `${key}/to/summary` }, "Hand over to a colleague"),
          h("label", { for: toId }, "Hand over to (person:, key:, group:; commas between)"),
          draftInput("input", toId, `${key}/to`, { type: "text", placeholder: "person:bob, group:billing" }),
          button("Hand over", `${key}/assign`, busy, title, () => send("ASSIGN", { to: names(draft(`${key}/to`)) }, `${key}/to`)),
        )
      : null,
    told(key),
  );
}

function names(text) {
  return text.split(",").map((name) => name.trim()).filter(Boolean);
}

function notes(run, id, act) {
  const list = run.notes ?? [];
  const key = `${run.runId}/notes`;
  const busy = state.busy.has(key);
  const areaId = `${id}-note`;
  return h(
    "div",
    { class: "run-notes" },
    list.length ? h("h4", {}, "Notes") : null,
    list.length ? h("ol", { class: "note-list" }, list.map((note) => noteItem(run, note, act, key, busy))) : null,
    may("APPROVER")
      ? h(
          "details",
          { class: "add-note", ...folded(`${key}/draft`) },
          h("summary", { "data-focus": `${key}/draft/summary` }, "Add a note"),
          h("label", { for: areaId }, "Note (plain text, shown to everyone who sees the run)"),
          draftInput("textarea", areaId, `${key}/draft`, { rows: 2 }),
          button("Add note", `${key}/add`, busy, `${id}-title`, () =>
            act.review(run, "ADD_NOTE", { runId: run.runId, body: draft(`${key}/draft`) }, key, `${key}/draft`),
          ),
        )
      : null,
    told(key),
  );
}

function noteItem(run, note, act, key, busy) {
  const own = note.author === state.person;
  return h(
    "li",
    { class: "run-note", "data-note": note.id },
    h("p", { class: "note-body" }, note.body),
    h(
      "p",
      { class: "note-meta" },
      `${own ? "You" : note.author}, `,
      h("time", { datetime: note.at, title: new Date(note.at).toLocaleString(), "data-since": note.at, "data-verb": "" }, ago(note.at)),
      " ",
      (own || may("ADMIN")) && may("APPROVER")
        ? button("Delete note", `${key}/delete/${note.id}`, busy, null, () =>
            act.review(run, "DELETE_NOTE", { noteId: note.id }, key, null),
          )
        : null,
    ),
  );
}
