import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ClientFactory, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { TaskState } from '@a2a-js/sdk';
import { ConfigError, parseGatewayConfig, sha256HexOf } from '../../../src/gateway/config';
import { startGateway } from '../../../src/gateway/server';
import { rpcPost, scriptedAgent, sendRequest, suiteGateway, tempDir, userMessage } from './helpers';

const rpc = (url: string, headers: Record<string, string> = {}) =>
  rpcPost(url, { method: 'GetTask', params: { id: 'nope' } }, headers);

describe("gateway: a loopback gateway that serves requests without a token (the demo's team gateway)", () => {
  const token = `team-${randomUUID()}`;
  const gw = suiteGateway({
    localAgents: [scriptedAgent({ steps: 2 })],
    tokens: [{ principal: 'alice', sha256: sha256HexOf(token) }],
    anonymousPrincipal: 'demo',
  });

  it('an SDK client with no token delegates and completes; the card requires no token but still offers one', async () => {
    const card = (await (
      await fetch(`${gw.url}/a2a/echo/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })
    ).json()) as { securitySchemes: Record<string, unknown>; securityRequirements?: unknown[] };
    assert.ok('bearer' in card.securitySchemes);
    assert.deepEqual(card.securityRequirements ?? [], []);
    const index = (await (
      await fetch(`${gw.url}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })
    ).json()) as { securityRequirements?: unknown[] };
    assert.deepEqual(index.securityRequirements ?? [], []);
    const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory({})] });
    const client = await factory.createFromUrl(`${gw.url}/a2a/echo/.well-known/agent-card.json`, '');
    const result = await client.sendMessage(sendRequest(userMessage('hello')));
    assert.ok('status' in result, JSON.stringify(result));
    assert.equal(result.status?.state, TaskState.TASK_STATE_COMPLETED);
  });

  it("a wrong or malformed token is still refused, and a principal's tasks stay its own", async () => {
    for (const auth of ['Bearer wrong-token', `Basic ${token}`, 'Bearer ']) {
      assert.equal((await rpc(`${gw.url}/a2a/echo`, { Authorization: auth })).status, 401, auth);
    }
    const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory({})] });
    const anon = await factory.createFromUrl(`${gw.url}/a2a/echo/.well-known/agent-card.json`, '');
    const sent = await anon.sendMessage(sendRequest(userMessage('mine')));
    const id = 'id' in sent ? sent.id : '';
    assert.ok(id);
    const call = async (taskId: string, headers: Record<string, string>): Promise<unknown> => {
      const res = await rpcPost(`${gw.url}/a2a/echo`, { id: 2, method: 'GetTask', params: { id: taskId } }, headers);
      const j = (await res.json()) as { error?: { code?: number; message: string }; result?: { id: string } };
      return {
        status: res.status,
        code: j.error?.code,
        message: j.error?.message.replace(taskId, '<id>'),
        found: j.result?.id === taskId,
      };
    };
    assert.deepEqual(await call(id, {}), { status: 200, code: undefined, message: undefined, found: true });
    assert.deepEqual(
      await call(id, { Authorization: `Bearer ${token}` }),
      await call(randomUUID(), { Authorization: `Bearer ${token}` }),
      'alice sees the anonymous task as unknown',
    );
  });

  it('refuses to start with it on an address other machines reach, in the config and in the server', async () => {
    assert.throws(
      () => parseGatewayConfig(JSON.stringify({ host: '0.0.0.0', anonymous: { principal: 'demo' } }), 'g.json', {}),
      (e: unknown) => e instanceof ConfigError && /only on a loopback address/.test(e.message),
    );
    for (const host of ['0.0.0.0', '::', '10.0.0.1', '192.168.1.2', 'example.com']) {
      const d = tempDir();
      await assert.rejects(
        startGateway({ stateDir: d.path, host, anonymousPrincipal: 'demo', log: () => undefined }),
        /only on a loopback address/,
        host,
      );
      d[Symbol.dispose]();
    }
    for (const host of ['127.0.0.1', 'localhost', '[::1]', '127.0.0.2']) {
      assert.equal(
        parseGatewayConfig(JSON.stringify({ host, anonymous: { principal: 'demo' } }), 'g.json', {}).anonymousPrincipal,
        'demo',
        host,
      );
    }
  });
});

describe('gateway: an unknown agent is a 404 that names the agents, with or without a token', () => {
  const gw = suiteGateway();

  it('answers 404 "unknown agent" (not 401) for a mistyped agent name', async () => {
    for (const headers of [{}, { Authorization: 'Bearer wrong' }, { Authorization: `Bearer ${gw.token}` }] as Record<
      string,
      string
    >[]) {
      const res = await rpc(`${gw.url}/a2a/formater`, headers);
      assert.equal(res.status, 404);
      const body = (await res.json()) as { error: { message: string } };
      assert.match(body.error.message, /unknown agent "formater"; this gateway serves: echo/);
    }
    // A known agent without a token is still refused.
    assert.equal((await rpc(`${gw.url}/a2a/echo`)).status, 401);
  });
});

describe('gateway: each of many agents is found by the path segment that names it', () => {
  const ids = Array.from({ length: 60 }, (_, i) => `agent-${i}`);
  const gw = suiteGateway({ localAgents: ids.map((id) => scriptedAgent({ id })) });

  it('serves every agent its own card and requests, in any case, and no agent by a prefix of its name', async () => {
    for (const id of [ids[0], ids[31], ids[59]]) {
      const res = await fetch(`${gw.url}/a2a/${id}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } });
      assert.equal(res.status, 200, id);
      const card = (await res.json()) as { supportedInterfaces: { url: string }[] };
      assert.ok(
        card.supportedInterfaces.every((i) => i.url.includes(`/a2a/${id}`)),
        JSON.stringify(card.supportedInterfaces),
      );
      // Behind the token: an unknown task, answered by this agent's route (not the 404 of no route).
      const known = await rpc(`${gw.url}/a2a/${id}`, { Authorization: `Bearer ${gw.token}` });
      assert.equal(known.status, 200, id);
      assert.match(JSON.stringify(await known.json()), /"code":-32001/);
    }
    // Express matches paths without regard to case; the lookup by name does too.
    assert.equal((await fetch(`${gw.url}/A2A/AGENT-59/.well-known/agent-card.json`)).status, 200);
    assert.equal((await rpc(`${gw.url}/a2a/Agent-7/`, { Authorization: `Bearer ${gw.token}` })).status, 200);
    for (const path of ['/a2a/agent-5x', '/a2a/agent-', '/a2a/agent-59extra/.well-known/agent-card.json']) {
      const res = await rpc(`${gw.url}${path}`, { Authorization: `Bearer ${gw.token}` });
      assert.equal(res.status, 404, path);
      assert.match(((await res.json()) as { error: { message: string } }).error.message, /unknown agent "agent-/);
    }
    const bare = await rpc(`${gw.url}/a2a/`, { Authorization: `Bearer ${gw.token}` });
    assert.equal(bare.status, 404);
    assert.match(((await bare.json()) as { error: { message: string } }).error.message, /address an agent at/);
  });
});
