// Tokens replaced while the gateway runs (baton-gateway reads them again on SIGHUP): a member added can
// call at once, and a revoked token stops working at once, a stream it has open included.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { StreamResponse } from '@a2a-js/sdk';
import { sha256HexOf } from '../../../src/gateway/config';
import { DelegationJournal } from '../../../src/core/delegation';
import type { DelegationRequest } from '../../../src/core/delegation';
import { startGateway } from '../../../src/gateway/server';
import { connectAgent, normalizeCard } from '../../../src/node/a2a/clientFactory';
import { DelegationRunner } from '../../../src/node/a2a/delegationRunner';
import { JournalStore } from '../../../src/node/journalStore';
import { makeRequest, newRun } from '../delegation/harness';
import { bounded, clientFor, rpcPost, scriptedAgent, sendRequest, suiteGateway, tempDir, userMessage } from './helpers';

describe('gateway: tokens replaced while it runs', () => {
  const ALICE = 'alice-token-0123456789abcdef';
  const BOB = 'bob-token-0123456789abcdef';
  const CAROL = 'carol-token-0123456789abcdef';
  const hold = scriptedAgent({ id: 'hold', waitForCancel: true });
  const gw = suiteGateway({
    localAgents: [hold],
    tokens: [
      { principal: 'alice', sha256: sha256HexOf(ALICE) },
      { principal: 'bob', sha256: sha256HexOf(BOB) },
    ],
  });
  const listTasks = async (token: string): Promise<number> =>
    (await rpcPost(`${gw.url}/a2a/hold`, { method: 'ListTasks', params: {} }, { Authorization: `Bearer ${token}` }))
      .status;

  it('ends what a revoked token has open, refuses it from then on, and leaves the other members alone', async () => {
    const alice = await clientFor(`${gw.url}/a2a/hold/.well-known/agent-card.json`, ALICE);
    const bob = await clientFor(`${gw.url}/a2a/hold/.well-known/agent-card.json`, BOB);
    const aliceStream = alice.sendMessageStream(sendRequest(userMessage('hold on, alice')));
    const bobStream = bob.sendMessageStream(sendRequest(userMessage('hold on, bob')));
    /** Reads a stream up to its agent's `started` (after which the agent sends nothing until canceled). */
    const untilStarted = async (s: AsyncGenerator<StreamResponse>): Promise<StreamResponse[]> => {
      const seen: StreamResponse[] = [];
      for (let r = await s.next(); !r.done; r = await s.next()) {
        seen.push(r.value);
        const p = r.value.payload;
        const part = p?.$case === 'statusUpdate' ? p.value.status?.message?.parts[0]?.content : undefined;
        if (part?.$case === 'text' && part.value === 'started') break;
      }
      return seen;
    };
    await bounded(untilStarted(aliceStream), 'alice’s task to start');
    const [bobFirst] = await bounded(untilStarted(bobStream), 'bob’s task to start');
    // Alice's token is revoked, Carol joins.
    const change = gw.setTokens([
      { principal: 'bob', sha256: sha256HexOf(BOB) },
      { principal: 'carol', sha256: sha256HexOf(CAROL) },
    ]);
    assert.deepEqual(change, { count: 2, added: ['carol'], removed: ['alice'] });
    // Alice's open stream ends (its connection is closed): without that it would wait for her task's end.
    const rest = await bounded(
      (async () => {
        const seen: StreamResponse[] = [];
        try {
          for (let r = await aliceStream.next(); !r.done; r = await aliceStream.next()) seen.push(r.value);
        } catch {
          // the connection was ended
        }
        return seen;
      })(),
      'alice’s stream to end',
    );
    assert.equal(rest.length, 0, JSON.stringify(rest));
    assert.equal(await listTasks(ALICE), 401);
    assert.equal(await listTasks(CAROL), 200);
    assert.equal(await listTasks(BOB), 200);
    assert.equal(await listTasks(gw.token), 200, 'the local principal’s own token stays');
    // Bob's stream goes on: his task is still there to cancel, and the stream brings the end.
    const id = bobFirst?.payload?.$case === 'task' ? bobFirst.payload.value.id : '';
    assert.ok(id);
    await bounded(bob.cancelTask({ tenant: '', id, metadata: undefined }), 'bob’s cancel');
    const bobRest: StreamResponse[] = [];
    await bounded(
      (async () => {
        for (let r = await bobStream.next(); !r.done; r = await bobStream.next()) bobRest.push(r.value);
      })(),
      'bob’s stream to reach its end',
    );
    const last = bobRest.at(-1)?.payload;
    assert.equal(last?.$case, 'statusUpdate');
  });
});

/**
 * A gateway whose `hold` agent takes the one member token `token`, and that agent's card and endpoint
 * over `binding` as Baton's client reads them.
 */
