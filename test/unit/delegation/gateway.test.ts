// The delegation client against Baton's own gateway (src/gateway): its replay profile (seq, SSE id,
// Last-Event-ID) and messageId idempotency, through the cutting proxy; cancel and token handling.
import * as assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { connectAgent, normalizeCard } from '../../../src/node/a2a/clientFactory';
import type { PinnedEndpoint } from '../../../src/node/a2a/clientFactory';
import { JournalStore } from '../../../src/node/journalStore';
import { scriptedAgent } from '../gateway/helpers';
import type { AgentServer } from './agentServers';
import type { CutProxy } from './cutProxy';
import { CUT_POINTS, startCutProxy } from './cutProxy';
import { eventSeqs, newRun, tempDir, within } from './harness';

describe('delegating to the Baton gateway', () => {
  let gw: RunningGateway;
  let proxy: CutProxy;
  let tmp: ReturnType<typeof tempDir>;
  let store: JournalStore;
  let stand: AgentServer;
  before(async () => {
    tmp = tempDir();
    gw = await startGateway({
      stateDir: join(tmp.dir, 'gw'),
      roots: [tmp.dir],
      localAgents: [scriptedAgent({ steps: 4, stepDelayMs: 5 }), scriptedAgent({ id: 'slow', waitForCancel: true })],
      limits: { cancelGraceMs: 300 },
      log: () => undefined,
    });
    proxy = await startCutProxy(gw.port);
    store = new JournalStore(join(tmp.dir, 'journals'));
    const raw = (await (
      await fetch(`${gw.url}/a2a/echo/.well-known/agent-card.json`, {
        headers: { 'A2A-Version': '1.0', Authorization: `Bearer ${gw.token}` },
      })
    ).json()) as unknown;
    const card = normalizeCard(raw);
    const iface = card.supportedInterfaces.find((i) => i.protocolBinding === 'JSONRPC' && i.protocolVersion === '1.0');
    assert.ok(iface, 'the gateway card lists a JSON-RPC 1.0 interface');
    const endpoint: PinnedEndpoint = { url: iface.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' };
    // newRun wants an AgentServer-like object; only card and jsonRpc are used.
    stand = { card, jsonRpc: endpoint } as unknown as AgentServer;
  });
  after(async () => {
    await store.close();
    await proxy.close();
    await gw.close();
    tmp.cleanup();
  });

  it('the card declares the replay profile; the token goes only to the pinned origin', async () => {
    const origins: string[] = [];
    const c = await connectAgent({
      card: stand.card,
      endpoint: stand.jsonRpc,
      getToken: async (o) => (origins.push(o), gw.token),
    });
    assert.equal(c.replay, true);
    assert.equal(c.idempotentSend, true);
    const run = await newRun(stand, store, 'Echo', { connection: c });
    await within(run.runner.start(), 20_000, 'delegation');
    assert.equal(run.journal.decide()?.outcome, 'completed', run.journal.decide()?.reason);
    assert.ok(run.journal.patch()?.text.includes('+b'));
    assert.deepEqual([...new Set(origins)], [new URL(gw.url).origin]);
  });

  for (const name of ['beforeFirstEvent', 'midEvent', 'atFinalEvent'] as const) {
    it(`${name}: 10 delegations through a cutting proxy complete with every event once and one task each`, async () => {
      proxy.setCutPoint(CUT_POINTS[name]);
      const before = proxy.cuts;
      const endpoint = { ...stand.jsonRpc, url: stand.jsonRpc.url.replace(`:${gw.port}`, `:${proxy.port}`) };
      const connection = await connectAgent({ card: stand.card, endpoint, getToken: async () => gw.token });
      const runs = await Promise.all(
        Array.from({ length: 10 }, async () => {
          const run = await newRun(stand, store, 'Echo', { endpoint, connection });
          await within(run.runner.start(), 20_000, 'delegation');
          return { run, entries: await run.entries() };
        }),
      );
      assert.equal(proxy.cuts - before, 10);
      for (const { run, entries } of runs) {
        assert.equal(run.journal.decide()?.outcome, 'completed', run.journal.decide()?.reason);
        const row = await gw.store.getTask('echo', run.journal.taskId ?? '');
        assert.ok(row);
        assert.deepEqual(
          eventSeqs(entries),
          Array.from({ length: row.lastSeq }, (_, i) => i + 1),
        );
        const listed = await gw.store.listTasks({ agent: 'echo', principal: 'local', limit: 1000 });
        assert.equal(listed.filter((t) => t.id === run.journal.taskId).length, 1);
      }
    });
  }

  it('cancel reaches a gateway agent and is confirmed', async () => {
    const raw = (await (
      await fetch(`${gw.url}/a2a/slow/.well-known/agent-card.json`, {
        headers: { 'A2A-Version': '1.0', Authorization: `Bearer ${gw.token}` },
      })
    ).json()) as unknown;
    const card = normalizeCard(raw);
    const iface = card.supportedInterfaces.find((i) => i.protocolBinding === 'JSONRPC' && i.protocolVersion === '1.0');
    assert.ok(iface);
    const endpoint: PinnedEndpoint = { url: iface.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' };
    const connection = await connectAgent({ card, endpoint, getToken: async () => gw.token });
    const run = await newRun({ card, jsonRpc: endpoint } as unknown as AgentServer, store, 'Wait', { connection });
    void run.runner.start();
    await within(
      (async () => {
        while (!run.journal.taskId) await new Promise((r) => setTimeout(r, 10));
      })(),
      10_000,
      'task id',
    );
    const d = await within(run.runner.cancel(), 15_000, 'cancel');
    assert.equal(d.outcome, 'canceled', d.reason);
    assert.equal(d.cancelConfirmed, true);
  });
});
