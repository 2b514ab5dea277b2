import * as assert from 'node:assert/strict';
import { TaskState } from '@a2a-js/sdk';
import * as vscode from 'vscode';
import type { BatonApi } from '../../../src/extension/extension';
import { startAgentServer, type AgentServer } from '../../unit/delegation/agentServers';
import { activateBaton, driver, waitFor } from './util';

/**
 * VS Code's notifications render `[label](target)` as a link and run a `command:` target when it is
 * clicked. An agent whose reason for failing carries one must not get a command link into the
 * notification Baton shows for the delegation's end: its words are shown, as text.
 */
describe('A notification shows what an agent wrote as text, never as a link', () => {
  let api: BatonApi;
  let server: AgentServer | undefined;
  let cardUrl = '';

  before(async function () {
    this.timeout(60_000);
    api = await activateBaton();
    await api.ready;
    server = await startAgentServer({
      script: async (turn) => {
        turn.task();
        turn.status(
          TaskState.TASK_STATE_FAILED,
          'Could not finish. [Open the fix](command:workbench.action.showCommands) to go on.',
        );
      },
    });
    const settings = vscode.workspace.getConfiguration('baton');
    const hosts = settings.get<string[]>('privateHosts') ?? [];
    await settings.update('privateHosts', [...hosts, `127.0.0.1:${server.port}`], vscode.ConfigurationTarget.Global);
    const added = (await vscode.commands.executeCommand<string[]>('baton.addAgent', server.base)) ?? [];
    cardUrl = added[0] ?? '';
    const entry = await waitFor(
      'the card to be read',
      () => api.agents.find(cardUrl)?.served && api.agents.find(cardUrl),
    );
    const approved = await api.agents.approve(cardUrl, entry.served?.digest ?? '');
    assert.ok(approved.ok, approved.ok ? '' : approved.message);
  });

  after(async () => {
    if (cardUrl && api.agents.find(cardUrl)) await api.agents.remove(cardUrl);
    await server?.close();
  });

  it('the failure notification carries the agent’s words and no link', async function () {
    this.timeout(90_000);
    await vscode.commands.executeCommand('notifications.clearAll');
    const id =
      (await vscode.commands.executeCommand<string>('baton.delegate', {
        agentId: cardUrl,
        task: 'Tidy the README',
        confirm: false,
      })) ?? '';
    assert.ok(id, 'no delegation started');
    const view = await waitFor(
      'the delegation to end',
      () => {
        const v = api.delegations.journalView(id);
        return v?.outcome ? v : undefined;
      },
      60_000,
    );
    assert.equal(view.outcome, 'failed');
    // Its panel says so too (the reason is shown there as the agent's text).
    assert.deepEqual(await driver('read', '#state'), ['Failed']);
    // There, a link to a command is kept as its words, which read as the text around them.
    const [own, around] = (await driver('colors', '#timeline a:not([href])')) as string[];
    assert.equal(own, around, 'the dropped link is not coloured as a link');
    // The notification is there, with the agent's words (the notification center lists it)…
    await vscode.commands.executeCommand('notifications.showList');
    const messages = (await driver('read', '.notifications-center .notification-list-item-message')) as string[];
    assert.ok(
      messages.some((m) => m.includes('Open the fix')),
      `the end of “Tidy the README” is among the notifications: ${JSON.stringify(messages)}`,
    );
    // …and no link in it (VS Code makes one of `[label](command:…)`, which this test was seen to find
    // before notifications went through notify.ts).
    assert.equal(await driver('count', '.notifications-center .notification-list-item-message a'), 0);
    await driver('screenshot', 'notification-inert-agent-text');
    await vscode.commands.executeCommand('notifications.hideList');
    await vscode.commands.executeCommand('notifications.clearAll');
  });
});
