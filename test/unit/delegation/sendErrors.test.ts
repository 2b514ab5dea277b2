// What an A2A error means depends on when it came and from whom. Against real servers that produce
// each one: the agent refusing the send before any task; its stream reporting an error (JSON-RPC
// -32603) after the task existed; an answer the SDK itself cannot read; a stream cut by the network.
// Only the first is "refused"; the second failed at the agent; the last two are in doubt and are
// reconciled with the agent, never reported as refusals.
import * as assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import express from 'express';
import { TaskState } from '@a2a-js/sdk';
import type { A2ARequestHandler } from 'a2a-sdk-v03/server';
import { A2AError } from 'a2a-sdk-v03/server';
import type { JournalEntry } from '../../../src/core/delegation';
import { connectAgent, normalizeCard } from '../../../src/node/a2a/clientFactory';
import { JournalStore } from '../../../src/node/journalStore';
import { listenOnLoopback } from './agentServers';
import { CUT_POINTS, startCutProxy } from './cutProxy';
import { newRun, tempDir, within } from './harness';
import { startLegacyServer } from './legacyAgentServer';
import type { LegacyServer, LegacyTurn } from './legacyAgentServer';
import type { AgentServer } from './agentServers';

/** The handler's streams, changed by `change` (the SDK's express handler turns a throw into an SSE error event). */
function wrapStream(
  change: (inner: AsyncGenerator<unknown, void, undefined>) => AsyncGenerator<unknown, void, undefined>,
): (inner: A2ARequestHandler) => A2ARequestHandler {
  return (inner) =>
    new Proxy(inner, {
      get(target, prop, receiver) {
        if (prop !== 'sendMessageStream') return Reflect.get(target, prop, receiver) as unknown;
        return (...args: Parameters<A2ARequestHandler['sendMessageStream']>) =>
          change(target.sendMessageStream(...args) as AsyncGenerator<unknown, void, undefined>);
      },
    });
}

async function steps(t: LegacyTurn): Promise<void> {
  t.task();
  for (let i = 1; i <= 4; i++) {
    t.status('working', `step ${i}`);
    await t.sleep(5);
  }
  t.artifact('notes', 'notes.txt', 'all steps done');
  t.status('completed', 'done', true);
}

/** A run of the delegation runner against a 0.3 server's JSON-RPC endpoint `/`. */
async function runAgainst(server: { port: number }, store: JournalStore, cardJson: Record<string, unknown>) {
  const endpoint = { url: `http://127.0.0.1:${server.port}/`, protocolBinding: 'JSONRPC', protocolVersion: '0.3' };
  const card = normalizeCard(cardJson);
  const connection = await connectAgent({ card, endpoint });
  // The harness wants an AgentServer for its defaults; only the endpoint and connection are used.
  const run = await newRun({ card } as unknown as AgentServer, store, 'do the steps', { endpoint, connection });
  await within(
    (async () => {
      await run.runner.start();
      await run.runner.idle();
    })(),
    20_000,
    'the delegation settles',
  );
  return run;
}

function legacyCard(port: number): Record<string, unknown> {
  return {
    name: 'Legacy agent',
    description: 'An A2A 0.3 agent',
    protocolVersion: '0.3.0',
    version: '0.0.1',
    url: `http://127.0.0.1:${port}/`,
    preferredTransport: 'JSONRPC',
    capabilities: { streaming: true },
    defaultInputModes: ['text'],
    defaultOutputModes: ['text'],
    skills: [],
  };
}

function sendFailures(entries: readonly JournalEntry[]): Extract<JournalEntry, { kind: 'sendFailed' }>[] {
  return entries.filter((e): e is Extract<JournalEntry, { kind: 'sendFailed' }> => e.kind === 'sendFailed');
}

