import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import type { AgentExecutor, ExecutionEventBus, RequestContext } from '@a2a-js/sdk/server';
import { jsonRpcHandler, restHandler } from '@a2a-js/sdk/server/express';
import { TaskState } from '@a2a-js/sdk';
import type { AgentCard, StreamResponse } from '@a2a-js/sdk';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { clientFor, collect, sendRequest, seqOf, tempDir, userMessage } from './helpers';
import type { CutProxy } from '../delegation/cutProxy';
import { CUT_POINTS, startCutProxy } from '../delegation/cutProxy';

/**
 * A plain SDK agent: N status events, a patch artifact, completed; or waits to be canceled ("wait"); or
 * ("auth") asks for authorization and goes on by itself once `authorize()` is called (out of band).
 */
class CountingExecutor implements AgentExecutor {
  private readonly cancels = new Set<string>();
  private authorized!: () => void;
  private readonly signedIn = new Promise<void>((r) => (this.authorized = r));
  constructor(private readonly n: number) {}
  authorize(): void {
    this.authorized();
  }
  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = ctx;
    const text = ctx.userMessage.parts[0]?.content?.$case === 'text' ? ctx.userMessage.parts[0].content.value : '';
    bus.publish(AgentEvent.task({ id: taskId, contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: undefined }, artifacts: [], history: [ctx.userMessage], metadata: undefined }));
    if (text === 'patch later') {
      // Works on after the first events; the patch and the end come later (the relay may be gone by then).
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: '1' }, metadata: undefined }));
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: '2' }, metadata: undefined }));
      await new Promise((r) => setTimeout(r, 150));
      bus.publish(AgentEvent.artifactUpdate({ taskId, contextId, artifact: { artifactId: 'p', name: 'changes.patch', description: '', parts: [{ content: { $case: 'text', value: 'diff --git a/later b/later\n' }, metadata: undefined, filename: 'changes.patch', mediaType: 'text/x-diff' }], metadata: undefined, extensions: [] }, append: false, lastChunk: true, metadata: undefined }));
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: undefined }, metadata: undefined }));
      bus.finished();
      return;
    }
    if (text === 'auth') {
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state: TaskState.TASK_STATE_AUTH_REQUIRED, message: undefined, timestamp: undefined }, metadata: undefined }));
      await this.signedIn;
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: 'signed in' }, metadata: undefined }));
      // Work done while nobody follows the task: the gateway must still end up with this artifact.
      bus.publish(AgentEvent.artifactUpdate({ taskId, contextId, artifact: { artifactId: 'p', name: 'changes.patch', description: '', parts: [{ content: { $case: 'text', value: 'diff --git a/auth b/auth\n' }, metadata: undefined, filename: 'changes.patch', mediaType: 'text/x-diff' }], metadata: undefined, extensions: [] }, append: false, lastChunk: true, metadata: undefined }));
      while (!this.cancels.has(taskId) && !this.finishAuthTask) await new Promise((r) => setTimeout(r, 10));
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: undefined }, metadata: undefined }));
      bus.finished();
      return;
    }
    if (text === 'wait') {
      while (!this.cancels.has(taskId)) await new Promise((r) => setTimeout(r, 10));
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: undefined }, metadata: undefined }));
      bus.finished();
      return;
    }
    for (let i = 1; i <= this.n; i++) {
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: String(i) }, metadata: { i } }));
    }
    bus.publish(AgentEvent.artifactUpdate({ taskId, contextId, artifact: { artifactId: 'p', name: 'changes.patch', description: '', parts: [{ content: { $case: 'text', value: 'diff --git a/a b/a\n' }, metadata: undefined, filename: 'changes.patch', mediaType: 'text/x-diff' }], metadata: undefined, extensions: [] }, append: false, lastChunk: true, metadata: undefined }));
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: undefined }, metadata: undefined }));
    bus.finished();
  }
  /** Lets the "auth" task finish (after the test has seen it go on). */
  finishAuthTask = false;
  cancelTask(taskId: string): Promise<void> {
    this.cancels.add(taskId);
    return Promise.resolve();
  }
}

