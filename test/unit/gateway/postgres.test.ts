import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { StreamResponse, Task } from '@a2a-js/sdk';
import { TaskState } from '@a2a-js/sdk';
import type { AgentExecutor, ExecutionEventBus, RequestContext } from '@a2a-js/sdk/server';
import type {
  LocalAgent,
  LocalRunEvent,
  LocalRunRequest,
  LocalRunResult,
} from '../../../src/gateway/agents/localAgent';
import { sha256HexOf } from '../../../src/gateway/config';
import { HEARTBEAT_MS, STALE_MS } from '../../../src/gateway/instanceLiveness';
import type { RemoteAgentConfig } from '../../../src/gateway/config';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { channelsOf, LISTEN_APPLICATION_NAME } from '../../../src/gateway/store/postgresStore';
import { SqliteGatewayStore } from '../../../src/gateway/store/sqliteStore';
import {
  bounded,
  clientFor,
  collect,
  readSse,
  scriptedAgent,
  sendRequest,
  seqOf,
  tempDir,
  userMessage,
} from './helpers';
import { ghostTask } from './pgFaultHelpers';
import { serveSdkAgent, statusEvent, taskEvent } from './sdkServer';

/** Emits a step every 10 ms until its signal fires (bounded), then stops: a task that is still working. */
function untilCanceledAgent(
  id: string,
): LocalAgent & { readonly runs: Array<{ aborted: boolean; returned: boolean }> } {
  const runs: Array<{ aborted: boolean; returned: boolean }> = [];
  return {
    id,
    name: 'Until canceled',
    description: 'Works until it is canceled (test agent).',
    kind: 'builtin',
    skills: [{ id: 'wait', name: 'Wait', description: 'Waits', tags: ['test'] }],
    maxCapabilities: { write: true, shell: false, network: false },
    runs,
    async run(req: LocalRunRequest, emit: (e: LocalRunEvent) => void): Promise<LocalRunResult> {
      const run = { aborted: false, returned: false };
      runs.push(run);
      emit({ kind: 'started', workspace: '/tmp/ws', confined: false });
      for (let i = 1; i <= 3000 && !req.signal.aborted; i++) {
        emit({ kind: 'step', text: `step ${i}` });
        await new Promise((r) => setTimeout(r, 10));
      }
      run.aborted = req.signal.aborted;
      run.returned = true;
      return run.aborted
        ? { outcome: 'canceled', reason: 'stopped on request', patch: '' }
        : { outcome: 'completed', patch: '' };
    },
  };
}

/** A remote SDK agent whose tasks work until they are canceled (the remote end of a proxied agent). */
class UntilCanceledExecutor implements AgentExecutor {
  private readonly cancels = new Set<string>();
  cancelCalls = 0;
  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = ctx;
    bus.publish(taskEvent(ctx, TaskState.TASK_STATE_WORKING));
    for (let i = 0; i < 3000 && !this.cancels.has(taskId); i++) await new Promise((r) => setTimeout(r, 10));
    bus.publish(statusEvent(taskId, contextId, TaskState.TASK_STATE_CANCELED));
    bus.finished();
  }
  cancelTask(taskId: string): Promise<void> {
    this.cancelCalls++;
    this.cancels.add(taskId);
    return Promise.resolve();
  }
}

function startRemote(executor: AgentExecutor): Promise<{ url: string; close(): Promise<void> }> {
  return serveSdkAgent(executor, { liveCard: true });
}

/**
 * A log line that reports an error ("… failed: why", "… failed (why)") or a clash between writers; not
 * one that merely names a task's state ("recorded as failed with an unknown outcome").
 */
