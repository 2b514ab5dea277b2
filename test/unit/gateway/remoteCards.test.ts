import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import express from 'express';
import type { Request, Response } from 'express';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import type { AgentExecutor, ExecutionEventBus, RequestContext } from '@a2a-js/sdk/server';
import { agentCardHandler } from '@a2a-js/sdk/server/express';
import { AgentCard, TaskState } from '@a2a-js/sdk';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { ConfigError, parseGatewayConfig } from '../../../src/gateway/config';
import type { RemoteAgentConfig } from '../../../src/gateway/config';
import { remoteCardUrls } from '../../../src/gateway/remoteCard';
import { toVerifiedKey, verifyAgentCard } from '../../../src/node/signing';
import type { PublicJwk } from '../../../src/node/signing';
import { clientFor, collect, sendRequest, tempDir, userMessage } from './helpers';
import { listenOnLoopback, sdkJsonRpc, statusEvent, taskEvent } from './sdkServer';
import type { Listening as SdkListening } from './sdkServer';

const TOKEN = 'remote-card-secret-0123456789';

class DoneExecutor implements AgentExecutor {
  execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = ctx;
    bus.publish(taskEvent(ctx, TaskState.TASK_STATE_SUBMITTED));
    bus.publish(statusEvent(taskId, contextId, TaskState.TASK_STATE_COMPLETED));
    bus.finished();
    return Promise.resolve();
  }
  cancelTask(): Promise<void> {
    return Promise.resolve();
  }
}

interface Listening extends SdkListening {
  readonly requests: Array<{ path: string; auth: string }>;
}

async function listen(app: express.Express, requests: Listening['requests']): Promise<Listening> {
  return { ...(await listenOnLoopback(app)), requests };
}

/** Counts every request it gets; a proxy that follows a card's URLs would hit it. */
async function startCanary(): Promise<Listening> {
  const requests: Listening['requests'] = [];
  const app = express();
  app.use((req: Request, res: Response) => {
    requests.push({ path: req.path, auth: req.header('authorization') ?? '' });
    res.status(500).json({ error: 'canary' });
  });
  return listen(app, requests);
}

const SKILLS = [
  {
    id: 'review',
    name: 'Review code',
    description: 'Reviews a diff',
    tags: ['review'],
    examples: ['review this'],
    inputModes: [],
    outputModes: [],
    securityRequirements: [{ schemes: { apiKey: { list: [] } } }],
  },
  {
    id: 'explain',
    name: 'Explain',
    description: 'Explains code',
    tags: [],
    examples: [],
    inputModes: [],
    outputModes: [],
    securityRequirements: [],
  },
];

interface RemoteOptions {
  readonly legacy?: boolean;
  /** Where its card's interfaces point (default: itself). */
  readonly interfacesUrl?: string;
  /** Replaces the card route (a bad card, a redirect, …). */
  readonly cardRoute?: (req: Request, res: Response) => void;
}

/** An SDK agent at /rpc that needs TOKEN everywhere, incl. its card at /.well-known/agent-card.json. */
async function startRemote(o: RemoteOptions = {}): Promise<Listening & { url: string }> {
  const requests: Listening['requests'] = [];
  const app = express();
  let origin = '';
  const version = o.legacy ? '0.3' : '1.0';
  const card = (): AgentCard => {
    const at = o.interfacesUrl ?? `${origin}/rpc`;
    return {
      name: 'remote',
      description: 'The remote describes itself',
      supportedInterfaces: [
        { url: at, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: version },
        { url: at, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: version },
      ],
      provider: undefined,
      version: '7',
      capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
      securitySchemes: {
        apiKey: {
          scheme: {
            $case: 'apiKeySecurityScheme',
            value: { description: 'remote key', location: 'header', name: 'X-Key' },
          },
        },
      },
      securityRequirements: [{ schemes: { apiKey: { list: [] } } }],
      defaultInputModes: ['text/markdown'],
      defaultOutputModes: ['application/json'],
      skills: SKILLS,
      signatures: [],
    };
  };
  const handler = new DefaultRequestHandler(card(), new InMemoryTaskStore(), new DoneExecutor());
  app.use((req, res, next) => {
    requests.push({ path: req.path, auth: req.header('authorization') ?? '' });
    if (req.header('authorization') !== `Bearer ${TOKEN}`) return void res.status(401).json({ error: 'no' });
    next();
  });
  if (o.cardRoute) app.get('/.well-known/agent-card.json', o.cardRoute);
  // A 0.3 remote: the SDK's card handler answers a 0.3 caller with the 0.3 form of its card.
  else if (o.legacy)
    app.use(
      '/.well-known/agent-card.json',
      agentCardHandler({ agentCardProvider: () => Promise.resolve(card()), legacyCompat: { enabled: true } }),
    );
  else app.get('/.well-known/agent-card.json', (_req, res) => void res.json(AgentCard.toJSON(card())));
  app.use('/rpc', sdkJsonRpc(handler, { legacy: o.legacy }));
  const l = await listen(app, requests);
  origin = l.origin;
  return { ...l, url: `${l.origin}/rpc` };
}

