// Runs graphql-http's GraphQL-over-HTTP audit suite (serverAudits) against a server and
// prints each audit's result as a JSON line.   node audit.mjs http://127.0.0.1:8000/graphql
import { serverAudits } from "graphql-http";

const [url] = process.argv.slice(2);
const results = [];
for (const audit of serverAudits({ url })) {
  const result = await audit.fn();
  results.push({ id: audit.id, name: audit.name, status: result.status, reason: result.reason });
}
process.stdout.write(`${JSON.stringify(results)}\n`);
