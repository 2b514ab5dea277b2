/**
 * What a remote's card says about its interfaces, and the proxy. A remote A2A 1.0 agent that serves one
 * of several tenants at its URL (its card's interface names the tenant): the proxy names that tenant in
 * every request, as A2A 1.0 clients do (the path prefix `/{tenant}/` over HTTP+JSON, `tenant` over
 * JSON-RPC), taken from the config when it names one, else from the remote's card for the pinned URL.
 * A remote whose card offers no interface for the configured binding: a failed send and the log say
 * which to configure. The remote is the `@a2a-js/sdk` server, which routes tenants itself; what it
 * received is read from its request handler and its request paths.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import express from 'express';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler } from '@a2a-js/sdk/server/express';
import { TaskState } from '@a2a-js/sdk';
import type { AgentCard, Task } from '@a2a-js/sdk';
import { parseGatewayConfig } from '../../../src/gateway/config';
import type { RemoteAgentConfig } from '../../../src/gateway/config';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { bounded, clientFor, collect, sendRequest, tempDir, userMessage } from './helpers';
import { listenOnLoopback, ScriptedSdkExecutor, sdkAgentCard, sdkJsonRpc, sdkRest } from './sdkServer';

const RECORDED = ['sendMessage', 'sendMessageStream', 'getTask', 'cancelTask', 'resubscribe', 'listTasks'] as const;

/**
 * The SDK's server for one tenant-serving agent: JSON-RPC at /rpc, HTTP+JSON at /rest (and under
 * /rest/{tenant}/), its card at the origin naming `cardTenant` on both interfaces. `calls` gets
 * "<method> <tenant>" for every call its request handler takes, `paths` every request path.
 */
async function tenantRemote(
  cardTenant: string,
  cardUrlPath = '',
  restOnly = false,
): Promise<{
  origin: string;
  calls: string[];
  paths: string[];
  close(): Promise<void>;
}> {
  const calls: string[] = [];
  const paths: string[] = [];
  let origin = '';
  const card = (): AgentCard =>
    sdkAgentCard({
      name: 'tenant agent',
      skills: [
        {
          id: 'tenant-skill',
          name: 'Tenant skill',
          description: 'from the remote card',
          tags: [],
          examples: [],
          inputModes: [],
          outputModes: [],
          securityRequirements: [],
        },
      ],
      supportedInterfaces: [
        { url: `${origin}/rpc${cardUrlPath}`, protocolBinding: 'JSONRPC', tenant: cardTenant, protocolVersion: '1.0' },
        {
          url: `${origin}/rest${cardUrlPath}`,
          protocolBinding: 'HTTP+JSON',
          tenant: cardTenant,
          protocolVersion: '1.0',
        },
      ].filter((i) => !restOnly || i.protocolBinding === 'HTTP+JSON'),
    });
  const handler = new DefaultRequestHandler(card(), new InMemoryTaskStore(), new ScriptedSdkExecutor());
  Object.defineProperty(handler, 'getAgentCard', { value: () => Promise.resolve(card()) });
  for (const m of RECORDED) {
    const own = (handler[m] as (p: { tenant: string }, c: unknown) => unknown).bind(handler);
    Object.defineProperty(handler, m, {
      value: (p: { tenant: string }, c: unknown) => {
        calls.push(`${m} ${p.tenant}`);
        return own(p, c);
      },
    });
  }
  const app = express();
  app.use((req, _res, next) => {
    paths.push(req.path);
    next();
  });
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: () => Promise.resolve(card()) }));
  if (!restOnly) app.use('/rpc', sdkJsonRpc(handler));
  app.use('/rest', sdkRest(handler));
  const l = await listenOnLoopback(app);
  origin = l.origin;
  return { origin, calls, paths, close: l.close };
}

function remoteConfig(id: string, url: string, binding: RemoteAgentConfig['protocolBinding'], tenant?: string) {
  return {
    id,
    name: id,
    description: 'a tenant of a remote agent',
    url,
    protocolBinding: binding,
    protocolVersion: '1.0' as const,
    ...(tenant !== undefined ? { tenant } : {}),
    auth: { kind: 'none' as const },
    skills: [],
  };
}