const WRITER_TROUBLE = /failed(:| \()|duplicate|conflict/i;

function textOf(t: Task): string {
  return JSON.stringify(t.status?.message?.parts ?? []);
}

/** States of an SSE replay (JSON-RPC SubscribeToTask results), in order. */
function statesOf(events: Array<{ data: string }>): string[] {
  return events.map((e) => {
    const r = (
      JSON.parse(e.data) as {
        result?: { task?: { status?: { state?: string } }; statusUpdate?: { status?: { state?: string } } };
      }
    ).result;
    return r?.statusUpdate?.status?.state ?? r?.task?.status?.state ?? '';
  });
}

const TERMINAL_WIRE = new Set([
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_REJECTED',
]);

const PG = process.env.BATON_TEST_PG;
const skip = PG ? false : 'BATON_TEST_PG is not set: start one with eval "$(bash scripts/postgres.sh start)"';

describe('gateway: PostgreSQL store shared by two instances', () => {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const url = `${PG ?? ''}${(PG ?? '').includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  const teamToken = `team-${randomBytes(16).toString('hex')}`;
  const a = tempDir();
  const b = tempDir();
  let gwA: RunningGateway;
  let gwB: RunningGateway;
  const logA: string[] = [];
  const logB: string[] = [];
  const longA = untilCanceledAgent('long');
  const longB = untilCanceledAgent('long');
  const remoteExecutor = new UntilCanceledExecutor();
  let remote: Awaited<ReturnType<typeof startRemote>> | undefined;
  /**
   * Ends the LISTEN connections of this test's gateways, and only theirs: other test files' stores
   * listen on the same database (a listener's last statement is the LISTEN on its schema's cancels).
   */
  const endListeners = (admin: pg.Client): Promise<pg.QueryResult> =>
    admin.query(
      "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1 AND query = 'LISTEN ' || $2",
      [LISTEN_APPLICATION_NAME, channelsOf(schema).cancels],
    );
  /** A direct connection to the test's schema (to age heartbeats, or to listen as another instance). */
  const sql = async (): Promise<pg.Client> => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    return c;
  };
  const replayFrom = async (
    gw: RunningGateway,
    id: string,
    agent = 'long',
  ): Promise<Array<{ id?: string; data: string }>> => {
    const res = await fetch(`${gw.url}/a2a/${agent}`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'A2A-Version': '1.0',
        Authorization: `Bearer ${teamToken}`,
        'Last-Event-ID': '0',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id } }),
    });
    return readSse(res);
  };
  before(async () => {
    if (!PG) return;
    const c = new pg.Client({ connectionString: PG });
    await c.connect();
    await c.query(`CREATE SCHEMA ${schema}`);
    await c.end();
    remote = await startRemote(remoteExecutor);
    const common = {
      store: { kind: 'postgres' as const, url },
      tokens: [{ principal: 'team', sha256: sha256HexOf(teamToken) }],
      limits: { cancelGraceMs: 1_000 },
      remoteAgents: [
        {
          id: 'remote',
          name: 'Remote',
          description: 'proxied',
          url: remote.url,
          protocolBinding: 'JSONRPC',
          protocolVersion: '1.0',
          auth: { kind: 'none' },
          skills: [],
        } satisfies RemoteAgentConfig,
      ],
    };
    gwA = await startGateway({
      ...common,
      stateDir: a.path,
      log: (l) => logA.push(l),
      localAgents: [scriptedAgent({ id: 'slow', steps: 60, stepDelayMs: 10 }), longA],
    });
    gwB = await startGateway({
      ...common,
      stateDir: b.path,
      log: (l) => logB.push(l),
      localAgents: [scriptedAgent({ id: 'slow', steps: 60, stepDelayMs: 10 }), longB],
    });
  });
  after(async () => {
    a[Symbol.dispose]();
    b[Symbol.dispose]();
    if (!PG) return;
    await gwA?.close();
    await gwB?.close();
    await remote?.close();
    const c = new pg.Client({ connectionString: PG });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await c.end();
  });

  it(
    'a subscriber on instance B sees, live and in order, the events a task produces on instance A',
    { skip },
    async () => {
      const onA = await clientFor(`${gwA.url}/a2a/slow/.well-known/agent-card.json`, teamToken);
      const started = await onA.sendMessage(sendRequest(userMessage('go'), true));
      const id = 'id' in started ? started.id : '';
      const onB = await clientFor(`${gwB.url}/a2a/slow/.well-known/agent-card.json`, teamToken);
      const events = await collect(onB.resubscribeTask({ tenant: '', id }));
      assert.equal(events[0].payload?.$case, 'task');
      const seqs = events.slice(1).map(seqOf);
      assert.deepEqual(
        seqs,
        seqs.map((_, i) => (seqs[0] ?? 0) + i),
        'contiguous',
      );
      const last = events[events.length - 1];
      assert.equal(
        last.payload?.$case === 'statusUpdate' ? last.payload.value.status?.state : -1,
        TaskState.TASK_STATE_COMPLETED,
      );
      // Full replay from B, with SSE ids.
      const res = await fetch(`${gwB.url}/a2a/slow`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'A2A-Version': '1.0',
          Authorization: `Bearer ${teamToken}`,
          'Last-Event-ID': '0',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id } }),
      });
      const replay = await readSse(res);
      assert.deepEqual(
        replay.map((e) => Number(e.id)),
        replay.map((_, i) => i + 1),
      );
      assert.equal(await gwA.store.integrityCheck(), 'ok');
    },
  );

  it(
    "keeps a subscriber on B following A's task after B's LISTEN connection is ended: B listens again and reads what it missed",
    { skip },
    async () => {
      const onA = await clientFor(`${gwA.url}/a2a/slow/.well-known/agent-card.json`, teamToken);
      const started = await onA.sendMessage(sendRequest(userMessage('go on'), true));
      const id = 'id' in started ? started.id : '';
      const onB = await clientFor(`${gwB.url}/a2a/slow/.well-known/agent-card.json`, teamToken);
      const seen: StreamResponse[] = [];
      let firstSeen!: () => void;
      const first = new Promise<void>((r) => (firstSeen = r));
      const following = (async () => {
        for await (const ev of onB.resubscribeTask({ tenant: '', id })) {
          seen.push(ev);
          if (seen.length === 2) firstSeen();
        }
      })();
      await first;
      // An operator (or a server restart) ends the gateways' LISTEN connections mid-task.
      const admin = await sql();
      try {
        const r = await endListeners(admin);
        assert.ok(r.rowCount !== null && r.rowCount >= 2, `ended ${String(r.rowCount)} LISTEN connections`);
      } finally {
        await admin.end();
      }
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        following,
        new Promise(
          (_, reject) =>
            (timer = setTimeout(
              () => reject(new Error(`B stopped hearing the task after ${seen.length} events`)),
              20_000,
            )),
        ),
      ]).finally(() => clearTimeout(timer));
      const last = seen[seen.length - 1];
      assert.equal(
        last.payload?.$case === 'statusUpdate' ? last.payload.value.status?.state : -1,
        TaskState.TASK_STATE_COMPLETED,
      );
      const seqs = seen.slice(1).map(seqOf);
      assert.deepEqual(
        seqs,
        seqs.map((_, i) => (seqs[0] ?? 0) + i),
        'contiguous, none lost or repeated',
      );
      assert.ok(
        logB.some((l) => /LISTEN connection lost/.test(l)),
        logB.join('\n'),
      );
      assert.ok(
        logB.some((l) => /LISTEN connection restored/.test(l)),
        logB.join('\n'),
      );
    },
  );

  it('makes one task for the same messageId sent to both instances at once', { skip }, async () => {
    const onA = await clientFor(`${gwA.url}/a2a/slow/.well-known/agent-card.json`, teamToken);
    const onB = await clientFor(`${gwB.url}/a2a/slow/.well-known/agent-card.json`, teamToken);
    const msg = userMessage('once');
    const results = await Promise.all(
      [onA, onB, onA, onB].map((c) => c.sendMessage(sendRequest(structuredClone(msg)))),
    );
    assert.equal(new Set(results.map((r) => ('id' in r ? r.id : ''))).size, 1);
    assert.ok(results.every((r) => 'id' in r && r.status?.state === TaskState.TASK_STATE_COMPLETED));
  });

  it("hides one principal's tasks from another across instances", { skip }, async () => {
    const onA = await clientFor(`${gwA.url}/a2a/slow/.well-known/agent-card.json`, teamToken);
    const done = await onA.sendMessage(sendRequest(userMessage('mine')));
    const id = 'id' in done ? done.id : '';
    const localOnB = await clientFor(`${gwB.url}/a2a/slow/.well-known/agent-card.json`, gwB.token);
    await assert.rejects(localOnB.getTask({ tenant: '', id }), /not found/);
  });

  it(
    'a cancel sent to instance B for a task instance A runs is carried out by A: one writer, one terminal event',
    { skip },
    async () => {
      const onA = await clientFor(`${gwA.url}/a2a/long/.well-known/agent-card.json`, teamToken);
      const onB = await clientFor(`${gwB.url}/a2a/long/.well-known/agent-card.json`, teamToken);
      const started = await onA.sendMessage(sendRequest(userMessage('work until canceled'), true));
      const id = 'id' in started ? started.id : '';
      // Still working, with events already written by A.
      for (let i = 0; i < 500 && ((await gwA.store.getTask('long', id))?.lastSeq ?? 0) < 5; i++)
        await new Promise((r) => setTimeout(r, 10));
      const before = await gwB.store.getTask('long', id);
      assert.equal(before?.owner, gwA.instanceId);
      assert.equal(before?.state, TaskState.TASK_STATE_WORKING);

      const canceled = await onB.cancelTask({ tenant: '', id, metadata: undefined });
      assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
      assert.equal(canceled.metadata?.['baton/outcome'], 'canceled');
      assert.doesNotMatch(textOf(canceled), /unknown outcome/);
      // A's agent saw its signal and returned; B never ran anything.
      assert.equal(longA.runs.length, 1);
      assert.deepEqual(longA.runs[0], { aborted: true, returned: true });
      assert.equal(longB.runs.length, 0);

      const row = await gwA.store.getTask('long', id);
      assert.equal(row?.owner, null);
      for (const gw of [gwA, gwB]) {
        const events = await replayFrom(gw, id);
        assert.deepEqual(
          events.map((e) => Number(e.id)),
          events.map((_, i) => i + 1),
          'contiguous by seq',
        );
        assert.equal(events.length, row?.lastSeq);
        const states = statesOf(events);
        assert.equal(states.filter((s) => TERMINAL_WIRE.has(s)).length, 1, 'exactly one terminal event');
        assert.equal(states[states.length - 1], 'TASK_STATE_CANCELED');
      }
      // Nothing written after the terminal event, and no writer failed on either instance.
      await new Promise((r) => setTimeout(r, 200));
      assert.equal((await gwB.store.getTask('long', id))?.lastSeq, row?.lastSeq);
      assert.equal(await gwA.store.integrityCheck(), 'ok');
      const failures = (l: string): boolean => WRITER_TROUBLE.test(l);
      assert.deepEqual(logA.filter(failures), []);
      assert.deepEqual(logB.filter(failures), []);
      assert.deepEqual(
        logB.filter((l) => l.includes(id)),
        [],
        "B answered from the owner's outcome, with nothing to report",
      );
    },
  );

  it(
    "a cancel sent to B while A's LISTEN connection is down is carried out by A once it listens again",
    { skip },
    async () => {
      const onA = await clientFor(`${gwA.url}/a2a/long/.well-known/agent-card.json`, teamToken);
      const onB = await clientFor(`${gwB.url}/a2a/long/.well-known/agent-card.json`, teamToken);
      const runs = longA.runs.length;
      const started = await onA.sendMessage(sendRequest(userMessage('work until canceled, while A is deaf'), true));
      const id = 'id' in started ? started.id : '';
      for (let i = 0; i < 500 && ((await gwA.store.getTask('long', id))?.lastSeq ?? 0) < 5; i++)
        await new Promise((r) => setTimeout(r, 10));
      assert.equal((await gwB.store.getTask('long', id))?.owner, gwA.instanceId);
      const lostBefore = logA.filter((l) => /LISTEN connection lost/.test(l)).length;
      const admin = await sql();
      try {
        await endListeners(admin);
      } finally {
        await admin.end();
      }
      // A knows it is deaf (it listens again after a pause); the cancel reaches B meanwhile.
      for (let i = 0; i < 500 && logA.filter((l) => /LISTEN connection lost/.test(l)).length === lostBefore; i++)
        await new Promise((r) => setTimeout(r, 2));
      const restoredBefore = logA.filter((l) => /LISTEN connection restored/.test(l)).length;
      const answer = onB.cancelTask({ tenant: '', id, metadata: undefined });
      let state: TaskState | undefined;
      for (let i = 0; i < 1000; i++) {
        state = (await gwA.store.getTask('long', id))?.state;
        if (state !== TaskState.TASK_STATE_WORKING) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal(state, TaskState.TASK_STATE_CANCELED, `the task is ${String(state)}; A's log:\n${logA.join('\n')}`);
      await answer;
      assert.ok(
        logA.filter((l) => /LISTEN connection restored/.test(l)).length > restoredBefore,
        'A listened again before it canceled',
      );
      // A's agent saw its signal; B ran nothing; one terminal event.
      assert.equal(longA.runs.length, runs + 1);
      assert.deepEqual(longA.runs[runs], { aborted: true, returned: true });
      assert.equal(longB.runs.length, 0);
      const events = await replayFrom(gwB, id);
      const states = statesOf(events);
      assert.equal(states.filter((s) => TERMINAL_WIRE.has(s)).length, 1, 'exactly one terminal event');
      assert.equal(states[states.length - 1], 'TASK_STATE_CANCELED');
      // The request was taken: nothing is left for A to carry out again.
      const check = await sql();
      try {
        assert.equal(
          (await check.query('SELECT count(*)::int AS n FROM baton_cancel_requests WHERE task_id = $1', [id])).rows[0]
            ?.n,
          0,
        );
      } finally {
        await check.end();
      }
    },
  );

  it(
    'drops cancel requests nobody took for a day (their instance is gone) when the next request is taken',
    { skip },
    async () => {
      const c = await sql();
      try {
        const old = Date.now() - 2 * 24 * 60 * 60 * 1000;
        await c.query(
          'INSERT INTO baton_cancel_requests (agent, task_id, instance, requested_at) VALUES ($1, $2, $3, $4)',
          ['long', 'ghost-task', 'ghost-instance', old],
        );
        // A request for A (a task it does not know: A logs it and does nothing else).
        await gwB.store.requestCancel('long', 'no-such-task', gwA.instanceId);
        let left: number | undefined;
        const handled = (): boolean => logA.some((l) => l.includes('no-such-task') && /ignored: no such task/.test(l));
        for (let i = 0; i < 250; i++) {
          left = (await c.query('SELECT count(*)::int AS n FROM baton_cancel_requests')).rows[0]?.n as
            number | undefined;
          if (left === 0 && handled()) break;
          await new Promise((r) => setTimeout(r, 20));
        }
        assert.equal(left, 0, 'the stale request and the one A took are gone');
        assert.ok(handled(), `A did not look at the request it took:\n${logA.join('\n')}`);
        assert.ok(!logA.some((l) => l.includes('ghost-task')), 'the stale request was not carried out');
      } finally {
        await c.end();
      }
    },
  );

  it(
    'a cancel sent to B for a proxied task A relays is carried out by A: one cancel at the remote, one terminal event',
    { skip },
    async () => {
      const onA = await clientFor(`${gwA.url}/a2a/remote/.well-known/agent-card.json`, teamToken);
      const onB = await clientFor(`${gwB.url}/a2a/remote/.well-known/agent-card.json`, teamToken);
      const started = await onA.sendMessage(sendRequest(userMessage('relay until canceled'), true));
      const id = 'id' in started ? started.id : '';
      const before = await gwB.store.getTask('remote', id);
      assert.equal(before?.owner, gwA.instanceId);
      assert.equal(before?.state, TaskState.TASK_STATE_WORKING);
      const calls = remoteExecutor.cancelCalls;

      const canceled = await onB.cancelTask({ tenant: '', id, metadata: undefined });
      assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
      assert.equal(remoteExecutor.cancelCalls, calls + 1);
      const row = await gwA.store.getTask('remote', id);
      assert.equal(row?.owner, null);
      for (const gw of [gwA, gwB]) {
        const events = await replayFrom(gw, id, 'remote');
        assert.deepEqual(
          events.map((e) => Number(e.id)),
          events.map((_, i) => i + 1),
          'contiguous by seq',
        );
        assert.equal(events.length, row?.lastSeq);
        const states = statesOf(events);
        assert.equal(states.filter((s) => TERMINAL_WIRE.has(s)).length, 1, 'exactly one terminal event');
        assert.equal(states[states.length - 1], 'TASK_STATE_CANCELED');
      }
      assert.equal(await gwA.store.integrityCheck(), 'ok');
      const failures = (l: string): boolean => WRITER_TROUBLE.test(l);
      assert.deepEqual(logA.filter(failures), []);
      assert.deepEqual(logB.filter(failures), []);
    },
  );

  it(
    'an instance on another host counts as alive while it heartbeats (its pid means nothing here); on this host, while its process exists',
    { skip },
    async () => {
      // Two owners that are no gateway of this test, each with a fresh heartbeat: one on another host
      // with the pid of a process that does not exist here, one on this host with that same pid.
      const gone = await new Promise<number>((resolve) => {
        const p = spawn(process.execPath, ['-e', '']);
        p.once('exit', () => resolve(p.pid ?? 0));
      });
      const remoteOwner = `ghost-${randomUUID()}`;
      const localOwner = `ghost-${randomUUID()}`;
      await gwB.store.heartbeat(remoteOwner, 'elsewhere.invalid', gone);
      await gwB.store.heartbeat(localOwner, hostname(), gone);
      const onRemoteHost = await ghostTask(gwB.store, 'long', 'team', remoteOwner);
      const onThisHost = await ghostTask(gwB.store, 'long', 'team', localOwner);
      const c = await sql();
      try {
        const beat = setInterval(
          () =>
            void c
              .query('UPDATE baton_instances SET heartbeat_at = $1 WHERE id = $2', [Date.now(), remoteOwner])
              .catch(() => undefined),
          1_000,
        );
        try {
          // The one on this host is found dead at the next look (every heartbeat, 5 s) by A or B.
          const ended = async (id: string, what: string, ms: number): Promise<void> => {
            await bounded(
              (async () => {
                while ((await gwB.store.getTask('long', id))?.state !== TaskState.TASK_STATE_FAILED)
                  await new Promise((r) => setTimeout(r, 200));
              })(),
              what,
              ms,
            );
          };
          await ended(onThisHost, "the task of this host's gone process to be recovered", 20_000);
          // Two more looks later, the other host's instance, still heartbeating, keeps its task.
          await new Promise((r) => setTimeout(r, 2 * HEARTBEAT_MS + 1_000));
          const kept = await gwB.store.getTask('long', onRemoteHost);
          assert.equal(kept?.state, TaskState.TASK_STATE_WORKING);
          assert.equal(kept?.owner, remoteOwner);
        } finally {
          clearInterval(beat);
        }
        // It stops heartbeating (its last beat STALE_MS ago): the next look recovers its task.
        await c.query('UPDATE baton_instances SET heartbeat_at = $1 WHERE id = $2', [
          Date.now() - STALE_MS - 1_000,
          remoteOwner,
        ]);
        await bounded(
          (async () => {
            while ((await gwB.store.getTask('long', onRemoteHost))?.state !== TaskState.TASK_STATE_FAILED)
              await new Promise((r) => setTimeout(r, 200));
          })(),
          "the stale instance's task to be recovered",
          20_000,
        );
        const row = await gwB.store.getTask('long', onRemoteHost);
        assert.equal(row?.owner, null);
        assert.match(row?.snapshot ?? '', /unknown outcome/);
      } finally {
        await c.end();
      }
    },
  );

  it(
    'a cancel through B of a task whose owner stopped heartbeating records the unknown outcome there, without asking the dead owner',
    { skip },
    async () => {
      const ghost = `ghost-${randomUUID()}`;
      await gwB.store.heartbeat(ghost, 'elsewhere.invalid', 1);
      const c = await sql();
      const heard: string[] = [];
      c.on('notification', (n) => heard.push(n.payload ?? ''));
      await c.query(`LISTEN ${channelsOf(schema).cancels}`);
      try {
        await c.query('UPDATE baton_instances SET heartbeat_at = $1 WHERE id = $2', [Date.now() - 60_000, ghost]);
        const id = await ghostTask(gwB.store, 'long', 'team', ghost);
        const onB = await clientFor(`${gwB.url}/a2a/long/.well-known/agent-card.json`, teamToken);
        // A live instance's sweep for the tasks of dead owners may record the unknown outcome first:
        // the cancel then finds the task ended, with that same outcome.
        const canceled = await onB.cancelTask({ tenant: '', id, metadata: undefined }).catch(async (e: unknown) => {
          assert.match(String(e), /has already ended/);
          return onB.getTask({ tenant: '', id });
        });
        assert.equal(canceled.status?.state, TaskState.TASK_STATE_FAILED);
        assert.equal(canceled.metadata?.['baton/outcome'], 'unknown');
        assert.match(textOf(canceled), /unknown outcome/);
        assert.equal((await gwB.store.getTask('long', id))?.owner, null);
        await c.query('SELECT 1'); // any notification sent before this is delivered by now
        // A live instance may take the orphan over first (and B's cancel then goes to it); the dead
        // owner is never asked.
        assert.deepEqual(
          heard.filter((h) => h.includes(id) && h.includes(ghost)),
          [],
        );
      } finally {
        await c.end();
      }
    },
  );

  it(
    'cancels sent at once to A and B for the task of a dead owner record one outcome, and every one of them answers with it',
    { skip },
    async () => {
      const ghost = `ghost-${randomUUID()}`;
      await gwB.store.heartbeat(ghost, 'elsewhere.invalid', 1);
      const c = await sql();
      try {
        await c.query('UPDATE baton_instances SET heartbeat_at = $1 WHERE id = $2', [Date.now() - 60_000, ghost]);
      } finally {
        await c.end();
      }
      const id = await ghostTask(gwB.store, 'long', 'team', ghost);
      const onA = await clientFor(`${gwA.url}/a2a/long/.well-known/agent-card.json`, teamToken);
      const onB = await clientFor(`${gwB.url}/a2a/long/.well-known/agent-card.json`, teamToken);
      // Each instance's orphan sweep may find the task meanwhile, too: one writer records it, whoever it is.
      const answers = await Promise.all(
        [onA, onB, onA, onB, onB].map((cl) =>
          cl.cancelTask({ tenant: '', id, metadata: undefined }).catch(async (e: unknown) => {
            assert.match(String(e), /has already ended/);
            return cl.getTask({ tenant: '', id });
          }),
        ),
      );
      for (const t of answers) {
        assert.equal(t.status?.state, TaskState.TASK_STATE_FAILED);
        assert.equal(t.metadata?.['baton/outcome'], 'unknown');
      }
      const events = await replayFrom(gwA, id);
      assert.deepEqual(
        events.map((e) => Number(e.id)),
        [1, 2],
        'the task event and one outcome',
      );
      assert.equal(statesOf(events)[1], 'TASK_STATE_FAILED');
      assert.equal((await gwA.store.getTask('long', id))?.owner, null);
      const failures = (l: string): boolean => l.includes(id) && WRITER_TROUBLE.test(l);
      assert.deepEqual([...logA, ...logB].filter(failures), []);
    },
  );

  it(
    'stores an event given as UTF-8 bytes (a large relayed one) as its text, which the other instance reads back',
    { skip },
    async () => {
      const id = `bytes-${randomUUID()}`;
      const text = JSON.stringify({ artifactUpdate: { taskId: id, text: `é ✓ 😀 "q" \\ \n ${'x'.repeat(70_000)}` } });
      await gwA.store.createTask(
        {
          agent: 'remote',
          id,
          contextId: 'ctx',
          principal: 'team',
          kind: 'proxy',
          state: TaskState.TASK_STATE_WORKING,
          snapshot: JSON.stringify({ id, contextId: 'ctx' }),
          owner: null,
        },
        { seq: 1, body: JSON.stringify({ task: { id, contextId: 'ctx' } }) },
      );
      const bytes = Buffer.from(text, 'utf8');
      await gwA.store.append({
        agent: 'remote',
        taskId: id,
        events: [
          { seq: 2, body: bytes },
          { seq: 3, body: '{"statusUpdate":{}}' },
        ],
        state: TaskState.TASK_STATE_WORKING,
        snapshot: JSON.stringify({ id, contextId: 'ctx' }),
      });
      assert.equal(bytes.toString('utf8'), text, 'the bytes given are left as they were');
      assert.deepEqual(
        (await gwB.store.readEvents('remote', id, 1, 10)).map((r) => r.body),
        [text, '{"statusUpdate":{}}'],
      );
    },
  );

  it(
    'a cancel through B is forwarded to the owner named in the task; an owner that dies meanwhile leaves it to B, a live silent one gets the task as it is',
    { skip },
    async () => {
      const dying = `ghost-${randomUUID()}`;
      const silent = `ghost-${randomUUID()}`;
      await gwB.store.heartbeat(dying, 'elsewhere.invalid', 1);
      await gwB.store.heartbeat(silent, 'elsewhere.invalid', 1);
      const c = await sql();
      const heard: Array<{ instance: string; agent: string; taskId: string }> = [];
      // Plays the owners: "dying" stops heartbeating the moment it is asked; "silent" never answers.
      c.on('notification', (n) => {
        const m = JSON.parse(n.payload ?? '{}') as { instance: string; agent: string; taskId: string };
        heard.push(m);
        if (m.instance === dying)
          void c.query('UPDATE baton_instances SET heartbeat_at = $1 WHERE id = $2', [Date.now() - 60_000, dying]);
      });
      await c.query(`LISTEN ${channelsOf(schema).cancels}`);
      try {
        const onB = await clientFor(`${gwB.url}/a2a/long/.well-known/agent-card.json`, teamToken);
        const idDying = await ghostTask(gwB.store, 'long', 'team', dying);
        const ended = await onB.cancelTask({ tenant: '', id: idDying, metadata: undefined });
        assert.deepEqual(
          heard.filter((h) => h.taskId === idDying),
          [{ instance: dying, agent: 'long', taskId: idDying }],
        );
        assert.equal(ended.status?.state, TaskState.TASK_STATE_FAILED);
        assert.match(textOf(ended), /unknown outcome/);
        // Recorded once, by B's cancel or by a live instance's orphan recovery, whichever came first.
        assert.ok(
          [...logA, ...logB].some(
            (l) => l.includes(idDying) && (l.includes('stopped heartbeating') || l.includes('its worker died')),
          ),
        );
        const dyingEvents = await gwB.store.readEvents('long', idDying, 0, 100);
        assert.equal(dyingEvents.filter((e) => e.body.includes('unknown outcome')).length, 1, 'one outcome recorded');

        const idSilent = await ghostTask(gwB.store, 'long', 'team', silent);
        const pending = await onB.cancelTask({ tenant: '', id: idSilent, metadata: undefined });
        assert.deepEqual(
          heard.filter((h) => h.taskId === idSilent),
          [{ instance: silent, agent: 'long', taskId: idSilent }],
        );
        assert.equal(
          pending.status?.state,
          TaskState.TASK_STATE_WORKING,
          'B did not write a second outcome while the owner lives',
        );
        const row = await gwB.store.getTask('long', idSilent);
        assert.equal(row?.lastSeq, 1);
        assert.equal(row?.owner, silent);
        assert.ok(logB.some((l) => l.includes(idSilent) && l.includes('cancel is in progress')));
      } finally {
        await c.end();
      }
    },
  );
});

