import * as assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as vscode from 'vscode';
import type { BatonApi } from '../../../src/extension/extension';
import {
  activateBaton,
  approveTeamAgent,
  driver,
  readOnScreen,
  startTeamGateway,
  waitFor,
  waitForTreeRow,
  workspaceRoot,
  stopTeamGateway,
} from './util';
import type { TeamGateway } from './util';

/**
 * A team's gateway that takes members' tokens only (a separate `baton-gateway` process with its
 * formatter). A member delegates a file before storing her token: the gateway refuses the first message, and
 * the panel says so with Set Token… and Delegate Again. She stores the token and delegates again from
 * the panel: the start flow shows the same task, the file travels again as it is now, and the new
 * delegation completes; the first stays as it ended. From the palette, with no token set, Baton asks
 * for it before anything is sent.
 */

const TOKEN = 'alice-team-token-0123456789abcdef';

describe('A team gateway that refuses the token, then Delegate Again', () => {
  let api: BatonApi;
  let gateway: TeamGateway | undefined;
  let cardUrl = '';

  before(async function () {
    this.timeout(90_000);
    api = await activateBaton();
    await api.ready;
    gateway = await startTeamGateway({
      host: '127.0.0.1',
      port: 0,
      roots: [workspaceRoot()],
      localAgents: ['formatter'],
      tokens: [{ principal: 'alice', sha256: createHash('sha256').update(TOKEN).digest('hex') }],
    });
    cardUrl = await approveTeamAgent(api, gateway.url, 'formatter');
  });

  after(async () => {
    await stopTeamGateway(api, gateway);
  });

  it('says the token was refused at the first message, and Delegate Again sends the same task once the token is set', async () => {
    const task = 'Format src/styles.css';
    const file = vscode.Uri.joinPath(vscode.Uri.file(workspaceRoot()), 'src', 'styles.css');
    // Started from the explorer with the file as its context (Delegate File(s)…).
    const first =
      (await vscode.commands.executeCommand<string>('baton.delegateFiles', file, [file], {
        agentId: cardUrl,
        task,
        confirm: false,
      })) ?? '';
    const failed = await waitFor(
      'the first to fail',
      () => {
        const v = api.delegations.journalView(first);
        return v?.outcome ? v : undefined;
      },
      60_000,
    );
    assert.equal(failed.outcome, 'failed', failed.outcomeReason);
    assert.equal(failed.tokenRefused, true, failed.outcomeReason);
    assert.equal(failed.taskId, undefined, 'no task was created');
    await vscode.commands.executeCommand('baton.openDelegation', first);
    await driver('expectText', 'refused Baton’s token');
    await driver('expectText', 'then Delegate Again');
    await driver('screenshot', 'team-token-refused');
    // The member stores her token (Set Token… in the banner asks for it; here it is given).
    const stored = await vscode.commands.executeCommand<boolean>('baton.setToken', {
      origin: new URL(gateway?.url ?? '').origin,
      token: TOKEN,
    });
    assert.equal(stored, true);
    const before = new Set(api.delegations.list().map((v) => v.requestId));
    await driver('click', '#delegate-again');
    // The start flow's confirmation, with the same task, agent, capabilities and deadline.
    await driver('expectText', `Task: ${task}`);
    await driver('expectText', 'Capabilities: read-only');
    await driver('screenshot', 'delegate-again-confirm');
    await driver('press', 'Enter');
    const again = await waitFor(
      'the new delegation',
      () => api.delegations.list().find((v) => !before.has(v.requestId))?.requestId,
      30_000,
    );
    const done = await waitFor(
      'the new delegation to end',
      () => {
        const v = api.delegations.journalView(again);
        return v?.outcome ? v : undefined;
      },
      60_000,
    );
    assert.equal(done.outcome, 'completed', done.outcomeReason);
    assert.equal(done.title, task);
    assert.equal(done.agent.endpoint, failed.agent.endpoint);
    assert.deepEqual(done.capabilities.requested, failed.capabilities.requested);
    assert.equal(api.delegations.journalView(first)?.outcome, 'failed', 'the first stays as it ended');
    // The file went again, read as it is now.
    const sent = api.delegations.request(again)?.message.parts.filter((p) => p.filename === 'src/styles.css') ?? [];
    const text = new TextDecoder().decode(await vscode.workspace.fs.readFile(file));
    assert.deepEqual(
      sent.map((p) => (p.content?.$case === 'text' ? p.content.value : undefined)),
      [text],
    );
    await driver('expectText', 'Completed');
    await driver('screenshot', 'delegate-again-completed');
  });

  it('asks for the token before anything is sent, from the palette, when the card asks for one and none is set', async () => {
    const origin = new URL(gateway?.url ?? '').origin;
    // Leave empty to remove it, as the token box says.
    assert.equal(await vscode.commands.executeCommand<boolean>('baton.setToken', { origin, token: '' }), false);
    assert.equal(await api.hasToken(origin), false);
    // The Agents view says the agent needs a token, with Set Token… at hand.
    await vscode.commands.executeCommand('baton.agents.focus');
    await waitForTreeRow('Formatter', 'needs a token');
    await driver('screenshot', 'agent-needs-token');
    const task = 'Format src/styles.css again';
    const before = new Set(api.delegations.list().map((v) => v.requestId));
    const started = Promise.resolve(
      vscode.commands.executeCommand<string | undefined>('baton.delegate', { agentId: cardUrl, task }),
    );
    await driver('expectText', `Task: ${task}`);
    await driver('press', 'Enter');
    await driver('expectText', 'asks for a token, and none is set');
    await driver('expectText', 'Delegate Without a Token');
    await driver('screenshot', 'token-missing-prompt');
    assert.equal(api.delegations.list().filter((v) => !before.has(v.requestId)).length, 0, 'nothing started yet');
    await driver('press', 'Enter');
    await driver('expectText', `Token for ${origin}`);
    await driver('type', TOKEN);
    await driver('press', 'Enter');
    const id = await started;
    assert.ok(id, 'the flow did not start a delegation');
    assert.equal(await api.hasToken(origin), true);
    await waitFor('the Agents view to drop “needs a token”', async () => {
      const rows = await readOnScreen('.monaco-list-row', 'aria-label');
      return rows.some((r) => r.includes('Formatter')) && !rows.some((r) => r.includes('needs a token'))
        ? true
        : undefined;
    });
    const v = await waitFor(
      'the delegation to end',
      () => {
        const x = api.delegations.journalView(id);
        return x?.outcome ? x : undefined;
      },
      60_000,
    );
    assert.equal(v.outcome, 'completed', v.outcomeReason);
  });

  it('offers the agents there are for the same task once its agent is no longer approved', async () => {
    const failed = api.delegations
      .list()
      .find((d) => d.state === 'failed' && api.delegations.request(d.requestId)?.agent.cardUrl === cardUrl);
    assert.ok(failed, 'the failed delegation of the first test');
    await api.agents.remove(cardUrl);
    const again = Promise.resolve(
      vscode.commands.executeCommand<string | undefined>('baton.delegateAgain', failed.requestId),
    );
    await driver('expectText', 'is no longer an approved agent');
    // Then the agent picker with the approved agents there are (or, in a window with none, the
    // warning that says to add one).
    await driver('screenshot', 'delegate-again-agent-gone');
    await driver('press', 'Escape');
    await vscode.commands.executeCommand('notifications.clearAll');
    assert.equal(await again, undefined, 'nothing started');
  });
});
