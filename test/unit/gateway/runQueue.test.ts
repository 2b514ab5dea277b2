/**
 * Each principal's local runs at once (`limits.maxRunningPerPrincipal`), and the line the others wait
 * in: the queue itself, then a real gateway with the SDK's own client as two team members.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState } from '@a2a-js/sdk';
import type { StreamResponse } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import type { LocalAgent } from '../../../src/gateway/agents/localAgent';
import type { GatewayLimits } from '../../../src/gateway/gatewayContext';
import { META } from '../../../src/core/batonProfile';
import { sha256HexOf } from '../../../src/gateway/config';
import { waitingText } from '../../../src/gateway/localTaskRunner';
import { RunQueue } from '../../../src/gateway/runQueue';
import type { TurnHolder } from '../../../src/gateway/runQueue';
import { DelegationJournal } from '../../../src/core/delegation';
import { stateLook } from '../../../src/core/protocol/delegationStates';
import { buildReplyMessage } from '../../../src/core/delegation/context';
import { connectAgent, normalizeCard } from '../../../src/node/a2a/clientFactory';
import { DelegationRunner } from '../../../src/node/a2a/delegationRunner';
import { JournalStore } from '../../../src/node/journalStore';
import { makeRequest } from '../delegation/harness';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { bounded, clientFor, scriptedAgent, sendRequest, suiteGateway, tempDir, userMessage } from './helpers';

let held = 0;
/** A task of `principal` asking for a turn (the in-memory line looks at the principal only). */
const holder = (principal: string): TurnHolder => ({ principal, agent: 'echo', taskId: `t${++held}` });

describe('run queue', () => {
  it('gives each principal its limit at once; the others wait in line, told their place as it moves', async () => {
    const q = new RunQueue(2);
    const a1 = q.tryTake('alice');
    const a2 = q.tryTake('alice');
    assert.ok(a1 && a2);
    assert.equal(q.tryTake('alice'), undefined, 'a third waits');
    assert.ok(q.tryTake('bob'), 'another principal is not held up');
    const places: Record<string, number[]> = { x: [], y: [] };
    const x = q.wait(holder('alice'), new AbortController().signal, (p) => places.x.push(p));
    const y = q.wait(holder('alice'), new AbortController().signal, (p) => places.y.push(p));
    assert.deepEqual(places, { x: [1], y: [2] });
    a1();
    a1(); // giving a slot back twice frees it once
    const releaseX = await x;
    assert.deepEqual(places.y, [2, 1], 'y moved up');
    assert.equal(q.runningOf('alice'), 2);
    a2();
    const releaseY = await y;
    releaseX();
    releaseY();
    assert.equal(q.runningOf('alice'), 0);
  });

  it('a waiter whose signal aborts leaves the line with its reason; those behind move up', async () => {
    const q = new RunQueue(1);
    const held = q.tryTake('alice');
    assert.ok(held);
    const cancel = new AbortController();
    const places: number[] = [];
    const first = q.wait(holder('alice'), cancel.signal);
    const second = q.wait(holder('alice'), new AbortController().signal, (p) => places.push(p));
    cancel.abort(new Error('canceled'));
    await assert.rejects(first, /canceled/);
    assert.deepEqual(places, [2, 1]);
    held();
    (await second)();
    const stopped = new AbortController();
    stopped.abort(new Error('gateway shutting down'));
    assert.ok(q.tryTake('alice'));
    await assert.rejects(q.wait(holder('alice'), stopped.signal), /gateway shutting down/);
  });

  it('no limit (0): every run starts at once', () => {
    const q = new RunQueue(0);
    for (let i = 0; i < 50; i++) assert.ok(q.tryTake('alice'));
  });
});

describe('run queue: a limit changed while tasks wait', () => {
  it('a higher limit gives the waiting tasks the turns it frees, in order; no limit lets them all run', async () => {
    const q = new RunQueue(1);
    assert.ok(q.tryTake('alice'));
    const ran: string[] = [];
    const x = q.wait(holder('alice'), new AbortController().signal).then(() => ran.push('x'));
    const y = q.wait(holder('alice'), new AbortController().signal).then(() => ran.push('y'));
    const z = q.wait(holder('alice'), new AbortController().signal).then(() => ran.push('z'));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(ran, []);
    q.setLimit(2);
    await x;
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(ran, ['x']);
    assert.equal(q.limit, 2);
    q.setLimit(0);
    await Promise.all([y, z]);
    assert.deepEqual(ran, ['x', 'y', 'z']);
    assert.equal(q.runningOf('alice'), 4);
  });
});

