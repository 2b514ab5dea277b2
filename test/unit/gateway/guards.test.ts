// Every caller that grants capabilities or forwards a delegation goes through core/delegation/guards.ts:
// the local task runner (built-in agents and headless CLIs alike), the headless agent itself, and the
// proxy's loop check.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join, resolve } from 'node:path';
import type { SendMessageRequest } from '@a2a-js/sdk';
import { META } from '../../../src/core/batonProfile';
import {
  checkDelegationChain,
  intersectCapabilities,
  readRequestedCapabilities,
} from '../../../src/core/delegation/guards';
import { createHeadlessAgent } from '../../../src/gateway/agents/headlessAgent';
import type { Capabilities, LocalAgent } from '../../../src/gateway/agents/localAgent';
import type { RemoteAgentConfig } from '../../../src/gateway/config';
import { EventHub } from '../../../src/gateway/eventLog';
import { ClaimReleases } from '../../../src/gateway/claimReleases';
import { DEFAULT_LIVENESS } from '../../../src/gateway/instanceLiveness';
import type { GatewayContext } from '../../../src/gateway/gatewayContext';
import { detectHarnesses } from '../../../src/gateway/harness/registry';
import { PROXY_CHAIN_LIMITS, ProxyTaskRunner } from '../../../src/gateway/proxyTaskRunner';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import type { GatewayStore } from '../../../src/gateway/store/gatewayStore';
import { WorkspaceManager } from '../../../src/gateway/workspace/workspaceManager';
import { tempSpace } from '../workspace/repoFixtures';
import type { TempSpace } from '../workspace/repoFixtures';
import { clientFor, rpcPost, scriptedAgent, sendRequest, userMessage } from './helpers';
import { RunQueue } from '../../../src/gateway/runQueue';

const STANDIN = resolve(__dirname, '../../fixtures/standin-cli');
const ALL: Capabilities = { write: true, shell: true, network: true };
/** The gateway's default limits: write, no shell, no network. */
const GATEWAY_LIMITS: Capabilities = { write: true, shell: false, network: false };

function headless(space: TempSpace): LocalAgent {
  const detected = detectHarnesses({ pathVar: STANDIN }).find((d) => d.spec.id === 'claude');
  assert.ok(detected, 'the claude stand-in is on PATH');
  return createHeadlessAgent(detected, {
    manager: new WorkspaceManager({ root: space.root, userHome: space.home }),
    confine: { mode: 'off' },
    realHome: space.home,
    killGraceMs: 500,
  });
}

/** The sentence the headless agent's prompt states its capabilities in. */
function promptLine(c: Capabilities): string {
  const may = (b: boolean) => (b ? 'may ' : 'may not ');
  return `You ${may(c.write)}edit files, ${may(c.shell)}run shell commands, and ${may(c.network)}use the network.`;
}

describe('capabilities: local and headless agents grant through the shared intersection', () => {
  let space: TempSpace;
  let gw: RunningGateway;
  const echo = scriptedAgent({ id: 'echo' });
  let cli: LocalAgent;
  before(async () => {
    space = tempSpace('baton-guards-');
    cli = headless(space);
    gw = await startGateway({ stateDir: join(space.base, 'state'), localAgents: [echo, cli], log: () => undefined });
  });
  after(async () => {
    await gw.close();
    space.dispose();
  });

  const expected = (agent: LocalAgent) => intersectCapabilities(ALL, agent.maxCapabilities, GATEWAY_LIMITS);

  it('a capability the gateway does not grant is refused to a local and to a headless agent alike', async () => {
    for (const agent of [echo, cli]) {
      const client = await clientFor(`${gw.url}/a2a/${agent.id}/.well-known/agent-card.json`, gw.token);
      const done = await client.sendMessage(
        sendRequest(userMessage('@standin echo-prompt', { [META.capabilities]: ALL })),
      );
      assert.ok('id' in done);
      const task = await client.getTask({ tenant: '', id: done.id });
      assert.deepEqual(task.metadata?.[META.capabilities], expected(agent), agent.id);
      assert.deepEqual(expected(agent), { write: true, shell: false, network: false });
    }
    assert.deepEqual(echo.requests.at(-1)?.capabilities, expected(echo), 'what the built-in agent was given');
  });

  it("the headless agent states the intersection of the request and what it can do in the CLI's prompt", async () => {
    const requested: Capabilities = { write: false, shell: true, network: false };
    const result = await cli.run(
      {
        taskId: 'guards-direct',
        prompt: '@standin echo-prompt',
        files: [],
        capabilities: requested,
        deadline: Date.now() + 30_000,
        signal: new AbortController().signal,
      },
      () => undefined,
    );
    assert.equal(result.outcome, 'completed', result.reason);
    assert.ok(result.summary?.includes(promptLine(intersectCapabilities(requested, cli.maxCapabilities))));
  });

  it('malformed capabilities are refused by both with the shared reader’s message', async () => {
    for (const bad of ['write', { write: 'yes' }, { shell: 1 }]) {
      const check = readRequestedCapabilities(bad);
      assert.equal(check.ok, false);
      for (const agent of [echo, cli]) {
        const res = await rpcPost(
          `${gw.url}/a2a/${agent.id}`,
          {
            method: 'SendMessage',
            params: {
              message: {
                messageId: `bad-${agent.id}-${JSON.stringify(bad)}`,
                role: 'ROLE_USER',
                parts: [{ text: 'hi' }],
                metadata: { [META.capabilities]: bad },
              },
            },
          },
          { Authorization: `Bearer ${gw.token}` },
        );
        const body = (await res.json()) as { error?: { message?: string } };
        assert.equal(body.error?.message, check.ok ? '' : check.reason, `${agent.id}: ${JSON.stringify(bad)}`);
      }
    }
  });
});

