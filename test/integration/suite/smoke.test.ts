import * as assert from 'node:assert/strict';
import { basename } from 'node:path';
import * as vscode from 'vscode';
import type { HostToWebviewMessage, WebviewToHostMessage } from '../../../src/core/protocol/panelProtocol';
import { activateBaton, driver, EXTENSION_ID, waitFor, webviewTabs } from './util';

describe('Baton in a real VS Code', () => {
  it('runs inside VS Code’s extension host', () => {
    const [major, minor] = vscode.version.split('.').map(Number);
    assert.equal(major, 1);
    assert.ok(minor >= 95, `VS Code ${vscode.version} is older than the engine Baton needs`);
    const ext = vscode.extensions.getExtension(EXTENSION_ID);
    assert.ok(ext, 'Baton is not loaded');
    assert.equal(ext.extensionKind, vscode.ExtensionKind.Workspace);
    assert.equal(typeof process.versions.node, 'string');
    console.log(
      `BATON:ENV vscode=${vscode.version} node=${process.versions.node} appHost=${vscode.env.appHost} path=${ext.extensionPath} mode=${process.env.BATON_TEST_MODE}`,
    );
    if (process.env.BATON_TEST_MODE === 'vsix') {
      assert.notEqual(ext.extensionPath, process.env.BATON_REPO);
      assert.match(
        basename(ext.extensionPath),
        /^baton\.baton-\d+\.\d+\.\d+$/,
        `expected the installed .vsix, got ${ext.extensionPath}`,
      );
    } else {
      assert.equal(ext.extensionPath, process.env.BATON_REPO, 'expected the extension from the development folder');
    }
  });

  it('contributes the Baton container, its two views and its commands', async () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID);
    assert.ok(ext);
    const contributes = ext.packageJSON.contributes as {
      viewsContainers: { activitybar: { id: string }[] };
      views: Record<string, { id: string; name: string }[]>;
      commands: { command: string; category: string }[];
    };
    assert.deepEqual(
      contributes.viewsContainers.activitybar.map((c) => c.id),
      ['baton'],
    );
    assert.deepEqual(
      contributes.views.baton.map((v) => v.name),
      ['Agents', 'Delegations'],
    );
    assert.ok(contributes.commands.every((c) => c.category === 'Baton'));
    await activateBaton();
    const commands = await vscode.commands.getCommands(true);
    for (const c of contributes.commands) assert.ok(commands.includes(c.command), `${c.command} is not registered`);
    await vscode.commands.executeCommand('workbench.view.extension.baton');
    await driver('expectText', 'No agents yet');
    await driver('screenshot', 'views');
  });

  it('opens the delegation panel, and a real click reaches the extension and its answer the panel', async () => {
    const api = await activateBaton();
    const received: WebviewToHostMessage[] = [];
    const posted: HostToWebviewMessage[] = [];
    let created = false;
    const sub = api.panels.onDidCreate((p) => {
      sub.dispose();
      p.onDidReceive((m) => received.push(m));
      p.onDidPost((m) => posted.push(m));
      created = true;
    });
    await vscode.commands.executeCommand('baton.openPanel');
    await waitFor('Baton: Open Delegation Panel to create a panel', () => created || undefined, 15_000);
    const tab = await waitFor('the panel tab', () => webviewTabs('baton.delegation')[0]);
    assert.equal(tab.label, 'Baton Delegation');
    await waitFor('the panel to say ready', () => received.find((m) => m.type === 'ready'));
    await waitFor('the first snapshot to reach the panel', () => posted.find((m) => m.type === 'snapshot'));

    await driver('click', '#refresh');
    const req = await waitFor('the click to reach the extension', () =>
      received.find((m) => m.type === 'request' && m.method === 'refresh'),
    );
    assert.equal(req.type, 'request');
    const answer = await waitFor('the answer to reach the panel', () =>
      posted.find((m) => m.type === 'response' && req.type === 'request' && m.id === req.id),
    );
    assert.equal(answer.type === 'response' && answer.ok, true);
    // The driver reads the panel's DOM: the answer is on screen, not just posted.
    await driver('expectText', 'Refreshed 1×');
    await driver('screenshot', 'panel');
  });
});
