/**
 * Two gateway instances on one PostgreSQL, one of them cut off from the database while it relays a
 * remote task (its process lives on: a network partition, not a crash). After `takeOverAfterSeconds`
 * the other instance takes the task over and relays it to its end; a client that moves to it with
 * Last-Event-ID gets the rest once, in order, and the gap the take-over left is said in the log. When
 * the cut-off instance reaches the database again it finds the task taken: its relay stops, saying so
 * once, and its own client, still connected to it, gets the events the other instance stored, up to
 * the final state. No client ever gets an event that is not stored as it got it.
 *
 * Needs BATON_TEST_PG; skipped without it (saying so), as postgres.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createConnection, createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { sha256HexOf } from '../../../src/gateway/config';
import { GAP_NOTICE_TAKEOVER } from '../../../src/gateway/proxyTaskRunner';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { tempDir } from './helpers';
import {
  inSchema,
  PG,
  pgSkip,
  remoteSdkAgent,
  sql,
  SteppingExecutor,
  stepsOf,
  streamTask,
  until,
} from './pgFaultHelpers';
import type { SseEvent } from './pgFaultHelpers';
import { serveSdkAgent } from './sdkServer';

/** How long an instance without heartbeat keeps its tasks here (the setting's smallest useful value). */
const TAKE_OVER_S = 2;

/**
 * A TCP relay to PostgreSQL that can be cut: every connection through it is reset at once, and new
 * ones are reset as they come, until `restore`. The instance behind it lives on without its database.
 */
