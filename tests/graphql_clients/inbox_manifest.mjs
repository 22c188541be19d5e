// Prints the manifest of the inbox's operations (server/static/persisted-operations.json)
// in the format @apollo/generate-persisted-query-manifest writes: each operation's exact
// text, as the page sends it, under its SHA-256.
//   node tests/graphql_clients/inbox_manifest.mjs > server/static/persisted-operations.json
import { createHash } from "node:crypto";
import { parse } from "graphql";
import { everyOperation } from "../../server/static/queries.js";

const operations = everyOperation().map((body) => {
  const [definition] = parse(body).definitions;
  return {
    id: createHash("sha256").update(body).digest("hex"),
    name: definition.name?.value ?? null,
    type: definition.operation,
    body,
  };
});
const manifest = { format: "apollo-persisted-query-manifest", version: 1, operations };
process.stdout.write(`${JSON.stringify(manifest, null, 2)}\n`);
