// Tokens are kept per origin in secret storage and go only to the origin they were stored for:
// BatonStorage over an in-memory SecretStorage, and the send path the extension's delegation service
// builds (scopedGetToken + connectAgent) against real SDK agents on 127.0.0.1.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type * as vscode from 'vscode';
import { Role, TaskState } from '@a2a-js/sdk';
import { BatonStorage, tokenKey } from '../../../src/extension/storage';
import { connectAgent, scopedGetToken } from '../../../src/node/a2a/clientFactory';
import { startAgentServer, type AgentServer, type Turn } from '../delegation/agentServers';

/** VS Code's SecretStorage, in memory. */
class MemorySecrets implements vscode.SecretStorage {
  readonly values = new Map<string, string>();
  get(key: string): Promise<string | undefined> {
    return Promise.resolve(this.values.get(key));
  }
  store(key: string, value: string): Promise<void> {
    this.values.set(key, value);
    return Promise.resolve();
  }
  delete(key: string): Promise<void> {
    this.values.delete(key);
    return Promise.resolve();
  }
  onDidChange: vscode.Event<vscode.SecretStorageChangeEvent> = () => ({ dispose: () => undefined });
}

class MemoryState implements vscode.Memento {
  private readonly values = new Map<string, unknown>();
  keys(): readonly string[] {
    return [...this.values.keys()];
  }
  get<T>(key: string): T | undefined;
  get<T>(key: string, defaultValue: T): T;
  get<T>(key: string, defaultValue?: T): T | undefined {
    return this.values.has(key) ? (this.values.get(key) as T) : defaultValue;
  }
  update(key: string, value: unknown): Promise<void> {
    this.values.set(key, value);
    return Promise.resolve();
  }
}

function newStorage(): { storage: BatonStorage; secrets: MemorySecrets } {
  const secrets = new MemorySecrets();
  return { storage: new BatonStorage(new MemoryState(), secrets), secrets };
}

describe('BatonStorage: one token per origin', () => {
  it('keys tokens by normalised origin: spellings of one origin share one key', async () => {
    const { storage, secrets } = newStorage();
    await storage.setToken('HTTPS://Agents.Example.com:443/', 't1');
    for (const o of [
      'https://agents.example.com',
      'agents.example.com',
      'https://agents.example.com.',
      'https://AGENTS.example.com/a2a',
    ])
      assert.equal(await storage.getToken(o), 't1', o);
    assert.deepEqual([...secrets.values.keys()], ['baton.token.https://agents.example.com']);
    assert.equal(tokenKey('[::1]:8443'), 'baton.token.https://[::1]:8443');
  });

  it('a token stored for https is not the token of http on the same host and port, nor of another port', async () => {
    const { storage } = newStorage();
    await storage.setToken('https://agents.example.com:8443', 'tls-only');
    assert.equal(await storage.getToken('http://agents.example.com:8443'), undefined);
    assert.equal(await storage.getToken('https://agents.example.com'), undefined);
    assert.equal(await storage.getToken('https://agents.example.com:8444'), undefined);
    await storage.setToken('http://agents.example.com:8443', 'cleartext');
    assert.equal(await storage.getToken('http://agents.example.com:8443'), 'cleartext');
    assert.equal(await storage.getToken('https://agents.example.com:8443'), 'tls-only');
  });

  it('refuses what is not an http(s) origin', async () => {
    const { storage } = newStorage();
    for (const bad of ['ftp://agents.example.com', 'https://u:p@agents.example.com', 'https://exa mple.com'])
      await assert.rejects(storage.setToken(bad, 'x'), /origin|credentials|host/, bad);
  });

  it('a token kept under the old host key moves to the https origin of that host, and only there', async () => {
    const { storage, secrets } = newStorage();
    secrets.values.set('baton.token.agents.example.com', 'old-default-port');
    secrets.values.set('baton.token.agents.example.com:8443', 'old-8443');
    secrets.values.set('baton.token.127.0.0.1:4000', 'old-private');
    // Plain http never gets an old host token.
    assert.equal(await storage.getToken('http://agents.example.com'), undefined);
    assert.equal(await storage.getToken('http://agents.example.com:8443'), undefined);
    assert.equal(await storage.getToken('http://127.0.0.1:4000'), undefined);
    assert.equal(secrets.values.size, 3, 'nothing moved for http');
    // The https origin gets it, and it is stored under the origin from then on.
    assert.equal(await storage.getToken('https://agents.example.com:443'), 'old-default-port');
    assert.equal(await storage.getToken('https://agents.example.com:8443'), 'old-8443');
    assert.equal(secrets.values.get('baton.token.https://agents.example.com'), 'old-default-port');
    assert.equal(secrets.values.get('baton.token.https://agents.example.com:8443'), 'old-8443');
    assert.equal(secrets.values.has('baton.token.agents.example.com'), false);
    assert.equal(secrets.values.has('baton.token.agents.example.com:8443'), false);
    assert.equal(await storage.getToken('https://agents.example.com'), 'old-default-port');
  });

  it('removing or replacing the token of an https origin also drops the old host key, so it cannot come back', async () => {
    const { storage, secrets } = newStorage();
    secrets.values.set('baton.token.agents.example.com', 'old');
    await storage.deleteToken('https://agents.example.com');
    assert.equal(await storage.getToken('https://agents.example.com'), undefined);
    secrets.values.set('baton.token.other.example.com', 'old');
    await storage.setToken('https://other.example.com', 'new');
    assert.equal(secrets.values.has('baton.token.other.example.com'), false);
    assert.equal(await storage.getToken('https://other.example.com'), 'new');
  });
});