async function cuttableRelay(
  host: string,
  port: number,
): Promise<{ port: number; cut(): void; restore(): void; close(): Promise<void> }> {
  let cut = false;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    if (cut) {
      client.resetAndDestroy();
      return;
    }
    const upstream = createConnection({ host, port });
    sockets.add(client).add(upstream);
    const drop = (): void => {
      sockets.delete(client);
      sockets.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    cut() {
      cut = true;
      for (const s of sockets) s.resetAndDestroy();
    },
    restore() {
      cut = false;
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

describe('team gateway: an instance cut off from PostgreSQL while it relays a task', () => {
  const token = `team-${randomBytes(16).toString('hex')}`;
  const remoteExec = new SteppingExecutor();
  const dirs = [tempDir(), tempDir()];
  const logs: string[][] = [[], []];
  let remote: { url: string; close(): Promise<void> } | undefined;
  let relay: Awaited<ReturnType<typeof cuttableRelay>> | undefined;
  const gws: RunningGateway[] = [];

  before(async () => {
    if (!PG) return;
    const schema = `part_${randomBytes(4).toString('hex')}`;
    const admin = await sql(PG);
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.end();
    const direct = new URL(PG);
    relay = await cuttableRelay(direct.hostname, Number(direct.port || 5432));
    const relayed = new URL(PG);
    relayed.hostname = '127.0.0.1';
    relayed.port = String(relay.port);
    remote = await serveSdkAgent(remoteExec, { liveCard: true });
    const agent = remoteSdkAgent(remote.url);
    for (const [i, url] of [relayed.toString(), PG].entries()) {
      gws.push(
        await startGateway({
          stateDir: dirs[i].path,
          store: { kind: 'postgres', url: inSchema(url, schema, `partition-${i}`), takeOverAfterSeconds: TAKE_OVER_S },
          tokens: [{ principal: 'team', sha256: sha256HexOf(token) }],
          localAgents: [],
          remoteAgents: [agent],
          log: (l) => logs[i].push(l),
        }),
      );
    }
  });
  after(async () => {
    remoteExec.finish = true;
    relay?.restore();
    await Promise.all(gws.map((g) => g.close()));
    await relay?.close();
    await remote?.close();
    for (const d of dirs) d[Symbol.dispose]();
  });

  it(
    'the other instance takes the task over and ends it; the cut-off one stops relaying once back, and its client gets the rest',
    { skip: pgSkip },
    async () => {
      const [a, b] = gws;
      const onA = streamTask(`${a.url}/a2a/remote`, token);
      await until(() => stepsOf(onA.events.map((e) => e.data)).length >= 10, 'ten steps through instance A');
      const taskId = onA.taskId();
      assert.equal((await b.store.getTask('remote', taskId))?.owner, a.instanceId);

      relay?.cut();
      const cutAt = Date.now();
      await until(
        async () => (await b.store.getTask('remote', taskId))?.owner === b.instanceId,
        'instance B to take the task over',
        TAKE_OVER_S * 1000 + 15_000,
      );
      assert.ok(Date.now() - cutAt >= TAKE_OVER_S * 1000 - 500, 'not before A had been silent for the take-over time');
      // A client moves to B (a balancer would): from the last event it got through A.
      const lastOnA = onA.events.at(-1)?.id ?? 0;
      const onB = streamTask(`${b.url}/a2a/remote`, token, { taskId, lastId: lastOnA });
      const steps = remoteExec.steps;
      await until(() => remoteExec.steps >= steps + 10, 'ten more steps at the remote');
      remoteExec.finish = true;
      assert.equal(await onB.done, 'TASK_STATE_COMPLETED');

      // A is back: its relay finds the task taken and stops; its client gets what B stored.
      relay?.restore();
      assert.equal(await onA.done, 'TASK_STATE_COMPLETED');
      await until(
        () => logs[0].some((l) => l.includes('stopped relaying')),
        "A's log to say it stopped relaying",
        20_000,
      );
      await new Promise((r) => setTimeout(r, 1_000));
      assert.equal(logs[0].filter((l) => l.includes('stopped relaying')).length, 1, logs[0].join('\n'));

      const stored = await b.store.readEvents('remote', taskId, 0, 100_000);
      assert.deepEqual(
        stored.map((e) => e.seq),
        stored.map((_, i) => i + 1),
        'seqs 1..n, each once',
      );
      const bodies = stored.map((e) => (typeof e.body === 'string' ? e.body : Buffer.from(e.body).toString('utf8')));
      const storedSteps = stepsOf(bodies);
      for (let i = 1; i < storedSteps.length; i++)
        assert.ok(storedSteps[i] > storedSteps[i - 1], `steps in order, each once: ${storedSteps.join(',')}`);
      const gapAt = bodies.findIndex((body) => body.includes(GAP_NOTICE_TAKEOVER));
      assert.ok(gapAt > 0, 'the take-over left a gap notice in the log');
      assert.match(bodies[gapAt], /"baton\/gap":\{"reason":"takeover","lastSeq":\d+/);
      const missing = storedSteps.length !== storedSteps.at(-1);
      if (missing) {
        // The steps the remote sent while nobody stored them are missing exactly at the notice.
        const before = stepsOf(bodies.slice(0, gapAt));
        const afterGap = stepsOf(bodies.slice(gapAt));
        assert.deepEqual(
          before,
          before.map((_, i) => i + 1),
        );
        assert.ok((afterGap[0] ?? 0) > before.length + 1 || afterGap.length === 0);
      }
      // Every event either client got is stored as it got it (persist before send, on both instances).
      const byId = new Map(stored.map((e, i) => [e.seq, bodies[i]]));
      const check = (events: readonly SseEvent[], who: string): void => {
        for (const e of events) {
          const body = byId.get(e.id);
          assert.ok(
            body !== undefined && e.data === `{"jsonrpc":"2.0","id":1,"result":${body}}`,
            `${who}: event ${e.id}`,
          );
        }
        const ids = events.map((e) => e.id);
        assert.deepEqual(
          ids,
          [...new Set(ids)].sort((x, y) => x - y),
          `${who}: each event once, in order`,
        );
      };
      check(onA.events, 'the client of A');
      check(onB.events, 'the client of B');
      assert.equal(onA.events.at(-1)?.id, stored.at(-1)?.seq, 'the client of A got to the last event');
      assert.equal(onB.events.at(-1)?.id, stored.at(-1)?.seq, 'the client of B got to the last event');
      assert.ok(
        logs[1].some((l) => l.includes(taskId)),
        `B's log names the task it took over:\n${logs[1].join('\n')}`,
      );
    },
  );
});
