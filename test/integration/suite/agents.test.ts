import * as assert from 'node:assert/strict';
import { TaskState } from '@a2a-js/sdk';
import * as vscode from 'vscode';
import { startAgentServer, type AgentServer } from '../../unit/delegation/agentServers';
import { activateBaton, driver, waitFor, webviewTabs } from './util';

describe('Agents: discover, review and trust', () => {
  let server: AgentServer;
  let host: string;

  before(async () => {
    server = await startAgentServer({
      script: async (turn) => {
        turn.task();
        turn.status(TaskState.TASK_STATE_COMPLETED, 'done');
      },
    });
    host = `127.0.0.1:${server.port}`;
    // Loopback is refused unless the user allowed the host (machine-scoped setting).
    await vscode.workspace.getConfiguration('baton').update('privateHosts', [host], vscode.ConfigurationTarget.Global);
  });

  after(async () => {
    await server?.close();
  });

  it('refuses a card URL on a private address the user did not allow, and adds nothing', async () => {
    const api = await activateBaton();
    const before = api.agents.agents.length;
    const added = await vscode.commands.executeCommand<string[] | undefined>(
      'baton.addAgent',
      'http://169.254.169.254/latest/meta-data/',
    );
    assert.equal(added, undefined);
    assert.equal(api.agents.agents.length, before);
  });

  it('adds an agent from a local SDK server as pending and opens its review page', async () => {
    const api = await activateBaton();
    const added = await vscode.commands.executeCommand<string[] | undefined>('baton.addAgent', server.base);
    assert.ok(added?.length === 1, `expected one agent, got ${JSON.stringify(added)}`);
    const entry = api.agents.find(added[0]);
    assert.equal(entry?.status, 'pending');
    assert.equal(entry?.served?.card.name, 'Test agent');
    await waitFor('the review page', () => webviewTabs('baton.delegation').find((t) => t.label.startsWith('Review:')));
    await driver('expectText', 'Pending review');
    await driver('expectText', `${server.base}/a2a/jsonrpc`);
    await driver('screenshot', 'agent-review');
  });

  it('approving on the review page pins the card’s digest and endpoint', async () => {
    const api = await activateBaton();
    const cardUrl = api.agents.agents.find((a) => a.cardUrl.startsWith(server.base))?.cardUrl;
    assert.ok(cardUrl);
    await driver('click', '#approve');
    const entry = await waitFor('the agent to be approved', () => {
      const e = api.agents.find(cardUrl);
      return e?.status === 'approved' ? e : undefined;
    });
    assert.equal(entry.approval?.endpoint.url, `${server.base}/a2a/jsonrpc`);
    assert.equal(entry.approval?.digest, entry.served?.digest);
    await driver('expectText', 'Approved');
    await vscode.commands.executeCommand('workbench.view.extension.baton');
    await driver('screenshot', 'agents-view-approved');
  });

  it('returns to pending, with what changed, when the served card changes', async () => {
    const api = await activateBaton();
    const cardUrl = api.agents.agents.find((a) => a.cardUrl.startsWith(server.base))?.cardUrl;
    assert.ok(cardUrl);
    (server.card as { description: string }).description = 'A scripted test agent that now also uploads your files';
    await vscode.commands.executeCommand('baton.refreshAgents', cardUrl);
    const entry = await waitFor('the agent to be pending again', () => {
      const e = api.agents.find(cardUrl);
      return e?.status === 'pending' ? e : undefined;
    });
    assert.equal(entry.pendingReason, 'card-changed');
    assert.ok(
      entry.changes.some((c) => c.path.includes('description')),
      JSON.stringify(entry.changes),
    );
    // Baton keeps only the approved endpoint; nothing is callable until the user reviews again.
    assert.equal(
      api.agents.approved().some((a) => a.cardUrl === cardUrl),
      false,
    );
    await vscode.commands.executeCommand('baton.reviewAgent', cardUrl);
    await driver('expectText', 'What changed since you approved it');
    await driver('expectText', 'now also uploads your files');
    await driver('screenshot', 'agent-card-changed');
  });

  it('stores a token for an origin in secret storage, never in settings', async () => {
    const api = await activateBaton();
    await vscode.commands.executeCommand('baton.setToken', { origin: `http://${host}`, token: 's3cr3t-token-value' });
    assert.equal(await api.hasToken(`HTTP://${host}/`), true);
    // Bound to the origin: the same host over https, or another host, has no token.
    assert.equal(await api.hasToken(`https://${host}`), false);
    assert.equal(await api.hasToken('other.example.com'), false);
    const settings = JSON.stringify(vscode.workspace.getConfiguration('baton'));
    assert.ok(!settings.includes('s3cr3t-token-value'));
  });
});
