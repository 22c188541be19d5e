// What the buttons do: decisions (one call, or every selected run at once) and operator
// actions, each answer said in words on the run and in the page's answer log.

import * as api from "./api.js";
import { ago, describe, describeOperator, describeReview, pastTense } from "./answers.js";
import { parseJson } from "./json.js";
import {
  DELETE_NOTE,
  RUN_DECISIONS,
  decideManyMutation,
  decisionMutation,
  operatorMutation,
  reviewMutation,
} from "./queries.js";
import { state } from "./state.js";

let page = { refresh: async () => {}, render: () => {}, log: () => {}, signIn: () => {} };

/** The page's own functions: refresh(), render(), log(label, text, tone), signIn(why). */
export function connect(functions) {
  page = functions;
}

// A request that got no answer is sent again under the same idempotency key, so that it is
// applied at most once; a new input gets a new key.
const keys = new Map();

function idempotencyKey(what) {
  if (!keys.has(what)) {
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    keys.set(what, `inbox-${[...bytes].map((b) => b.toString(16).padStart(2, "0")).join("")}`);
  }
  return keys.get(what);
}

const label = (run) => `${run.agentId} · run ${run.runId.slice(0, 8)}`;

function tell(key, run, said) {
  state.notes.set(key, said);
  if (run) page.log(label(run), said.text, said.tone);
}

/**
 * The reader's yes before approving calls that ask for it (`confirmApproval`: a review
 * policy marks their tool destructive, or the server asks it of every approval).
 */
function confirmed(items, action) {
  const asking = action === "APPROVE" ? items.filter(({ call }) => call.confirmApproval) : [];
  if (!asking.length) return true;
  const what = asking.map(({ call, args }) => `${call.toolName ?? "an unnamed tool"} with ${shortly(args ?? call.editedArgs ?? call.args)}`);
  const calls = what.length === 1 ? what[0] : `${what.length} calls:\n${what.join("\n")}`;
  return window.confirm(`Approve ${calls}?\n\nThis server asks you to confirm before the tool runs.`);
}

