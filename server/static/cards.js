// One run, as a card: who and where, how long it has waited, its tool calls with their
// arguments or suspend payload, and the actions the caller's role allows in this view.

import { ago, pastTense, until } from "./answers.js";
import { h, idFor } from "./dom.js";
import { button, draft, draftInput, folded, told } from "./fields.js";
import { pretty, renderJson } from "./json.js";
import { inReview, reviewedByMe, reviewing } from "./reviewing.js";
import { conversation, timeline } from "./run_page.js";
import { may, state } from "./state.js";
import { waits } from "./views.js";
import { whyLine } from "./why.js";

/**
 * `act` holds the handlers: decide(run, call, action, extra, key), operate(run, action,
 * reason, key), select(run, checked).
 */
export function runCard(run, act) {
  const id = idFor("run", run.runId);
  const card = h(
    "article",
    { class: `run status-${run.status.toLowerCase()}`, id, "aria-labelledby": `${id}-title`, "data-run": run.runId },
    header(run, id, act),
    h("ol", { class: "calls", "aria-label": "Tool calls" }, run.toolCalls.map((call) => callItem(run, call, act))),
    state.view === "recent" || state.view === "run" ? outcome(run) : null,
    state.view === "run" ? conversation(run) : null,
    state.view === "run" ? timeline(run) : null,
    reviewing(run, id, act, deciding(run)),
    state.view === "operator" || (state.view === "run" && needsOperator(run)) ? operatorActions(run, id, act) : null,
    told(run.runId),
  );
  return card;
}

/** Whether a run's pending calls may be decided here: the waiting view's, and a run shown
 * on its own page while it waits. */
function deciding(run) {
  return waits(state.view) || (state.view === "run" && run.status === "SUSPENDED");
}

function needsOperator(run) {
  return run.status === "STALLED" || run.outcomeUnknown;
}

function header(run, id, act) {
  const selectable = waits(state.view) && may("APPROVER");
  return h(
    "header",
    { class: "run-head" },
    selectable
      ? h(
          "span",
          { class: "select" },
          h("input", {
            type: "checkbox",
            id: `${id}-select`,
            checked: state.selected.has(run.runId),
            "data-focus": `${run.runId}/select`,
            "aria-describedby": `${id}-title`,
            on: { change: (event) => act.select(run, event.target.checked) },
          }),
          h("label", { for: `${id}-select` }, "Select"),
        )
      : null,
    h(
      "h3",
      { id: `${id}-title`, tabindex: "-1" },
      h("span", { class: "agent" }, run.agentId),
      " ",
      h("span", { class: `badge runtime-${run.runtime.toLowerCase()}` }, runtimeName(run.runtime)),
      waits(state.view) ? null : [" ", h("span", { class: "badge state" }, statusWords(run))],
    ),
    since(run),
    state.view === "run" ? null : whyLine(run),
    inReview(run),
    h(
      "dl",
      { class: "meta" },
      metaItem("Thread", run.threadId),
      metaItem("Resource", run.resourceId),
      metaItem("Run", run.runId),
    ),
    state.view === "run" ? null : pageLink(run, id),
  );
}

/** To the run's own page: its conversation and timeline. */
function pageLink(run, id) {
  const href = `/runs/${encodeURIComponent(run.runId)}`;
  return h("p", { class: "run-link" }, h("a", { href, "aria-describedby": `${id}-title` }, "The run's page: conversation and timeline"));
}

function statusWords(run) {
  if (run.status === "CANCELLED" && run.decidedBy) return `CANCELLED by ${run.decidedBy}`;
  return run.status === "RUNNING" && run.outcomeUnknown ? "RUNNING · outcome unknown" : run.status;
}

function metaItem(term, value) {
  return [h("dt", {}, term), h("dd", {}, value ? h("code", {}, value) : h("span", { class: "none" }, "none"))];
}

/** "suspended 3 min ago": kept current by the page's clock (data-since). */
function since(run) {
  const parts = [];
  const when = run.suspendedAt ?? run.createdAt;
  const verb = waits(state.view) ? "suspended" : "created";
  parts.push(timeAgo(verb, waits(state.view) ? when : run.createdAt));
  if (run.decidedAt) {
    parts.push(" · ", timeAgo(`decided${run.decidedBy ? ` by ${run.decidedBy}` : ""}`, run.decidedAt));
  }
  return h("p", { class: "age" }, parts);
}

/** A runtime as a reader names it. */
export function runtimeName(runtime) {
  return { PYTHON: "Python", MASTRA: "Mastra", LANGGRAPH: "LangGraph" }[runtime] ?? runtime;
}

