// The page's only way to the server: the public GraphQL API at /graphql.
//
// Queries go as GET (/graphql?query=...&variables=...), so that a poll is a conditional
// GET: the last ETag of the same request is sent as If-None-Match, and a 304 means that
// nothing the caller may see has changed. Mutations go as POST. Credentials (an API key or
// a bearer token) are kept in sessionStorage: for this tab only, gone when it closes.
// Where the WebSocket opens, the list is also pushed (`subscribe`, live.js).

const STORE = "suspended-runs.credentials";
const ENDPOINT = "/graphql";
const KEEP = 16; // answers kept for conditional requests

/** The server refused the credentials (HTTP 401), or there were none where needed. */
export class Unauthenticated extends Error {}

/** The request did not get an answer (network down, server restarting, a 5xx). */
export class Unreachable extends Error {}

/** The server answered with GraphQL errors (`errors`, each with `extensions.code`). */
export class GraphQLErrors extends Error {
  constructor(errors) {
    super(errors.map((e) => e.message).join("; "));
    this.errors = errors;
  }

  get codes() {
    return this.errors.map((e) => e.extensions?.code);
  }
}

export function credentials() {
  try {
    const stored = JSON.parse(sessionStorage.getItem(STORE) ?? "null");
    return stored && typeof stored.value === "string" ? stored : null;
  } catch {
    return null;
  }
}

export function setCredentials(kind, value) {
  sessionStorage.setItem(STORE, JSON.stringify({ kind, value }));
  answers.clear();
}

export function forgetCredentials() {
  sessionStorage.removeItem(STORE);
  answers.clear();
}

function authHeaders() {
  const stored = credentials();
  if (!stored) return {};
  return stored.kind === "bearer"
    ? { Authorization: `Bearer ${stored.value}` }
    : { "X-API-Key": stored.value };
}

const answers = new Map(); // url -> {etag, data}

/**
 * Runs a query by GET. Answers {data, changed}: `changed` is false when the server said
 * 304 (the data is the previous answer's). `once`: a query not asked again (its answer
 * is not kept, so it takes no polled query's place among those kept).
 */
export async function query(document, variables = {}, { once = false } = {}) {
  const params = new URLSearchParams({ query: document, variables: JSON.stringify(variables) });
  const url = `${ENDPOINT}?${params}`;
  const headers = { Accept: "application/json", ...authHeaders() };
  const previous = answers.get(url);
  if (previous) headers["If-None-Match"] = previous.etag;
  const response = await send(url, { method: "GET", headers, cache: "no-store" });
  if (response.status === 304 && previous) return { data: previous.data, changed: false };
  const data = await read(response);
  const etag = response.headers.get("ETag");
  answers.delete(url);
  if (etag && !once) {
    answers.set(url, { etag, data });
    if (answers.size > KEEP) answers.delete(answers.keys().next().value);
  }
  return { data, changed: true };
}

/** Runs a mutation by POST; answers its data. */
export async function mutate(document, variables = {}) {
  const headers = { "Content-Type": "application/json", Accept: "application/json", ...authHeaders() };
  const body = JSON.stringify({ query: document, variables });
  const response = await send(ENDPOINT, { method: "POST", headers, body, cache: "no-store" });
  return read(response);
}

async function send(url, init) {
  try {
    return await fetch(url, { ...init, credentials: "omit", redirect: "error" });
  } catch (error) {
    throw new Unreachable(`the server did not answer (${error.message})`);
  }
}

async function read(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    // not JSON: judged by its status below
  }
  const errors = Array.isArray(body?.errors) ? body.errors : [];
  if (response.status === 401) throw new Unauthenticated(errors[0]?.message ?? "credentials are required");
  if (errors.length) throw new GraphQLErrors(errors);
  if (!response.ok || !body?.data) throw new Unreachable(`the server answered ${response.status}`);
  return body.data;
}

/**
 * Subscribes to `document` over the server's WebSocket (graphql-transport-ws), with the
 * credentials in `connection_init`. Calls `acknowledged()` once the server took them,
 * `next(data)` for each page it pushes, and `ended(code)` once the connection is gone
 * (refused, closed, or never opened). Answers a function that ends it quietly.
 */
export function subscribe(document, variables, { acknowledged, next, ended }) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  let socket;
  let quiet = false;
  try {
    socket = new WebSocket(`${scheme}://${location.host}${ENDPOINT}`, "graphql-transport-ws");
  } catch {
    setTimeout(() => ended(0));
    return () => {};
  }
  const send = (message) => socket.send(JSON.stringify(message));
  socket.addEventListener("open", () => send({ type: "connection_init", payload: connectionParams() }));
  socket.addEventListener("message", (event) => {
    let message = null;
    try {
      message = JSON.parse(event.data);
    } catch {
      return;
    }
    if (message?.type === "connection_ack") {
      acknowledged();
      send({ id: "live", type: "subscribe", payload: { query: document, variables } });
    } else if (message?.type === "ping") {
      send({ type: "pong" });
    } else if (message?.type === "next" && message.id === "live" && message.payload?.data) {
      next(message.payload.data);
    } else if (message?.type === "error" || message?.type === "complete") {
      socket.close(1000);
    }
  });
  socket.addEventListener("close", (event) => quiet || ended(event.code));
  return () => {
    quiet = true;
    socket.close(1000);
  };
}

function connectionParams() {
  const stored = credentials();
  if (!stored) return {};
  return stored.kind === "bearer" ? { authorization: `Bearer ${stored.value}` } : { apiKey: stored.value };
}
