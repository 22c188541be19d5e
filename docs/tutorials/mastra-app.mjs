// A Mastra app whose runs suspended-runs lists and decides (docs/tutorials/connect-mastra.md).
// What connects it: MongoDBStore (suspended-runs reads the same database: its MONGODB_DB
// is this dbName) and a tool with requireApproval; suspended-runs sends decisions to this
// server's routes (its MASTRA_URL).
//
// Run: MONGODB_URI=mongodb://127.0.0.1:27017 MONGODB_DB=shop PORT=4111 node mastra-app.mjs
// With OPENAI_API_KEY set it uses OpenAI; without it, a scripted model that asks for the
// refund the request names ("Refund order A-2071, 19.90") and needs no network.
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { Mastra } from '@mastra/core';
import { Agent } from '@mastra/core/agent';
import { createTool } from '@mastra/core/tools';
import { MastraServer } from '@mastra/hono';
import { MongoDBStore } from '@mastra/mongodb';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';

const issueRefund = createTool({
  id: 'issueRefund',
  description: 'Refund an amount on an order',
  requireApproval: true, // each call waits for a person: suspended-runs lists it
  inputSchema: z.object({ order: z.string(), amount: z.number() }),
  execute: async ({ order, amount }) => ({ refunded: `${amount.toFixed(2)} on order ${order}` }),
});

// The stand-in for a real model: one call of issueRefund, then a closing sentence.
function scripted() {
  const usage = { inputTokens: { total: 1 }, outputTokens: { total: 1 } };
  const end = (why) => ({ type: 'finish', finishReason: { unified: why, raw: why }, usage });
  const stream = (parts) => ({ stream: ReadableStream.from([{ type: 'stream-start', warnings: [] }, ...parts]) });
  return new MockLanguageModelV3({
    doStream: async ({ prompt }) => {
      const last = prompt.at(-1);
      if (last.role !== 'user') {
        return stream([{ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: 'The refund is done.' }, { type: 'text-end', id: 't' }, end('stop')]);
      }
      const text = last.content.map((part) => part.text ?? '').join(' ');
      const order = text.match(/[A-Z]-\d+/)?.[0] ?? 'A-1';
      const amount = Number(text.match(/\d+\.\d\d/)?.[0] ?? 1);
      const call = { type: 'tool-call', toolCallId: `call_${Date.now()}`, toolName: 'issueRefund', input: JSON.stringify({ order, amount }) };
      return stream([call, end('tool-calls')]);
    },
  });
}

const refunds = new Agent({
  id: 'refunds',
  name: 'refunds',
  instructions: 'You refund orders.',
  model: process.env.OPENAI_API_KEY ? 'openai/gpt-5-mini' : scripted(),
  tools: { issueRefund },
});

const mastra = new Mastra({
  agents: { refunds },
  storage: new MongoDBStore({ id: 'shop', url: process.env.MONGODB_URI, dbName: process.env.MONGODB_DB ?? 'mastra' }),
  logger: false,
});

const app = new Hono();
await new MastraServer({ app, mastra }).init();
serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 4111), hostname: '127.0.0.1' });
