// Add Agent's walk of agent indexes, against real HTTP servers on 127.0.0.1 whose indexes are written
// the way an attacker would: listing themselves, each other, a chain of 50, hundreds of entries, one
// URL in many spellings. Each server counts the requests it gets, so "fetched once" is measured.
import * as assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { AGENT_INDEX_EXTENSION_URI } from '../../../src/core/batonProfile';
import {
  addFetchedAgents,
  deserializeRegistry,
  EMPTY_REGISTRY,
  findAgent,
  listingIndexes,
  normalizeCardUrl,
  removeAgent,
  serializeRegistry,
} from '../../../src/core/agentRegistry';
import { discoverAgents, discoveryLog, discoverySummary, DISCOVERY_LIMITS } from '../../../src/node/agentDiscovery';
import type { DiscoveryOptions } from '../../../src/node/agentDiscovery';
import { SafeFetchError } from '../../../src/node/safeFetch';
import { verifyAgentCard } from '../../../src/node/signing';
import { baseAgentCard, buildAgentCard, buildGatewayCard } from '../../../src/gateway/cards';
import type { Running } from '../fetch/testServers';
import { startHttp } from '../fetch/testServers';
import { v1Card } from './fixtures';

const CARD = '/.well-known/agent-card.json';

let server: Running;
let base: string;
const delayed = new Set<ServerResponse>();

function indexCard(listed: readonly string[]): Record<string, unknown> {
  return {
    name: 'Index',
    supportedInterfaces: [],
    capabilities: {
      extensions: [
        { uri: AGENT_INDEX_EXTENSION_URI, params: { agents: listed.map((cardUrl, i) => ({ id: `a${i}`, cardUrl })) } },
      ],
    },
  };
}

function agentCard(path: string): Record<string, unknown> {
  return { ...v1Card(`${base}${path}`), name: `Agent ${path}` };
}

/** What each path serves. `null` is a 404. */
async function route(path: string): Promise<Record<string, unknown> | null> {
  let m: RegExpExecArray | null;
  if ((m = /^\/agents\/([^/]+)$/.exec(path))) return agentCard(`/agents/${m[1]}`);
  if (path === '/self')
    return indexCard([
      '/self' + CARD,
      '/self/',
      '/self',
      `${base.toUpperCase()}/self${CARD}`,
      '/agents/s1/',
      '/agents/s2/',
    ]);
  if ((m = /^\/chain\/(\d+)$/.exec(path))) {
    const n = Number(m[1]);
    return n < 50 ? indexCard([`/chain/${n + 1}/`]) : agentCard(path);
  }
  if ((m = /^\/slow\/(\d+)$/.exec(path))) {
    await new Promise((r) => setTimeout(r, 300));
    return indexCard([`/slow/${Number(m[1]) + 1}/`]);
  }
  if (path === '/fan') return indexCard(Array.from({ length: 300 }, (_, i) => `/agents/f${i}/`));
  if (path === '/ping') return indexCard(['/pong/', '/agents/ping-agent/']);
  if (path === '/pong') return indexCard(['/ping/', '/agents/pong-agent/']);
  if (path === '/spellings') {
    const port = new URL(base).port;
    return indexCard([
      '/agents/v' + CARD,
      '/agents/v/',
      '/agents/v',
      '/agents/v/?utm=1#frag',
      `${base}/agents/v${CARD}#fragment`,
      `HTTP://127.0.0.1:${port}/agents/v${CARD}`,
      `http://0x7f.0.0.1:${port}/agents/v/`,
      `http://2130706433:${port}/agents/v/`,
      `http://127.0.0.1.:${port}/agents/v/`,
      '/agents/./x/../v' + CARD,
      '/agents/%76/.well-known/agent%2Dcard.json',
      // Another host name for the same server is another origin: one more entry, in two spellings.
      `http://localhost:${port}/agents/v/`,
      `http://LOCALHOST.:${port}/agents/v/`,
    ]);
  }
  if (path === '/broken') return indexCard(['/agents/ok1/', '/missing/', 'file:///etc/passwd', '/agents/ok2/']);
  if (path === '/both')
    return {
      ...agentCard('/both'),
      capabilities: {
        extensions: [
          {
            uri: AGENT_INDEX_EXTENSION_URI,
            params: {
              agents: [
                { id: 'x', cardUrl: '/agents/b1/' },
                { id: 'self', cardUrl: '/both/' },
              ],
            },
          },
        ],
      },
    };
  return null;
}