/** The remotes' cards are read in the background: resolves once the route card shows what the remote's says. */
async function routeCardRead(gw: RunningGateway, id: string): Promise<void> {
  await bounded(
    (async () => {
      for (;;) {
        const res = await fetch(`${gw.url}/a2a/${id}/.well-known/agent-card.json`);
        const card = (await res.json()) as { skills?: { id: string }[] };
        if (card.skills?.some((s) => s.id === 'tenant-skill')) return;
        await new Promise((r) => setTimeout(r, 50));
      }
    })(),
    `the route card of ${id} to show the remote's card`,
  );
}

describe('gateway: a remote agent that serves tenants', () => {
  const dir = tempDir();
  let fromCard: Awaited<ReturnType<typeof tenantRemote>>;
  let fromConfig: Awaited<ReturnType<typeof tenantRemote>>;
  let otherUrl: Awaited<ReturnType<typeof tenantRemote>>;
  let gw: RunningGateway;

  before(async () => {
    fromCard = await tenantRemote('acme');
    fromConfig = await tenantRemote('');
    otherUrl = await tenantRemote('elsewhere', '/v2');
    gw = await startGateway({
      stateDir: dir.path,
      remoteAgents: [
        remoteConfig('card-rpc', `${fromCard.origin}/rpc`, 'JSONRPC'),
        remoteConfig('card-rest', `${fromCard.origin}/rest`, 'HTTP+JSON'),
        remoteConfig('config-rest', `${fromConfig.origin}/rest`, 'HTTP+JSON', 'team:a'),
        remoteConfig('other-url', `${otherUrl.origin}/rpc`, 'JSONRPC'),
      ],
      log: () => undefined,
    });
    for (const id of ['card-rpc', 'card-rest', 'config-rest', 'other-url']) await routeCardRead(gw, id);
  });
  after(async () => {
    await gw.close();
    await Promise.all([fromCard.close(), fromConfig.close(), otherUrl.close()]);
    dir[Symbol.dispose]();
  });

  const run = async (route: string, text: string): Promise<{ task: Task; states: string[] }> => {
    const client = await clientFor(`${gw.url}/a2a/${route}/.well-known/agent-card.json`, gw.token);
    const events = await collect(client.sendMessageStream(sendRequest(userMessage(text))));
    const first = events[0]?.payload;
    assert.equal(first?.$case, 'task');
    const id = first.$case === 'task' ? first.value.id : '';
    const task = await client.getTask({ tenant: '', id });
    return {
      task,
      states: events
        .flatMap((e) => (e.payload?.$case === 'statusUpdate' ? [e.payload.value.status?.state ?? 0] : []))
        .map((s) => TaskState[s]),
    };
  };

  it("over JSON-RPC, names the tenant the remote's card gives for the pinned URL in every call", async () => {
    const before = fromCard.calls.length;
    const { task, states } = await run('card-rpc', 'fix it');
    assert.equal(states.at(-1), 'TASK_STATE_COMPLETED');
    assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
    const calls = fromCard.calls.slice(before);
    assert.ok(calls.includes('sendMessageStream acme'), calls.join('\n'));
    assert.deepEqual(
      calls.filter((c) => !c.endsWith(' acme')),
      [],
      'every call names the tenant',
    );
  });

  it("over HTTP+JSON, puts the card's tenant in the path (/{tenant}/message:stream), and a cancel reaches it there", async () => {
    const before = { calls: fromCard.calls.length, paths: fromCard.paths.length };
    const client = await clientFor(`${gw.url}/a2a/card-rest/.well-known/agent-card.json`, gw.token);
    const stream = client.sendMessageStream(sendRequest(userMessage('wait for a cancel')));
    let id = '';
    for await (const ev of stream) {
      if (ev.payload?.$case === 'task') id = ev.payload.value.id;
      if (ev.payload?.$case === 'statusUpdate' && ev.payload.value.status?.state === TaskState.TASK_STATE_WORKING)
        break;
    }
    const canceled = await client.cancelTask({ tenant: '', id, metadata: undefined });
    assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
    const paths = fromCard.paths.slice(before.paths).filter((p) => !p.startsWith('/.well-known'));
    assert.ok(paths.includes('/rest/acme/message:stream'), paths.join('\n'));
    assert.ok(paths.includes(`/rest/acme/tasks/${id}:cancel`), paths.join('\n'));
    assert.deepEqual(
      paths.filter((p) => !p.startsWith('/rest/acme/')),
      [],
      'every request goes to the tenant',
    );
    // The SDK's server takes the tenant of a cancel from its path (its handler's params carry none).
    const calls = fromCard.calls.slice(before.calls);
    assert.ok(calls.includes('sendMessageStream acme'), calls.join('\n'));
  });

  it('takes the tenant the config names (a remote whose card names none), encoded in the path', async () => {
    const before = fromConfig.paths.length;
    const { task } = await run('config-rest', 'fix it');
    assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
    const paths = fromConfig.paths.slice(before).filter((p) => !p.startsWith('/.well-known'));
    assert.ok(paths.includes('/rest/team%3Aa/message:stream'), paths.join('\n'));
    assert.ok(fromConfig.calls.includes('sendMessageStream team:a'), fromConfig.calls.join('\n'));
  });

  it("ignores a tenant the card names for another URL (the requests stay the config's)", async () => {
    const before = otherUrl.calls.length;
    const { task } = await run('other-url', 'fix it');
    assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
    const calls = otherUrl.calls.slice(before);
    assert.ok(calls.includes('sendMessageStream '), calls.join('\n'));
    assert.deepEqual(
      calls.filter((c) => c.includes('elsewhere')),
      [],
    );
  });

  it('refuses a config tenant that cannot be one, and a tenant with A2A 0.3, saying what to do', () => {
    const parse = (extra: Record<string, unknown>): ReturnType<typeof parseGatewayConfig> =>
      parseGatewayConfig(JSON.stringify({ agents: { r: { url: 'http://127.0.0.1:9/rpc', ...extra } } }), 'gw.json');
    assert.throws(() => parse({ tenant: 'a/b' }), /gw\.json: agents\.r\.tenant: must be the tenant id/);
    assert.throws(() => parse({ tenant: '' }), /agents\.r\.tenant: must be a non-empty string/);
    assert.throws(() => parse({ tenant: 'acme', protocolVersion: '0.3' }), /A2A 0\.3 has no tenants/);
    const ok = parse({ tenant: 'acme' });
    assert.equal(ok.remoteAgents[0]?.tenant, 'acme');
  });
});