async function holdGateway(stateDir: string, token: string, binding = 'JSONRPC') {
  const gw = await startGateway({
    stateDir,
    localAgents: [scriptedAgent({ id: 'hold', waitForCancel: true })],
    tokens: [{ principal: 'alice', sha256: sha256HexOf(token) }],
    log: () => undefined,
  });
  try {
    const card = normalizeCard(await (await fetch(`${gw.url}/a2a/hold/.well-known/agent-card.json`)).json());
    const iface = card.supportedInterfaces.find((i) => i.protocolBinding === binding && i.protocolVersion === '1.0');
    assert.ok(iface, `no ${binding} interface`);
    return { gw, card, endpoint: { url: iface.url, protocolBinding: binding, protocolVersion: '1.0' } };
  } catch (e) {
    await gw.close();
    throw e;
  }
}

describe('Baton’s own client, when the gateway revokes its token mid-task', () => {
  it('reconnects, says the agent refused its token (once), and goes on with the task once given a new one', async () => {
    const OLD = 'old-token-0123456789abcdef';
    const NEW = 'new-token-0123456789abcdef';
    using dir = tempDir();
    using journals = tempDir();
    const { gw, card, endpoint } = await holdGateway(dir.path, OLD);
    const store = new JournalStore(journals.path);
    try {
      // What the user has stored for the gateway's origin: read at every request, as the extension does.
      let stored = OLD;
      const connection = await connectAgent({ card, endpoint, getToken: () => Promise.resolve(stored) });
      const { runner, journal } = await newRun({ card, jsonRpc: endpoint }, store, 'hold on', {
        connection,
        // Slow enough retries for the new token to arrive before Baton gives up.
        runner: { reconnect: { maxAttempts: 50, initialDelayMs: 100, maxDelayMs: 200 } },
      });
      const running = runner.start();
      await until(() => journal.state() === 'working', 'the task to run');
      const [taskId] = [journal.taskId];
      // The team revokes the token and issues a new one; the user has not stored it yet.
      gw.setTokens([{ principal: 'alice', sha256: sha256HexOf(NEW) }]);
      await until(() => journal.view(Date.now()).tokenRefused === true, 'Baton to say its token was refused');
      assert.equal(journal.state(), 'reconnecting');
      const refusals = (): number =>
        journal.view(Date.now()).timeline.filter((e) => e.kind === 'notice' && e.code === 'connection.tokenRefused')
          .length;
      // Several refused tries in a row are said once.
      await new Promise((r) => setTimeout(r, 600));
      assert.equal(refusals(), 1);
      // The user stores the new token: the next try takes it, and the task is followed again.
      stored = NEW;
      await until(() => journal.state() === 'working', 'the task to be followed again');
      assert.equal(journal.view(Date.now()).tokenRefused, undefined);
      assert.equal(journal.taskId, taskId, 'the same task');
      await runner.cancel();
      await bounded(running, 'the delegation');
      assert.equal(journal.decide()?.outcome, 'canceled');
    } finally {
      await store.close();
      await gw.close();
    }
  });
});

describe('Baton’s own client, when the gateway refuses its token at the first message', () => {
  for (const binding of ['JSONRPC', 'HTTP+JSON'])
    it(`fails before any task and says the token was refused (${binding}); a refusal for another reason does not`, async () => {
      const GOOD = 'good-token-0123456789abcdef';
      using dir = tempDir();
      using journals = tempDir();
      const { gw, card, endpoint } = await holdGateway(dir.path, GOOD, binding);
      const store = new JournalStore(journals.path);
      try {
        /** A delegation with `token` to the gateway, run to its end; `alter` changes the request first. */
        const run = async (token: string, alter = (r: DelegationRequest): DelegationRequest => r) => {
          const connection = await connectAgent({ card, endpoint, getToken: () => Promise.resolve(token) });
          const request = alter(makeRequest(endpoint, 'hold on'));
          await store.create(request);
          const journal = new DelegationJournal(request);
          await bounded(new DelegationRunner({ connection, journal, sink: store }).start(), 'the delegation');
          return journal.view(Date.now());
        };
        const view = await run('a-token-nobody-issued-0123456789');
        assert.equal(view.state, 'failed', view.outcomeReason);
        assert.equal(view.taskId, undefined, 'no task was created');
        assert.equal(view.tokenRefused, true, view.outcomeReason);
        assert.match(view.outcomeReason ?? '', /bearer token.*this gateway issued you.*(UNAUTHENTICATED|HTTP 401)/);
        // The same gateway refusing the send for what it carries: no word about the token.
        const other = await run(GOOD, (r) => ({ ...r, message: { ...r.message, parts: [] } }));
        assert.equal(other.state, 'failed', other.outcomeReason);
        assert.equal(other.tokenRefused, undefined, other.outcomeReason);
      } finally {
        await store.close();
        await gw.close();
      }
    });
});

/** Resolves once `check` holds (polled every 20 ms); rejects after 15 s saying what it waited for. */
async function until(check: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 15_000;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
