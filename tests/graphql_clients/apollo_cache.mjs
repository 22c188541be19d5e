// Apollo Client 4's normalized cache against this server, as a dashboard sets it up:
// `relayStylePagination` pages `suspendedRunsConnection`; an approval's answer updates the
// cached list entry by its `id` with no request for the list; an answer whose run is no
// longer SUSPENDED drops it from the list (`cache.modify`, as docs/api.md shows); a lost
// race's refusal carries the run too. Prints one JSON object.
//   node apollo_cache.mjs <url> <agentId>
import { ApolloClient, HttpLink, InMemoryCache, gql } from "@apollo/client";
import { relayStylePagination } from "@apollo/client/utilities";

import { APPROVE as APPROVING, LIST as LISTING, recording } from "./inbox_documents.mjs";

const [url, agentId] = process.argv.slice(2);
const sent = [];

const recordingFetch = recording(sent);
const LIST = gql(LISTING);
const APPROVE = gql(APPROVING);

// The docs' update: a run that is no longer SUSPENDED leaves every cached list.
function dropUnlessSuspended(cache, { data }) {
  const run = data?.approveToolCall?.run;
  if (!run || run.status === "SUSPENDED") return;
  cache.modify({
    fields: {
      suspendedRunsConnection(existing, { readField }) {
        const edges = existing.edges.filter((edge) => readField("id", edge.node) !== run.id);
        return { ...existing, edges };
      },
    },
  });
}

const client = new ApolloClient({
  link: new HttpLink({ uri: url, fetch: recordingFetch }),
  cache: new InMemoryCache({
    possibleTypes: { Problem: ["AlreadyDecided", "RunNotSuspended", "RunNotFound"] },
    typePolicies: { Query: { fields: { suspendedRunsConnection: relayStylePagination(["filter"]) } } },
  }),
});

const cached = () => client.readQuery({ query: LIST, variables: { agentId } }).suspendedRunsConnection;
const shown = (connection) => connection.edges.map((edge) => [edge.node.runId, edge.node.status]);

const first = await client.query({ query: LIST, variables: { agentId } });
const after = first.data.suspendedRunsConnection.pageInfo.endCursor;
const list = client.watchQuery({ query: LIST, variables: { agentId } });
await list.fetchMore({ variables: { after } }); // merged into the list by the policy
const paged = shown(cached());
const [one, two] = paged.map(([runId]) => runId);
const before = sent.length;
const approved = await client.mutate({ mutation: APPROVE, variables: { runId: one } });
const afterApproval = shown(cached());
const lost = await client.mutate({ mutation: APPROVE, variables: { runId: one } });
await client.mutate({ mutation: APPROVE, variables: { runId: two }, update: dropUnlessSuspended });
process.stdout.write(
  `${JSON.stringify({
    paged,
    firstPage: first.data.suspendedRunsConnection.edges.length,
    approved: approved.data.approveToolCall.__typename,
    afterApproval,
    lost: [lost.data.approveToolCall.__typename, lost.data.approveToolCall.run],
    dropped: shown(cached()),
    requestsAfterPaging: sent.slice(before),
  })}\n`,
);
