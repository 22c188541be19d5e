// What an inbox asks, shared by the cache scripts (apollo_cache.mjs, urql_cache.mjs): a
// page of one agent's suspended runs as a connection, and an approval whose every answer
// selects the run it names. Each client parses them with its own `gql`.
export const LIST = `
  query Inbox($agentId: ID, $after: String) {
    suspendedRunsConnection(filter: { agentId: $agentId }, first: 2, after: $after) {
      totalCount
      edges { cursor node { id runId status toolCalls { id toolCallId decision { action } } } }
      pageInfo { hasNextPage endCursor }
    }
  }
`;
export const APPROVE = `
  mutation Approve($runId: ID!) {
    approveToolCall(input: { runId: $runId }) {
      __typename
      ... on RunDecided { run { id status toolCalls { id decision { action } } } }
      ... on AlreadyDecided { run { id status } }
      ... on RunNotSuspended { run { id status } }
      ... on Problem { message }
    }
  }
`;

// A fetch that notes each operation's name in `sent` (a query sent as GET names it in
// the URL, urql's default; anything else in the body).
export function recording(sent) {
  return async (input, init = {}) => {
    const asked = init.body ? JSON.parse(init.body) : Object.fromEntries(new URL(input).searchParams);
    sent.push(asked.operationName);
    return fetch(input, init);
  };
}