describe("gateway: a remote whose card offers no interface for the config's binding", () => {
  const dir = tempDir();
  const logs: string[] = [];
  let remote: Awaited<ReturnType<typeof tenantRemote>>;
  let gw: RunningGateway;

  before(async () => {
    remote = await tenantRemote('', '', true);
    gw = await startGateway({
      stateDir: dir.path,
      remoteAgents: [remoteConfig('rest-only', `${remote.origin}/rpc`, 'JSONRPC')],
      log: (l) => logs.push(l),
    });
    await routeCardRead(gw, 'rest-only');
  });
  after(async () => {
    await gw.close();
    await remote.close();
    dir[Symbol.dispose]();
  });

  it('a failed send and the log say which binding and URL the card offers, to put in the config', async () => {
    const client = await clientFor(`${gw.url}/a2a/rest-only/.well-known/agent-card.json`, gw.token);
    const hint = `the config says protocolBinding JSONRPC, but its card offers HTTP+JSON only; set "protocolBinding": "HTTP+JSON" and "url": "${remote.origin}/rest"`;
    await assert.rejects(collect(client.sendMessageStream(sendRequest(userMessage('fix it')))), (e: Error) => {
      assert.ok(e.message.includes(hint), e.message);
      return true;
    });
    // Said once on its own (and again with the failed request it explains).
    assert.equal(logs.filter((l) => l === `remote agent rest-only: ${hint}`).length, 1, logs.join('\n'));
  });
});
