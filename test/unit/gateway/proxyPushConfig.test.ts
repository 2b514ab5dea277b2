/**
 * A caller that sends a push notification config with its message through the proxy: the gateway
 * keeps it and notifies the caller itself; the remote agent never gets the caller's webhook URL, its
 * token or its credentials (whether it streams or not). The remote is the `@a2a-js/sdk` server; what
 * it received is read from its request handler.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler } from '@a2a-js/sdk/server/express';
import type { AgentCard } from '@a2a-js/sdk';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { until } from './pgFaultHelpers';
import { bounded, rpcPost, tempDir, userMessage } from './helpers';
import { listenOnLoopback, ScriptedSdkExecutor, sdkAgentCard, sdkJsonRpc } from './sdkServer';

describe("gateway proxy: the caller's push notification config stays at the gateway", () => {
  const dir = tempDir();
  /** The params of each call the remotes' request handlers took, as JSON. */
  const seen: string[] = [];
  const hits: string[] = [];
  const closers: (() => Promise<void>)[] = [];
  let receiver = '';
  let gw: RunningGateway;

  /** An SDK agent that declares push notifications (so the route offers them), streaming or not. */
  const remote = async (streaming: boolean): Promise<string> => {
    let origin = '';
    const card = (): AgentCard =>
      sdkAgentCard({
        capabilities: { streaming, pushNotifications: true, extensions: [], extendedAgentCard: false },
        supportedInterfaces: [{ url: `${origin}/rpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
      });
    const handler = new DefaultRequestHandler(card(), new InMemoryTaskStore(), new ScriptedSdkExecutor());
    for (const m of ['sendMessage', 'sendMessageStream'] as const) {
      const own = (handler[m] as (p: unknown, c: unknown) => unknown).bind(handler);
      Object.defineProperty(handler, m, {
        value: (p: unknown, c: unknown) => {
          seen.push(JSON.stringify(p));
          return own(p, c);
        },
      });
    }
    const app = express();
    app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: () => Promise.resolve(card()) }));
    app.use('/rpc', sdkJsonRpc(handler));
    const l = await listenOnLoopback(app);
    origin = l.origin;
    closers.push(l.close);
    return `${origin}/rpc`;
  };

  before(async () => {
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        hits.push(body);
        res.end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    receiver = `http://127.0.0.1:${port}/hook`;
    closers.push(() => new Promise<void>((r) => server.close(() => r())));
    const remoteAgent = (id: string, url: string) => ({
      id,
      name: id,
      description: 'a remote agent',
      url,
      protocolBinding: 'JSONRPC' as const,
      auth: { kind: 'none' as const },
      skills: [],
    });
    gw = await startGateway({
      stateDir: dir.path,
      remoteAgents: [remoteAgent('streams', await remote(true)), remoteAgent('polled', await remote(false))],
      pushAllowPrivateHosts: [`127.0.0.1:${port}`],
      log: () => undefined,
    });
    // The remotes' cards are read in the background: their routes offer push once they have been.
    for (const id of ['streams', 'polled'])
      await until(async () => {
        const c = (await (await fetch(`${gw.url}/a2a/${id}/.well-known/agent-card.json`)).json()) as {
          capabilities?: { pushNotifications?: boolean };
        };
        return c.capabilities?.pushNotifications === true;
      }, `the route card of ${id} to offer push`);
  });
  after(async () => {
    await gw.close();
    for (const close of closers) await close();
    dir[Symbol.dispose]();
  });

  for (const route of ['streams', 'polled'])
    it(`${route}: the remote gets the message without the push config; the gateway notifies the caller`, async () => {
      const before = seen.length;
      const token = `push-token-${route}`;
      const res = await bounded(
        rpcPost(
          `${gw.url}/a2a/${route}`,
          {
            method: 'SendMessage',
            params: {
              message: userMessage('fix it'),
              configuration: {
                taskPushNotificationConfig: {
                  url: receiver,
                  token,
                  authentication: { scheme: 'Bearer', credentials: 'receiver-secret' },
                },
              },
            },
          },
          { Authorization: `Bearer ${gw.token}` },
        ),
        'the send',
      );
      const answer = (await res.json()) as { result?: unknown };
      const id = (answer.result as { task?: { id?: string } } | undefined)?.task?.id ?? '';
      assert.ok(id, JSON.stringify(answer));
      const received = seen.slice(before);
      assert.ok(received.length > 0, 'the remote got the message');
      for (const p of received) {
        assert.ok(!p.includes(receiver) && !p.includes(token) && !p.includes('receiver-secret'), p);
      }
      await until(
        () => hits.some((h) => h.includes(id) && h.includes('TASK_STATE_COMPLETED')),
        'the gateway to notify the caller of the completed task',
      );
    });
});