const answers = async (t: Turn): Promise<void> => {
  t.task(TaskState.TASK_STATE_WORKING);
  t.status(TaskState.TASK_STATE_COMPLETED, 'done');
};

describe('the token the extension sends: looked up by the exact origin of the request (real agents)', () => {
  let agent: AgentServer;
  let other: AgentServer;
  before(async () => {
    agent = await startAgentServer({ script: answers, declareBearer: true, streaming: false });
    other = await startAgentServer({ script: answers, declareBearer: true, streaming: false });
  });
  after(async () => {
    await agent.close();
    await other.close();
  });

  /** Sends one message to `server` the way DelegationService.connect does; returns the Authorization it saw. */
  async function send(
    server: AgentServer,
    storage: BatonStorage,
    approvedOrigin: string | undefined,
    gateway?: { origin: string; token: string; cardOrigin?: string },
  ): Promise<string | undefined> {
    const conn = await connectAgent({
      card: server.card,
      endpoint: server.jsonRpc,
      getToken: scopedGetToken(
        { gatewayOrigin: gateway?.origin, approvedOrigin, cardOrigin: gateway?.cardOrigin ?? approvedOrigin },
        { gateway: () => gateway?.token, stored: (o) => storage.getToken(o) },
      ),
    });
    const seen = server.requests.length;
    await conn.client.sendMessage({
      message: {
        messageId: crypto.randomUUID(),
        contextId: '',
        taskId: '',
        role: Role.ROLE_USER,
        parts: [
          { content: { $case: 'text', value: 'hi' }, metadata: undefined, filename: '', mediaType: 'text/plain' },
        ],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      },
      configuration: undefined,
      metadata: undefined,
      tenant: '',
    });
    const posts = server.requests.slice(seen).filter((r) => r.method === 'POST');
    assert.ok(posts.length > 0, 'the message reached the agent');
    return posts[0].authorization;
  }

  it('a token stored for https://host:port is not sent to http://host:port', async () => {
    const { storage } = newStorage();
    await storage.setToken(`https://127.0.0.1:${agent.port}`, 'https-only-token');
    assert.equal(await send(agent, storage, agent.base), undefined);
  });

  it('a token under the old host key is not sent to http on that host and port', async () => {
    const { storage, secrets } = newStorage();
    secrets.values.set(`baton.token.127.0.0.1:${agent.port}`, 'old-host-token');
    assert.equal(await send(agent, storage, agent.base), undefined);
    assert.equal(
      secrets.values.get(`baton.token.127.0.0.1:${agent.port}`),
      'old-host-token',
      'left for its https origin',
    );
  });

  it('a token the user stored for that http origin is sent, however the origin was spelled', async () => {
    for (const spelled of [
      `http://127.0.0.1:${agent.port}`,
      `HTTP://127.0.0.1.:${agent.port}/`,
      `http://2130706433:${agent.port}`,
    ]) {
      const { storage } = newStorage();
      await storage.setToken(spelled, 'stored-for-http');
      assert.equal(await send(agent, storage, agent.base), 'Bearer stored-for-http', spelled);
    }
  });

  it('a token stored for another port, or for an origin the user did not approve, is not sent', async () => {
    const { storage } = newStorage();
    await storage.setToken(other.base, 'for-the-other-agent');
    assert.equal(await send(agent, storage, agent.base), undefined, 'another port');
    // The approved origin is the other agent's: a request to this agent carries nothing.
    await storage.setToken(agent.base, 'for-this-agent');
    assert.equal(await send(agent, storage, other.base), undefined, 'not the approved origin');
    assert.equal(await send(agent, storage, undefined), undefined, 'nothing approved');
  });

  it('the local gateway token goes to the gateway origin only', async () => {
    const { storage } = newStorage();
    assert.equal(await send(agent, storage, undefined, { origin: agent.base, token: 'gw' }), 'Bearer gw');
    assert.equal(await send(other, storage, other.base, { origin: agent.base, token: 'gw' }), undefined);
    // A card served elsewhere that names the gateway as its interface: no gateway token.
    assert.equal(
      await send(agent, storage, agent.base, {
        origin: agent.base,
        token: 'gw',
        cardOrigin: 'https://cards.evil.example',
      }),
      undefined,
    );
    assert.equal(
      await send(agent, storage, agent.base, {
        origin: agent.base,
        token: 'gw',
        cardOrigin: `HTTP://127.0.0.1:${agent.port}/`,
      }),
      'Bearer gw',
    );
  });
});