function remoteConfig(url: string, extra: Partial<RemoteAgentConfig> = {}): RemoteAgentConfig {
  return {
    id: 'remote',
    name: 'Remote',
    description: 'Remote A2A agent (default)',
    descriptionIsDefault: true,
    url,
    protocolBinding: 'JSONRPC',
    protocolVersion: '1.0',
    auth: { kind: 'bearer', token: TOKEN },
    skills: [{ id: 'configured', name: 'Configured skill', description: 'from the config', tags: [] }],
    ...extra,
  };
}

async function routeCard(gw: RunningGateway): Promise<Record<string, unknown> & { skills: Array<{ id: string }> }> {
  const res = await fetch(`${gw.url}/a2a/remote/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } });
  assert.equal(res.status, 200);
  return (await res.json()) as Record<string, unknown> & { skills: Array<{ id: string }> };
}

/** Polls until `ok` holds; fails after `ms` (the card is read in the background). */
async function until(what: string, ok: () => Promise<boolean> | boolean, ms = 8_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const skillIds = (card: { skills: Array<{ id: string }> }): string[] => card.skills.map((s) => s.id);

async function withGateway(
  cfg: RemoteAgentConfig,
  body: (gw: RunningGateway, logs: string[]) => Promise<void>,
  refreshMs?: number,
): Promise<void> {
  const dir = tempDir();
  const logs: string[] = [];
  const gw = await startGateway({
    stateDir: dir.path,
    remoteAgents: [cfg],
    log: (l) => logs.push(l),
    ...(refreshMs ? { remoteCardRefreshMs: refreshMs } : {}),
  });
  try {
    await body(gw, logs);
  } finally {
    await gw.close();
    dir[Symbol.dispose]();
  }
}

describe("gateway: a proxied remote's route card shows the remote's own card", () => {
  let remote: Awaited<ReturnType<typeof startRemote>>;
  let canary: Listening;
  before(async () => {
    canary = await startCanary();
    // The remote's card claims its interfaces live at the canary.
    remote = await startRemote({ interfacesUrl: `${canary.origin}/rpc` });
  });
  after(async () => {
    await remote.close();
    await canary.close();
  });

  it("shows the remote's skills, modes and description, keeps the gateway's interfaces, security and signature", async () => {
    await withGateway(remoteConfig(remote.url), async (gw) => {
      await until('the remote skills on the route card', async () => skillIds(await routeCard(gw)).includes('review'));
      const card = await routeCard(gw);
      assert.deepEqual(skillIds(card), ['review', 'explain']);
      // Per-skill security names the remote's schemes; the route card carries none of them.
      assert.deepEqual(
        (card.skills as Array<{ securityRequirements?: unknown[] }>).map((s) => s.securityRequirements ?? []),
        [[], []],
      );
      assert.equal(card.description, 'The remote describes itself');
      assert.deepEqual(card.defaultInputModes, ['text/markdown']);
      assert.deepEqual(card.defaultOutputModes, ['application/json']);
      assert.equal(card.name, 'Remote');
      const caps = card.capabilities as { streaming?: boolean; pushNotifications?: boolean };
      assert.equal(caps.streaming, true);
      assert.equal(caps.pushNotifications ?? false, false, 'the remote declares no push notifications');
      const ifaces = card.supportedInterfaces as Array<{ url: string }>;
      assert.ok(ifaces.length > 0);
      for (const i of ifaces) assert.equal(i.url, `${gw.url}/a2a/remote`);
      assert.deepEqual(Object.keys(card.securitySchemes as object), ['bearer']);
      const jwk = (
        card.capabilities as { extensions: Array<{ uri: string; params?: { publicKeyJwk?: PublicJwk } }> }
      ).extensions.find((e) => e.uri === 'urn:baton:a2a:signed-result:v1')?.params?.publicKeyJwk;
      assert.ok(jwk);
      assert.equal((await verifyAgentCard(card, { pinnedKeys: [await toVerifiedKey(jwk)] })).status, 'verified');
      // The card was read with the gateway's credentials for the remote.
      const cardReads = remote.requests.filter((r) => r.path.endsWith('/.well-known/agent-card.json'));
      assert.ok(cardReads.length > 0);
      assert.ok(cardReads.every((r) => r.auth === `Bearer ${TOKEN}`));
      assert.ok(!remote.requests.some((r) => r.auth.includes(gw.token)));
    });
  });

  it("keeps the operator's description when the config gives one", async () => {
    await withGateway(
      remoteConfig(remote.url, { description: 'Operator text', descriptionIsDefault: undefined }),
      async (gw) => {
        await until('the remote skills on the route card', async () =>
          skillIds(await routeCard(gw)).includes('review'),
        );
        assert.equal((await routeCard(gw)).description, 'Operator text');
      },
    );
  });

  it("forwards to the pinned url, not to the interfaces the remote's card names", async () => {
    await withGateway(remoteConfig(remote.url), async (gw) => {
      await until('the remote skills on the route card', async () => skillIds(await routeCard(gw)).includes('review'));
      const client = await clientFor(`${gw.url}/a2a/remote/.well-known/agent-card.json`, gw.token);
      const events = await collect(client.sendMessageStream(sendRequest(userMessage('go'))));
      const last = events[events.length - 1];
      assert.equal(
        last.payload?.$case === 'statusUpdate' ? last.payload.value.status?.state : -1,
        TaskState.TASK_STATE_COMPLETED,
      );
      assert.ok(
        remote.requests.some((r) => r.path === '/rpc' || r.path === '/'),
        'the remote got the task',
      );
      assert.deepEqual(canary.requests, [], 'the canary the card points at got nothing');
    });
  });
});

describe("gateway: a 0.3 remote's card is read through the SDK's compat converter", () => {
  it("shows the 0.3 remote's skills", async () => {
    const remote = await startRemote({ legacy: true });
    try {
      await withGateway(remoteConfig(remote.url, { protocolVersion: '0.3' }), async (gw) => {
        await until('the remote skills on the route card', async () =>
          skillIds(await routeCard(gw)).includes('review'),
        );
        const card = await routeCard(gw);
        assert.deepEqual(skillIds(card), ['review', 'explain']);
        for (const i of card.supportedInterfaces as Array<{ url: string }>) assert.equal(i.url, `${gw.url}/a2a/remote`);
      });
    } finally {
      await remote.close();
    }
  });
});

describe('gateway: a remote whose card cannot be used', () => {
  it('starts while the remote is down and serves the configured card, with one log line saying why', async () => {
    const gone = await startCanary();
    await gone.close();
    await withGateway(remoteConfig(`${gone.origin}/rpc`), async (gw, logs) => {
      assert.deepEqual(skillIds(await routeCard(gw)), ['configured']);
      await until('the log line', () =>
        logs.some((l) => l.includes('remote agent remote: its card could not be read')),
      );
      assert.deepEqual(skillIds(await routeCard(gw)), ['configured']);
      assert.equal((await routeCard(gw)).description, 'Remote A2A agent (default)');
    });
  });

  const bad: Array<[string, (canaryOrigin: string) => (req: Request, res: Response) => void, RegExp]> = [
    ['not JSON', () => (_req, res) => void res.type('json').send('{"name": '), /is not JSON/],
    ['a JSON list', () => (_req, res) => void res.json([1, 2]), /is not a JSON object/],
    [
      'skills that are not a list',
      () => (_req, res) => void res.json({ name: 'x', skills: 'all of them' }),
      /skills is not a list/,
    ],
    [
      'over 1 MiB',
      () => (_req, res) => void res.json({ name: 'x', description: 'y'.repeat(1024 * 1024 + 10), skills: [] }),
      /larger than 1048576 bytes/,
    ],
    [
      'over 1 MiB without a length',
      () => (_req, res) => {
        res.type('json').write('{"name": "x", "description": "');
        for (let i = 0; i < 17; i++) res.write('y'.repeat(64 * 1024));
        res.end('"}');
      },
      /larger than 1048576 bytes/,
    ],
    [
      'a redirect',
      (canaryOrigin) => (_req, res) => res.redirect(302, `${canaryOrigin}/.well-known/agent-card.json`),
      /could not be fetched/,
    ],
  ];
  for (const [what, route, why] of bad) {
    it(`serves the configured card when the remote serves ${what}, logging it once across refreshes`, async () => {
      const canary = await startCanary();
      const remote = await startRemote({ cardRoute: route(canary.origin) });
      try {
        await withGateway(
          remoteConfig(remote.url),
          async (gw, logs) => {
            const reads = (): number => remote.requests.filter((r) => r.path === '/.well-known/agent-card.json').length;
            await until('three reads of the card', () => reads() >= 3);
            assert.deepEqual(skillIds(await routeCard(gw)), ['configured']);
            const lines = logs.filter((l) => l.includes('card could not be read'));
            assert.equal(lines.length, 1, lines.join('\n'));
            assert.match(lines[0], why);
            assert.deepEqual(canary.requests, [], 'a redirect is not followed');
          },
          30,
        );
      } finally {
        await remote.close();
        await canary.close();
      }
    });
  }
});

describe('config: cardUrl', () => {
  const parse = (agent: Record<string, unknown>): RemoteAgentConfig =>
    parseGatewayConfig(
      JSON.stringify({ agents: { r: { url: 'https://r.example/a2a/', ...agent } } }),
      'gateway.json',
      {},
    ).remoteAgents[0];

  it('is optional; by default the card is looked for under the url, then at its origin', () => {
    const c = parse({});
    assert.equal(c.cardUrl, undefined);
    assert.equal(c.descriptionIsDefault, true);
    assert.deepEqual(remoteCardUrls(c), [
      'https://r.example/a2a/.well-known/agent-card.json',
      'https://r.example/.well-known/agent-card.json',
    ]);
    assert.deepEqual(remoteCardUrls(parse({ url: 'https://r.example' })), [
      'https://r.example/.well-known/agent-card.json',
    ]);
    assert.equal(parse({ description: 'mine' }).descriptionIsDefault, undefined);
  });

  it('is used as written when given', () => {
    const c = parse({ cardUrl: 'https://cards.example/r/card.json' });
    assert.equal(c.cardUrl, 'https://cards.example/r/card.json');
    assert.deepEqual(remoteCardUrls(c), ['https://cards.example/r/card.json']);
  });

  it('names the field and what to do when it is bad', () => {
    const cases: Array<[unknown, RegExp]> = [
      ['not a url', /^gateway\.json: agents\.r\.cardUrl: must be an absolute http\(s\) URL, got "not a url"/],
      ['ftp://r.example/card.json', /agents\.r\.cardUrl: must use https/],
      ['https://u:p@r.example/card.json', /agents\.r\.cardUrl: must not carry credentials; put them under "auth"/],
      ['https://r.example/', /agents\.r\.cardUrl: must be the full URL of the agent card/],
      ['', /agents\.r\.cardUrl: must be a non-empty string/],
      [42, /agents\.r\.cardUrl: must be a non-empty string/],
    ];
    for (const [cardUrl, re] of cases) {
      assert.throws(
        () => parse({ cardUrl }),
        (e: unknown) => e instanceof ConfigError && re.test(e.message),
        String(cardUrl),
      );
    }
  });
});
