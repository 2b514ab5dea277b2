// Restricted Mode: the driver opens the workspace with Workspace Trust on and the folder not trusted.
// Baton shows agents and past delegations and says how to trust the workspace; everything that would
// delegate, run or apply is disabled, and invoked anyway it explains itself and does nothing.
import * as assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { activateBaton, driver, EXTENSION_ID, waitFor, webviewTabs } from './util';

interface Contributed {
  readonly command: string;
  readonly enablement?: string;
}

describe('Baton in Restricted Mode (an untrusted workspace)', () => {
  it('activates in the untrusted workspace', async () => {
    assert.equal(vscode.workspace.isTrusted, false, 'this phase must run in Restricted Mode');
    await activateBaton();
    assert.equal(vscode.extensions.getExtension(EXTENSION_ID)?.isActive, true);
  });

  it('the views say what Restricted Mode allows and how to trust the workspace', async () => {
    await vscode.commands.executeCommand('workbench.view.extension.baton');
    await driver('expectText', 'Baton works read-only in Restricted Mode');
    await driver('expectText', 'Delegating is disabled in Restricted Mode');
    await driver('screenshot', 'views');
  });

  it('every command that delegates, runs or applies is disabled by its enablement', () => {
    const commands = (
      vscode.extensions.getExtension(EXTENSION_ID)?.packageJSON as { contributes: { commands: Contributed[] } }
    ).contributes.commands;
    const gated = new Set(commands.filter((c) => c.enablement?.includes('isWorkspaceTrusted')).map((c) => c.command));
    for (const c of [
      'baton.delegate',
      'baton.delegateSelection',
      'baton.delegateFiles',
      'baton.fixWithAgent',
      'baton.addAgent',
      'baton.startGateway',
      'baton.reviewChanges',
    ]) {
      assert.ok(gated.has(c), `${c} is not disabled in Restricted Mode`);
    }
  });

  it('invoked anyway, starting the gateway explains itself and starts nothing', async () => {
    const api = await activateBaton();
    await vscode.commands.executeCommand('baton.startGateway');
    await driver('expectText', 'is disabled in Restricted Mode. Trust this workspace');
    await vscode.commands.executeCommand('notifications.showList');
    await driver('expectText', 'Starting the local gateway is disabled in Restricted Mode');
    await driver('screenshot', 'refused');
    await vscode.commands.executeCommand('notifications.hideList');
    assert.equal(api.gateway.status.kind, 'stopped');
    assert.equal(existsSync(join(api.gateway.stateDir, 'gateway.json')), false, 'a gateway was started');
  });

  it('the delegation panel opens with the Restricted Mode banner', async () => {
    await vscode.commands.executeCommand('baton.openPanel');
    await waitFor('the panel tab', () => webviewTabs('baton.delegation')[0]);
    await driver('expectText', 'Restricted Mode: Baton shows agents and past delegations');
    await driver('screenshot', 'panel');
  });
});