export function timeAgo(verb, iso) {
  return h(
    "time",
    { datetime: iso, title: new Date(iso).toLocaleString(), "data-since": iso, "data-verb": verb },
    `${verb} ${ago(iso)}`,
  );
}

function callItem(run, call, act) {
  const id = idFor("call", run.runId, call.toolCallId);
  const approval = call.requiresApproval;
  return h(
    "li",
    { class: `call ${approval ? "approval" : "suspension"}` },
    h(
      "h4",
      { id: `${id}-title` },
      h("span", { class: "tool" }, call.toolName ?? "unnamed tool"),
      " ",
      call.decision
        ? h("span", { class: `badge decision decision-${call.decision.action.toLowerCase()}` }, decisionWords(call.decision))
        : h("span", { class: "kind" }, approval ? "needs approval" : "waits for data"),
    ),
    call.toolCallId ? h("p", { class: "call-id" }, "call ", h("code", {}, call.toolCallId)) : null,
    h("p", { class: "label" }, approval ? "Arguments" : "It asks"),
    h("div", { class: "payload" }, renderJson(approval ? call.args : call.suspendPayload)),
    !call.decision && call.editedArgs != null ? editedUnderReview(call.editedArgs) : null,
    !call.decision && approval ? review(call) : null,
    call.decision ? decided(call.decision) : null,
    !call.decision && call.expiresAt ? expires(call.expiresAt) : null,
    !call.decision && deciding(run) && may("APPROVER") ? decisionOrWhyNot(run, call, id, act) : null,
    told(`${run.runId}/${call.toolCallId}`),
  );
}

/** Arguments an approver edited under a quorum: what the next approvals approve. */
function editedUnderReview(args) {
  return h(
    "div",
    { class: "edited" },
    h("p", { class: "label" }, "Edited for approval (earlier approvals were void)"),
    h("div", { class: "payload" }, renderJson(args)),
  );
}

/** Who is asked to decide, and a quorum's progress: who approved, how many are still needed. */
function review(call) {
  const parts = [];
  if (call.assignedTo?.length) parts.push(`Assigned to ${call.assignedTo.join(", ")}.`);
  if ((call.approvalsRequired ?? 1) > 1) {
    const by = (call.approvals ?? []).map((a) => a.by);
    const who = by.length ? ` (approved by ${by.join(", ")})` : "";
    parts.push(
      `${by.length} of ${call.approvalsRequired} approvals${who}; ${call.approvalsNeeded} more needed.`,
    );
  }
  return parts.length ? h("p", { class: "review" }, parts.join(" ")) : null;
}

/** "DECLINED by key:alice": what became of a call, on the call itself. */
function decisionWords(decision) {
  return `${pastTense(decision.action).toUpperCase()} by ${decision.decidedBy}`;
}

/** The decision controls; none where no runtime here can continue the run, and why. */
function decisionOrWhyNot(run, call, id, act) {
  if (run.continuable === false) {
    return h("p", { class: "not-continuable" }, `No decision can be made here: ${run.notContinuableReason}.`);
  }
  return controls(run, call, id, act);
}

function decided(decision) {
  const reason = decision.reason ? ` (reason: ${decision.reason})` : "";
  return h(
    "p",
    { class: "decided" },
    `${pastTense(decision.action)[0].toUpperCase()}${pastTense(decision.action).slice(1)} by ${decision.decidedBy}${reason}, `,
    timeAgo("", decision.decidedAt),
  );
}

function expires(iso) {
  return h(
    "p",
    { class: "expires" },
    "Declined by itself ",
    h("time", { datetime: iso, title: new Date(iso).toLocaleString(), "data-until": iso }, until(iso)),
    " unless decided.",
  );
}

function controls(run, call, id, act) {
  const key = `${run.runId}/${call.toolCallId}`;
  const busy = state.busy.has(key);
  const described = `${id}-title`;
  if (!call.requiresApproval) return resumeControls(run, call, id, act, busy);
  const reasonId = `${id}-reason`;
  return h(
    "div",
    { class: "controls" },
    forceControl(run, id),
    h(
      "div",
      { class: "actions" },
      button("Approve", `${key}/approve`, busy, described, () => act.decide(run, call, "APPROVE", {}, key), "primary"),
      h("label", { for: reasonId }, "Reason for declining"),
      draftInput("input", reasonId, `${key}/reason`, { type: "text" }),
      button("Decline", `${key}/decline`, busy, described, () =>
        act.decide(run, call, "DECLINE", { reason: draft(`${key}/reason`) || null }, key),
      ),
    ),
    run.runtime === "PYTHON" ? editor(run, call, id, act, busy) : null,
  );
}

