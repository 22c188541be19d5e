// The GraphQL documents the page sends: this server's schema, which serves the page.

function runFields() {
  return `runId agentId runtime status threadId resourceId createdAt suspendedAt
    outcomeUnknown output error decidedAt decidedBy startedBy continuable notContinuableReason
    inReviewBy inReviewUntil notes(last: 20) { id body author at }
    toolCalls { toolCallId toolName args requiresApproval suspendPayload
      expiresAt argsHash editedArgs approvalsRequired approvalsNeeded assignedTo confirmApproval
      approvals { by at } decision { action decidedBy decidedAt reason } }`;
}

const PAGE = (fields) => `total hasMore nextCursor runs { ${fields} }`;

export const VIEWER = "{ viewer { subject role authenticated person } }";

export function waitingQuery() {
  return `query Waiting($filter: SuspendedRunsFilter, $first: Int, $after: String) {
  agents { id runtime suspendedRuns }
  list: suspendedRuns(filter: $filter, first: $first, after: $after) { ${PAGE(runFields())} }
}`;
}

export function runsQuery() {
  return `query Runs($filter: RunsFilter, $first: Int, $after: String) {
  agents { id runtime suspendedRuns }
  list: runs(filter: $filter, first: $first, after: $after) { ${PAGE(runFields())} }
}`;
}

/** The waiting view's first page, pushed whenever it changes (live.js). */
export function liveQuery() {
  return `subscription Live($filter: SuspendedRunsFilter, $first: Int) {
  list: suspendedRuns(filter: $filter, first: $first) { ${PAGE(runFields())} }
}`;
}

/** One run, for the page at /runs/<runId> (where webhooks link): with its conversation
 * and its timeline (the decision log). */
export function runQuery() {
  return `query Run($id: ID!) {
  agents { id runtime suspendedRuns }
  run: agentRun(runId: $id) { ${runFields()} messages(last: 50) { role text toolCalls { toolName args } } }
  timeline: decisionLog(runId: $id) { action decidedBy decidedAt reason outcome editedArgs }
}`;
}

/** Why a run waits, for its card in a list (why.js): what its user said. */
export const WHY = `query Why($id: ID!) { agentRun(runId: $id) { messages(last: 100) { role text } } }`;

export const DECISION_TIMES = `query DecisionTimes($filter: RunsFilter) {
  stats: decisionStats(filter: $filter) {
    approved declined resumed expired
    times { key decisions medianSeconds p90Seconds }
    byAgent { key decisions medianSeconds p90Seconds }
    byTool { key decisions medianSeconds p90Seconds }
  }
}`;

export const RUN_DECISIONS = `query RunDecisions($id: ID!) {
  agentRun(runId: $id) { status toolCalls { toolCallId toolName decision { action decidedBy decidedAt } } }
}`;

function decisionResult() {
  const run = `run { ${runFields()} }`;
  return `__typename
    ... on RunDecided { toolCallId ${run} }
    ... on ApprovalRecorded { toolCallId approvalsNeeded ${run} }
    ... on StaleDecision { argsHash }
    ... on Problem { message }
    ... on RunNotSuspended { status }
    ... on AlreadyDecided { toolCallId decision { action decidedBy decidedAt } }
    ... on ExecutorUnavailable { agentId }
    ... on OutcomeUnknown { message ${run} }
    ... on Forbidden { neededRole }
    ... on InReviewByOther { inReviewBy inReviewUntil }`;
}

const MUTATIONS = {
  APPROVE: ["approveToolCall", "ApproveToolCallInput"],
  DECLINE: ["declineToolCall", "DeclineToolCallInput"],
  RESUME: ["resumeRun", "ResumeRunInput"],
};

export function decisionMutation(action) {
  const [field, input] = MUTATIONS[action];
  return `mutation Decide($input: ${input}!) { answer: ${field}(input: $input) { ${decisionResult()} } }`;
}

export function decideManyMutation() {
  return `mutation DecideMany($decisions: [ToolCallDecisionInput!]!) {
  answers: decideToolCalls(decisions: $decisions) { ${decisionResult()} }
}`;
}

export function operatorMutation(action) {
  const field = action === "RELEASE" ? "releaseRun" : "cancelRun";
  const input = action === "RELEASE" ? "ReleaseRunInput" : "CancelRunInput";
  const run = `run { ${runFields()} }`;
  const done = action === "RELEASE" ? "RunReleased" : "RunCancelled";
  const unknown = action === "CANCEL" ? `... on OutcomeUnknown { message ${run} }` : "";
  return `mutation Operate($input: ${input}!) { answer: ${field}(input: $input) {
    __typename ... on ${done} { ${run} } ... on Problem { message }
    ... on WrongRunStatus { status } ... on Forbidden { neededRole } ${unknown}
  } }`;
}

// Reviewing together (reviewing.js): each mutation answers the run as it is now, or why not.
// Each with the members of its union the page reads beyond `Problem { message }`.
const IN_REVIEW = "... on InReviewByOther { inReviewBy inReviewUntil }";
const NOT_WAITING = "... on RunNotSuspended { status }";
const REVIEWING = {
  START_REVIEW: ["startReview", "StartReviewInput", "ReviewStarted", [IN_REVIEW, NOT_WAITING]],
  END_REVIEW: ["endReview", "EndReviewInput", "ReviewEnded", [IN_REVIEW]],
  ASSIGN: ["assignRun", "AssignRunInput", "RunAssigned", [NOT_WAITING]],
  ADD_NOTE: ["addRunNote", "AddRunNoteInput", "NoteAdded", []],
};

export function reviewMutation(action) {
  const [field, input, done, more] = REVIEWING[action];
  return `mutation Review($input: ${input}!) { answer: ${field}(input: $input) {
    __typename ... on ${done} { run { ${runFields()} } } ... on Problem { message }
    ${more.join(" ")} ... on Forbidden { neededRole }
  } }`;
}

export const DELETE_NOTE = `mutation DeleteNote($input: DeleteRunNoteInput!) {
  answer: deleteRunNote(input: $input) { __typename ... on Problem { message } ... on Forbidden { neededRole } }
}`;

/**
 * Every document the page sends. server/static/persisted-operations.json lists them
 * (tests/graphql_clients/inbox_manifest.mjs writes it, and a test checks it is current),
 * so a server that runs only trusted documents still runs the page.
 */
export function everyOperation() {
  return [
    VIEWER,
    waitingQuery(),
    runsQuery(),
    runQuery(),
    liveQuery(),
    RUN_DECISIONS,
    WHY,
    DECISION_TIMES,
    ...Object.keys(MUTATIONS).map(decisionMutation),
    decideManyMutation(),
    operatorMutation("RELEASE"),
    operatorMutation("CANCEL"),
    ...Object.keys(REVIEWING).map(reviewMutation),
    DELETE_NOTE,
  ];
}
