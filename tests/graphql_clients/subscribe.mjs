// Subscribes with the npm `graphql-ws` client (over the `ws` WebSocket) and prints each
// event as one JSON line: {"next": payload}, {"error": ...}, {"complete": true},
// {"closed": {code, reason}}. Runs until the subscription ends or the process is stopped.
// Usage: node subscribe.mjs <ws-url> <query> [variables-json] [connection-params-json]
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

const [url, query, variables = '{}', params = '{}'] = process.argv.slice(2);
const print = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);
const client = createClient({
  url,
  webSocketImpl: WebSocket,
  connectionParams: JSON.parse(params),
  retryAttempts: 0,
  lazy: false,
  on: { closed: (event) => print({ closed: { code: event.code, reason: event.reason } }) },
});
client.subscribe(
  { query, variables: JSON.parse(variables) },
  {
    next: (payload) => print({ next: payload }),
    error: (error) => { print({ error: error.message ?? String(error) }); process.exit(1); },
    complete: () => { print({ complete: true }); process.exit(0); },
  },
);