describe('the proxy refuses a loop with the shared chain check', () => {
  const IDENTITY = 'baton-gateway:test-key';
  const cfg: RemoteAgentConfig = {
    id: 'far',
    name: 'Far',
    description: 'a remote',
    url: 'http://127.0.0.1:9/rpc',
    protocolBinding: 'JSONRPC',
    auth: { kind: 'none' },
    skills: [],
  };
  const HOP = `${IDENTITY}/far`;
  /** Past the guard, the runner claims the request: this store says so instead. */
  const store = {
    claimRequest: () => Promise.reject(new Error('past the loop check')),
  } as unknown as GatewayStore;
  const ctx: GatewayContext = {
    store,
    hub: new EventHub(),
    instanceId: 'test',
    identity: IDENTITY,
    claims: new ClaimReleases(store, () => undefined),
    liveness: DEFAULT_LIVENESS,
    runs: new RunQueue(0),
    roots: [],
    limits: { capabilities: GATEWAY_LIMITS, defaultDeadlineMs: 1_000, maxDeadlineMs: 1_000, cancelGraceMs: 10 },
    log: () => undefined,
  };
  const runner = new ProxyTaskRunner(ctx, cfg);
  after(() => runner.close());

  const send = (chain: readonly unknown[]): SendMessageRequest =>
    sendRequest(userMessage('hi', { [META.chain]: chain }));

  it('refuses exactly the chains checkDelegationChain refuses, with the proxy’s own words', async () => {
    const others = (n: number) => Array.from({ length: n }, (_, i) => `baton-gateway:other-${i}/a`);
    const cases: Array<readonly string[]> = [
      [],
      ['user'],
      [HOP],
      ['baton-gateway:a/x', HOP, 'baton-gateway:b/y'],
      others(PROXY_CHAIN_LIMITS.maxDepth - 1),
      others(PROXY_CHAIN_LIMITS.maxDepth),
    ];
    for (const chain of cases) {
      const check = checkDelegationChain(chain, HOP, 0, PROXY_CHAIN_LIMITS);
      const refused = await runner.start(send(chain), 'local').then(
        () => assert.fail('the fake store never lets a start succeed'),
        (e: Error) => e.message,
      );
      if (check.ok) assert.equal(refused, 'past the loop check', `${chain.length}: ${chain.join(' → ')}`);
      else if (check.code === 'cycle')
        assert.match(refused, /^delegation cycle: this message already went through far on this gateway/);
      else
        assert.equal(
          refused,
          `the delegation chain is ${chain.length} hops long, the limit is 16: ${chain.join(' → ')}`,
        );
      assert.equal(refused !== 'past the loop check', !check.ok, chain.join(' → '));
    }
  });

  it('reads the chain as the shared reader does: entries that are not strings are left out', async () => {
    await assert.rejects(
      runner.start(send([42, HOP, null]), 'local'),
      /delegation cycle: this message already went through far on this gateway \(chain: baton-gateway:test-key\/far\)/,
    );
  });
});
