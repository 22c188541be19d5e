// The GraphQL documents of a Relay inbox, as its components would declare them; relay.mjs
// compiles them against schema/schema.graphql (relay-compiler) and runs the artifacts.
// Never run itself: relay-compiler reads the `graphql` tags.
const graphql = String.raw;

// The suspended runs of one agent, paged by @connection (the pagination query is made
// by @refetchable).
graphql`
  fragment inbox_runs on Query
  @refetchable(queryName: "inboxRunsPaginationQuery")
  @argumentDefinitions(
    agentId: { type: "ID" }
    first: { type: "Int", defaultValue: 2 }
    after: { type: "String" }
  ) {
    suspendedRunsConnection(filter: { agentId: $agentId }, first: $first, after: $after)
    @connection(key: "inbox_suspendedRunsConnection") {
      totalCount
      edges {
        node {
          id
          ...inbox_run
        }
      }
    }
  }
`;

// One run, refetched by its global id through `node(id:)`.
graphql`
  fragment inbox_run on AgentRun @refetchable(queryName: "inboxRunRefetchQuery") {
    id
    runId
    status
    toolCalls {
      id
      toolCallId
      decision {
        action
      }
    }
  }
`;

graphql`
  query inboxQuery($agentId: ID) {
    ...inbox_runs @arguments(agentId: $agentId)
  }
`;

// An approval whose answer takes the run out of the lists it names (@deleteEdge), whether
// this approval continued it or another came first.
graphql`
  mutation inboxApproveMutation($runId: ID!, $connections: [ID!]!) {
    approveToolCall(input: { runId: $runId }) {
      __typename
      ... on RunDecided {
        run {
          id @deleteEdge(connections: $connections)
          status
        }
      }
      ... on RunNotSuspended {
        run {
          id @deleteEdge(connections: $connections)
          status
        }
      }
    }
  }
`;
