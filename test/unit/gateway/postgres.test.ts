import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { TaskState } from '@a2a-js/sdk';
import { sha256HexOf } from '../../../src/gateway/config';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { clientFor, collect, readSse, scriptedAgent, sendRequest, seqOf, tempDir, userMessage } from './helpers';

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
  before(async () => {
    if (!PG) return;
    const c = new pg.Client({ connectionString: PG });
    await c.connect();
    await c.query(`CREATE SCHEMA ${schema}`);
    await c.end();
    const common = {
      store: { kind: 'postgres' as const, url },
      tokens: [{ principal: 'team', sha256: sha256HexOf(teamToken) }],
      log: () => undefined,
    };
    gwA = await startGateway({ ...common, stateDir: a.path, localAgents: [scriptedAgent({ id: 'slow', steps: 60, stepDelayMs: 10 })] });
    gwB = await startGateway({ ...common, stateDir: b.path, localAgents: [scriptedAgent({ id: 'slow', steps: 60, stepDelayMs: 10 })] });
  });
  after(async () => {
    a[Symbol.dispose]();
    b[Symbol.dispose]();
    if (!PG) return;
    await gwA?.close();
    await gwB?.close();
    const c = new pg.Client({ connectionString: PG });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await c.end();
  });

  it('a subscriber on instance B sees, live and in order, the events a task produces on instance A', { skip }, async () => {
    const onA = await clientFor(`${gwA.url}/a2a/slow/.well-known/agent-card.json`, teamToken);
    const started = await onA.sendMessage(sendRequest(userMessage('go'), true));
    const id = 'id' in started ? started.id : '';
    const onB = await clientFor(`${gwB.url}/a2a/slow/.well-known/agent-card.json`, teamToken);
    const events = await collect(onB.resubscribeTask({ tenant: '', id }));
    assert.equal(events[0].payload?.$case, 'task');
    const seqs = events.slice(1).map(seqOf);
    assert.deepEqual(seqs, seqs.map((_, i) => (seqs[0] ?? 0) + i), 'contiguous');
    const last = events[events.length - 1];
    assert.equal(last.payload?.$case === 'statusUpdate' ? last.payload.value.status?.state : -1, TaskState.TASK_STATE_COMPLETED);
    // Full replay from B, with SSE ids.
    const res = await fetch(`${gwB.url}/a2a/slow`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${teamToken}`, 'Last-Event-ID': '0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id } }),
    });
    const replay = await readSse(res);
    assert.deepEqual(replay.map((e) => Number(e.id)), replay.map((_, i) => i + 1));
    assert.equal(await gwA.store.integrityCheck(), 'ok');
  });

  it('makes one task for the same messageId sent to both instances at once', { skip }, async () => {
    const onA = await clientFor(`${gwA.url}/a2a/slow/.well-known/agent-card.json`, teamToken);
    const onB = await clientFor(`${gwB.url}/a2a/slow/.well-known/agent-card.json`, teamToken);
    const msg = userMessage('once');
    const results = await Promise.all([onA, onB, onA, onB].map((c) => c.sendMessage(sendRequest(structuredClone(msg)))));
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
});
