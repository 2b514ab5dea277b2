import * as assert from 'node:assert/strict';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { AgentEntry } from '../../../src/core/agentRegistry';
import type { BatonApi } from '../../../src/extension/extension';
import { activateBaton, driver, EXTENSION_ID, waitFor } from './util';

/**
 * A coding CLI at the local gateway delegates: the gateway runs the stand-in CLI (`baton.cliPaths`)
 * with `baton mcp` bound to its task; it asks to delegate to the built-in formatter, the gateway asks
 * the user on the parent's stream, Baton shows a notification, the user clicks Allow, and the child
 * runs and shows under its parent in the Delegations view and in the parent's panel.
 */
describe('Consent for a child a coding CLI at the local gateway starts', () => {
  let api: BatonApi;
  let cli: AgentEntry;
  const cliPaths = () => vscode.workspace.getConfiguration('baton');

  before(async () => {
    api = await activateBaton();
    await api.ready;
    const root = vscode.extensions.getExtension(EXTENSION_ID)?.extensionPath ?? '';
    await cliPaths().update(
      'cliPaths',
      { opencode: join(root, 'test/fixtures/standin-cli/opencode') },
      vscode.ConfigurationTarget.Global,
    );
    // The CLI paths changed: the gateway restarts with `--cli opencode=…`.
    await vscode.commands.executeCommand('baton.startGateway');
    cli = await waitFor(
      'the stand-in coding CLI from the local gateway',
      () => api.agents.approved().find((a) => a.cardUrl.includes('/a2a/opencode/')),
      60_000,
    );
  });

  after(async () => {
    await cliPaths().update('cliPaths', undefined, vscode.ConfigurationTarget.Global);
  });

  it('asks with a notification, Allow runs the child, and it shows under its parent', async function () {
    this.timeout(240_000);
    const task = [
      'Tidy the cart with the formatter',
      `@standin mcp delegate ${JSON.stringify({ agent: 'formatter', task: 'Format src/cart.js', wait_seconds: 50 })}`,
    ].join('\n');
    const parentId =
      (await vscode.commands.executeCommand<string>('baton.delegate', {
        agentId: cli.cardUrl,
        task,
        confirm: false,
      })) ?? '';
    assert.ok(parentId, 'no delegation id');
    const question = await waitFor(
      'the consent question in the parent’s journal',
      () => api.delegations.consents(parentId)?.consents[0]?.question,
      60_000,
    );
    assert.equal(question.agentId, 'formatter');
    assert.equal(question.title, 'Format src/cart.js');
    await driver('expectText', 'wants to delegate to Formatter');
    // The toast may already be tucked into the notification center: the button is clicked there.
    await vscode.commands.executeCommand('notifications.showList');
    await driver('screenshot', 'consent-notification');
    await driver(
      'click',
      '.notifications-center .monaco-list-row:has-text("wants to delegate to Formatter") .monaco-button:text-is("Allow")',
    );
    await waitFor(
      'the decision in the parent’s journal',
      () => api.delegations.consents(parentId)?.consents[0]?.decision,
      20_000,
    ).then((d) => assert.equal(d, 'allowed'));
    await vscode.commands.executeCommand('notifications.hideList');
    const child = await waitFor(
      'the formatter child, completed, under its parent',
      () =>
        api.delegations
          .journalView(parentId)
          ?.childTasks?.find((c) => c.agentId === 'formatter' && c.state === 'completed'),
      90_000,
    );
    assert.equal(child.title, 'Format src/cart.js');
    const parent = await waitFor(
      'the parent to settle',
      () => {
        const v = api.delegations.journalView(parentId);
        return v?.outcome && v.outcome !== 'unknown' ? v : undefined;
      },
      90_000,
    );
    assert.equal(parent.outcome, 'completed', parent.outcomeReason);
    const node = api.delegations.tree().byId.get(parentId);
    assert.ok(node, 'the parent is in the task tree');

    await vscode.commands.executeCommand('baton.openDelegation', parentId);
    await driver('expectText', 'The delegation to Formatter (Prettier) was allowed.');
    await driver('screenshot', 'consent-parent-panel');
    await vscode.commands.executeCommand('workbench.view.extension.baton');
    await driver('expectText', 'Format src/cart.js');
    await driver('screenshot', 'consent-delegations-view');
  });
});