describe('gateway: SQLite store and cancel forwarding', () => {
  it('refuses to forward a cancel: a SQLite state folder has one process', async () => {
    using dir = tempDir();
    const store = new SqliteGatewayStore({ file: join(dir.path, 'gateway.db') });
    try {
      await assert.rejects(
        store.requestCancel('long', 'task-1', 'host:1:abcd'),
        /cannot forward the cancel of task task-1 to gateway instance host:1:abcd: the SQLite store is used by one gateway process only/,
      );
      let called = false;
      store.onCancelRequest('host:1:abcd', () => (called = true));
      assert.equal(called, false);
    } finally {
      await store.close();
    }
  });

  it('cancels locally a task another (even live-looking) instance owns in a SQLite folder', async () => {
    using dir = tempDir();
    const gw = await startGateway({
      stateDir: dir.path,
      localAgents: [untilCanceledAgent('long')],
      limits: { cancelGraceMs: 300 },
      log: () => undefined,
    });
    try {
      await gw.store.heartbeat('other-instance', 'elsewhere.invalid', 1);
      const id = await ghostTask(gw.store, 'long', 'local', 'other-instance');
      const client = await clientFor(`${gw.url}/a2a/long/.well-known/agent-card.json`, gw.token);
      const canceled = await client.cancelTask({ tenant: '', id, metadata: undefined });
      assert.equal(canceled.status?.state, TaskState.TASK_STATE_FAILED);
      assert.match(textOf(canceled), /unknown outcome/);
    } finally {
      await gw.close();
    }
  });

  it('three cancels at once of the task of an earlier process record one outcome, and each answers with it', async () => {
    using dir = tempDir();
    const gw = await startGateway({
      stateDir: dir.path,
      localAgents: [untilCanceledAgent('long')],
      limits: { cancelGraceMs: 300 },
      log: () => undefined,
    });
    try {
      const id = await ghostTask(gw.store, 'long', 'local', 'earlier-process');
      const client = await clientFor(`${gw.url}/a2a/long/.well-known/agent-card.json`, gw.token);
      const answers = await Promise.all(
        [1, 2, 3].map(() =>
          client.cancelTask({ tenant: '', id, metadata: undefined }).catch(async (e: unknown) => {
            assert.match(String(e), /has already ended/);
            return client.getTask({ tenant: '', id });
          }),
        ),
      );
      for (const t of answers) {
        assert.equal(t.status?.state, TaskState.TASK_STATE_FAILED);
        assert.match(textOf(t), /unknown outcome/);
      }
      const events = await gw.store.readEvents('long', id, 0, 100);
      assert.deepEqual(
        events.map((e) => e.seq),
        [1, 2],
        'the task event and one outcome',
      );
    } finally {
      await gw.close();
    }
  });
});
