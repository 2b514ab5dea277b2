/**
 * ListTasks as A2A 1.0 defines it, on both stores: parameters out of their range are refused,
 * `statusTimestampAfter` filters (inclusive), and `totalSize` counts every matching task, not the page.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { Role, StreamResponse, Task, TaskState } from '@a2a-js/sdk';
import { LOCAL_PRINCIPAL } from '../../../src/gateway/auth';
import { rfc3339Millis } from '../../../src/gateway/requestHandler';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import type { GatewayStore } from '../../../src/gateway/store/gatewayStore';
import { scriptedAgent, tempDir, userMessage } from './helpers';

const PG = process.env.BATON_TEST_PG;
const AGENT = 'echo';
const INVALID_PARAMS = -32602;

interface ListResult {
  tasks?: Array<{ id: string }>;
  nextPageToken?: string;
  pageSize?: number;
  totalSize?: number;
}

/** A finished task of the local principal, stored directly: its update time is the moment it is created. */
async function storedTask(store: GatewayStore, contextId: string, state: TaskState): Promise<string> {
  const id = randomUUID();
  const task: Task = {
    id,
    contextId,
    status: { state, message: undefined, timestamp: new Date().toISOString() },
    artifacts: [],
    history: [{ ...userMessage('listed'), taskId: id, contextId, role: Role.ROLE_USER }],
    metadata: undefined,
  };
  const first: StreamResponse = { payload: { $case: 'task', value: structuredClone(task) } };
  await store.createTask(
    {
      agent: AGENT,
      id,
      contextId,
      principal: LOCAL_PRINCIPAL,
      kind: 'local',
      state,
      snapshot: JSON.stringify(Task.toJSON(task)),
      owner: null,
    },
    { seq: 1, body: JSON.stringify(StreamResponse.toJSON(first)) },
  );
  return id;
}

/** Tasks stored one after the other, each updated at least 2 ms after the one before; oldest first. */
async function storedTasks(store: GatewayStore, contextId: string, states: readonly TaskState[]): Promise<string[]> {
  const ids: string[] = [];
  for (const state of states) {
    ids.push(await storedTask(store, contextId, state));
    await new Promise((r) => setTimeout(r, 3));
  }
  return ids;
}

describe('rfc3339Millis: the timestamps ListTasks statusTimestampAfter takes', () => {
  it('reads RFC 3339 timestamps, with a zone or an offset, to the millisecond', () => {
    assert.equal(rfc3339Millis('2030-01-01T00:00:00Z'), Date.UTC(2030, 0, 1));
    assert.equal(rfc3339Millis('2030-01-01t00:00:00z'), Date.UTC(2030, 0, 1));
    assert.equal(rfc3339Millis('2030-01-01T02:30:00+02:30'), Date.UTC(2030, 0, 1));
    assert.equal(rfc3339Millis('2029-12-31T23:00:00-01:00'), Date.UTC(2030, 0, 1));
    assert.equal(rfc3339Millis('2030-01-01T00:00:00.123456789Z'), Date.UTC(2030, 0, 1, 0, 0, 0, 123));
    assert.equal(rfc3339Millis('2030-01-01T00:00:00.5Z'), Date.UTC(2030, 0, 1, 0, 0, 0, 500));
    assert.equal(rfc3339Millis('2028-02-29T00:00:00Z'), Date.UTC(2028, 1, 29));
    assert.equal(rfc3339Millis('0050-01-01T00:00:00Z'), new Date('0050-01-01T00:00:00Z').getTime(), 'not year 1950');
  });

  it('refuses anything else', () => {
    for (const bad of [
      '-1',
      '',
      'yesterday',
      '2030-01-01',
      '2030-01-01T00:00:00',
      '2030-01-01 00:00:00Z',
      '2030-13-01T00:00:00Z',
      '2023-02-29T00:00:00Z',
      '2030-04-31T00:00:00Z',
      '2030-01-01T24:00:00Z',
      '2030-01-01T00:60:00Z',
      '2030-01-01T00:00:60Z',
      '2030-01-01T00:00:00+24:00',
      '2030-01-01T00:00:00.Z',
      '1700000000000',
    ])
      assert.equal(rfc3339Millis(bad), undefined, bad);
  });
});