export async function startRemote(n: number, requiredToken: string, legacy: boolean): Promise<{ url: string; seenAuth: string[]; executor: CountingExecutor; close(): Promise<void> }> {
  const seenAuth: string[] = [];
  const app = express();
  let url = '';
  const card = (): AgentCard => ({
    name: 'remote',
    description: 'SDK agent',
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: legacy ? '0.3' : '1.0' },
      { url: url.replace(/\/rpc$/, '/rest'), protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: legacy ? '0.3' : '1.0' },
    ],
    provider: undefined, version: '1', capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {}, securityRequirements: [], defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'], skills: [], signatures: [],
  });
  const executor = new CountingExecutor(n);
  const handler = new DefaultRequestHandler(card(), new InMemoryTaskStore(), executor);
  Object.defineProperty(handler, 'getAgentCard', { value: () => Promise.resolve(card()) });
  app.use((req, res, next) => {
    seenAuth.push(req.header('authorization') ?? '');
    if (req.header('authorization') !== `Bearer ${requiredToken}`) return void res.status(401).json({ error: 'no' });
    next();
  });
  app.use('/rpc', jsonRpcHandler({ requestHandler: handler, userBuilder: () => Promise.resolve({ isAuthenticated: true, userName: 'gw' }), ...(legacy ? { legacyCompat: { enabled: true } } : {}) }));
  app.use('/rest', restHandler({ requestHandler: handler, userBuilder: () => Promise.resolve({ isAuthenticated: true, userName: 'gw' }) }));
  const server: Server = await new Promise((r) => {
    const s = app.listen(0, '127.0.0.1', () => r(s));
  });
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/rpc`;
  return { url, seenAuth, executor, close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }) };
}

const variants = [
  { legacy: false, binding: 'JSONRPC' },
  { legacy: false, binding: 'HTTP+JSON' },
  { legacy: true, binding: 'JSONRPC' },
] as const;

for (const { legacy, binding } of variants) {
  describe(`gateway: transparent proxy to a remote ${legacy ? '0.3' : '1.0'} agent over ${binding}`, () => {
    const dir = tempDir();
    let gw: RunningGateway;
    let remote: Awaited<ReturnType<typeof startRemote>>;
    const remoteToken = 'remote-secret-token-0123456789';
    before(async () => {
      remote = await startRemote(50, remoteToken, legacy);
      gw = await startGateway({
        stateDir: dir.path,
        remoteAgents: [
          {
            id: 'remote',
            name: 'Remote',
            description: 'proxied',
            url: binding === 'JSONRPC' ? remote.url : remote.url.replace(/\/rpc$/, '/rest'),
            protocolBinding: binding,
            protocolVersion: legacy ? '0.3' : '1.0',
            auth: { kind: 'bearer', token: remoteToken },
            skills: [],
          },
        ],
        limits: { cancelGraceMs: 2000 },
        log: () => undefined,
      });
    });
    after(async () => {
      await gw.close();
      await remote.close();
      dir[Symbol.dispose]();
    });

    it("relays a stream with the gateway's seq, keeps the remote's task id, and holds the remote's credentials", async () => {
      const client = await clientFor(`${gw.url}/a2a/remote/.well-known/agent-card.json`, gw.token);
      const events = await collect(client.sendMessageStream(sendRequest(userMessage('go'))));
      assert.deepEqual(events.map(seqOf), events.map((_, i) => i + 1));
      const working = events.filter((e) => e.payload?.$case === 'statusUpdate' && e.payload.value.status?.state === TaskState.TASK_STATE_WORKING);
      assert.equal(working.length, 50);
      const last = events[events.length - 1];
      assert.equal(last.payload?.$case === 'statusUpdate' ? last.payload.value.status?.state : -1, TaskState.TASK_STATE_COMPLETED);
      assert.equal(typeof (last.payload?.value as { metadata?: Record<string, unknown> }).metadata?.['baton/resultEnvelope'], 'string');
      const id = events[0].payload?.$case === 'task' ? events[0].payload.value.id : '';
      const task = await client.getTask({ tenant: '', id });
      assert.equal(task.id, id);
      assert.equal(task.artifacts[0]?.name, 'changes.patch');
      // The remote saw the gateway's credentials on every call, never the caller's token.
      assert.ok(remote.seenAuth.length > 0);
      assert.ok(remote.seenAuth.every((a) => a === `Bearer ${remoteToken}`));
      assert.ok(!remote.seenAuth.some((a) => a.includes(gw.token)));
    });

    it('an auth-required task: once authorized out of band, a client subscribing again gets what the remote did meanwhile, then the rest, live', async () => {
      const client = await clientFor(`${gw.url}/a2a/remote/.well-known/agent-card.json`, gw.token);
      const first = await collect(client.sendMessageStream(sendRequest(userMessage('auth'))));
      const last = first[first.length - 1];
      assert.equal(last.payload?.$case === 'statusUpdate' ? last.payload.value.status?.state : -1, TaskState.TASK_STATE_AUTH_REQUIRED);
      const id = first[0].payload?.$case === 'task' ? first[0].payload.value.id : '';
      const cursor = seqOf(last) ?? 0;
      // Not authorized yet: subscribing again brings nothing new and ends.
      assert.deepEqual(await collect(client.resubscribeTask({ tenant: '', id }, { serviceParameters: { 'Last-Event-ID': String(cursor) } })), []);
      remote.executor.authorize();
      // The remote goes on by itself (the gateway relays nothing meanwhile: the turn ended).
      // (GetTask through the gateway asks the remote while the task is not over.)
      for (let i = 0; i < 500 && (await client.getTask({ tenant: '', id })).status?.state === TaskState.TASK_STATE_AUTH_REQUIRED; i++) await new Promise((r) => setTimeout(r, 10));
      const events: StreamResponse[] = [];
      for await (const ev of client.resubscribeTask({ tenant: '', id }, { serviceParameters: { 'Last-Event-ID': String(cursor) } })) {
        events.push(ev);
        // The task ends only once this subscriber has what the remote did meanwhile.
        remote.executor.finishAuthTask = true;
      }
      assert.deepEqual(events.map(seqOf), events.map((_, i) => cursor + 1 + i), 'continues the seq without a gap');
      // What the remote did unseen arrives (the artifact it made), then the rest, ending on the signed result.
      const made = events.find((e) => e.payload?.$case === 'artifactUpdate');
      assert.equal(made?.payload?.$case === 'artifactUpdate' ? made.payload.value.artifact?.name : undefined, 'changes.patch');
      const end = events[events.length - 1];
      assert.equal(end.payload?.$case === 'statusUpdate' ? end.payload.value.status?.state : -1, TaskState.TASK_STATE_COMPLETED);
      assert.equal(typeof (end.payload?.value as { metadata?: Record<string, unknown> }).metadata?.['baton/resultEnvelope'], 'string');
      const task = await client.getTask({ tenant: '', id });
      assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
      assert.match(String(task.artifacts[0]?.parts[0]?.content?.value), /^diff --git a\/auth/);
    });

    it('forwards cancel and records the remote outcome', async () => {
      const client = await clientFor(`${gw.url}/a2a/remote/.well-known/agent-card.json`, gw.token);
      const started = await client.sendMessage(sendRequest(userMessage('wait'), true));
      const id = 'id' in started ? started.id : '';
      const canceled = await client.cancelTask({ tenant: '', id, metadata: undefined });
      assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
      const again = await client.getTask({ tenant: '', id });
      assert.equal(again.status?.state, TaskState.TASK_STATE_CANCELED);
    });
  });
}

describe('gateway: a relay whose stream to the remote breaks while the remote finishes', () => {
  const dir = tempDir();
  let gw: RunningGateway;
  let remote: Awaited<ReturnType<typeof startRemote>>;
  let cut: CutProxy;
  const remoteToken = 'remote-secret-token-0123456789';
  before(async () => {
    remote = await startRemote(0, remoteToken, false);
    cut = await startCutProxy(Number(new URL(remote.url).port));
    // The relay's streaming call is cut after its second event; the remote goes on without it.
    cut.setCutPoint(CUT_POINTS.midEvent);
    gw = await startGateway({
      stateDir: dir.path,
      remoteAgents: [{ id: 'remote', name: 'Remote', description: 'proxied', url: `http://127.0.0.1:${cut.port}/rpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', auth: { kind: 'bearer', token: remoteToken }, skills: [] }],
      log: () => undefined,
    });
  });
  after(async () => {
    await gw.close();
    await cut.close();
    await remote.close();
    dir[Symbol.dispose]();
  });

  it('finds the task finished on reconnecting and records the artifact made meanwhile before the signed result', async () => {
    const client = await clientFor(`${gw.url}/a2a/remote/.well-known/agent-card.json`, gw.token);
    const events = await collect(client.sendMessageStream(sendRequest(userMessage('patch later'))));
    assert.equal(cut.cuts, 1, 'the relay lost its stream');
    assert.deepEqual(events.map(seqOf), events.map((_, i) => i + 1));
    const made = events.find((e) => e.payload?.$case === 'artifactUpdate');
    assert.equal(made?.payload?.$case === 'artifactUpdate' ? made.payload.value.artifact?.name : undefined, 'changes.patch');
    const end = events[events.length - 1];
    assert.equal(end.payload?.$case === 'statusUpdate' ? end.payload.value.status?.state : -1, TaskState.TASK_STATE_COMPLETED);
    assert.equal(typeof (end.payload?.value as { metadata?: Record<string, unknown> }).metadata?.['baton/resultEnvelope'], 'string');
    const id = events[0].payload?.$case === 'task' ? events[0].payload.value.id : '';
    // GetTask of a finished task answers from the gateway's store: the artifact is there.
    const task = await client.getTask({ tenant: '', id });
    assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.match(String(task.artifacts[0]?.parts[0]?.content?.value), /^diff --git a\/later/);
  });
});
