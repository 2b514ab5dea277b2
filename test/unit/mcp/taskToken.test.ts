/**
 * A task's own token: minted for a coding CLI's run, it starts children of that task and reads and
 * cancels them, nothing else (not the parent, not the gateway's controls), and it stops working when
 * the task ends.
 */
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState } from '@a2a-js/sdk';
import { META } from '../../../src/core/batonProfile';
import { discoverLocalAgents } from '../../../src/gateway/agents/discover';
import type { DelegationBinding, LocalAgent } from '../../../src/gateway/agents/localAgent';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { WorkspaceManager } from '../../../src/gateway/workspace/workspaceManager';
import { bounded, clientFor, rpcPost, sendRequest, userMessage } from '../gateway/helpers';
import { makeRepo, tempSpace } from '../workspace/repoFixtures';
import type { TempSpace } from '../workspace/repoFixtures';

/** A coding-CLI-like agent that hands out the binding it got and waits until it is canceled. */
function bindingAgent(): LocalAgent & { readonly bound: Promise<DelegationBinding | undefined> } {
  let give!: (b: DelegationBinding | undefined) => void;
  const bound = new Promise<DelegationBinding | undefined>((r) => (give = r));
  return {
    id: 'waiter',
    name: 'Waiter',
    description: 'Waits for cancel (test agent).',
    kind: 'headless',
    skills: [{ id: 'wait', name: 'Wait', description: 'Waits', tags: ['test'] }],
    maxCapabilities: { write: true, shell: true, network: true },
    bound,
    async run(req) {
      give(req.delegation);
      await new Promise<void>((r) => (req.signal.aborted ? r() : req.signal.addEventListener('abort', () => r())));
      return { outcome: 'canceled', reason: 'canceled', patch: '' };
    },
  };
}

describe("a task's own token", () => {
  let space: TempSpace;
  let gw: RunningGateway;
  let repo: string;
  const agent = bindingAgent();

  before(async () => {
    space = tempSpace('baton-token-');
    repo = makeRepo(space.base, 'repo', { 'a.ts': 'export const   a = 1\n' });
    const manager = new WorkspaceManager({ root: space.root, userHome: space.home });
    gw = await startGateway({
      stateDir: join(space.base, 'state'),
      roots: [space.base],
      localAgents: [agent, ...(await discoverLocalAgents({ manager, clis: false }))],
      mcpCommand: ['baton', 'mcp'],
      delegation: { consent: { formatter: 'allow' } },
      log: () => undefined,
    });
  });
  after(async () => {
    await gw?.close();
    space?.dispose();
  });

  it('starts and reads children of its task only, never the parent or the controls, and dies with the task', async () => {
    const user = await clientFor(`${gw.url}/a2a/waiter/.well-known/agent-card.json`, gw.token);
    const parent = await user.sendMessage(
      sendRequest(
        userMessage('wait', {
          [META.repository]: repo,
          [META.capabilities]: { write: true, shell: false, network: false },
        }),
        true,
      ),
    );
    assert.ok('id' in parent);
    const parentId = parent.id;
    const binding = await bounded(agent.bound, 'the run to get its binding');
    assert.ok(binding, 'a coding CLI run is bound to its task');
    assert.deepEqual(binding.command, ['baton', 'mcp']);
    assert.equal(binding.parentTaskId, parentId);
    assert.match(binding.gatewayUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
    const token = binding.token;

    // The gateway's own controls take the local token only.
    const instance = await fetch(`${gw.url}/baton/instance`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(instance.status, 403);
    const consent = await fetch(`${gw.url}/baton/consent/x`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{"decision":"allow"}',
    });
    assert.equal(consent.status, 403);

    // The parent is not its task: it answers like an unknown one.
    const asTask = await clientFor(`${gw.url}/a2a/waiter/.well-known/agent-card.json`, token);
    await assert.rejects(asTask.getTask({ tenant: '', id: parentId, historyLength: 0 }), /not found/);

    // A child it starts is its own: it reads it; the user's token does not see it as theirs.
    const formatter = await clientFor(`${gw.url}/a2a/formatter/.well-known/agent-card.json`, token);
    const child = await formatter.sendMessage(
      sendRequest(
        userMessage('Format a.ts', {
          [META.capabilities]: { write: true, shell: true, network: true },
          [META.repository]: '/somewhere/else',
        }),
      ),
    );
    assert.ok('id' in child);
    assert.equal(child.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.deepEqual(child.metadata?.[META.capabilities], { write: true, shell: false, network: false });
    const read = await formatter.getTask({ tenant: '', id: child.id, historyLength: 1 });
    assert.deepEqual(read.history[0].metadata?.[META.repository], repo, 'the child works on the parent’s repository');
    const asUser = await clientFor(`${gw.url}/a2a/formatter/.well-known/agent-card.json`, gw.token);
    await assert.rejects(asUser.getTask({ tenant: '', id: child.id, historyLength: 0 }), /not found/);

    // Once the parent ends, the token is refused everywhere.
    await user.cancelTask({ tenant: '', id: parentId, metadata: undefined });
    const ended = await rpcPost(
      `${gw.url}/a2a/formatter`,
      { method: 'GetTask', params: { id: child.id } },
      { authorization: `Bearer ${token}` },
    );
    assert.equal(ended.status, 401);
  });
});
