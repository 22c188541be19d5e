// Every answer of a mutation said in plain words, with where the run stands now.
// describe() returns {text, tone}: tone "ok" (done), "warn" (nothing done, or not sure),
// or "error" (refused).

const DONE = { APPROVE: "Approved", DECLINE: "Declined", RESUME: "Resumed" };
const PAST = {
  APPROVE: "approved",
  DECLINE: "declined",
  RESUME: "resumed",
  RELEASE: "released",
  CANCEL: "cancelled",
  START_REVIEW: "started reviewing it",
  END_REVIEW: "ended the review",
  ASSIGN: "handed it over",
  ADD_NOTE: "added a note",
  DELETE_NOTE: "deleted a note",
};

export function pastTense(action) {
  return PAST[action] ?? String(action).toLowerCase();
}

/** "3 s ago", "4 min ago", "2 h ago", "5 days ago" (a time slightly ahead: "just now"). */
export function ago(iso, now = Date.now()) {
  const seconds = Math.round((now - Date.parse(iso)) / 1000);
  if (!Number.isFinite(seconds)) return "at an unknown time";
  if (seconds < 2) return "just now";
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  const days = Math.floor(seconds / 86400);
  return `${days} ${days === 1 ? "day" : "days"} ago`;
}

/** "in 4 min", "in 2 h" (a time already past: "any moment now"). */
export function until(iso, now = Date.now()) {
  const seconds = Math.round((Date.parse(iso) - now) / 1000);
  if (!Number.isFinite(seconds)) return "at an unknown time";
  if (seconds < 1) return "any moment now";
  if (seconds < 60) return `in ${seconds} s`;
  if (seconds < 3600) return `in ${Math.floor(seconds / 60)} min`;
  if (seconds < 86400) return `in ${Math.floor(seconds / 3600)} h`;
  return `in ${Math.floor(seconds / 86400)} days`;
}

function short(value, limit = 160) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > limit ? `${text.slice(0, limit)}…` : text;
}

/** Where a run stands, in words: "The run completed: ...", "It waits on 1 more call." */
export function nextState(run) {
  if (!run) return "";
  const pending = (run.toolCalls ?? []).filter((call) => !call.decision).length;
  switch (run.status) {
    case "COMPLETED":
      return run.output === null || run.output === undefined
        ? "The run completed."
        : `The run completed: ${short(run.output)}`;
    case "FAILED":
      return `The run failed: ${run.error ?? "no reason given"}.`;
    case "SUSPENDED":
      return `The run waits on ${pending} more ${pending === 1 ? "call" : "calls"}.`;
    case "RUNNING":
      return run.outcomeUnknown
        ? "The run stays claimed (RUNNING) until its snapshot shows where it went."
        : "The run goes on in the background.";
    case "STALLED":
      return "The run is STALLED: an operator can release or cancel it.";
    case "CANCELLED":
      return "The run is cancelled: its pending tools will never run.";
    default:
      return `The run is now ${run.status}.`;
  }
}

const PROBLEMS = {
  RunNotFound: () => "The run is gone, or you may not see it. Nothing was done.",
  RunNotSuspended: (a) => `Nothing was done: the run no longer waits for a decision. It is ${a.status}.`,
  ToolCallNotFound: (a) => `Nothing was done: this call is not one the run waits on (${a.message}).`,
  WrongSuspensionKind: (a) => `Nothing was done: ${a.message}.`,
  InvalidResumeData: (a) => `The data does not fit, so nothing was sent: ${a.message}. The run still waits.`,
  InvalidArgs: (a) => `The edited arguments were refused, so nothing was sent: ${a.message}. The run still waits.`,
  ArgsNotEditable: (a) => `Nothing was sent: this run's runtime takes no edited arguments (${a.message}). Approve or decline the call as it is.`,
  DecisionInProgress: () =>
    "An earlier request for this decision is still being answered. Wait a moment and look again.",
  ExecutorUnavailable: (a) =>
    `Nothing was applied: no runtime here can continue ${a.agentId ?? "this agent"}'s runs now (${a.message}). The run still waits; you can decide again later.`,
  Forbidden: (a) => `Your role may not do this (it needs ${a.neededRole ?? "another role"}).`,
  WrongRunStatus: (a) => `Nothing was done: the run is ${a.status} (${a.message}).`,
  StaleDecision: () =>
    "Nothing was done: the arguments changed since you saw them. Look at them again, then decide.",
  SelfApproval: (a) => `Nothing was done: you started this run, and may not approve it (${a.message}).`,
  NotAReviewer: (a) => `Nothing was done: you are not among its reviewers (${a.message}).`,
  InReviewByOther: (a) =>
    `Nothing was done: ${a.inReviewBy} reviews this run until ${clock(a.inReviewUntil)} (${until(a.inReviewUntil)}). Wait for the review to end, or decide although they review it.`,
  NoteNotFound: () => "Nothing was done: the note is gone.",
};

