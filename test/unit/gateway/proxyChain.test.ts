// A proxy forwards the caller's message with its own hop added to `baton/chain`, and refuses a message
// that already went through it: two gateways that proxy each other (or a remote that points back to
// the gateway) would otherwise forward one request around the loop without end.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { TaskState } from '@a2a-js/sdk';
import { META } from '../../../src/core/batonProfile';
import { sha256HexOf } from '../../../src/gateway/config';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { bearerFetch, bounded, clientFor, sendRequest, tempDir, userMessage } from './helpers';
import { startRemote } from './remoteAgent';

/** A port free right now (the gateways below must know each other's URL before they start). */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('gateway: delegation chains through proxies', () => {
  const team = 'team-token-chain-0123456789abcdef';
  const remoteToken = 'remote-secret-token-chain-0123456789';
  const dirs = [tempDir(), tempDir()];
  let a: RunningGateway;
  let b: RunningGateway;
  let remote: Awaited<ReturnType<typeof startRemote>>;
  before(async () => {
    remote = await startRemote(3, remoteToken, false);
    const [portA, portB] = [await freePort(), await freePort()];
    const common = {
      tokens: [{ principal: 'team', sha256: sha256HexOf(team) }],
      log: () => undefined,
      localAgents: [],
    };
    const hop = (id: string, port: number, to: string) => ({
      id,
      name: id,
      description: 'proxied',
      url: `http://127.0.0.1:${port}/a2a/${to}`,
      protocolBinding: 'JSONRPC' as const,
      protocolVersion: '1.0' as const,
      auth: { kind: 'bearer' as const, token: team },
      skills: [],
    });
    // A's "ping" goes to B's "pong", which comes back to A's "ping"; A's "self" points at itself.
    a = await startGateway({
      ...common,
      stateDir: dirs[0].path,
      port: portA,
      remoteAgents: [
        hop('ping', portB, 'pong'),
        hop('self', portA, 'self'),
        {
          id: 'remote',
          name: 'Remote',
          description: 'an SDK agent',
          url: remote.url,
          protocolBinding: 'JSONRPC',
          protocolVersion: '1.0',
          auth: { kind: 'bearer', token: remoteToken },
          skills: [],
        },
      ],
    });
    b = await startGateway({
      ...common,
      stateDir: dirs[1].path,
      port: portB,
      remoteAgents: [hop('pong', portA, 'ping')],
    });
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await remote?.close();
    for (const d of dirs) d[Symbol.dispose]();
  });

  it('forwards the message with its hop added to baton/chain, after the caller’s entries', async () => {
    const client = await clientFor(`${a.url}/a2a/remote/.well-known/agent-card.json`, team);
    const done = await bounded(
      client.sendMessage(sendRequest(userMessage('go', { [META.chain]: ['vscode:alice'] }))),
      'a forwarded send',
    );
    const id = 'id' in done ? done.id : '';
    assert.equal('id' in done ? done.status?.state : undefined, TaskState.TASK_STATE_COMPLETED);
    // What the remote agent received (it keeps the first message in the task's history).
    const res = await bearerFetch(remoteToken)(remote.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id, historyLength: 10 } }),
    });
    const task = ((await res.json()) as { result?: { history?: Array<{ metadata?: Record<string, unknown> }> } })
      .result;
    const chain = task?.history?.[0]?.metadata?.[META.chain] as string[] | undefined;
    assert.equal(chain?.length, 2, JSON.stringify(task?.history?.[0]?.metadata));
    assert.equal(chain[0], 'vscode:alice');
    assert.match(chain[1], /^baton-gateway:[\w-]+\/remote$/);
  });

  it('refuses a loop between two gateways that proxy each other, with an error that names it, and leaves no task behind', async () => {
    const client = await clientFor(`${a.url}/a2a/ping/.well-known/agent-card.json`, team);
    await assert.rejects(
      bounded(client.sendMessage(sendRequest(userMessage('loop'))), 'a send around the loop'),
      /delegation cycle: this message already went through ping on this gateway/,
    );
    for (const [gw, agent] of [
      [a, 'ping'],
      [b, 'pong'],
    ] as const) {
      const c = await clientFor(`${gw.url}/a2a/${agent}/.well-known/agent-card.json`, team);
      const list = await c.listTasks({
        tenant: '',
        contextId: '',
        status: TaskState.TASK_STATE_UNSPECIFIED,
        pageSize: 10,
        pageToken: '',
        historyLength: 0,
        statusTimestampAfter: undefined,
        includeArtifacts: false,
      });
      assert.deepEqual(
        list.tasks.map((t) => t.id),
        [],
        `${agent} kept a task`,
      );
    }
  });

  it('refuses a remote that points back at the same route', async () => {
    const client = await clientFor(`${a.url}/a2a/self/.well-known/agent-card.json`, team);
    await assert.rejects(
      bounded(client.sendMessage(sendRequest(userMessage('me again'))), 'a send to itself'),
      /delegation cycle/,
    );
  });

  it('refuses a chain that is already 16 hops long, and says so', async () => {
    const client = await clientFor(`${a.url}/a2a/remote/.well-known/agent-card.json`, team);
    const long = Array.from({ length: 16 }, (_, i) => `hop-${i}`);
    await assert.rejects(
      bounded(
        client.sendMessage(sendRequest(userMessage('far', { [META.chain]: long }))),
        'a send at the end of a long chain',
      ),
      /the delegation chain is 16 hops long, the limit is 16/,
    );
  });
});
