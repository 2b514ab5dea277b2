/**
 * A remote A2A 1.0 agent that does not stream (its card says `capabilities.streaming: false`; the
 * `@a2a-js/sdk` server then refuses SendStreamingMessage and SubscribeToTask): the proxy sends it each
 * message with SendMessage, returning at once, and follows the task by GetTask, so callers still stream
 * its progress, get its patch and a signed result, wait on a blocking send, and cancel it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import express from 'express';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler } from '@a2a-js/sdk/server/express';
import { TaskState } from '@a2a-js/sdk';
import type { AgentCard, StreamResponse } from '@a2a-js/sdk';
import { META } from '../../../src/core/batonProfile';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import type { RemoteAgentConfig } from '../../../src/gateway/config';
import { bounded, clientFor, collect, sendRequest, tempDir, userMessage } from './helpers';
import { kill9, startChild, withChildStore } from './proxyCrashHarness';
import { listenOnLoopback, ScriptedSdkExecutor, sdkAgentCard, sdkJsonRpc } from './sdkServer';

const stateOf = (e: StreamResponse | undefined): string | undefined => {
  const p = e?.payload;
  if (p?.$case === 'statusUpdate') return TaskState[p.value.status?.state ?? 0];
  if (p?.$case === 'task') return TaskState[p.value.status?.state ?? 0];
  return undefined;
};

/**
 * The SDK's server for an agent whose card says it does not stream (`ScriptedSdkExecutor(workMs)`), its
 * card at the origin; `calls` gets the JSON-RPC method of every request.
 */
