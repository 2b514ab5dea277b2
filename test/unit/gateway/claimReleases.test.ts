/**
 * A claim whose release the store refused (it was unavailable) is not left for a live instance to hold
 * for good: the release is tried again in the background and before the same request is claimed
 * again, which is answered 503 (store unavailable) meanwhile instead of waiting on its own failed send.
 * The proxy's case is in proxyTransient.test.ts; here the local agent's and the helper's own rules.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { SendMessageRequest } from '@a2a-js/sdk';
import { ClaimReleases } from '../../../src/gateway/claimReleases';
import { requestDigest, requestKey } from '../../../src/gateway/localTaskRunner';
import { StoreUnavailableError } from '../../../src/gateway/store/gatewayStore';
import type { GatewayStore } from '../../../src/gateway/store/gatewayStore';
import { sleep } from '../../../src/core/sleep';
import { rpcPost, suiteGateway } from './helpers';

interface Answer {
  readonly status: number;
  readonly retryAfter: string | null;
  readonly error?: { readonly message?: string };
  readonly state?: string;
}

describe('gateway: a local task the store could not create, whose claim it could not release either', () => {
  const gw = suiteGateway();

  const send = async (messageId: string): Promise<Answer> => {
    const res = await rpcPost(
      `${gw.url}/a2a/echo`,
      {
        method: 'SendMessage',
        params: { message: { messageId, role: 'ROLE_USER', parts: [{ text: 'go' }] } },
      },
      { Authorization: `Bearer ${gw.token}` },
    );
    const body = (await res.json()) as {
      error?: { message?: string };
      result?: { task?: { status?: { state?: string } } };
    };
    return {
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      error: body.error,
      state: body.result?.task?.status?.state,
    };
  };

  it('answers the resend 503 while the store refuses, and runs it once the store answers', async () => {
    const store = gw.store;
    const createTask = store.createTask;
    const releaseRequest = store.releaseRequest;
    let down = true;
    store.createTask = (...a) =>
      down ? Promise.reject(new StoreUnavailableError('connection refused')) : createTask(...a);
    store.releaseRequest = (...a) =>
      down ? Promise.reject(new StoreUnavailableError('connection refused')) : releaseRequest(...a);
    try {
      const id = randomUUID();
      const a = await send(id);
      assert.equal(a.status, 503, JSON.stringify(a));
      assert.match(String(a.error?.message), /^the gateway's task store is unavailable \(connection refused\)/);
      const b = await send(id);
      assert.equal(b.status, 503, JSON.stringify(b));
      assert.equal(b.retryAfter, '5');
      assert.match(String(b.error?.message), /an earlier send of messageId .* is still to be released/);
      down = false;
      const c = await send(id);
      assert.equal(c.status, 200, JSON.stringify(c));
      assert.equal(c.state, 'TASK_STATE_COMPLETED');
      // And it is the request's one task from now on: sent again, the same task answers.
      const d = await send(id);
      assert.equal(d.state, 'TASK_STATE_COMPLETED');
    } finally {
      store.createTask = createTask;
      store.releaseRequest = releaseRequest;
    }
  });
});

describe('gateway: a local request claimed by an instance that stopped before it stored the task', () => {
  const log: string[] = [];
  const gw = suiteGateway({ log: (l) => log.push(l) });

  it('runs the request when it is sent again, instead of waiting for a task that will never exist', async () => {
    const messageId = randomUUID();
    const wire = { messageId, role: 'ROLE_USER', parts: [{ text: 'go' }] };
    const params = SendMessageRequest.fromJSON({ message: wire });
    const digest = requestDigest(params);
    // What a gateway killed between its two commits leaves: the claim, naming a task never stored.
    const left = await gw.store.claimRequest(
      'local',
      'echo',
      requestKey(params, digest),
      digest,
      'never-stored',
      'gone:1:x',
    );
    assert.equal(left.kind, 'new');
    const res = await rpcPost(
      `${gw.url}/a2a/echo`,
      { method: 'SendMessage', params: { message: wire } },
      { Authorization: `Bearer ${gw.token}` },
    );
    const body = (await res.json()) as {
      error?: { message?: string };
      result?: { task?: { id?: string; status?: { state?: string } } };
    };
    assert.equal(body.result?.task?.status?.state, 'TASK_STATE_COMPLETED', JSON.stringify(body));
    assert.notEqual(body.result?.task?.id, 'never-stored');
    assert.ok(
      log.some((l) => l.includes(`messageId ${messageId} on echo was claimed by instance gone:1:x, which stopped`)),
      log.join('\n'),
    );
    // Sent once more, it is that task.
    const again = await rpcPost(
      `${gw.url}/a2a/echo`,
      { method: 'SendMessage', params: { message: wire } },
      { Authorization: `Bearer ${gw.token}` },
    );
    const body2 = (await again.json()) as { result?: { task?: { id?: string } } };
    assert.equal(body2.result?.task?.id, body.result?.task?.id);
  });
});

describe('ClaimReleases', () => {
  /** A store whose releases fail while `down`, and that counts them. */
  const fakeStore = (): Pick<GatewayStore, 'releaseRequest'> & { down: boolean; calls: string[] } => {
    const s = {
      down: true,
      calls: [] as string[],
      releaseRequest(principal: string, agent: string, key: string): Promise<void> {
        s.calls.push(`${principal}/${agent}/${key}`);
        return s.down ? Promise.reject(new StoreUnavailableError('down')) : Promise.resolve();
      },
    };
    return s;
  };

  it('keeps a refused release, tries it again in the background with a growing wait, and forgets it once done', async () => {
    const store = fakeStore();
    const log: string[] = [];
    const claims = new ClaimReleases(store, (l) => log.push(l));
    try {
      await claims.release('p', 'a', 'm1#d');
      assert.equal(claims.waiting, 1);
      assert.match(log[0] ?? '', /could not release the claim of messageId m1 on a \(.*down.*\)/);
      await sleep(1700); // tries at 0, +0.5 s and +1 s after that
      assert.equal(store.calls.length, 3, store.calls.join(', '));
      store.down = false;
      for (let i = 0; i < 60 && claims.waiting; i++) await sleep(50);
      assert.equal(claims.waiting, 0);
      assert.equal(log.filter((l) => l.startsWith('released the claim of messageId m1 on a')).length, 1);
      const after = store.calls.length;
      await sleep(300);
      assert.equal(store.calls.length, after, 'no more tries once released');
    } finally {
      claims.close();
    }
  });

  it('settle: nothing for a claim it does not hold; 503 while the store refuses; one try at a time', async () => {
    const store = fakeStore();
    const claims = new ClaimReleases(store, () => undefined);
    try {
      await claims.settle('p', 'a', 'other#d');
      assert.equal(store.calls.length, 0);
      await claims.release('p', 'a', 'task:t1/m2');
      await assert.rejects(claims.settle('p', 'a', 'task:t1/m2'), (e: unknown) => {
        assert.ok(e instanceof StoreUnavailableError);
        assert.match(e.message, /an earlier send of messageId m2 is still to be released/);
        return true;
      });
      store.down = false;
      const calls = store.calls.length;
      await Promise.all([claims.settle('p', 'a', 'task:t1/m2'), claims.settle('p', 'a', 'task:t1/m2')]);
      assert.equal(store.calls.length - calls, 1, 'two settles at once share one release');
      assert.equal(claims.waiting, 0);
    } finally {
      claims.close();
    }
  });
});
