// Apollo Client 4, as an application sets it up, against a server; prints what it got
// and every HTTP request it sent, as one JSON object.
//   node apollo.mjs <url> persisted [get]   PersistedQueryLink (automatic persisted queries)
//   node apollo.mjs <url> batch             BatchHttpLink: three queries in one request
//   node apollo.mjs <url> trusted <manifest> ids from a manifest (trusted documents)
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { ApolloClient, HttpLink, InMemoryCache, gql } from "@apollo/client";
import { BatchHttpLink } from "@apollo/client/link/batch-http";
import { PersistedQueryLink } from "@apollo/client/link/persisted-queries";
import { generatePersistedQueryIdsFromManifest } from "@apollo/persisted-query-lists";

const [url, scenario, option] = process.argv.slice(2);
const requests = [];

async function recordingFetch(input, init = {}) {
  const response = await fetch(input, init);
  const body = typeof init.body === "string" ? JSON.parse(init.body) : null;
  requests.push({ method: init.method ?? "GET", url: String(input), body, status: response.status });
  return response;
}

const sha256 = (text) => createHash("sha256").update(text).digest("hex");
const http = new HttpLink({ uri: url, fetch: recordingFetch });
const VIEWER = gql`query Viewer { viewer { subject role } }`;
const AGENTS = gql`query Agents { agents { id } }`;
const TYPENAME = gql`query Typename { __typename }`;

function client(link) {
  return new ApolloClient({ link, cache: new InMemoryCache() });
}

async function persisted() {
  const link = new PersistedQueryLink({ sha256, useGETForHashedQueries: option === "get" });
  const apollo = client(link.concat(http));
  const first = await apollo.query({ query: VIEWER, fetchPolicy: "network-only" });
  const again = await apollo.query({ query: VIEWER, fetchPolicy: "network-only" });
  return { data: [first.data, again.data] };
}

async function batch() {
  const link = new BatchHttpLink({ uri: url, fetch: recordingFetch, batchMax: 5, batchInterval: 20 });
  const apollo = client(link);
  const answers = await Promise.all(
    [VIEWER, AGENTS, TYPENAME].map((query) => apollo.query({ query, fetchPolicy: "network-only" })),
  );
  return { data: answers.map((answer) => answer.data) };
}

async function trusted() {
  const manifest = JSON.parse(readFileSync(option, "utf8"));
  const ids = generatePersistedQueryIdsFromManifest({ loadManifest: async () => manifest });
  const apollo = client(new PersistedQueryLink(ids).concat(http));
  const answer = await apollo.query({ query: VIEWER, fetchPolicy: "network-only" });
  return { data: [answer.data] };
}

const scenarios = { persisted, batch, trusted };
let outcome;
try {
  outcome = await scenarios[scenario]();
} catch (error) {
  outcome = { error: String(error?.message ?? error) };
}
process.stdout.write(`${JSON.stringify({ ...outcome, requests })}\n`);
