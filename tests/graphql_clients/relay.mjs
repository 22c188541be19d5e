// Relay without React against this server. relay-compiler validates relay/src/inbox.js (a
// @connection fragment on `suspendedRunsConnection`, a @refetchable fragment on
// `AgentRun`, an approval with @deleteEdge) against schema/schema.graphql; then
// relay-runtime's `fetchQuery` pages the connection into its store, refetches one run
// through `node(id:)` after another client approved it, and a mutation's @deleteEdge takes
// the run it approves out of the list. Prints one JSON object.
//   node relay.mjs <url> <agentId>
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import RelayRuntime from "relay-runtime";

const { ConnectionHandler, Environment, Network, RecordSource, Store } = RelayRuntime;
const { commitMutation, createOperationDescriptor, fetchQuery, getRequest } = RelayRuntime;
const [url, agentId] = process.argv.slice(2);
const here = (path) => fileURLToPath(new URL(path, import.meta.url));

function compile() {
  mkdirSync(here("relay/__generated__"), { recursive: true });
  try {
    execFileSync(process.execPath, [here("node_modules/relay-compiler/cli.js"), "relay.config.json"], {
      cwd: here("relay"),
      stdio: "pipe",
    });
    return null;
  } catch (error) {
    return String(error.stdout) + String(error.stderr);
  }
}

const compileError = compile();
if (compileError !== null) {
  process.stdout.write(`${JSON.stringify({ compileError })}\n`);
  process.exit(0);
}
const artifact = async (name) => (await import(`./relay/__generated__/${name}.graphql.js`)).default;
const InboxQuery = await artifact("inboxQuery");
const PaginationQuery = await artifact("inboxRunsPaginationQuery");
const RefetchQuery = await artifact("inboxRunRefetchQuery");
const ApproveMutation = await artifact("inboxApproveMutation");

const sent = [];
const network = Network.create(async (params, variables) => {
  sent.push(params.name);
  const body = JSON.stringify({ query: params.text, variables, operationName: params.name });
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body });
  return response.json();
});
const environment = new Environment({ network, store: new Store(new RecordSource()) });

// What a component would read: the connection's runs, as the store holds them.
const connectionId = ConnectionHandler.getConnectionID("client:root", "inbox_suspendedRunsConnection", {
  filter: { agentId },
});
const record = (id) => environment.getStore().getSource().get(id);
function listed() {
  const connection = record(connectionId);
  return connection.edges.__refs.map((edge) => {
    const run = record(record(edge).node.__ref);
    return [run.runId, run.status];
  });
}
const pageInfo = () => record(record(connectionId).pageInfo.__ref);

async function fetched(query, variables) {
  environment.retain(createOperationDescriptor(getRequest(query), variables));
  return fetchQuery(environment, query, variables).toPromise();
}

function approve(runId) {
  return new Promise((resolve, reject) => {
    commitMutation(environment, {
      mutation: ApproveMutation,
      variables: { runId, connections: [connectionId] },
      onCompleted: (response, errors) => (errors ? reject(new Error(JSON.stringify(errors))) : resolve(response)),
      onError: reject,
    });
  });
}

await fetched(InboxQuery, { agentId });
const firstPage = listed();
await fetched(PaginationQuery, { agentId, first: 2, after: pageInfo().endCursor });
const paged = listed();
const [one, two] = paged.map(([runId]) => runId);
// Another client approves the first run; Relay refetches it by its global id.
const other = await fetch(url, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ query: `mutation { approveToolCall(input: {runId: "${one}"}) { __typename } }` }),
}).then((response) => response.json());
const nodeId = record(record(record(connectionId).edges.__refs[0]).node.__ref).id;
await fetched(RefetchQuery, { id: nodeId });
const refetched = listed();
const approved = await approve(two);
process.stdout.write(
  `${JSON.stringify({
    firstPage,
    paged,
    hasNextPage: pageInfo().hasNextPage,
    elsewhere: other.data.approveToolCall.__typename,
    refetched,
    approved: approved.approveToolCall.__typename,
    afterDelete: listed(),
    requests: sent,
  })}\n`,
);
