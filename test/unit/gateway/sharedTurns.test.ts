// Turns per team member across the instances of one PostgreSQL store: one line per member for all of
// them, so a balancer spreading a member's tasks does not multiply the limit. Real gateways, a real
// PostgreSQL, and the SDK's own client as the members.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { TaskState } from '@a2a-js/sdk';
import type { Task } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { sha256HexOf } from '../../../src/gateway/config';
import { STALE_MS } from '../../../src/gateway/instanceLiveness';
import { waitingText } from '../../../src/gateway/localTaskRunner';
import { aheadOf, SharedTurns } from '../../../src/gateway/sharedTurns';
import type { TurnStore } from '../../../src/gateway/sharedTurns';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import type { TurnRow } from '../../../src/gateway/store/gatewayStore';
import { StoreUnavailableError, turnKey } from '../../../src/gateway/store/gatewayStore';
import { bounded, clientFor, scriptedAgent, sendRequest, tempDir, userMessage } from './helpers';
import { ghostTask, PG, pgSkip, testSchema, until } from './pgFaultHelpers';

const ALICE = 'a'.repeat(40);
const BOB = 'b'.repeat(40);

/**
 * `SharedTurns` over a store of the test's own (by default: the task joins as number 2, the line is
 * empty, nothing moves), for instance `me`, heartbeats every `heartbeatMs`.
 */
function turnsOver(
  store: Partial<TurnStore>,
  o: { readonly limit?: number; readonly heartbeatMs?: number; readonly log?: (line: string) => void } = {},
): SharedTurns {
  return new SharedTurns(
    o.limit ?? 1,
    {
      queueTurn: () => Promise.resolve(2),
      turnsOf: () => Promise.resolve([]),
      dropTurn: () => Promise.resolve(),
      onTurnsMoved: () => undefined,
      ...store,
    },
    'me',
    { heartbeatMs: o.heartbeatMs ?? 60_000, staleMs: STALE_MS },
    o.log ?? (() => undefined),
  );
}

describe('shared turns: who counts in a line', () => {
  const now = 1_000_000;
  const row = (seq: number, instance: string, beat?: TurnRow['beat']): TurnRow => ({ seq, instance, beat });
  it('counts the rows before it of this instance and of live ones; not those of gone instances, nor after it', () => {
    const rows = [
      row(1, 'me'),
      row(2, 'live', { host: 'elsewhere', pid: 1, heartbeatAt: now - 1_000 }),
      row(3, 'stale', { host: 'elsewhere', pid: 1, heartbeatAt: now - STALE_MS - 1 }),
      row(4, 'forgotten'),
      // On this host, a process that no longer exists (its heartbeat is fresh: it was killed).
      row(5, 'killed', { host: hostname(), pid: 2 ** 22 + 12_345, heartbeatAt: now }),
      row(6, 'me'),
      row(7, 'live', { host: 'elsewhere', pid: 1, heartbeatAt: now }),
    ];
    assert.equal(aheadOf(rows, 6, 'me', STALE_MS, now), 2);
    assert.equal(aheadOf(rows, 1, 'me', STALE_MS, now), 0);
    assert.equal(aheadOf(rows, 8, 'me', STALE_MS, now), 4);
  });

  it('a waiter looks at its line again when the line moves, without waiting for the next heartbeat', async () => {
    let rows: TurnRow[] = [row(1, 'other-live', { host: 'elsewhere', pid: 1, heartbeatAt: Date.now() })];
    let moved: ((key: string) => void) | undefined;
    let reads = 0;
    const turns = turnsOver({
      turnsOf: () => {
        reads++;
        return Promise.resolve(rows);
      },
      onTurnsMoved: (l) => (moved = l),
    });
    const places: number[] = [];
    const granted = turns.wait({ principal: 'alice', agent: 'echo', taskId: 't2' }, new AbortController().signal, (p) =>
      places.push(p),
    );
    await until(() => reads === 1, 'the first read of the line');
    assert.deepEqual(places, [1]);
    rows = [];
    // Another principal's line moving wakes nobody here.
    moved?.(turnKey('bob'));
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(reads, 1);
    moved?.(turnKey('alice'));
    const release = await bounded(granted, 'the turn, once the line moved');
    assert.equal(reads, 2);
    assert.equal(typeof release, 'function');
  });
});

