/**
 * A local agent that asks (`request.ask`): the task goes to input-required with the question, a reply
 * on the same task (as the panel and `baton reply` send it) lets the run go on, and cancel, the
 * deadline, a shutdown and a crash while it waits each leave the task in a state that says what
 * happened.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { TaskState } from '@a2a-js/sdk';
import type { StreamResponse, Task } from '@a2a-js/sdk';
import { buildReplyMessage } from '../../../src/core/delegation/context';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { bounded, clientFor, collect, scriptedAgent, sendRequest, seqOf, tempDir, userMessage } from './helpers';

const QUESTION = 'Which cart? 1) src/cart.js:4  2) src/invoice.js:9';

function statusOf(ev: StreamResponse | undefined): { state?: TaskState; text?: string; outcome?: unknown } {
  if (ev?.payload?.$case === 'statusUpdate') {
    const v = ev.payload.value;
    const c = v.status?.message?.parts[0]?.content;
    return {
      state: v.status?.state,
      text: c?.$case === 'text' ? c.value : undefined,
      outcome: v.metadata?.['baton/outcome'],
    };
  }
  if (ev?.payload?.$case === 'task') return { state: ev.payload.value.status?.state };
  return {};
}

function taskText(t: Task): string {
  const c = t.status?.message?.parts[0]?.content;
  return c?.$case === 'text' ? c.value : '';
}

describe('gateway: a local agent asks, the caller replies on the same task', () => {
  const dir = tempDir();
  let gw: RunningGateway;
  before(async () => {
    gw = await startGateway({
      stateDir: dir.path,
      localAgents: [scriptedAgent({ id: 'asker', ask: QUESTION }), scriptedAgent({ id: 'busy', waitForCancel: true })],
      limits: { cancelGraceMs: 300 },
      log: () => undefined,
    });
  });
  after(async () => {
    await gw.close();
    dir[Symbol.dispose]();
  });
  const client = () => clientFor(`${gw.url}/a2a/asker/.well-known/agent-card.json`, gw.token);

  it('streams to input-required with the question; the reply (same taskId and contextId) streams on to the patch', async () => {
    const c = await client();
    const first = await bounded(collect(c.sendMessageStream(sendRequest(userMessage('rename it')))), 'first turn');
    const last = statusOf(first[first.length - 1]);
    assert.equal(last.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    assert.equal(last.text, QUESTION);
    const task = first[0].payload?.$case === 'task' ? first[0].payload.value : undefined;
    assert.ok(task);

    const reply = buildReplyMessage('reply-1', task.id, task.contextId, '2');
    const second = await bounded(collect(c.sendMessageStream(sendRequest(reply))), 'second turn');
    // A2A §3.1.2: the reply's stream begins with the task as the reply found it, at the seq it had then.
    const resumed = second[0]?.payload?.$case === 'task' ? second[0].payload.value : undefined;
    assert.ok(resumed, 'the reply stream begins with the task');
    assert.equal(resumed.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    assert.equal(resumed.history[resumed.history.length - 1]?.messageId, 'reply-1');
    assert.equal(seqOf(second[0]), seqOf(first[first.length - 1]));
    const seqs = [...first, ...second.slice(1)].map(seqOf);
    assert.deepEqual(
      seqs,
      seqs.map((_, i) => i + 1),
      'one event log across both turns',
    );
    assert.equal(statusOf(second[1]).state, TaskState.TASK_STATE_WORKING);
    const end = statusOf(second[second.length - 1]);
    assert.equal(end.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(end.text, 'did: rename it; answer: 2');
    assert.ok(second.some((e) => e.payload?.$case === 'artifactUpdate'));

    const stored = await c.getTask({ tenant: '', id: task.id });
    assert.deepEqual(
      stored.history.map((m) => m.messageId),
      [first[0].payload?.$case === 'task' ? first[0].payload.value.history[0].messageId : '', 'reply-1'],
    );
    // The same reply sent again (a retry) finds the task, and a reply to a finished task is refused.
    await assert.rejects(
      c.sendMessage(sendRequest(buildReplyMessage('reply-2', task.id, task.contextId, '1'))),
      /has ended; start a new task/,
    );
  });

  it('a blocking reply (poll-only clients) returns the finished task; a retry of it answers the same', async () => {
    const c = await client();
    const t = await c.sendMessage(sendRequest(userMessage('blocking')));
    assert.ok('id' in t && t.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED);
    const reply = buildReplyMessage('blocking-reply', t.id, t.contextId, 'the first');
    const done = await c.sendMessage(sendRequest(reply));
    assert.ok('id' in done);
    assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(taskText(done), 'did: blocking; answer: the first');
    const again = await c.sendMessage(sendRequest(reply));
    assert.ok('id' in again && again.id === t.id);
    // Streamed, the retry is the task as it is now (ended, the reply once in its history), and the stream closes.
    const streamed = await bounded(collect(c.sendMessageStream(sendRequest(reply))), 'a streamed retry');
    const only = streamed.length === 1 && streamed[0].payload?.$case === 'task' ? streamed[0].payload.value : undefined;
    assert.ok(only, `one task event, got ${streamed.map((e) => e.payload?.$case).join(', ')}`);
    assert.equal(only.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(only.history.filter((m) => m.messageId === 'blocking-reply').length, 1);
  });

  it('refuses a reply with another contextId and a reply to a task that did not ask', async () => {
    const c = await client();
    const t = await c.sendMessage(sendRequest(userMessage('ctx')));
    assert.ok('id' in t);
    await assert.rejects(
      c.sendMessage(sendRequest(buildReplyMessage('wrong-ctx', t.id, 'another-context', '1'))),
      /is not the context of task .*send the reply with contextId/,
    );
    const ok = await c.sendMessage(sendRequest(buildReplyMessage('right-ctx', t.id, t.contextId, '1')));
    assert.ok('id' in ok && ok.status?.state === TaskState.TASK_STATE_COMPLETED);
    const busy = await clientFor(`${gw.url}/a2a/busy/.well-known/agent-card.json`, gw.token);
    const w = await busy.sendMessage(sendRequest(userMessage('work'), true));
    assert.ok('id' in w);
    await assert.rejects(
      busy.sendMessage(sendRequest(buildReplyMessage('unasked', w.id, w.contextId, '1'))),
      /is working and has not asked anything; reply when it is input-required/,
    );
    await busy.cancelTask({ tenant: '', id: w.id, metadata: undefined });
  });

  it('two replies at once: one is taken, the other is refused, and the history has one reply', async () => {
    const c = await client();
    const t = await c.sendMessage(sendRequest(userMessage('race')));
    assert.ok('id' in t && t.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED);
    const results = await Promise.allSettled(
      ['a', 'b'].map((x) => c.sendMessage(sendRequest(buildReplyMessage(`race-${x}`, t.id, t.contextId, x)))),
    );
    assert.equal(
      results.filter((r) => r.status === 'fulfilled').length,
      1,
      JSON.stringify(results.map((r) => (r.status === 'rejected' ? String(r.reason) : 'ok'))),
    );
    const refused = results.find((r) => r.status === 'rejected');
    assert.match(
      String(refused?.status === 'rejected' ? refused.reason : ''),
      /no longer waiting for a reply|is working and has not asked anything/,
    );
    const done = await c.getTask({ tenant: '', id: t.id });
    assert.equal(done.history.filter((m) => m.messageId.startsWith('race-')).length, 1);
  });

  it('cancel while it waits: canceled at once', async () => {
    const c = await client();
    const t = await c.sendMessage(sendRequest(userMessage('cancel me')));
    assert.ok('id' in t && t.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED);
    const canceled = await bounded(c.cancelTask({ tenant: '', id: t.id, metadata: undefined }), 'cancel');
    assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
    assert.equal(canceled.metadata?.['baton/outcome'], 'canceled');
    await assert.rejects(c.sendMessage(sendRequest(buildReplyMessage('late', t.id, t.contextId, '1'))), /has ended/);
  });

  it('the deadline passes while it waits: expired', async () => {
    const c = await client();
    const deadline = new Date(Date.now() + 700).toISOString();
    const t = await c.sendMessage(sendRequest(userMessage('slow reader', { 'baton/deadline': deadline })));
    assert.ok('id' in t && t.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED);
    let now = t;
    for (let i = 0; i < 100 && now.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED; i++) {
      await new Promise((r) => setTimeout(r, 50));
      now = await c.getTask({ tenant: '', id: t.id });
    }
    assert.equal(now.status?.state, TaskState.TASK_STATE_FAILED);
    assert.equal(now.metadata?.['baton/outcome'], 'expired');
  });
});

describe('gateway: stopping while a local agent waits for a reply', () => {
  it('a clean stop records failed, saying the question can no longer be answered; after the restart a reply is refused', async () => {
    using dir = tempDir();
    const agents = () => [scriptedAgent({ id: 'asker', ask: QUESTION })];
    let gw = await startGateway({
      stateDir: dir.path,
      localAgents: agents(),
      limits: { cancelGraceMs: 300 },
      log: () => undefined,
    });
    let t: Task | undefined;
    try {
      const c = await clientFor(`${gw.url}/a2a/asker/.well-known/agent-card.json`, gw.token);
      const r = await c.sendMessage(sendRequest(userMessage('then stop')));
      assert.ok('id' in r && r.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED);
      t = r;
    } finally {
      await gw.close();
    }
    gw = await startGateway({ stateDir: dir.path, localAgents: agents(), log: () => undefined });
    try {
      const c = await clientFor(`${gw.url}/a2a/asker/.well-known/agent-card.json`, gw.token);
      const now = await c.getTask({ tenant: '', id: t.id });
      assert.equal(now.status?.state, TaskState.TASK_STATE_FAILED);
      assert.equal(now.metadata?.['baton/outcome'], 'failed');
      assert.match(
        taskText(now),
        /stopped while this task waited for your reply.*nothing was changed in your repository: start a new task/,
      );
      await assert.rejects(
        c.sendMessage(sendRequest(buildReplyMessage('after-restart', t.id, t.contextId, '1'))),
        /has ended; start a new task/,
      );
    } finally {
      await gw.close();
    }
  });

  it('kill -9 while it waits: the restarted gateway records failed with the same explanation', async () => {
    using dir = tempDir();
    const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, 'fixtures/gatewayChild.ts'), dir.path], {
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: join(__dirname, '../../..'),
    });
    try {
      const line = await bounded(
        new Promise<string>((resolve, reject) => {
          let out = '';
          child.stdout.on('data', (d: Buffer) => {
            out += d.toString();
            if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n')));
          });
          child.once('exit', (code) => reject(new Error(`the gateway child exited ${code}`)));
        }),
        'child gateway start',
        30_000,
      );
      const info = JSON.parse(line) as { url: string; token: string };
      const c = await clientFor(`${info.url}/a2a/asker/.well-known/agent-card.json`, info.token);
      const r = await c.sendMessage(sendRequest(userMessage('then crash')));
      assert.ok('id' in r && r.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED);
      await new Promise<void>((res) => {
        child.once('exit', () => res());
        child.kill('SIGKILL');
      });
      const gw = await startGateway({
        stateDir: dir.path,
        localAgents: [scriptedAgent({ id: 'asker', ask: QUESTION })],
        log: () => undefined,
      });
      try {
        const c2 = await clientFor(`${gw.url}/a2a/asker/.well-known/agent-card.json`, gw.token);
        const now = await c2.getTask({ tenant: '', id: r.id });
        assert.equal(now.status?.state, TaskState.TASK_STATE_FAILED);
        assert.equal(now.metadata?.['baton/outcome'], 'failed');
        assert.match(taskText(now), /stopped while this task waited for your reply/);
      } finally {
        await gw.close();
      }
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
