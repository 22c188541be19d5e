// A real Mastra server for `scripts/demo`: @mastra/core agents with MongoDB storage, served
// by @mastra/hono, driven by a scripted model that needs no network. Its tools change
// nothing: they say what they would have done.
//
// Agents: mastra-refunds (issueRefund needs approval: it reads an order like A-1042 and an
// amount like 49.90 from the request), mastra-support (askCustomer calls suspend() with the
// customer's question; the resume data {answer} is the answer).
//
// Environment: MONGODB_URI (required), MONGODB_DB (default "mastra"), PORT (default 4111).
// Routes as peer.mjs's (prefix /api): POST /agents/:id/stream {messages, memory}, and the
// decision routes this server calls.
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { Agent } from '@mastra/core/agent';
import { Mastra } from '@mastra/core';
import { createTool } from '@mastra/core/tools';
import { MastraServer } from '@mastra/hono';
import { MongoDBStore } from '@mastra/mongodb';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';

const uri = process.env.MONGODB_URI;
if (!uri) throw new Error('MONGODB_URI is required');
const storage = new MongoDBStore({ id: 'mongo', url: uri, dbName: process.env.MONGODB_DB ?? 'mastra' });

let seq = 0;
const usage = { inputTokens: { total: 1 }, outputTokens: { total: 1 } };
const finish = (unified) => ({ type: 'finish', finishReason: { unified, raw: unified }, usage });
const stream = (chunks) => ({ stream: new ReadableStream({ start(c) { for (const x of chunks) c.enqueue(x); c.close(); } }) });
const said = (text) => [{ type: 'stream-start', warnings: [] }, { type: 'text-start', id: 't' },
  { type: 'text-delta', id: 't', delta: text }, { type: 'text-end', id: 't' }, finish('stop')];

// On a person's request: one call of `tool` with `args(request)`; after its result: "Done".
function desk(tool, args) {
  return new MockLanguageModelV3({
    doStream: async ({ prompt }) => {
      const last = prompt[prompt.length - 1];
      if (last.role !== 'user') return stream(said('Done: the desk has answered the request.'));
      const text = last.content.filter((p) => p.type === 'text').map((p) => p.text).join(' ');
      const call = { type: 'tool-call', toolCallId: `call_${process.pid}_${++seq}`, toolName: tool, input: JSON.stringify(args(text)) };
      return stream([{ type: 'stream-start', warnings: [] }, call, finish('tool-calls')]);
    },
  });
}

const issueRefund = createTool({
  id: 'issueRefund', description: 'Refund an amount on an order (a demo: nothing is refunded)', requireApproval: true,
  inputSchema: z.object({ order: z.string(), amount: z.number() }),
  execute: async (input) => ({ result: `(demo) would have refunded ${input.amount.toFixed(2)} on order ${input.order}; nothing was changed` }),
});
const askCustomer = createTool({
  id: 'askCustomer', description: 'Ask the customer; the run waits for a person to answer',
  inputSchema: z.object({ question: z.string() }),
  suspendSchema: z.object({ question: z.string() }),
  resumeSchema: z.object({ answer: z.string() }),
  execute: async (input, ctx) => {
    const resumeData = ctx?.agent?.resumeData;
    if (!resumeData) return ctx.agent.suspend({ question: input.question });
    return { answer: resumeData.answer };
  },
});

const refundArgs = (text) => ({
  order: (text.match(/[A-Z]-\d+/) ?? ['A-2071'])[0],
  amount: Number((text.match(/\d+\.\d{2}/) ?? ['19.90'])[0]),
});
const agent = (id, model, tools) => new Agent({ id, name: id, instructions: 'A demo desk.', model, tools });
const mastra = new Mastra({
  agents: {
    'mastra-refunds': agent('mastra-refunds', desk('issueRefund', refundArgs), { issueRefund }),
    'mastra-support': agent('mastra-support', desk('askCustomer', (text) => ({ question: `The customer asks: ${text}` })), { askCustomer }),
  },
  storage,
  logger: false,
});

const app = new Hono();
await new MastraServer({ app, mastra }).init();
const port = Number(process.env.PORT ?? 4111);
serve({ fetch: app.fetch, port, hostname: '127.0.0.1' });
console.error(`mastra demo listening on 127.0.0.1:${port}`);