describe('A2A errors are told apart by when they came', () => {
  const tmp = tempDir();
  const store = new JournalStore(tmp.dir);
  const servers: LegacyServer[] = [];
  after(async () => {
    await store.close();
    for (const s of servers) await s.close();
    tmp.cleanup();
  });

  it('the agent answers the send with an error before any task: refused, and nothing started there', async () => {
    const server = await startLegacyServer({
      script: steps,
      wrap: wrapStream(async function* () {
        yield* [];
        throw A2AError.invalidParams('this agent takes no such message');
      }),
    });
    servers.push(server);
    const run = await runAgainst(server, store, legacyCard(server.port));
    const d = run.journal.decide();
    assert.equal(d?.outcome, 'failed');
    assert.equal(d?.because?.code, 'failed.refused');
    assert.match(d?.reason ?? '', /refused the request before starting a task: this agent takes no such message/);
    assert.doesNotMatch(d?.reason ?? '', /Could not reach|Nothing was sent/);
    assert.deepEqual(
      sendFailures(await run.entries()).map((e) => e.delivered),
      ['refused'],
    );
    assert.equal(run.journal.taskId, undefined);
  });

  it('the stream reports -32603 after the task was created: failed at the agent (GetTask asked first), not refused', async () => {
    const server = await startLegacyServer({
      script: async (t) => {
        t.task();
        t.status('working', 'step 1');
        await t.sleep(10_000);
      },
      wrap: wrapStream(async function* (inner) {
        for await (const ev of inner) {
          yield ev;
          if ((ev as { kind?: string }).kind === 'status-update') throw new Error('the model backend went away');
        }
      }),
    });
    servers.push(server);
    const run = await runAgainst(server, store, legacyCard(server.port));
    const d = run.journal.decide();
    assert.equal(d?.outcome, 'failed', JSON.stringify(d));
    assert.equal(d?.because?.code, 'failed.atAgent');
    assert.match(d?.reason ?? '', /reported an error after the task started: .*the model backend went away/);
    assert.ok(run.journal.taskId, 'the task is known');
    assert.deepEqual(sendFailures(await run.entries()), [], 'the send itself did not fail');
    assert.ok(server.methods.includes('tasks/get'), 'the agent was asked where the task is');
  });

  it("an answer that fails the SDK's own validation is in doubt (reconciled), not a refusal", async () => {
    const app = express();
    app.use(express.json());
    app.post('/', (req, res) => {
      const id = (req.body as { id?: unknown }).id;
      res.setHeader('content-type', 'text/event-stream');
      res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id, result: { nonsense: true } })}\n\n`);
      res.end();
    });
    const server = await listenOnLoopback(app);
    try {
      const run = await runAgainst(server, store, legacyCard(server.port));
      const d = run.journal.decide();
      assert.equal(d?.outcome, 'unknown', JSON.stringify(d));
      assert.equal(d?.because?.code, 'unknown.sendInDoubt');
      assert.match(d?.reason ?? '', /answer could not be read/);
      assert.doesNotMatch(d?.reason ?? '', /refused|Nothing was sent/);
      assert.deepEqual(
        sendFailures(await run.entries()).map((e) => e.delivered),
        ['maybe'],
      );
    } finally {
      await server.close();
    }
  });

  it('a stream cut by the network after the task is followed again and completes', async () => {
    const server = await startLegacyServer({ script: steps });
    servers.push(server);
    const proxy = await startCutProxy(server.port, 'message/stream');
    proxy.setCutPoint(CUT_POINTS.midEvent);
    try {
      const run = await runAgainst({ port: proxy.port }, store, legacyCard(proxy.port));
      assert.equal(proxy.cuts, 1);
      const d = run.journal.decide();
      assert.equal(d?.outcome, 'completed', JSON.stringify(d));
      assert.deepEqual(sendFailures(await run.entries()), []);
      assert.equal(run.journal.taskState, TaskState.TASK_STATE_COMPLETED);
    } finally {
      await proxy.close();
    }
  });
});
