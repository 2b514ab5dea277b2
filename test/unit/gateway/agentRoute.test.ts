// The route objects startGateway makes once it listens: each owns its card (built from the real base
// URL), its ETag and its invalidation; the index route's card names the same address.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { Request, Response } from 'express';
import { AgentCard } from '@a2a-js/sdk';
import { AgentRoute, checkAgentIds, IndexRoute } from '../../../src/gateway/agentRoute';
import type { RouteSite } from '../../../src/gateway/agentRoute';
import type { LocalAgent } from '../../../src/gateway/agents/localAgent';
import type { RemoteAgentConfig } from '../../../src/gateway/config';
import { EventHub } from '../../../src/gateway/eventLog';
import { ClaimReleases } from '../../../src/gateway/claimReleases';
import { DEFAULT_LIVENESS } from '../../../src/gateway/instanceLiveness';
import type { GatewayContext } from '../../../src/gateway/gatewayContext';
import { CardSlot, publishCard } from '../../../src/gateway/http/cardRoute';
import { openStore } from '../../../src/gateway/store/openStore';
import type { GatewayStore } from '../../../src/gateway/store/gatewayStore';
import { clientFor, scriptedAgent, sendRequest, suiteGateway, tempDir, userMessage } from './helpers';
import { RunQueue } from '../../../src/gateway/runQueue';

const SITE: RouteSite = { baseUrl: 'http://10.9.8.7:4321', keys: { publicJwk: undefined }, tokenRequired: true };

/** Every URL a card names (interfaces, provider). */
function urlsOf(card: AgentCard): string[] {
  return [...card.supportedInterfaces.map((i) => i.url), card.provider?.url ?? ''].filter(Boolean);
}

/** A local agent whose description can be changed after the route was made. */
function mutableAgent(id: string): LocalAgent & { description: string } {
  const base = scriptedAgent({ id });
  return { ...base, description: 'first description' };
}

