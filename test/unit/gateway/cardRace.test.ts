import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { startGateway } from '../../../src/gateway/server';
import { rpcPost, tempDir } from './helpers';
import { startRemote } from './remoteAgent';

const REMOTE_TOKEN = 'card-race-remote-token-0123456789';

/** A JSON-RPC send whose body is held back after its first half until `finish` is called. */
function heldSend(
  url: string,
  token: string,
  id: number,
): { finish(): void; answer: Promise<{ status: number; body: string }> } {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'SendMessage',
    params: {
      message: { messageId: `held-${id}`, role: 'ROLE_USER', parts: [{ text: 'go' }] },
      configuration: { returnImmediately: true },
    },
  });
  let finish = (): void => undefined;
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(body),
        'A2A-Version': '1.0',
        Authorization: `Bearer ${token}`,
      },
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.flushHeaders();
    req.write(body.slice(0, 20));
    finish = () => req.end(body.slice(20));
  });
  return { finish: () => finish(), answer };
}

describe("gateway: sends right after start, while a remote's own card is still being read", () => {
  it('are all answered, none with "card not ready", when the first card read lands while they are under way', async () => {
    using dir = tempDir();
    // The remote's card answers late: its first read changes the route card while the sends are in flight.
    const remote = await startRemote(0, REMOTE_TOKEN, false, { serveCard: true, cardDelayMs: 400 });
    let cardRead = (): void => undefined;
    const read = new Promise<void>((r) => (cardRead = r));
    const gw = await startGateway({
      stateDir: dir.path,
      remoteAgents: [
        {
          id: 'remote',
          name: 'Remote',
          description: 'proxied',
          descriptionIsDefault: true,
          url: remote.url,
          protocolBinding: 'JSONRPC',
          protocolVersion: '1.0',
          auth: { kind: 'bearer', token: REMOTE_TOKEN },
          skills: [],
        },
      ],
      // Logged just before the route card is invalidated.
      log: (line) => {
        if (line.includes('using the card at')) cardRead();
      },
    });
    try {
      // Some sends are past the route's card check (the configured card) and still reading their body...
      const held = Array.from({ length: 20 }, (_, i) => heldSend(`${gw.url}/a2a/remote`, gw.token, i));
      // ...and others keep coming in meanwhile.
      const more: Array<Promise<{ status: number; body: string }>> = [];
      let stop = false;
      void read.then(() => {
        // The first card read just invalidated the route card: the held bodies arrive now.
        for (const h of held) h.finish();
        stop = true;
      });
      for (let i = 0; !stop && i < 400; i++) {
        more.push(
          rpcPost(
            `${gw.url}/a2a/remote`,
            {
              method: 'SendMessage',
              id: 1000 + i,
              params: {
                message: { messageId: `more-${i}`, role: 'ROLE_USER', parts: [{ text: 'go' }] },
                configuration: { returnImmediately: true },
              },
            },
            { Authorization: `Bearer ${gw.token}` },
          ).then(async (r) => ({ status: r.status, body: await r.text() })),
        );
        await new Promise((r) => setTimeout(r, 5));
      }
      await read;
      const all = await Promise.all([...held.map((h) => h.answer), ...more]);
      const failed = all.filter((a) => a.status !== 200 || a.body.includes('"error"'));
      assert.deepEqual(
        failed.map((f) => f.body),
        [],
        `${failed.length} of ${all.length} sends failed`,
      );
      // The route card follows the remote's card once it was read.
      const card = (await (await fetch(`${gw.url}/a2a/remote/.well-known/agent-card.json`)).json()) as {
        description: string;
      };
      assert.equal(card.description, 'SDK agent');
    } finally {
      await gw.close();
      await remote.close();
    }
  });
});