before(async () => {
  server = await startHttp((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (!url.pathname.endsWith(CARD)) return void res.writeHead(404).end();
    const path = url.pathname.slice(0, -CARD.length);
    delayed.add(res);
    res.on('close', () => delayed.delete(res));
    void route(path).then((card) => {
      if (res.destroyed) return;
      if (!card) return void res.writeHead(404).end('not found');
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(card));
    });
  });
  base = `http://127.0.0.1:${server.port}`;
});

after(async () => {
  for (const r of delayed) r.destroy();
  await server.close();
});

const opts = (extra: Partial<DiscoveryOptions> = {}): DiscoveryOptions => ({
  fetch: { allowPrivateHosts: ['127.0.0.1', 'localhost'], timeoutMs: 3000 },
  ...extra,
});

/** Requests the server got for one card path since `from`. */
function hits(path: string, from = 0): number {
  return server.requests.slice(from).filter((u) => new URL(u, 'http://x').pathname === path + CARD).length;
}

describe('Add Agent: walking agent indexes is bounded', () => {
  it('a real gateway index: the root and each agent it lists, each fetched once, nothing left out', async () => {
    const agents = [
      { id: 'formatter', name: 'Formatter', description: 'formats', kind: 'builtin' as const },
      { id: 'lint', name: 'Lint', description: 'fixes lint', kind: 'builtin' as const },
      { id: 'claude', name: 'Claude', description: 'headless', kind: 'headless' as const },
    ];
    const real = await startHttp((req, res) => {
      const url = req.url ?? '';
      const gwBase = `http://127.0.0.1:${real.port}`;
      const m = /^\/a2a\/([^/]+)\/\.well-known\/agent-card\.json$/.exec(url);
      const send = (card: unknown): void =>
        void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(card));
      if (url === CARD) void buildGatewayCard(gwBase, agents, {}).then(send);
      else if (m) void buildAgentCard(baseAgentCard(m[1], 'an agent', []), gwBase, m[1], {}).then(send);
      else res.writeHead(404).end();
    });
    try {
      const d = await discoverAgents(`http://127.0.0.1:${real.port}`, opts());
      assert.deepEqual(
        d.agents.map((a) => a.cardUrl),
        agents.map((a) => `http://127.0.0.1:${real.port}/a2a/${a.id}${CARD}`),
      );
      assert.deepEqual(d.indexes, [`http://127.0.0.1:${real.port}${CARD}`]);
      assert.deepEqual(d.leftOut, []);
      assert.equal(d.fetches, 4);
      assert.equal(real.requests.length, 4);
      assert.equal(discoverySummary(d), undefined);
    } finally {
      await real.close();
    }
  });

  it('an index that lists itself (in several spellings) is fetched once', async () => {
    const from = server.requests.length;
    const d = await discoverAgents(`${base}/self`, opts());
    assert.equal(hits('/self', from), 1);
    assert.deepEqual(
      d.agents.map((a) => a.cardUrl),
      [`${base}/agents/s1${CARD}`, `${base}/agents/s2${CARD}`],
    );
    assert.equal(d.repeats, 4);
    assert.equal(d.fetches, 3);
    assert.deepEqual(d.leftOut, []);
  });

  it('two indexes that list each other: each fetched once, both their agents found', async () => {
    const from = server.requests.length;
    const d = await discoverAgents(`${base}/ping/`, opts());
    assert.equal(hits('/ping', from), 1);
    assert.equal(hits('/pong', from), 1);
    assert.deepEqual(d.agents.map((a) => a.cardUrl).sort(), [
      `${base}/agents/ping-agent${CARD}`,
      `${base}/agents/pong-agent${CARD}`,
    ]);
    assert.equal(d.repeats, 1);
    assert.deepEqual(d.leftOut, []);
  });

  it('a chain of 50 indexes stops at the depth limit and says what was left out', async () => {
    const from = server.requests.length;
    const d = await discoverAgents(`${base}/chain/0`, opts());
    assert.equal(DISCOVERY_LIMITS.maxDepth, 2);
    assert.equal(d.fetches, 3, 'the card given and two levels of indexes below it');
    assert.equal(server.requests.length - from, 3);
    assert.deepEqual(d.agents, []);
    assert.deepEqual(d.leftOut, [
      { url: `${base}/chain/3${CARD}`, listedBy: `${base}/chain/2${CARD}`, reason: 'depth' },
    ]);
    const summary = discoverySummary(d) ?? '';
    assert.match(
      summary,
      /^Added no agent from http:\/\/127\.0\.0\.1:\d+\/chain\/0\/\.well-known\/agent-card\.json and left out 1 listed card: 1 listed by an index nested more than 2 levels below the one you gave\./,
    );
    assert.match(summary, /use Add Agent with its own card URL/);
  });

  it('the same chain with a deeper limit stops at the card limit instead', async () => {
    const from = server.requests.length;
    const d = await discoverAgents(`${base}/chain/0`, opts({ limits: { maxDepth: 1000, maxCards: 10 } }));
    assert.equal(d.fetches, 10);
    assert.equal(server.requests.length - from, 10);
    assert.deepEqual(
      d.leftOut.map((x) => [x.url, x.reason]),
      [[`${base}/chain/10${CARD}`, 'cards']],
    );
    assert.match(discoverySummary(d) ?? '', /1 because Baton fetches at most 10 cards in one Add Agent/);
  });

  it('an index with 300 entries adds at most 50 agents and lists the other 250 as left out', async () => {
    const from = server.requests.length;
    const d = await discoverAgents(`${base}/fan`, opts());
    assert.equal(d.agents.length, DISCOVERY_LIMITS.maxAgents);
    assert.deepEqual(
      d.agents.map((a) => a.cardUrl),
      Array.from({ length: 50 }, (_, i) => `${base}/agents/f${i}${CARD}`),
      'the first 50, in the index order',
    );
    assert.equal(d.fetches, 51);
    assert.equal(server.requests.length - from, 51, 'nothing beyond the limit is fetched');
    assert.equal(d.leftOut.length, 250);
    assert.ok(d.leftOut.every((x) => x.reason === 'agents' && x.listedBy === `${base}/fan${CARD}`));
    assert.match(
      discoverySummary(d) ?? '',
      /^Added 50 agents for review from .* and left out 250 listed cards: 250 because Baton adds at most 50 agents in one Add Agent\. Nothing else was added\./,
    );
    const log = discoveryLog(d);
    assert.equal(log.length, 201);
    assert.equal(log[0], `left out ${base}/agents/f50${CARD} (listed by ${base}/fan${CARD}): agents`);
    assert.equal(log[200], '… and 50 more');
  });

  it('spellings of one URL count once (case, default forms, IP spellings, escapes, dots, fragments, a trailing dot)', async () => {
    const from = server.requests.length;
    const d = await discoverAgents(`${base}/spellings`, opts());
    assert.deepEqual(
      d.agents.map((a) => a.cardUrl),
      [`${base}/agents/v${CARD}`, `http://localhost:${server.port}/agents/v${CARD}`],
    );
    assert.equal(hits('/agents/v', from), 2, 'once per origin');
    assert.equal(d.repeats, 11);
    assert.deepEqual(d.leftOut, []);
  });

  it('the time budget ends the walk, abandons the fetch under way, and says so', async () => {
    const started = Date.now();
    const d = await discoverAgents(`${base}/slow/0`, opts({ limits: { maxDepth: 1000, budgetMs: 1000 } }));
    const took = Date.now() - started;
    assert.ok(took >= 900 && took < 1800, `took ${took} ms`);
    assert.ok(d.fetches >= 2 && d.fetches <= 4, `${d.fetches} fetches`);
    assert.equal(d.leftOut.length, 1);
    assert.equal(d.leftOut[0].reason, 'time');
    assert.match(discoverySummary(d) ?? '', /because Add Agent stops after 1 s\. .*\(or try again later\)/);
  });

  it('a listed card that fails is left out with its reason; the others are added', async () => {
    const d = await discoverAgents(`${base}/broken`, opts());
    assert.deepEqual(
      d.agents.map((a) => a.cardUrl),
      [`${base}/agents/ok1${CARD}`, `${base}/agents/ok2${CARD}`],
    );
    assert.deepEqual(
      d.leftOut.map((x) => [x.url, x.reason]),
      [
        ['file:///etc/passwd', 'failed'],
        [`${base}/missing${CARD}`, 'failed'],
      ],
    );
    assert.match(d.leftOut[1].detail ?? '', /answered 404/);
    assert.match(discoverySummary(d) ?? '', /2 whose card could not be fetched or read/);
  });

  it('a card that is an agent and an index is added and walked; listing itself adds nothing more', async () => {
    const d = await discoverAgents(`${base}/both`, opts());
    assert.deepEqual(
      d.agents.map((a) => a.cardUrl),
      [`${base}/both${CARD}`, `${base}/agents/b1${CARD}`],
    );
    assert.deepEqual(
      d.agents.map((a) => a.depth),
      [0, 1],
    );
    assert.deepEqual(
      d.agents.map((a) => a.listedBy),
      [undefined, `${base}/both${CARD}`],
      'each agent says which index listed it',
    );
    assert.equal(d.repeats, 1);
  });

  it('the card the user gave is what fails the walk: its error, nothing found', async () => {
    await assert.rejects(
      discoverAgents(`${base}/nothing-here`, opts()),
      (e: unknown) => e instanceof SafeFetchError && e.code === 'http-status',
    );
    await assert.rejects(
      discoverAgents(`${base}/fan`, { fetch: { timeoutMs: 3000 } }),
      (e: unknown) => e instanceof SafeFetchError && e.code === 'insecure-scheme',
    );
  });

  it('a cancelled walk rejects, so nothing is added', async () => {
    const ac = new AbortController();
    const p = discoverAgents(`${base}/slow/0`, opts({ signal: ac.signal, limits: { maxDepth: 1000 } }));
    setTimeout(() => ac.abort(), 400);
    await assert.rejects(
      p,
      (e: unknown) => e instanceof SafeFetchError && e.code === 'aborted' && /no agent was added/.test(e.message),
    );
  });

  it('what a walk found is added in one step: every entry pending with its card, in the registry’s spelling', async () => {
    const d = await discoverAgents(`${base}/ping`, opts());
    const now = '2026-01-01T00:00:00.000Z';
    const items = await Promise.all(
      d.agents.map(async (a) => ({
        cardUrl: a.cardUrl,
        source: 'gateway-index' as const,
        ...(a.listedBy ? { listedBy: a.listedBy } : {}),
        served: {
          card: a.fetched.card,
          digest: a.fetched.digest,
          signature: await verifyAgentCard(a.fetched.card.raw),
          etag: a.fetched.etag,
          fetchedAt: now,
        },
      })),
    );
    const state = addFetchedAgents(EMPTY_REGISTRY, items, now);
    assert.equal(state.agents.length, 2);
    for (const e of state.agents) {
      assert.equal(e.status, 'pending');
      assert.ok(e.served, `${e.cardUrl} has its card`);
    }
    // Adding the same walk again changes no entry, and a spelling variant finds the entry.
    assert.deepEqual(
      addFetchedAgents(state, items, now).agents.map((a) => a.cardUrl),
      state.agents.map((a) => a.cardUrl),
    );
    assert.ok(findAgent(state, `HTTP://127.0.0.1.:${server.port}/agents/%70ing-agent/.well-known/agent-card.json#x`));
    // The index that listed them is kept, survives a save, and is what Refresh Agents reads again.
    const listedBy = d.agents.map((a) => a.listedBy).filter((u) => u !== undefined);
    assert.ok(listedBy.length > 0, 'the walk went through an index');
    const stored = deserializeRegistry(serializeRegistry(state));
    assert.deepEqual(
      stored.agents.map((a) => a.listedBy),
      state.agents.map((a) => a.listedBy),
    );
    assert.deepEqual(
      listingIndexes(stored).map((i) => i.cardUrl),
      [...new Set(listedBy)],
    );
    // An index none of whose agents is left is forgotten with them.
    const emptied = stored.agents.filter((a) => a.listedBy).reduce((st, a) => removeAgent(st, a.cardUrl), stored);
    assert.deepEqual(listingIndexes(emptied), []);
  });
});

describe('card URL normal form', () => {
  it('folds the spellings the URL parser keeps apart: trailing dot, needless escapes, lower-case escapes, an empty query', () => {
    const key = 'https://agents.example.com/a/.well-known/agent-card.json';
    for (const u of [
      'https://agents.example.com./a/.well-known/agent-card.json',
      'https://agents.example.com/%61/.well-known/agent%2Dcard.json',
      'https://agents.example.com/a/.well-known/agent-card.json?',
      'HTTPS://AGENTS.example.com:443/a/b/../.well-known/agent-card.json#f',
    ]) {
      assert.equal(normalizeCardUrl(u), key, u);
    }
    // Escapes of reserved characters mean something else: kept (in one case).
    assert.equal(normalizeCardUrl('https://h.example/a%2fb.json?q=%3d'), 'https://h.example/a%2Fb.json?q=%3D');
    assert.notEqual(normalizeCardUrl('https://h.example/a%2Fb.json'), normalizeCardUrl('https://h.example/a/b.json'));
  });
});
