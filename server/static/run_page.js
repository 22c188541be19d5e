// What the page of one run (/runs/<runId>) adds to its card: the conversation that led to
// its pending calls (why the agent asks), and its timeline from the decision log.

import { ago, pastTense } from "./answers.js";
import { h } from "./dom.js";
import { renderJson } from "./json.js";

const ROLE = { USER: "User", ASSISTANT: "Agent", TOOL: "Tool", SYSTEM: "System" };
// Outcomes that say nothing beyond the action; actions whose `reason` says something else.
const DONE = new Set(["RunDecided", "Applied", "ReviewStarted", "ReviewEnded", "RunAssigned", "NoteAdded", "NoteDeleted"]);
const NOTED = new Set(["ADD_NOTE", "DELETE_NOTE"]); // the note's id
const REASON = { START_REVIEW: "", ASSIGN: "to " };

/** The run's last messages, oldest first; nothing once its snapshot is gone. */
export function conversation(run) {
  const messages = run.messages ?? [];
  return h(
    "section",
    { class: "conversation", "aria-label": "Conversation" },
    h("h4", {}, "Conversation"),
    messages.length
      ? h("ol", { class: "messages" }, messages.map(message))
      : h("p", { class: "none" }, "No messages: the run's snapshot is gone, or holds none."),
  );
}

function message(item) {
  return h(
    "li",
    { class: `message role-${item.role.toLowerCase()}` },
    h("span", { class: "role" }, ROLE[item.role] ?? item.role),
    item.text ? h("div", { class: "text" }, renderJson(item.text)) : null,
    (item.toolCalls ?? []).map((call) =>
      h("div", { class: "asked" }, "Calls ", h("code", {}, call.toolName ?? "a tool"), " with ", renderJson(call.args)),
    ),
  );
}

/** Every decision asked about the run and every operator action, oldest first. */
export function timeline(run) {
  const records = run.timeline ?? [];
  return h(
    "section",
    { class: "timeline", "aria-label": "Timeline" },
    h("h4", {}, "Timeline"),
    h("ol", { class: "events" }, [
      h("li", {}, `Created ${ago(run.createdAt)}`),
      run.suspendedAt ? h("li", {}, `Suspended ${ago(run.suspendedAt)}`) : null,
      ...records.map((record) =>
        h(
          "li",
          { class: `event outcome-${record.outcome}` },
          `${record.decidedBy} ${pastTense(record.action)}`,
          record.reason && !NOTED.has(record.action) ? ` (${REASON[record.action] ?? "reason: "}${record.reason})` : "",
          DONE.has(record.outcome) ? "" : `: ${record.outcome}`,
          `, ${ago(record.decidedAt)}`,
        ),
      ),
    ]),
  );
}
