// urql with Graphcache against this server: `relayPagination` merges the pages of
// `suspendedRunsConnection`; an approval's answer updates the run it names in the cache
// (keyed by `id`, no `keys` for it) with no request for the list; the `updates` of
// docs/api.md drop a run that is no longer SUSPENDED from every cached page. Prints one
// JSON object.
//   node urql_cache.mjs <url> <agentId>
import { Client, fetchExchange, gql } from "@urql/core";
import { cacheExchange } from "@urql/exchange-graphcache";
import { relayPagination } from "@urql/exchange-graphcache/extras";

import { APPROVE as APPROVING, LIST as LISTING, recording } from "./inbox_documents.mjs";

const [url, agentId] = process.argv.slice(2);
const sent = [];

const recordingFetch = recording(sent);
const LIST = gql(LISTING);
const APPROVE = gql(APPROVING);

// The docs' updates: a run that is no longer SUSPENDED leaves every cached page.
function dropUnlessSuspended(result, _args, cache) {
  const run = result.approveToolCall?.run;
  if (!run || run.status === "SUSPENDED") return;
  for (const field of cache.inspectFields("Query")) {
    if (field.fieldName !== "suspendedRunsConnection") continue;
    const connection = cache.resolve("Query", field.fieldKey);
    const edges = cache.resolve(connection, "edges") ?? [];
    const kept = edges.filter((edge) => cache.resolve(cache.resolve(edge, "node"), "id") !== run.id);
    cache.link(connection, "edges", kept);
  }
}

const embedded = () => null; // no identity of their own: kept inside their parent

function client(updates) {
  return new Client({
    url,
    fetch: recordingFetch,
    exchanges: [
      cacheExchange({
        keys: {
          AgentRunConnection: embedded,
          AgentRunEdge: embedded,
          PageInfo: embedded,
          ToolCallDecision: embedded,
        },
        resolvers: { Query: { suspendedRunsConnection: relayPagination() } },
        updates,
      }),
      fetchExchange,
    ],
  });
}

const shown = (result) =>
  result.data.suspendedRunsConnection.edges.map((edge) => [edge.node.runId, edge.node.status]);

// Both pages, then an approval of the `nth` run listed; what the cache holds after.
async function pagedThenApproved(urql, nth) {
  const first = await urql.query(LIST, { agentId }).toPromise();
  if (!first.data) throw new Error(JSON.stringify(first.error));
  const after = first.data.suspendedRunsConnection.pageInfo.endCursor;
  const paged = await urql.query(LIST, { agentId, after }).toPromise();
  const before = sent.length;
  const runId = shown(paged)[nth][0];
  const approved = await urql.mutation(APPROVE, { runId }).toPromise();
  const cached = await urql.query(LIST, { agentId, after }, { requestPolicy: "cache-only" }).toPromise();
  return {
    firstPage: shown(first).length,
    paged: shown(paged),
    approved: approved.data?.approveToolCall.__typename ?? approved.error?.message,
    cached: shown(cached),
    requestsAfterPaging: sent.slice(before),
  };
}

const updated = await pagedThenApproved(client({}), 0);
const dropping = client({ Mutation: { approveToolCall: dropUnlessSuspended } });
const dropped = await pagedThenApproved(dropping, 0);
process.stdout.write(`${JSON.stringify({ updated, dropped })}\n`);