describe('shared turns: a limit changed while a task waits', () => {
  it('a higher limit lets the waiter run at once, without the line moving', async () => {
    const turns = turnsOver({ turnsOf: () => Promise.resolve([{ seq: 1, instance: 'me', beat: undefined }]) });
    const places: number[] = [];
    const granted = turns.wait({ principal: 'alice', agent: 'echo', taskId: 't2' }, new AbortController().signal, (p) =>
      places.push(p),
    );
    await until(() => places.length === 1, 'the waiter to be told its place');
    turns.setLimit(2);
    assert.equal(typeof (await bounded(granted, 'the turn the higher limit frees')), 'function');
    assert.equal(turns.limit, 2);
  });
});

describe('shared turns: the database away when a task joins its line', () => {
  it('the task waits and joins once the database answers, instead of failing', async () => {
    let tries = 0;
    const logged: string[] = [];
    const turns = turnsOver(
      {
        queueTurn: () =>
          ++tries < 3 ? Promise.reject(new StoreUnavailableError('connection refused')) : Promise.resolve(1),
      },
      { heartbeatMs: 20, log: (l) => logged.push(l) },
    );
    const release = await bounded(
      turns.wait({ principal: 'alice', agent: 'echo', taskId: 't1' }, new AbortController().signal),
      'the turn once the database answers',
    );
    assert.equal(typeof release, 'function');
    assert.equal(tries, 3);
    assert.equal(logged.length, 1, logged.join('\n'));
    assert.match(logged[0], /cannot join its line for turns yet .*; it waits and tries again/);
    // Stopped while it still cannot join: it ends, having run nothing.
    const stop = new AbortController();
    const never = turnsOver(
      { queueTurn: () => Promise.reject(new StoreUnavailableError('connection refused')) },
      { heartbeatMs: 20 },
    ).wait({ principal: 'alice', agent: 'echo', taskId: 't2' }, stop.signal);
    stop.abort(new Error('gateway shutting down'));
    await assert.rejects(never, /gateway shutting down/);
  });
});

