/**
 * The store's record of who made an idempotency claim, and the take-over of a claim whose task was
 * never bound (its instance died between the send and the binding): SQLite and PostgreSQL alike.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { GatewayStore } from '../../../src/gateway/store/gatewayStore';
import { PostgresGatewayStore } from '../../../src/gateway/store/postgresStore';
import { SqliteGatewayStore } from '../../../src/gateway/store/sqliteStore';
import { tempDir } from './helpers';

async function checkClaims(store: GatewayStore): Promise<void> {
  assert.deepEqual((await store.claimRequest('p', 'remote', 'm1#d', 'd', null, 'dead-1', 'sha256:sent')).kind, 'new');
  assert.deepEqual((await store.claimRequest('p', 'local', 'm2#d', 'd', 'task-2', 'live-1')).kind, 'new');
  const found = await store.findRequest('p', 'remote', 'm1#d');
  assert.equal(found?.instance, 'dead-1');
  assert.equal(found?.taskId, null);
  assert.ok((found?.createdAt ?? 0) > 0);
  // The request as sent, for the envelope of an outcome recorded for a claim whose task was never named.
  assert.equal(found?.sentDigest, 'sha256:sent');
  assert.equal((await store.findRequest('p', 'local', 'm2#d'))?.sentDigest, null);
  // A local claim naming a task its instance never stored: forgotten only while it still names that task
  // and that instance.
  assert.equal(await store.releaseStaleClaim('p', 'local', 'm2#d', 'other-task', 'live-1'), false);
  assert.equal(await store.releaseStaleClaim('p', 'local', 'm2#d', 'task-2', 'someone-else'), false);
  assert.equal(await store.releaseStaleClaim('p', 'local', 'm2#d', 'task-2', 'live-1'), true);
  assert.equal(await store.findRequest('p', 'local', 'm2#d'), undefined);
  assert.equal(await store.releaseStaleClaim('p', 'local', 'm2#d', 'task-2', 'live-1'), false, 'once');

  const unbound = await store.listUnboundRequests();
  assert.deepEqual(
    unbound.map((c) => [c.principal, c.agent, c.messageId, c.digest, c.instance, c.sentDigest]),
    [['p', 'remote', 'm1#d', 'd', 'dead-1', 'sha256:sent']],
  );

  // Two instances take the claim over at once: one wins.
  const takes = await Promise.all([
    store.takeOverRequest('p', 'remote', 'm1#d', 'dead-1', 'new-a'),
    store.takeOverRequest('p', 'remote', 'm1#d', 'dead-1', 'new-b'),
  ]);
  assert.deepEqual(
    takes.filter((t) => t),
    [true],
  );
  const winner = (await store.findRequest('p', 'remote', 'm1#d'))?.instance;
  assert.ok(winner === 'new-a' || winner === 'new-b');
  assert.equal(await store.takeOverRequest('p', 'remote', 'm1#d', 'dead-1', 'new-c'), false, 'not from a past owner');

  await store.bindRequest('p', 'remote', 'm1#d', 'task-1');
  assert.deepEqual(await store.listUnboundRequests(), []);
  assert.equal(await store.takeOverRequest('p', 'remote', 'm1#d', winner ?? null, 'new-c'), false, 'a bound claim');

  // A task created for a claim binds it in the same commit; another principal's claim of the same key is left alone.
  assert.equal((await store.claimRequest('p', 'remote', 'm3#d', 'd', null, 'live-1')).kind, 'new');
  assert.equal((await store.claimRequest('q', 'remote', 'm3#d', 'd', null, 'live-1')).kind, 'new');
  await store.createTask(
    {
      agent: 'remote',
      id: 'task-3',
      contextId: 'ctx-3',
      principal: 'p',
      kind: 'proxy',
      state: 1,
      snapshot: JSON.stringify({ id: 'task-3', contextId: 'ctx-3' }),
      owner: 'live-1',
      request: 'm3#d',
    },
    { seq: 1, body: '{}' },
  );
  assert.equal((await store.findRequest('p', 'remote', 'm3#d'))?.taskId, 'task-3');
  assert.deepEqual(await store.claimRequest('p', 'remote', 'm3#d', 'd', null, 'live-2'), {
    kind: 'existing',
    taskId: 'task-3',
  });
  assert.deepEqual(
    (await store.listUnboundRequests()).map((c) => [c.principal, c.messageId]),
    [['q', 'm3#d']],
  );
}

describe('SQLite store: unbound claims', () => {
  it('records the claiming instance, lists unbound claims, and lets one instance take one over', async () => {
    using dir = tempDir();
    const store = new SqliteGatewayStore({ file: join(dir.path, 'gateway.db'), driver: 'better-sqlite3' });
    try {
      await checkClaims(store);
    } finally {
      await store.close();
    }
  });

  it('adds the instance and sent digest columns to a state folder written before them; its old claims have neither', async () => {
    using dir = tempDir();
    const file = join(dir.path, 'gateway.db');
    const old = new Database(file);
    old.exec(`CREATE TABLE baton_requests (
  principal TEXT NOT NULL, agent TEXT NOT NULL, message_id TEXT NOT NULL, digest TEXT NOT NULL,
  task_id TEXT, created_at INTEGER NOT NULL,
  PRIMARY KEY (principal, agent, message_id));`);
    old
      .prepare(
        'INSERT INTO baton_requests (principal, agent, message_id, digest, task_id, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      )
      .run('p', 'remote', 'old#d', 'd', null, 1);
    old.close();
    const store = new SqliteGatewayStore({ file, driver: 'better-sqlite3' });
    try {
      const [claim] = await store.listUnboundRequests();
      assert.equal(claim?.messageId, 'old#d');
      assert.equal(claim?.instance, null);
      assert.equal(claim?.sentDigest, null);
      assert.equal(await store.takeOverRequest('p', 'remote', 'old#d', null, 'new-a'), true);
      await store.releaseRequest('p', 'remote', 'old#d');
      await checkClaims(store);
    } finally {
      await store.close();
    }
  });
});

const PG = process.env.BATON_TEST_PG;
describe('PostgreSQL store: unbound claims', { skip: PG ? false : 'BATON_TEST_PG is not set' }, () => {
  it('records the claiming instance, lists unbound claims, and lets one instance take one over; migrates an old table', async () => {
    const db = `baton_claims_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: PG });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${db}`);
    const url = new URL(PG ?? '');
    url.pathname = `/${db}`;
    try {
      const old = new pg.Client({ connectionString: url.toString() });
      await old.connect();
      await old.query(`CREATE TABLE baton_requests (
  principal TEXT NOT NULL, agent TEXT NOT NULL, message_id TEXT NOT NULL, digest TEXT NOT NULL,
  task_id TEXT, created_at BIGINT NOT NULL,
  PRIMARY KEY (principal, agent, message_id))`);
      await old.end();
      const store = await PostgresGatewayStore.open(url.toString());
      try {
        await checkClaims(store);
      } finally {
        await store.close();
      }
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
      await admin.end();
    }
  });
});