async function plainRemote(workMs: number, calls: string[] = []): Promise<{ url: string; close(): Promise<void> }> {
  let origin = '';
  const card = (): AgentCard =>
    sdkAgentCard({
      capabilities: { streaming: false, pushNotifications: false, extensions: [], extendedAgentCard: false },
      skills: [
        {
          id: 'plain',
          name: 'Plain',
          description: 'answers without streaming',
          tags: [],
          examples: [],
          inputModes: [],
          outputModes: [],
          securityRequirements: [],
        },
      ],
      supportedInterfaces: [{ url: `${origin}/rpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    });
  const handler = new DefaultRequestHandler(card(), new InMemoryTaskStore(), new ScriptedSdkExecutor(workMs));
  const app = express();
  app.use(express.json(), (req, _res, next) => {
    const body = req.body as { method?: unknown } | undefined;
    if (typeof body?.method === 'string') calls.push(body.method);
    next();
  });
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: () => Promise.resolve(card()) }));
  app.use('/rpc', sdkJsonRpc(handler));
  const l = await listenOnLoopback(app);
  origin = l.origin;
  return { url: `${origin}/rpc`, close: l.close };
}

function plainConfig(url: string): RemoteAgentConfig {
  return {
    id: 'plain',
    name: 'Plain',
    description: 'a remote agent that does not stream',
    url,
    protocolBinding: 'JSONRPC',
    auth: { kind: 'none' },
    skills: [],
  };
}

/** Its card is read in the background: the route card shows its skill once it has been. */
async function routeCardRead(gatewayUrl: string, agent = 'plain'): Promise<void> {
  await bounded(
    (async () => {
      for (;;) {
        const c = (await (await fetch(`${gatewayUrl}/a2a/${agent}/.well-known/agent-card.json`)).json()) as {
          skills?: { id: string }[];
        };
        if (c.skills?.some((s) => s.id === 'plain')) return;
        await new Promise((r) => setTimeout(r, 50));
      }
    })(),
    "the remote's card to be read",
  );
}

describe('gateway: a remote agent that does not stream', () => {
  const dir = tempDir();
  const logs: string[] = [];
  const calls: string[] = [];
  let close: () => Promise<void>;
  let gw: RunningGateway;

  before(async () => {
    const remote = await plainRemote(1_500, calls);
    close = remote.close;
    gw = await startGateway({ stateDir: dir.path, remoteAgents: [plainConfig(remote.url)], log: (l) => logs.push(l) });
    await routeCardRead(gw.url);
  });
  after(async () => {
    await gw.close();
    await close();
    dir[Symbol.dispose]();
  });

  it('the route card offers streaming: the gateway streams what it polls', async () => {
    const card = (await (await fetch(`${gw.url}/a2a/plain/.well-known/agent-card.json`)).json()) as {
      capabilities?: { streaming?: boolean };
    };
    assert.equal(card.capabilities?.streaming, true);
  });

  it('a streaming caller gets the task, its patch and a signed completed status; the remote is never asked to stream', async () => {
    const client = await clientFor(`${gw.url}/a2a/plain/.well-known/agent-card.json`, gw.token);
    const events = await bounded(collect(client.sendMessageStream(sendRequest(userMessage('fix it')))), 'the stream');
    assert.equal(events[0]?.payload?.$case, 'task');
    // Progress came as it was polled: the task working before it completed.
    assert.ok(
      events.slice(0, -1).some((e) => stateOf(e) === 'TASK_STATE_WORKING'),
      JSON.stringify(events.map(stateOf)),
    );
    const last = events.at(-1)?.payload;
    assert.equal(stateOf(events.at(-1)), 'TASK_STATE_COMPLETED');
    assert.ok(last?.$case === 'statusUpdate' && typeof last.value.metadata?.[META.envelope] === 'string', 'signed');
    assert.ok(
      events.some((e) => e.payload?.$case === 'artifactUpdate' && e.payload.value.artifact?.artifactId === 'p'),
      'the patch is relayed',
    );
    assert.ok(calls.includes('SendMessage'), calls.join(', '));
    assert.ok(calls.includes('GetTask'), calls.join(', '));
    assert.deepEqual(
      calls.filter((c) => c === 'SendStreamingMessage' || c === 'SubscribeToTask'),
      [],
    );
    assert.deepEqual(
      logs.filter((l) => /lost|unknown outcome|failed/.test(l)),
      [],
    );
  });

  it('a blocking send waits for the task to settle, as it does for a streaming remote', async () => {
    const client = await clientFor(`${gw.url}/a2a/plain/.well-known/agent-card.json`, gw.token, { replay: false });
    const answer = await bounded(client.sendMessage(sendRequest(userMessage('fix it'))), 'the blocking send');
    assert.ok('status' in answer);
    assert.equal(answer.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(answer.artifacts.length, 1);
  });

  it('a cancel reaches the remote and the task ends canceled', async () => {
    const client = await clientFor(`${gw.url}/a2a/plain/.well-known/agent-card.json`, gw.token);
    const first = await bounded(
      client.sendMessage(sendRequest(userMessage('wait for a cancel'), true)),
      'the send returning at once',
    );
    assert.ok('status' in first);
    const canceled = await bounded(client.cancelTask({ tenant: '', id: first.id, metadata: undefined }), 'the cancel');
    assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
    assert.ok(calls.includes('CancelTask'), calls.join(', '));
  });

  it('a task with nothing new is polled less and less often: 1 s, then half again each time, up to 5 s', async () => {
    const client = await clientFor(`${gw.url}/a2a/plain/.well-known/agent-card.json`, gw.token);
    const from = calls.length;
    const first = await bounded(
      client.sendMessage(sendRequest(userMessage('wait for a cancel'), true)),
      'the send returning at once',
    );
    assert.ok('status' in first);
    await new Promise((r) => setTimeout(r, 6_500));
    const polls = calls.slice(from).filter((c) => c === 'GetTask').length;
    // The answer to the send looks once; the relay's polls then come 1, 1.5 and 2.25 s apart (the next
    // 3.4 s later): five in 6.5 s. Every second, it would be eight. Timers never fire early, so a slow
    // machine only makes it fewer.
    assert.ok(polls >= 2 && polls <= 5, `GetTask calls in 6.5 quiet seconds: ${polls}`);
    const canceled = await bounded(client.cancelTask({ tenant: '', id: first.id, metadata: undefined }), 'the cancel');
    assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
  });

  it('a reply to a task that asked a question goes to the remote, and the task goes on to its end', async () => {
    const client = await clientFor(`${gw.url}/a2a/plain/.well-known/agent-card.json`, gw.token, { replay: false });
    const asked = await bounded(client.sendMessage(sendRequest(userMessage('ask me first'))), 'the question');
    assert.ok('status' in asked);
    assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    const reply = { ...userMessage('yes, go on'), taskId: asked.id, contextId: asked.contextId };
    const done = await bounded(client.sendMessage(sendRequest(reply)), 'the reply');
    assert.ok('status' in done);
    assert.equal(done.id, asked.id);
    assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(done.artifacts.length, 1);
  });
});

describe('gateway: a remote agent that does not stream, after the gateway was killed', () => {
  it('the restarted gateway follows the task by GetTask and records its progress, its patch and its signed end', async () => {
    using dir = tempDir();
    const remote = await plainRemote(6_000);
    let child = await startChild(dir.path, remote.url);
    try {
      await routeCardRead(child.url, 'remote');
      const client = await clientFor(`${child.url}/a2a/remote/.well-known/agent-card.json`, child.token);
      let id = '';
      for await (const ev of client.sendMessageStream(sendRequest(userMessage('fix it slowly')))) {
        if (ev.payload?.$case === 'task') id = ev.payload.value.id;
        break;
      }
      assert.ok(id);
      await kill9(child);
      child = await startChild(dir.path, remote.url);
      const again = await clientFor(`${child.url}/a2a/remote/.well-known/agent-card.json`, child.token);
      await bounded(
        (async () => {
          // Until the gateway has recorded the end (GetTask asks the remote while the task runs).
          while ((await again.getTask({ tenant: '', id })).metadata?.[META.envelope] === undefined)
            await new Promise((r) => setTimeout(r, 200));
        })(),
        'the task to complete',
        30_000,
      ).catch((e: unknown) => {
        throw new Error(`${(e as Error).message}; the gateway said:\n${child.log()}`);
      });
      await kill9(child);
      await withChildStore(dir.path, async (store) => {
        const bodies = (await store.readEvents('remote', id, 0, 1000)).map((r) => String(r.body));
        const halfway = bodies.findIndex((b) => b.includes('"halfway"'));
        const end = bodies.findIndex((b) => b.includes('TASK_STATE_COMPLETED'));
        assert.ok(halfway > 0 && halfway < end, bodies.join('\n'));
        assert.ok(bodies[end]?.includes(META.envelope), 'the end is signed');
        assert.ok(
          bodies.some((b) => b.includes('changes.patch')),
          'the patch is recorded',
        );
      });
    } finally {
      await kill9(child);
      await remote.close();
    }
  });
});
