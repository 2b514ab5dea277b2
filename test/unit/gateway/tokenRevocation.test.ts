// Tokens replaced while the gateway runs (baton-gateway reads them again on SIGHUP): a member added can
// call at once, and a revoked token stops working at once, a stream it has open included.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { StreamResponse } from '@a2a-js/sdk';
import { sha256HexOf } from '../../../src/gateway/config';
import { bounded, clientFor, rpcPost, scriptedAgent, sendRequest, suiteGateway, userMessage } from './helpers';

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