describe('agent routes', () => {
  const dir = tempDir('baton-routes-');
  let store: GatewayStore;
  let ctx: GatewayContext;
  before(async () => {
    store = await openStore({ kind: 'sqlite' }, dir.path, undefined, () => undefined);
    ctx = {
      store,
      hub: new EventHub(),
      instanceId: 'test-instance',
      identity: 'baton-gateway:test',
      claims: new ClaimReleases(store, () => undefined),
      liveness: DEFAULT_LIVENESS,
      runs: new RunQueue(0),
      roots: [],
      limits: {
        capabilities: { write: true, shell: false, network: false },
        defaultDeadlineMs: 60_000,
        maxDeadlineMs: 60_000,
        cancelGraceMs: 100,
      },
      log: () => undefined,
    };
  });
  after(async () => {
    await store.close();
    dir[Symbol.dispose]();
  });

  it("builds a local route's card from the real base URL, under its own path", async () => {
    const route = AgentRoute.local(SITE, ctx, scriptedAgent({ id: 'fmt' }));
    assert.equal(route.path, '/a2a/fmt');
    const { card, json, etag } = await route.published();
    assert.ok(card.supportedInterfaces.length > 0);
    for (const i of card.supportedInterfaces) assert.equal(i.url, 'http://10.9.8.7:4321/a2a/fmt');
    assert.equal(card.provider?.url, 'http://10.9.8.7:4321');
    assert.equal(json, JSON.stringify(AgentCard.toJSON(card)), 'the JSON served is the wire form');
    assert.equal(etag, publishCard(card).etag);
  });

  it('keeps its card and ETag until invalidated; the rebuilt card has a new ETag', async () => {
    const agent = mutableAgent('lint');
    const route = AgentRoute.local(SITE, ctx, agent);
    const first = await route.published();
    agent.description = 'second description';
    assert.equal((await route.published()).etag, first.etag, 'cached until invalidated');
    route.invalidate();
    const second = await route.published();
    assert.notEqual(second.etag, first.etag);
    assert.equal(second.card.description, 'second description');
  });

  it("a route's card never shows another route's URL", async () => {
    const a = AgentRoute.local(SITE, ctx, scriptedAgent({ id: 'alpha' }));
    const b = AgentRoute.local(SITE, ctx, scriptedAgent({ id: 'beta' }));
    const [ca, cb] = await Promise.all([a.published(), b.published()]);
    for (const u of urlsOf(ca.card)) assert.ok(!u.includes('/a2a/beta'), u);
    for (const u of urlsOf(cb.card)) assert.ok(!u.includes('/a2a/alpha'), u);
    assert.ok(!ca.json.includes('/a2a/beta') && !cb.json.includes('/a2a/alpha'));
    assert.notEqual(ca.etag, cb.etag);
  });

  it("the index card names the real address and each agent's card path", async () => {
    const routes = [AgentRoute.local(SITE, ctx, scriptedAgent({ id: 'alpha' }))];
    const { card } = await new IndexRoute(
      SITE,
      routes.map((r) => r.indexed),
    ).published();
    assert.equal(card.provider?.url, 'http://10.9.8.7:4321');
    assert.match(JSON.stringify(AgentCard.toJSON(card)), /\/a2a\/alpha\/\.well-known\/agent-card\.json/);
  });

  describe('a proxied remote', () => {
    let remote: Server;
    let origin = '';
    let version = '1';
    before(async () => {
      const app = express();
      app.get('/.well-known/agent-card.json', (_req: Request, res: Response) => {
        res.json({
          name: 'remote',
          description: `remote version ${version}`,
          version,
          supportedInterfaces: [{ url: `${origin}/rpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
          capabilities: { streaming: true },
          skills: [{ id: `skill-${version}`, name: `Skill ${version}`, description: 'does things', tags: [] }],
          defaultInputModes: ['text/plain'],
          defaultOutputModes: ['text/plain'],
        });
      });
      remote = await new Promise<Server>((r) => {
        const s = app.listen(0, '127.0.0.1', () => r(s));
      });
      origin = `http://127.0.0.1:${(remote.address() as AddressInfo).port}`;
    });
    after(() => new Promise<void>((r) => remote.close(() => r())));

    const cfg = (): RemoteAgentConfig => ({
      id: 'far',
      name: 'Far agent',
      description: 'configured',
      url: `${origin}/rpc`,
      protocolBinding: 'JSONRPC',
      auth: { kind: 'none' },
      skills: [],
    });

    it("its card changing at the remote invalidates the route's card: a new ETag, still the gateway's URL", async () => {
      const route = AgentRoute.remote(SITE, ctx, cfg(), { refreshMs: 60_000 });
      try {
        assert.ok(route.watcher);
        await route.watcher.refresh();
        const first = await route.published();
        assert.ok(first.card.skills.some((s) => s.id === 'skill-1'));
        version = '2';
        await route.watcher.refresh();
        const second = await route.published();
        assert.notEqual(second.etag, first.etag);
        assert.ok(second.card.skills.some((s) => s.id === 'skill-2'));
        for (const u of urlsOf(second.card)) assert.ok(!u.startsWith(origin), `${u} is not the remote's`);
        for (const i of second.card.supportedInterfaces) assert.equal(i.url, 'http://10.9.8.7:4321/a2a/far');
      } finally {
        await route.stopWatching();
        await route.runner.close();
      }
    });
  });
});

describe('startGateway: everything is made from the address it listens on', () => {
  const gw = suiteGateway({ port: 0 });

  it('serves cards naming its own URL, and signs results with that URL as the issuer', async () => {
    const index = (await (await fetch(`${gw.url}/.well-known/agent-card.json`)).json()) as {
      provider?: { url?: string };
    };
    assert.equal(index.provider?.url, gw.url);
    const client = await clientFor(`${gw.url}/a2a/echo/.well-known/agent-card.json`, gw.token);
    const done = await client.sendMessage(sendRequest(userMessage('format src')));
    assert.ok('id' in done);
    const task = await client.getTask({ tenant: '', id: done.id });
    const jws = String(task.metadata?.['baton/resultEnvelope']);
    const claims = JSON.parse(Buffer.from(jws.split('.')[1] ?? '', 'base64url').toString('utf8')) as {
      issuer?: string;
    };
    assert.equal(claims.issuer, gw.url);
  });
});

describe('CardSlot', () => {
  it('does not keep a build that failed: the next get builds again', async () => {
    let n = 0;
    const slot = new CardSlot(() => {
      n += 1;
      return n === 1
        ? Promise.reject(new Error('signing failed'))
        : Promise.resolve(AgentCard.fromJSON({ name: `card ${n}` }));
    });
    await assert.rejects(slot.get(), /signing failed/);
    const afterFailure = slot.current;
    assert.equal(afterFailure, undefined);
    assert.equal((await slot.get()).card.name, 'card 2');
    assert.equal(slot.current?.card.name, 'card 2');
  });

  it('a build an invalidation overtook is not kept as the current card', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    let n = 0;
    const slot = new CardSlot(async () => {
      n += 1;
      const mine = n;
      if (mine === 1) await gate;
      return AgentCard.fromJSON({ name: `card ${mine}` });
    });
    const stale = slot.get();
    slot.invalidate();
    const fresh = await slot.get();
    release();
    assert.equal((await stale).card.name, 'card 1');
    assert.equal(fresh.card.name, 'card 2');
    assert.equal(slot.current?.card.name, 'card 2');
  });
});

describe('checkAgentIds', () => {
  it('refuses two local agents under one name, and a remote that takes a local name', () => {
    assert.throws(() => checkAgentIds([{ id: 'a' }, { id: 'a' }], []), /two agents are named a; rename one/);
    assert.throws(
      () => checkAgentIds([{ id: 'a' }], [{ id: 'a' }]),
      /agent id a is used by a local agent and a configured remote agent/,
    );
    assert.doesNotThrow(() => checkAgentIds([{ id: 'a' }], [{ id: 'b' }]));
  });
});