function shortly(value) {
  const text = JSON.stringify(value ?? null);
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

/** One decision on one pending call. `extra`: reason, resumeText, editedArgsText, field. */
export async function decide(run, call, action, extra, key) {
  // The arguments as shown: a call whose arguments changed since is refused (StaleDecision).
  const input = { runId: run.runId, toolCallId: call.toolCallId, expectedArgsHash: call.argsHash };
  if (action === "DECLINE") input.reason = extra.reason;
  if (state.forced.has(run.runId)) input.force = true; // the reader decides over a review
  for (const [text, name] of [[extra.resumeText, "resumeData"], [extra.editedArgsText, "editedArgs"]]) {
    if (text === undefined) continue;
    const parsed = parseJson(text);
    if (!parsed.ok) return invalid(key, parsed.message, extra.field);
    input[name] = parsed.value;
  }
  if (!confirmed([{ run, call, args: input.editedArgs }], action)) {
    tell(key, run, { tone: "warn", text: `Nothing was done: you did not confirm approving ${call.toolName ?? "the call"}.` });
    return page.render();
  }
  const request = JSON.stringify(input);
  input.idempotencyKey = idempotencyKey(request);
  state.busy.add(key);
  state.notes.delete(key);
  page.render();
  try {
    const data = await api.mutate(decisionMutation(action), { input });
    keys.delete(request);
    await answered(run, call, action, data.answer, key);
  } catch (error) {
    failed(run, key, error);
  } finally {
    state.busy.delete(key);
    page.render();
    page.refresh();
  }
}

/** Text that is not JSON: said on the call, and the field marked and focused. */
function invalid(key, message, field) {
  state.notes.set(key, { text: message, tone: "error", alert: true });
  if (field) state.invalid.set(field, key);
  page.render();
  document.getElementById(field)?.focus();
}

async function answered(run, call, action, answer, key) {
  const said = describe(action, answer, call.toolName);
  if (answer.__typename === "RunNotSuspended") said.text += await whoDecided(run, call);
  if (answer.__typename === "Forbidden") learnRole(answer.neededRole);
  tell(key, run, said);
}

/** After RunNotSuspended: who decided this call, if the run still shows it. */
async function whoDecided(run, call) {
  try {
    const { data } = await api.query(RUN_DECISIONS, { id: run.runId });
    const same = data.agentRun?.toolCalls.find((c) => c.toolCallId === call.toolCallId);
    const d = same?.decision;
    return d ? ` ${d.decidedBy} ${pastTense(d.action)} ${call.toolName ?? "it"} ${ago(d.decidedAt)}.` : "";
  } catch {
    return "";
  }
}

/** A Forbidden answer tells the caller's role: below the one needed. */
function learnRole(needed) {
  state.roleKnown = true;
  state.role = String(needed).toUpperCase() === "ADMIN" ? "APPROVER" : "VIEWER";
}

function failed(run, key, error) {
  if (error instanceof api.Unauthenticated) {
    page.signIn(`The server asks for credentials (${error.message}). Nothing was done.`);
    return;
  }
  if (error instanceof api.Unreachable) {
    const text = `No answer (${error.message}): the decision may or may not have been applied. Try again: it is sent under the same idempotency key, so it is applied at most once.`;
    return tell(key, run, { text, tone: "warn" });
  }
  tell(key, run, { text: `The server refused the request: ${error.message}`, tone: "error" });
}

/** Approve or decline every pending approval of the selected runs. */
export async function decideSelected(action, reason) {
  const runs = (state.list?.runs ?? []).filter((run) => state.selected.has(run.runId));
  const items = runs.flatMap((run) =>
    run.toolCalls.filter((c) => !c.decision && c.requiresApproval).map((call) => ({ run, call })),
  );
  const waiting = runs.filter((run) => !items.some((item) => item.run === run));
  if (waiting.length) {
    const text = `${waiting.length} selected ${waiting.length === 1 ? "run waits" : "runs wait"} for data, not approval: resume ${waiting.length === 1 ? "it" : "them"} one by one.`;
    page.log("Selected runs", text, "warn");
  }
  if (!items.length) return;
  if (!confirmed(items, action)) {
    page.log("Selected runs", "Nothing was approved: you did not confirm.", "warn");
    return;
  }
  const decisions = items.map(({ run, call }) => decisionInput(run, call, action, reason));
  items.forEach(({ run, call }) => state.busy.add(`${run.runId}/${call.toolCallId}`));
  page.render();
  try {
    const results = await decideAll(decisions);
    decisions.forEach((input) => keys.delete(input.request));
    await Promise.all(
      results.map((answer, i) => {
        const { run, call } = items[i];
        return answered(run, call, action, answer, `${run.runId}/${call.toolCallId}`);
      }),
    );
    state.selected.clear();
  } catch (error) {
    failed(null, "bulk", error);
    page.log("Selected runs", state.notes.get("bulk")?.text ?? error.message, "error");
  } finally {
    items.forEach(({ run, call }) => state.busy.delete(`${run.runId}/${call.toolCallId}`));
    page.render();
    page.refresh();
  }
}

function decisionInput(run, call, action, reason) {
  const input = { runId: run.runId, toolCallId: call.toolCallId, action, expectedArgsHash: call.argsHash };
  if (action === "DECLINE") input.reason = reason || null;
  const request = JSON.stringify(input);
  input.idempotencyKey = idempotencyKey(request);
  Object.defineProperty(input, "request", { value: request, enumerable: false });
  return input;
}

const BULK_CHUNK = 50; // decisions per decideToolCalls (the server takes up to BULK_DECISIONS_MAX)

/** decideToolCalls, in chunks. */
async function decideAll(decisions) {
  const answers = [];
  for (let i = 0; i < decisions.length; i += BULK_CHUNK) {
    const chunk = decisions.slice(i, i + BULK_CHUNK);
    answers.push(...(await api.mutate(decideManyMutation(), { decisions: chunk })).answers);
  }
  return answers;
}

/** releaseRun or cancelRun, with the reason for the audit log. */
export async function operate(run, action, reason, key) {
  state.busy.add(key);
  state.notes.delete(key);
  page.render();
  try {
    const data = await api.mutate(operatorMutation(action), { input: { runId: run.runId, reason } });
    const said = describeOperator(action, data.answer);
    if (data.answer.__typename === "Forbidden") learnRole(data.answer.neededRole);
    tell(key, run, said);
  } catch (error) {
    failed(run, key, error);
  } finally {
    state.busy.delete(key);
    page.render();
    page.refresh();
  }
}

/**
 * A review started, extended or ended, a hand-over, a note added or deleted (`action`:
 * START_REVIEW, END_REVIEW, ASSIGN, ADD_NOTE, DELETE_NOTE), said on the run. `draftKey`:
 * the field whose text was sent, emptied once it is done.
 */
export async function review(run, action, input, key, draftKey) {
  state.busy.add(key);
  state.notes.delete(key);
  page.render();
  try {
    const document = action === "DELETE_NOTE" ? DELETE_NOTE : reviewMutation(action);
    const data = await api.mutate(document, { input });
    const said = describeReview(action, data.answer);
    if (said.tone === "ok" && draftKey) state.drafts.delete(draftKey);
    tell(key, run, said);
  } catch (error) {
    failed(run, key, error);
  } finally {
    state.busy.delete(key);
    page.render();
    page.refresh();
  }
}