describe('gateway: a team member\u2019s tasks beyond the limit wait their turn', () => {
  const ALICE = 'a'.repeat(40);
  const BOB = 'b'.repeat(40);
  const hold = scriptedAgent({ id: 'hold', waitForCancel: true });
  const echo = scriptedAgent({ id: 'echo' });
  const gw = suiteGateway({
    localAgents: [hold, echo],
    tokens: [
      { principal: 'alice', sha256: sha256HexOf(ALICE) },
      { principal: 'bob', sha256: sha256HexOf(BOB) },
    ],
    limits: { maxRunningPerPrincipal: 1 },
  });
  const client = (agent: string, token: string): ReturnType<typeof clientFor> =>
    clientFor(`${gw.url}/a2a/${agent}/.well-known/agent-card.json`, token);
  const statusOf = (e: StreamResponse): { state: string; text: string } | undefined => {
    const p = e.payload;
    if (p?.$case !== 'statusUpdate') return undefined;
    const part = p.value.status?.message?.parts[0]?.content;
    return { state: TaskState[p.value.status?.state ?? 0], text: part?.$case === 'text' ? part.value : '' };
  };
  /** Reads a stream's events until `until` holds for one of them; the rest of the stream is left open. */
  const readUntil = async (
    stream: AsyncGenerator<StreamResponse>,
    until: (e: StreamResponse) => boolean,
  ): Promise<StreamResponse[]> => {
    const seen: StreamResponse[] = [];
    // next(), not for-await: leaving a for-await loop would close the stream.
    for (let r = await stream.next(); !r.done; r = await stream.next()) {
      seen.push(r.value);
      if (until(r.value)) break;
    }
    return seen;
  };
  const idOf = (events: readonly StreamResponse[]): string => {
    const p = events[0]?.payload;
    return p?.$case === 'task' ? p.value.id : '';
  };

  it('waits in line (saying so, the agent not started), starts when a slot frees, and another member is not held up', async () => {
    const alice = await client('hold', ALICE);
    const first = await bounded(alice.sendMessage(sendRequest(userMessage('hold on'), true)), 'the first task');
    assert.ok('status' in first);
    await bounded(
      (async () => {
        while (hold.requests.length < 1) await new Promise((r) => setTimeout(r, 10));
      })(),
      'the first task to run',
    );
    // Alice's second task, on another agent: the limit is hers, across agents.
    const second = (await client('echo', ALICE)).sendMessageStream(sendRequest(userMessage('then this')));
    const before = await bounded(
      readUntil(second, (e) => statusOf(e)?.state === 'TASK_STATE_SUBMITTED'),
      'the second task to say it waits',
    );
    assert.deepEqual(statusOf(before.at(-1) as StreamResponse), {
      state: 'TASK_STATE_SUBMITTED',
      text: waitingText(1, 1),
    });
    // The place is also said on the status's message, so a task read with GetTask says it too.
    const waitingTask = await (await client('echo', ALICE)).getTask({ tenant: '', id: idOf(before), historyLength: 0 });
    assert.equal(waitingTask.status?.state, TaskState.TASK_STATE_SUBMITTED);
    assert.deepEqual(waitingTask.status?.message?.metadata?.[META.turn], { place: 1, limit: 1 });
    assert.equal(
      waitingText(1, 1),
      'waiting for its turn: at most one of your tasks runs on this gateway at once; it starts next',
    );
    assert.equal(
      waitingText(3, 2),
      'waiting for its turn: at most 3 of your tasks run on this gateway at once; one of yours waits before it',
    );
    assert.equal(
      waitingText(2, 4),
      'waiting for its turn: at most 2 of your tasks run on this gateway at once; 3 of yours wait before it',
    );
    // Bob's task runs at once, and completes, while Alice's second waits.
    const bob = await bounded(
      (await client('echo', BOB)).sendMessage(sendRequest(userMessage('mine'))),
      'bob\u2019s task',
    );
    assert.ok('status' in bob);
    assert.equal(bob.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.deepEqual(
      echo.requests.map((r) => r.prompt.includes('mine')),
      [true],
      'the echo agent ran bob\u2019s task only',
    );
    // Alice's first ends (canceled): her second gets its turn, runs and completes.
    await bounded(alice.cancelTask({ tenant: '', id: first.id, metadata: undefined }), 'the cancel');
    const rest = await bounded(
      readUntil(second, (e) => statusOf(e)?.state === 'TASK_STATE_COMPLETED'),
      'the second task to run',
    );
    const texts = rest.flatMap((e) => statusOf(e)?.text ?? []);
    assert.equal(texts[0], 'accepted by Echo agent');
    assert.equal(statusOf(rest.at(-1) as StreamResponse)?.state, 'TASK_STATE_COMPLETED');
    assert.equal(echo.requests.length, 2);
    assert.ok(idOf(before));
  });

  it('a task canceled, or past its deadline, while it waits ends without its agent ever starting', async () => {
    const alice = await client('hold', ALICE);
    const first = await bounded(alice.sendMessage(sendRequest(userMessage('hold on'), true)), 'the first task');
    assert.ok('status' in first);
    const ran = echo.requests.length;
    const aliceEcho = await client('echo', ALICE);
    const waiting = await bounded(
      aliceEcho.sendMessage(sendRequest(userMessage('wait for me'), true)),
      'a task that must wait',
    );
    assert.ok('status' in waiting);
    const canceled = await bounded(
      aliceEcho.cancelTask({ tenant: '', id: waiting.id, metadata: undefined }),
      'the cancel of a waiting task',
    );
    assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
    const late = await bounded(
      aliceEcho.sendMessage(
        sendRequest(userMessage('in a hurry', { [META.deadline]: new Date(Date.now() + 1_000).toISOString() })),
      ),
      'a task whose deadline passes while it waits',
    );
    assert.ok('status' in late);
    assert.equal(late.status?.state, TaskState.TASK_STATE_FAILED);
    assert.equal(
      late.status?.message?.parts[0]?.content?.$case === 'text' &&
        late.status.message.parts[0].content.value.startsWith('expired:'),
      true,
    );
    assert.equal(echo.requests.length, ran, 'the echo agent never started either');
    await bounded(alice.cancelTask({ tenant: '', id: first.id, metadata: undefined }), 'the cancel');
  });
});

/** A gateway of `agents` allowing one run at a time per principal (and `limits`), for `fn`; closed after. */
async function withTurns(
  agents: LocalAgent[],
  limits: Partial<GatewayLimits>,
  fn: (gw: RunningGateway, client: (agent: string) => Promise<Client>) => Promise<void>,
): Promise<void> {
  using dir = tempDir();
  const gw = await startGateway({
    stateDir: dir.path,
    localAgents: agents,
    limits: { maxRunningPerPrincipal: 1, ...limits },
    log: () => undefined,
  });
  try {
    await fn(gw, (agent) => clientFor(`${gw.url}/a2a/${agent}/.well-known/agent-card.json`, gw.token));
  } finally {
    await gw.close();
  }
}

/** The words of a delegation's timeline entries (artifacts have none). */
const timelineTexts = (journal: DelegationJournal): string[] =>
  journal.view(Date.now()).timeline.flatMap((e) => ('text' in e && typeof e.text === 'string' ? [e.text] : []));

describe('Baton\u2019s own client, delegating to a task that waits its turn', () => {
  it('shows the wait in the delegation\u2019s timeline, then the run, to completion', async () => {
    const agents = [scriptedAgent({ id: 'hold', waitForCancel: true }), scriptedAgent({ id: 'echo' })];
    await withTurns(agents, {}, async (gw, client) => {
      using journals = tempDir();
      const store = new JournalStore(journals.path);
      try {
        const holdClient = await client('hold');
        const first = await bounded(
          holdClient.sendMessage(sendRequest(userMessage('hold on'), true)),
          'the first task',
        );
        assert.ok('status' in first);
        const card = normalizeCard(await (await fetch(`${gw.url}/a2a/echo/.well-known/agent-card.json`)).json());
        const iface = card.supportedInterfaces.find(
          (i) => i.protocolBinding === 'JSONRPC' && i.protocolVersion === '1.0',
        );
        assert.ok(iface);
        const endpoint = { url: iface.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' };
        const connection = await connectAgent({ card, endpoint, getToken: () => Promise.resolve(gw.token) });
        const request = makeRequest(endpoint, 'format it');
        await store.create(request);
        const journal = new DelegationJournal(request);
        const runner = new DelegationRunner({ connection, journal, sink: store });
        const running = runner.start();
        const waitText = waitingText(1, 1);
        await bounded(
          (async () => {
            while (!timelineTexts(journal).some((t) => t.includes(waitText)))
              await new Promise((r) => setTimeout(r, 20));
          })(),
          'the timeline to show the wait',
        );
        // Shown as waiting (a clock, not a spinner), as the gateway said on the status's message.
        assert.equal(journal.state(), 'waiting');
        assert.deepEqual(stateLook(journal.state()), { icon: 'clock', spin: false, tone: 'muted', final: false });
        await bounded(holdClient.cancelTask({ tenant: '', id: first.id, metadata: undefined }), 'the cancel');
        await bounded(running, 'the delegation');
        await bounded(runner.idle(), 'the delegation to settle');
        assert.equal(journal.decide()?.outcome, 'completed');
        const texts = timelineTexts(journal);
        const waited = texts.findIndex((t) => t.includes(waitText));
        const accepted = texts.findIndex((t) => t.includes('accepted by Echo agent'));
        assert.ok(waited >= 0 && accepted > waited, texts.join('\n'));
      } finally {
        await store.close();
      }
    });
  });
});

describe('gateway: a task waiting for its caller\u2019s reply', () => {
  it('keeps its turn (its agent still runs); the next task starts once it has its reply and ends', async () => {
    const echo = scriptedAgent({ id: 'echo' });
    await withTurns([scriptedAgent({ id: 'asker', ask: 'Which one?' }), echo], {}, async (_gw, client) => {
      const asker = await client('asker');
      const asked = await bounded(asker.sendMessage(sendRequest(userMessage('rename it'))), 'the question');
      assert.ok('status' in asked);
      assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
      const echoClient = await client('echo');
      const waiting = await bounded(echoClient.sendMessage(sendRequest(userMessage('next'), true)), 'the next task');
      assert.ok('status' in waiting);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(echo.requests.length, 0, 'still waiting while the question is open');
      const reply = buildReplyMessage('reply-1', asked.id, asked.contextId, 'the first');
      const answered = await bounded(asker.sendMessage(sendRequest(reply)), 'the reply');
      assert.ok('status' in answered);
      assert.equal(answered.status?.state, TaskState.TASK_STATE_COMPLETED);
      await bounded(
        (async () => {
          for (;;) {
            const t = await echoClient.getTask({ tenant: '', id: waiting.id });
            if (t.status?.state === TaskState.TASK_STATE_COMPLETED) return;
            await new Promise((r) => setTimeout(r, 20));
          }
        })(),
        'the next task to run to its end',
      );
      assert.equal(echo.requests.length, 1);
    });
  });
});

describe('gateway: an agent abandoned after a cancel', () => {
  it('no longer holds up its principal: the next task gets the turn', async () => {
    const echo = scriptedAgent({ id: 'echo' });
    // `hang`: it never returns, whatever its signal says.
    const agents = [scriptedAgent({ id: 'stuck', hang: true }), echo];
    await withTurns(agents, { cancelGraceMs: 200 }, async (_gw, client) => {
      const stuck = await client('stuck');
      const first = await bounded(stuck.sendMessage(sendRequest(userMessage('hang'), true)), 'the stuck task');
      assert.ok('status' in first);
      const echoClient = await client('echo');
      const next = bounded(echoClient.sendMessage(sendRequest(userMessage('after it'))), 'the next task');
      const canceled = await bounded(
        stuck.cancelTask({ tenant: '', id: first.id, metadata: undefined }),
        'the cancel of an agent that does not stop',
      );
      assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
      const done = await next;
      assert.ok('status' in done);
      assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
      assert.equal(echo.requests.length, 1);
    });
  });
});

describe('gateway: a task still waiting its turn when the gateway stops', () => {
  it('ends failed, saying it never started and to send it again (read back after a restart)', async () => {
    using dir = tempDir();
    const options = {
      stateDir: dir.path,
      localAgents: [scriptedAgent({ id: 'hold', waitForCancel: true }), scriptedAgent({ id: 'echo' })],
      limits: { maxRunningPerPrincipal: 1, cancelGraceMs: 200 },
      log: () => undefined,
    };
    let gw = await startGateway(options);
    const holdClient = await clientFor(`${gw.url}/a2a/hold/.well-known/agent-card.json`, gw.token);
    const first = await bounded(holdClient.sendMessage(sendRequest(userMessage('hold on'), true)), 'the first task');
    assert.ok('status' in first);
    const echoClient = await clientFor(`${gw.url}/a2a/echo/.well-known/agent-card.json`, gw.token);
    const waiting = await bounded(echoClient.sendMessage(sendRequest(userMessage('wait'), true)), 'a waiting task');
    assert.ok('status' in waiting);
    await gw.close();
    gw = await startGateway(options);
    try {
      const again = await clientFor(`${gw.url}/a2a/echo/.well-known/agent-card.json`, gw.token);
      const t = await bounded(again.getTask({ tenant: '', id: waiting.id }), 'the task after the restart');
      assert.equal(t.status?.state, TaskState.TASK_STATE_FAILED);
      const text = t.status?.message?.parts[0]?.content;
      assert.equal(
        text?.$case === 'text' ? text.value : '',
        'the gateway stopped while this task waited for its turn, so it never started and nothing was changed: send it again',
      );
    } finally {
      await gw.close();
    }
  });
});