function editor(run, call, id, act, busy) {
  const key = `${run.runId}/${call.toolCallId}`;
  const areaId = `${id}-args`;
  const draftKey = `${key}/args`;
  if (!state.drafts.has(draftKey)) state.drafts.set(draftKey, pretty(call.args));
  const details = h(
    "details",
    { class: "edit", ...folded(draftKey) },
    h("summary", { "data-focus": `${draftKey}/summary` }, "Edit the arguments, then approve"),
    h("label", { for: areaId }, "Arguments (JSON)"),
    draftInput("textarea", areaId, draftKey, { rows: 6, spellcheck: "false" }),
    button("Approve with these arguments", `${key}/approve-edited`, busy, `${id}-title`, () =>
      act.decide(run, call, "APPROVE", { editedArgsText: draft(draftKey), field: areaId }, key),
    ),
  );
  return details;
}

/** While another person reviews the run: decide anyway (`force`), if the reader says so. */
function forceControl(run, id) {
  if (!run.inReviewBy || reviewedByMe(run)) return null;
  const boxId = `${id}-force`;
  return h(
    "p",
    { class: "force" },
    h("input", {
      type: "checkbox",
      id: boxId,
      checked: state.forced.has(run.runId),
      "data-focus": `${run.runId}/force`,
      on: { change: (e) => (e.target.checked ? state.forced.add(run.runId) : state.forced.delete(run.runId)) },
    }),
    h("label", { for: boxId }, `Decide although ${run.inReviewBy} reviews it`),
  );
}

function resumeControls(run, call, id, act, busy) {
  const key = `${run.runId}/${call.toolCallId}`;
  const areaId = `${id}-resume`;
  return h(
    "div",
    { class: "controls" },
    forceControl(run, id),
    h("label", { for: areaId }, "Resume data (JSON)"),
    draftInput("textarea", areaId, `${key}/resume`, { rows: 3, spellcheck: "false", placeholder: "the tool's result, as JSON" }),
    h(
      "div",
      { class: "actions" },
      button("Resume", `${key}/resume-button`, busy, `${id}-title`, () =>
        act.decide(run, call, "RESUME", { resumeText: draft(`${key}/resume`), field: areaId }, key),
        "primary",
      ),
    ),
  );
}

function operatorActions(run, id, act) {
  const stuck = run.status === "STALLED" || (run.status === "RUNNING" && run.outcomeUnknown);
  if (!stuck) return null;
  const key = run.runId;
  const busy = state.busy.has(key);
  const reasonId = `${id}-op-reason`;
  const explain = run.outcomeUnknown
    ? "A decision's answer was lost: it may or may not have been applied."
    : "The process continuing it stopped renewing its claim.";
  if (!may("APPROVER")) return h("p", { class: "explain" }, explain);
  return h(
    "div",
    { class: "controls operator" },
    h("p", { class: "explain" }, `${explain} Release puts it back to waiting (a tool that had started may run again); cancel ends it, and its pending tools never run.`),
    h("label", { for: reasonId }, "Reason (kept in the audit log)"),
    draftInput("input", reasonId, `${key}/op-reason`, { type: "text" }),
    h(
      "div",
      { class: "actions" },
      may("ADMIN")
        ? button("Release", `${key}/release`, busy, `${id}-title`, () => act.operate(run, "RELEASE", draft(`${key}/op-reason`) || null, key))
        : null,
      button("Cancel run", `${key}/cancel`, busy, `${id}-title`, () => act.operate(run, "CANCEL", draft(`${key}/op-reason`) || null, key), "danger"),
    ),
  );
}

function outcome(run) {
  if (run.status === "COMPLETED" && run.output !== null && run.output !== undefined) {
    return h("div", { class: "outcome" }, h("p", { class: "label" }, "Output"), h("div", { class: "payload" }, renderJson(run.output)));
  }
  if (run.status === "FAILED") return h("p", { class: "outcome failed" }, `Failed: ${run.error ?? "no reason given"}`);
  if (run.status === "ENDED") return h("p", { class: "outcome" }, run.error ? `It ended elsewhere: ${run.error}.` : `It left the suspended state elsewhere (${run.runtime === "LANGGRAPH" ? "its LangGraph thread moved on" : "on its Mastra server"}).`);
  if (run.status === "CANCELLED") {
    const who = run.decidedBy ?? "an operator";
    return h("p", { class: "outcome" }, `Cancelled by ${who}: ${run.error ?? "no reason given"}.`);
  }
  return null;
}
