// The GraphQL documents the page sends. Parts of the API that a server may not offer yet
// are behind `features`: when the server says it lacks one, the page turns it off and
// asks again without it.

export const features = {
  viewer: true, // Query.viewer { subject role authenticated }
  runs: true, // Query.runs(filter: RunsFilter ...): the recent and operator views
  decidedBy: true, // AgentRun.decidedAt, AgentRun.decidedBy
  editedArgs: true, // ApproveToolCallInput.editedArgs (Python runs)
  decideToolCalls: true, // Mutation.decideToolCalls(decisions: [...])
  expiresAt: true, // AgentRunToolCall.expiresAt: when a pending approval is declined by itself
};

/** The name of the feature that `error` (GraphQLErrors) says the server lacks, if any. */
export function missingFeature(error) {
  const names = {
    viewer: "viewer",
    runs: "runs",
    decidedBy: "decidedBy",
    decidedAt: "decidedBy",
    editedArgs: "editedArgs",
    decideToolCalls: "decideToolCalls",
    ToolCallDecisionInput: "decideToolCalls",
    RunsFilter: "runs",
    expiresAt: "expiresAt",
  };
  for (const [name, feature] of Object.entries(names)) {
    if (features[feature] && error.lacks?.(name)) return feature;
  }
  return null;
}

function runFields() {
  return `runId agentId runtime status threadId resourceId createdAt suspendedAt
    outcomeUnknown output error ${features.decidedBy ? "decidedAt decidedBy" : ""}
    toolCalls { toolCallId toolName args requiresApproval suspendPayload
      ${features.expiresAt ? "expiresAt" : ""} decision { action decidedBy decidedAt reason } }`;
}

const PAGE = (fields) => `total hasMore nextCursor runs { ${fields} }`;

export const VIEWER = "{ viewer { subject role authenticated } }";

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

export const RUN_DECISIONS = `query RunDecisions($id: ID!) {
  agentRun(runId: $id) { status toolCalls { toolCallId toolName decision { action decidedBy decidedAt } } }
}`;

function decisionResult() {
  const run = `run { ${runFields()} }`;
  return `__typename
    ... on RunDecided { toolCallId ${run} }
    ... on Problem { message }
    ... on RunNotSuspended { status }
    ... on AlreadyDecided { toolCallId decision { action decidedBy decidedAt } }
    ... on ExecutorUnavailable { agentId }
    ... on OutcomeUnknown { message ${run} }
    ... on Forbidden { neededRole }`;
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
