// What @mastra/mongodb's own start does to the database, and nothing else: the store's
// init() (its collections and indexes) against MONGODB_URI / MONGODB_DB. Its warnings go
// to stderr, where the tests look for "Failed to create index".
import { MongoDBStore } from '@mastra/mongodb';

const uri = process.env.MONGODB_URI;
if (!uri) throw new Error('MONGODB_URI is not set');
const storage = new MongoDBStore({ id: 'mongo', url: uri, dbName: process.env.MONGODB_DB ?? 'mastra' });
const say = (level) => (...args) => console.error(level, ...args.map(String));
const logger = { debug() {}, info() {}, trackException() {}, warn: say('WARN'), error: say('ERROR') };
storage.__setLogger?.(logger);
for (const store of Object.values(storage.stores ?? {})) store?.__setLogger?.(logger);
await storage.init();
await storage.close?.();
process.exit(0);
