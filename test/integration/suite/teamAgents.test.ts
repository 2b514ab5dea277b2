import * as assert from 'node:assert/strict';
import { TaskState } from '@a2a-js/sdk';
import * as vscode from 'vscode';
import type { BatonApi } from '../../../src/extension/extension';
import { startAgentServer, type AgentServer } from '../../unit/delegation/agentServers';
import {
  activateBaton,
  approveTeamAgent,
  driver,
  startTeamGateway,
  stopTeamGateway,
  waitFor,
  waitForTreeRow,
  workspaceRoot,
} from './util';
import type { TeamGateway } from './util';

/**
 * A team's gateway (a separate `baton-gateway` process) whose operator adds a remote agent to its
 * config and sends SIGHUP: Refresh Agents in Baton finds it in the gateway's index and adds it as
 * pending; approved, a delegation to it runs through the gateway to the remote (the SDK's own server).
 * Then the operator removes it: a new delegation to it fails with the gateway's words, which say it
 * was removed and where the agents are listed.
 */

function config(helperUrl?: string): Record<string, unknown> {
  return {
    host: '127.0.0.1',
    port: 0,
    roots: [workspaceRoot()],
    localAgents: ['formatter'],
    anonymous: { principal: 'member' },
    ...(helperUrl ? { agents: { helper: { name: 'Helper', description: 'The team’s helper', url: helperUrl } } } : {}),
  };
}

describe('A team gateway that adds and removes an agent while it runs', () => {
  let api: BatonApi;
  let gateway: TeamGateway | undefined;
  let server: AgentServer | undefined;

  before(async function () {
    this.timeout(90_000);
    api = await activateBaton();
    await api.ready;
    server = await startAgentServer({
      script: async (turn) => {
        turn.task();
        turn.status(TaskState.TASK_STATE_COMPLETED, 'helped');
      },
    });
    gateway = await startTeamGateway(config());
    await approveTeamAgent(api, gateway.url, 'formatter');
  });

  after(async () => {
    await stopTeamGateway(api, gateway);
    await server?.close();
  });

  it('Refresh Agents finds the agent the gateway added; a delegation to it runs, and once removed it says so', async function () {
    this.timeout(120_000);
    assert.ok(gateway && server);
    const helperCard = `${gateway.url}/a2a/helper/.well-known/agent-card.json`;
    assert.equal(api.agents.find(helperCard), undefined);
    assert.match(await gateway.reload(config(server.jsonRpc.url)), /agents added: helper/);
    const added = (await vscode.commands.executeCommand<string[]>('baton.refreshAgents')) ?? [];
    assert.deepEqual(added, [helperCard]);
    assert.equal(api.agents.find(helperCard)?.status, 'pending');
    await vscode.commands.executeCommand('baton.agents.focus');
    await waitForTreeRow('Helper');
    await driver('expectText', 'A gateway now lists Helper');
    await driver('screenshot', 'gateway-agent-added');
    await vscode.commands.executeCommand('notifications.clearAll');

    const entry = api.agents.find(helperCard);
    const approved = await api.agents.approve(helperCard, entry?.served?.digest ?? '');
    assert.ok(approved.ok, approved.ok ? '' : approved.message);
    const run = async (task: string) => {
      const id =
        (await vscode.commands.executeCommand<string>('baton.delegate', {
          agentId: helperCard,
          task,
          confirm: false,
        })) ?? '';
      assert.ok(id, 'no delegation started');
      return {
        id,
        view: await waitFor(
          `“${task}” to end`,
          () => {
            const v = api.delegations.journalView(id);
            return v?.outcome ? v : undefined;
          },
          60_000,
        ),
      };
    };
    const helped = await run('Help with the README');
    assert.equal(helped.view.outcome, 'completed', helped.view.outcomeReason);
    assert.ok(
      server.requests.some((r) => r.method === 'POST'),
      'the remote was reached through the gateway',
    );

    // The operator removes it: the next delegation fails before any task, and says why.
    assert.match(await gateway.reload(config()), /agents removed: helper/);
    const refused = await run('Help with the changelog');
    assert.equal(refused.view.outcome, 'failed');
    assert.match(refused.view.outcomeReason ?? '', /was removed from this gateway's configuration/);
    // The refusal makes Baton read the gateway's index again: Helper is no longer listed, so it is
    // unavailable (Delegate Again asks for another agent), and Baton says so once.
    await waitFor('Helper marked as removed by its gateway', () => api.agents.find(helperCard)?.unlistedAt);
    assert.equal(api.agents.find(helperCard)?.status, 'unavailable');
    await driver('expectText', 'no longer serves Helper');
    await vscode.commands.executeCommand('baton.agents.focus');
    await waitForTreeRow('Helper');
    await driver('expectText', 'removed by its gateway');
    await vscode.commands.executeCommand('baton.openDelegation', refused.id);
    await driver('expectText', 'removed from this gateway');
    await driver('expectText', 'Delegate to Another Agent');
    await driver('screenshot', 'gateway-agent-removed');
    await vscode.commands.executeCommand('notifications.clearAll');

    // The operator puts it back as it was: refreshing it (its context menu) finds it listed again,
    // approved as before; Refresh Agents then has nothing new to add.
    assert.match(await gateway.reload(config(server.jsonRpc.url)), /agents back: helper/);
    await vscode.commands.executeCommand('baton.refreshAgents', helperCard);
    assert.equal(api.agents.find(helperCard)?.unlistedAt, undefined);
    assert.equal(api.agents.find(helperCard)?.status, 'approved');
    assert.deepEqual((await vscode.commands.executeCommand<string[]>('baton.refreshAgents')) ?? [], []);
    assert.equal(api.agents.find(helperCard)?.status, 'approved');
    const again = await run('Help with the changelog, again');
    assert.equal(again.view.outcome, 'completed', again.view.outcomeReason);
  });
});