/** "14:05": a time of today, as the reader's clock shows it. */
export function clock(iso) {
  return new Date(iso).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

const REVIEWED = {
  ReviewStarted: (a) =>
    `You are reviewing this run until ${clock(a.run.inReviewUntil)}: others see it, and their decisions wait for you unless they decide anyway.`,
  ReviewEnded: () => "The review ended: anyone may pick the run up.",
  RunAssigned: (a) => {
    const names = [...new Set((a.run.toolCalls ?? []).flatMap((call) => call.assignedTo ?? []))];
    return `Handed over: assigned to ${names.join(", ")}.`;
  },
  NoteAdded: () => "Note added.",
  NoteDeleted: () => "Note deleted.",
};

/** A review's, a hand-over's or a note's answer in words. */
export function describeReview(action, answer) {
  const say = REVIEWED[answer.__typename];
  return say ? { tone: "ok", text: say(answer) } : problem(answer);
}

/** A decision's answer (approve, decline, resume) in words. */
export function describe(action, answer, toolName) {
  const name = toolName ?? "the call";
  switch (answer.__typename) {
    case "RunDecided":
      return { tone: "ok", text: `${DONE[action] ?? "Decided"} ${name}. ${nextState(answer.run)}` };
    case "ApprovalRecorded": {
      const more = answer.approvalsNeeded;
      return {
        tone: "ok",
        text: `Your approval of ${name} is recorded; ${more} more ${more === 1 ? "approval is" : "approvals are"} needed before it runs.`,
      };
    }
    case "AlreadyDecided": {
      const d = answer.decision;
      return {
        tone: "warn",
        text: `Someone was first: ${d.decidedBy} ${pastTense(d.action)} ${name} ${ago(d.decidedAt)}. Your decision was not applied.`,
      };
    }
    case "OutcomeUnknown":
      return {
        tone: "warn",
        text: `Outcome unknown: the decision may or may not have been applied (${answer.message}). ${nextState(answer.run)} If it stalls, an operator can release or cancel it.`,
      };
    default:
      return problem(answer);
  }
}

/** An operator action's answer (release, cancel) in words. */
export function describeOperator(action, answer) {
  switch (answer.__typename) {
    case "RunReleased":
      return {
        tone: "ok",
        text: "Released: the run waits for decisions again (SUSPENDED), its pending calls read again from its snapshot.",
      };
    case "RunCancelled":
      return { tone: "ok", text: "Cancelled: its pending tools will never run." };
    case "OutcomeUnknown":
      return {
        tone: "warn",
        text: `Outcome unknown: the cancellation may or may not have reached the Mastra server (${answer.message}). ${nextState(answer.run)}`,
      };
    default:
      return problem(answer);
  }
}

function problem(answer) {
  const say = PROBLEMS[answer.__typename];
  if (say) return { tone: answer.__typename === "Forbidden" ? "error" : "warn", text: say(answer) };
  return { tone: "warn", text: answer.message ?? `The server answered ${answer.__typename}.` };
}