describe('shared turns: two gateway instances on one PostgreSQL', () => {
  /**
   * Two instances of one gateway (one schema), limit `limit`, each with a `hold` agent and the same
   * `echo` agent (so its requests are in the order the two instances ran them).
   */
  async function twoInstances(
    t: { after(fn: () => Promise<void>): void },
    limit: number,
  ): Promise<{
    a: RunningGateway;
    b: RunningGateway;
    echo: ReturnType<typeof scriptedAgent>;
    /** Runs SQL on the gateway's tables (as the test's admin). */
    sql(text: string, values: unknown[]): Promise<unknown>;
    client(gw: RunningGateway, agent: string, token: string): Promise<Client>;
  }> {
    const { admin, schema, url } = await testSchema(t, PG ?? '', 'turns');
    const dirs = [tempDir(), tempDir()];
    const echo = scriptedAgent({ id: 'echo' });
    const start = (dir: string): Promise<RunningGateway> =>
      startGateway({
        stateDir: dir,
        store: { kind: 'postgres', url },
        tokens: [
          { principal: 'alice', sha256: sha256HexOf(ALICE) },
          { principal: 'bob', sha256: sha256HexOf(BOB) },
        ],
        localAgents: [scriptedAgent({ id: 'hold', waitForCancel: true }), echo],
        limits: { maxRunningPerPrincipal: limit },
        log: () => undefined,
      });
    const a = await start(dirs[0].path);
    const b = await start(dirs[1].path);
    t.after(async () => {
      await a.close();
      await b.close();
      for (const d of dirs) d[Symbol.dispose]();
    });
    return {
      a,
      b,
      echo,
      sql: async (text, values) => {
        await admin.query(`SET search_path = ${schema}`);
        return admin.query(text, values);
      },
      client: (gw, agent, token) => clientFor(`${gw.url}/a2a/${agent}/.well-known/agent-card.json`, token),
    };
  }

  const textOf = (task: Task): string => {
    const c = task.status?.message?.parts[0]?.content;
    return c?.$case === 'text' ? c.value : '';
  };

  /** The task once `check` holds for it (read with GetTask every 20 ms). */
  async function taskWhen(client: Client, id: string, check: (t: Task) => boolean, what: string): Promise<Task> {
    let last: Task | undefined;
    await until(async () => {
      last = await client.getTask({ tenant: '', id, historyLength: 0 });
      return check(last);
    }, what);
    return last as Task;
  }

  /** Alice's first task, on `a`'s hold agent, once it runs: it holds her turn until it is canceled. */
  async function aliceHoldsOn(
    a: RunningGateway,
    client: (gw: RunningGateway, agent: string, token: string) => Promise<Client>,
  ): Promise<{ holdA: Client; first: Task }> {
    const holdA = await client(a, 'hold', ALICE);
    const first = await bounded(holdA.sendMessage(sendRequest(userMessage('hold on'), true)), 'the first task');
    assert.ok('status' in first);
    await taskWhen(holdA, first.id, (x) => x.status?.state === TaskState.TASK_STATE_WORKING, 'the first to run');
    return { holdA, first };
  }

  it(
    'a member’s task on instance B waits while her first runs on instance A; another member’s runs at once; hers runs when the first ends',
    { skip: pgSkip },
    async (t) => {
      const { a, b, echo, client } = await twoInstances(t, 1);
      const { holdA, first } = await aliceHoldsOn(a, client);
      const echoOnB = await client(b, 'echo', ALICE);
      const second = await bounded(echoOnB.sendMessage(sendRequest(userMessage('then this'), true)), 'the second');
      assert.ok('status' in second);
      const waiting = await taskWhen(
        echoOnB,
        second.id,
        (x) => textOf(x) === waitingText(1, 1),
        'the second to say it waits',
      );
      assert.equal(waiting.status?.state, TaskState.TASK_STATE_SUBMITTED);
      // Bob's task on B runs and completes meanwhile.
      const bob = await bounded((await client(b, 'echo', BOB)).sendMessage(sendRequest(userMessage('mine'))), 'bob’s');
      assert.ok('status' in bob);
      assert.equal(bob.status?.state, TaskState.TASK_STATE_COMPLETED);
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(
        echo.requests.map((r) => r.prompt.includes('mine')),
        [true],
        'the echo agent ran bob’s task only: alice’s waits for her turn on A',
      );
      assert.equal(
        (await echoOnB.getTask({ tenant: '', id: second.id, historyLength: 0 })).status?.state,
        TaskState.TASK_STATE_SUBMITTED,
      );
      // Her first ends on A: her second gets its turn on B, runs and completes.
      await bounded(holdA.cancelTask({ tenant: '', id: first.id, metadata: undefined }), 'the cancel');
      await taskWhen(
        echoOnB,
        second.id,
        (x) => x.status?.state === TaskState.TASK_STATE_COMPLETED,
        'the second to run to its end',
      );
      assert.equal(echo.requests.length, 2);
    },
  );

  it(
    'one line across instances: places count the member’s tasks waiting on every instance, first come first served',
    { skip: pgSkip },
    async (t) => {
      const { a, b, echo, client } = await twoInstances(t, 1);
      const { holdA, first } = await aliceHoldsOn(a, client);
      const waiters: Array<{ client: Client; id: string; prompt: string }> = [];
      for (const [gw, prompt] of [
        [b, 'x on B'],
        [a, 'y on A'],
        [b, 'z on B'],
      ] as const) {
        const c = await client(gw, 'echo', ALICE);
        const sent = await bounded(c.sendMessage(sendRequest(userMessage(prompt), true)), prompt);
        assert.ok('status' in sent);
        waiters.push({ client: c, id: sent.id, prompt });
        await taskWhen(c, sent.id, (x) => textOf(x) === waitingText(1, waiters.length), `${prompt} to wait`);
      }
      assert.equal(echo.requests.length, 0);
      await bounded(holdA.cancelTask({ tenant: '', id: first.id, metadata: undefined }), 'the cancel');
      for (const w of waiters)
        await taskWhen(
          w.client,
          w.id,
          (x) => x.status?.state === TaskState.TASK_STATE_COMPLETED,
          `${w.prompt} to complete`,
        );
      // One turn at a time, in the order they joined the line, whichever instance they are on.
      assert.deepEqual(
        echo.requests.map((r) => waiters.find((w) => r.prompt.includes(w.prompt))?.prompt),
        ['x on B', 'y on A', 'z on B'],
      );
    },
  );

  it(
    'an instance stopped while a member’s task waits there: that task ends failed, never started, and leaves the line',
    { skip: pgSkip },
    async (t) => {
      const { a, b, echo, sql, client } = await twoInstances(t, 1);
      const { holdA, first } = await aliceHoldsOn(a, client);
      const echoOnB = await client(b, 'echo', ALICE);
      const waiting = await bounded(echoOnB.sendMessage(sendRequest(userMessage('on B'), true)), 'the waiting one');
      assert.ok('status' in waiting);
      await taskWhen(echoOnB, waiting.id, (x) => textOf(x) === waitingText(1, 1), 'it to wait');
      await b.close();
      const echoOnA = await client(a, 'echo', ALICE);
      const ended = await taskWhen(
        echoOnA,
        waiting.id,
        (x) => x.status?.state === TaskState.TASK_STATE_FAILED,
        'the waiting task to end with its instance',
      );
      assert.match(textOf(ended), /never started/);
      const rows = (await sql('SELECT count(*)::int AS n FROM baton_turns WHERE task_id = $1', [waiting.id])) as {
        rows: Array<{ n: number }>;
      };
      assert.equal(rows.rows[0]?.n, 0, 'its instance took it out of the line as it stopped');
      await bounded(holdA.cancelTask({ tenant: '', id: first.id, metadata: undefined }), 'the cancel');
      const next = await bounded(echoOnA.sendMessage(sendRequest(userMessage('after'))), 'the next task on A');
      assert.ok('status' in next);
      assert.equal(next.status?.state, TaskState.TASK_STATE_COMPLETED);
      assert.equal(echo.requests.length, 1, 'the task on the stopped instance never ran');
    },
  );

  it(
    'a task of a gone instance does not hold the line; one of a live instance does until its task ends',
    { skip: pgSkip },
    async (t) => {
      const { a, echo: echoA, sql, client } = await twoInstances(t, 1);
      const store = a.store;
      assert.ok(store.queueTurn && store.turnsOf);
      // A task in alice's line of an instance with no heartbeat (killed, its row forgotten), on an
      // agent these instances do not serve: nobody here records its end, so only the instance's
      // death frees its turn.
      const gone = await ghostTask(store, 'only-elsewhere', 'alice', 'gone-instance');
      await store.queueTurn('alice', 'only-elsewhere', gone, 'gone-instance');
      const echo = await client(a, 'echo', ALICE);
      const ran = await bounded(echo.sendMessage(sendRequest(userMessage('past the gone one'))), 'a task');
      assert.ok('status' in ran);
      assert.equal(ran.status?.state, TaskState.TASK_STATE_COMPLETED, 'the gone instance’s turn does not count');
      assert.equal((await store.getTask('only-elsewhere', gone))?.state, TaskState.TASK_STATE_WORKING);
      // One of a live instance on another host: it holds the turn.
      await store.heartbeat('live-instance', 'another-host', 1);
      const live = await ghostTask(store, 'hold', 'alice', 'live-instance');
      await store.queueTurn('alice', 'hold', live, 'live-instance');
      const sent = await bounded(echo.sendMessage(sendRequest(userMessage('behind the live one'), true)), 'the next');
      assert.ok('status' in sent);
      await taskWhen(echo, sent.id, (x) => textOf(x) === waitingText(1, 1), 'the next to wait');
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(echoA.requests.length, 1, 'it waits behind the live instance’s task');
      // That task ends (recorded by its instance, which never takes it out of the line: it stops
      // counting all the same, noticed at the next heartbeat).
      await sql('UPDATE baton_tasks SET state = $1 WHERE id = $2', [TaskState.TASK_STATE_CANCELED, live]);
      await taskWhen(
        echo,
        sent.id,
        (x) => x.status?.state === TaskState.TASK_STATE_COMPLETED,
        'the next to run once the live one ended',
      );
      assert.equal(echoA.requests.length, 2);
    },
  );
});