for (const kind of ['sqlite', 'postgres'] as const) {
  const skip =
    kind === 'postgres' && !PG
      ? 'BATON_TEST_PG is not set: start one with eval "$(bash scripts/postgres.sh start)"'
      : false;
  describe(`gateway ListTasks (${kind} store)`, () => {
    const dir = tempDir();
    const schema = `t_${randomBytes(6).toString('hex')}`;
    let gw: RunningGateway;
    before(async () => {
      if (skip) return;
      let store: { kind: 'postgres'; url: string } | undefined;
      if (kind === 'postgres') {
        const c = new pg.Client({ connectionString: PG });
        await c.connect();
        await c.query(`CREATE SCHEMA ${schema}`);
        await c.end();
        const url = `${PG ?? ''}${(PG ?? '').includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
        store = { kind: 'postgres', url };
      }
      gw = await startGateway({
        stateDir: dir.path,
        localAgents: [scriptedAgent()],
        log: () => undefined,
        ...(store ? { store } : {}),
      });
    });
    after(async () => {
      if (!skip) await gw?.close();
      dir[Symbol.dispose]();
      if (kind !== 'postgres' || skip) return;
      const c = new pg.Client({ connectionString: PG });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await c.end();
    });

    const rpc = async (
      params: Record<string, unknown>,
    ): Promise<{ result?: ListResult; error?: { code: number; message: string } }> => {
      const res = await fetch(`${gw.url}/a2a/${AGENT}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.token}`, 'A2A-Version': '1.0' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params }),
      });
      return (await res.json()) as { result?: ListResult; error?: { code: number; message: string } };
    };
    const rest = async (
      query: Record<string, string>,
    ): Promise<{ status: number; body: ListResult & { error?: { message?: string } } }> => {
      const res = await fetch(`${gw.url}/a2a/${AGENT}/tasks?${new URLSearchParams(query).toString()}`, {
        headers: { authorization: `Bearer ${gw.token}`, 'A2A-Version': '1.0' },
      });
      return { status: res.status, body: (await res.json()) as ListResult & { error?: { message?: string } } };
    };
    const listed = async (params: Record<string, unknown>): Promise<ListResult> => {
      const out = await rpc(params);
      assert.equal(out.error, undefined, JSON.stringify(out.error));
      assert.ok(out.result, 'a result');
      return out.result;
    };
    const ids = (r: ListResult): string[] => (r.tasks ?? []).map((t) => t.id);

    it(
      'statusTimestampAfter keeps the tasks updated at or after it (inclusive), over JSON-RPC and HTTP+JSON',
      { skip },
      async () => {
        const contextId = randomUUID();
        const [oldest, middle, newest] = await storedTasks(gw.store, contextId, [
          TaskState.TASK_STATE_COMPLETED,
          TaskState.TASK_STATE_COMPLETED,
          TaskState.TASK_STATE_COMPLETED,
        ]);
        const row = await gw.store.getTask(AGENT, middle);
        assert.ok(row);
        const at = (ms: number): string => new Date(ms).toISOString();
        const from = await listed({ contextId, statusTimestampAfter: at(row.updatedAt) });
        assert.deepEqual(ids(from), [newest, middle], 'the task updated exactly then is kept');
        assert.equal(from.totalSize, 2);
        assert.deepEqual(ids(await listed({ contextId, statusTimestampAfter: at(row.updatedAt + 1) })), [newest]);
        assert.deepEqual(ids(await listed({ contextId, statusTimestampAfter: at(row.updatedAt - 60_000) })), [
          newest,
          middle,
          oldest,
        ]);
        const future = await listed({ contextId, statusTimestampAfter: '2030-01-01T00:00:00Z' });
        assert.deepEqual(ids(future), []);
        assert.equal(future.totalSize ?? 0, 0);
        // An offset names the same instant.
        const shifted = new Date(row.updatedAt + 2 * 3_600_000).toISOString().replace('Z', '+02:00');
        assert.deepEqual(ids(await listed({ contextId, statusTimestampAfter: shifted })), [newest, middle]);
        const overRest = await rest({ contextId, statusTimestampAfter: at(row.updatedAt) });
        assert.equal(overRest.status, 200, JSON.stringify(overRest.body));
        assert.deepEqual(ids(overRest.body), [newest, middle]);
        assert.equal(overRest.body.totalSize, 2);
      },
    );

    it('totalSize counts every task the filters take, on every page', { skip }, async () => {
      const contextId = randomUUID();
      const C = TaskState.TASK_STATE_COMPLETED;
      const W = TaskState.TASK_STATE_WORKING;
      const made = await storedTasks(gw.store, contextId, [C, W, C, W, C]);
      const newestFirst = [...made].reverse();
      const seen: string[] = [];
      let pageToken = '';
      for (const expected of [2, 2, 1]) {
        const page = await listed({ contextId, pageSize: 2, ...(pageToken ? { pageToken } : {}) });
        assert.equal(page.tasks?.length, expected);
        assert.equal(page.totalSize, 5, 'the total of all pages, not the page');
        assert.equal(page.pageSize, 2);
        seen.push(...ids(page));
        pageToken = page.nextPageToken ?? '';
        if (expected === 1) assert.equal(pageToken, '', 'the last page has no next one');
      }
      assert.deepEqual(seen, newestFirst);
      const completed = await listed({ contextId, status: 'TASK_STATE_COMPLETED', pageSize: 1 });
      assert.equal(completed.totalSize, 3);
      assert.deepEqual(ids(completed), [made[4]]);
      const working = await rest({ contextId, status: 'TASK_STATE_WORKING', pageSize: '1' });
      assert.equal(working.status, 200, JSON.stringify(working.body));
      assert.equal(working.body.totalSize, 2);
      assert.deepEqual(ids(working.body), [made[3]]);
      // Another principal's tasks are not counted (nor listed).
      assert.equal(await gw.store.countTasks({ agent: AGENT, principal: 'someone-else', contextId }), 0);
    });

    it(
      'parameters out of their range are refused with InvalidParams (HTTP+JSON: 400), saying what is allowed',
      { skip },
      async () => {
        const cases: Array<[Record<string, unknown>, RegExp]> = [
          [{ pageSize: -1 }, /pageSize must be a whole number from 1 to 100 \(got -1\)/],
          [{ pageSize: 0 }, /pageSize must be a whole number from 1 to 100 \(got 0\)/],
          [{ pageSize: 101 }, /pageSize must be a whole number from 1 to 100 \(got 101\)/],
          [{ pageSize: 2.5 }, /pageSize must be a whole number from 1 to 100/],
          [{ pageSize: 'ten' }, /pageSize must be a whole number from 1 to 100/],
          [{ historyLength: -1 }, /historyLength must be a whole number, 0 or more \(got -1\)/],
          [{ historyLength: 1.5 }, /historyLength must be a whole number, 0 or more/],
          [
            { status: 'INVALID_STATUS' },
            /status is not a task state; send one of TASK_STATE_SUBMITTED, .*TASK_STATE_COMPLETED/,
          ],
          [{ status: 42 }, /status is not a task state/],
          [
            { statusTimestampAfter: '-1' },
            /statusTimestampAfter must be an RFC 3339 timestamp such as .* \(got "-1"\)/,
          ],
          [{ statusTimestampAfter: '2023-02-30T00:00:00Z' }, /statusTimestampAfter must be an RFC 3339 timestamp/],
          [{ statusTimestampAfter: 'yesterday' }, /statusTimestampAfter must be an RFC 3339 timestamp/],
          [{ pageToken: 'not-issued' }, /pageToken is not one this gateway issued/],
        ];
        for (const [params, message] of cases) {
          const out = await rpc(params);
          assert.equal(out.error?.code, INVALID_PARAMS, `${JSON.stringify(params)}: ${JSON.stringify(out)}`);
          assert.match(out.error?.message ?? '', message, JSON.stringify(params));
        }
        const queries: Array<Record<string, string>> = [
          { pageSize: '0' },
          { pageSize: '101' },
          { historyLength: '-1' },
          { status: 'INVALID_STATUS' },
          { statusTimestampAfter: '-1' },
        ];
        for (const query of queries) {
          const out = await rest(query);
          assert.equal(out.status, 400, `${JSON.stringify(query)}: ${JSON.stringify(out.body)}`);
        }
        // GetTask takes historyLength by the same rule.
        const res = await fetch(`${gw.url}/a2a/${AGENT}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.token}`, 'A2A-Version': '1.0' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x', historyLength: -1 } }),
        });
        const got = (await res.json()) as { error?: { code: number; message: string } };
        assert.equal(got.error?.code, INVALID_PARAMS);
        assert.match(got.error?.message ?? '', /historyLength must be a whole number, 0 or more/);
      },
    );

    it(
      'what is in range is taken: pageSize 1 and 100, historyLength 0, a known status, a timestamp with an offset',
      { skip },
      async () => {
        for (const params of [
          { pageSize: 1 },
          { pageSize: 100 },
          {},
          { historyLength: 0 },
          { status: 'TASK_STATE_WORKING' },
          { status: 'TASK_STATE_UNSPECIFIED' },
          { statusTimestampAfter: '2020-01-01T00:00:00.000+01:00' },
          { statusTimestampAfter: '' },
        ]) {
          const out = await rpc(params);
          assert.equal(out.error, undefined, `${JSON.stringify(params)}: ${JSON.stringify(out.error)}`);
          assert.equal(out.result?.pageSize, (params as { pageSize?: number }).pageSize ?? 50);
        }
      },
    );
  });
}
