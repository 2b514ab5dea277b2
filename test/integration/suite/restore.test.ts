import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { activateBaton, driver, waitFor, webviewTabs } from './util';

// Runs after the driver reloaded the workbench that the smoke phase left with panels open.
describe('Baton after a workbench reload', () => {
  it('restores the delegation panels and reconnects them to the extension', async () => {
    const tab = await waitFor('the restored panel tabs', () => webviewTabs('baton.delegation')[0], 30_000);
    assert.ok(tab);
    const api = await activateBaton();
    // VS Code revives a restored webview when its tab is shown: the visible one at once, the others
    // later. The editor active at the reload may be another (a review document), so show the tab.
    if (!tab.isActive) {
      await vscode.commands.executeCommand(`workbench.action.focus${ordinal(tab.group.viewColumn)}EditorGroup`);
      await vscode.commands.executeCommand('workbench.action.openEditorAtIndex', tab.group.tabs.indexOf(tab));
    }
    await waitFor(
      'the extension to adopt a restored panel',
      () => (api.panels.all().length > 0 ? true : undefined),
      30_000,
    );
    await vscode.commands.executeCommand('baton.openPanel');
    const overview = await waitFor('the overview panel', () =>
      api.panels.all().find((p) => !p.delegationId && !p.agentCardUrl),
    );
    await waitFor('the overview panel to say ready', () => overview.isReady || undefined, 30_000);
    await driver('expectText', 'No delegation selected');
    await driver('click', '#refresh');
    await driver('expectText', 'Refreshed 1×');
    await driver('screenshot', 'panel-restored');
  });

  it('re-attaches a delegation that was running during the reload; it completes with its whole history, nothing twice', async function () {
    this.timeout(120_000);
    const api = await activateBaton();
    await api.ready;
    const { id, seen } = JSON.parse(
      readFileSync(join(process.env.BATON_TEST_CONTROL ?? '', 'running-delegation.json'), 'utf8'),
    ) as { id: string; seen: number };
    const v = await waitFor(
      'the re-attached delegation to complete',
      () => {
        const x = api.delegations.journalView(id);
        return x?.outcome === 'completed' ? x : undefined;
      },
      90_000,
    );
    assert.ok(v.timeline.length > seen, `the timeline did not grow after the reload (${seen} → ${v.timeline.length})`);
    const texts = v.timeline.map((e) => JSON.stringify(e));
    assert.equal(new Set(texts).size, texts.length, 'an event was recorded twice');
    assert.ok(
      (await api.delegations.reviewPatch(id))?.toString('utf8').includes('second draft'),
      'the final patch lacks the work done after the reload',
    );
    await vscode.commands.executeCommand('baton.openDelegation', id);
    await driver('expectText', 'Completed');
    await driver('screenshot', 'reattached-completed');
  });

  it('reloads the delegation journals: a finished delegation shows its whole history again', async () => {
    const api = await activateBaton();
    await api.ready;
    const done = api.delegations.list().find((d) => d.state === 'completed');
    assert.ok(done, `no completed delegation after reload: ${JSON.stringify(api.delegations.list())}`);
    const view = api.delegations.journalView(done.requestId);
    assert.ok(view && view.timeline.length >= 2);
    await vscode.commands.executeCommand('baton.openDelegation', done.requestId);
    await driver('expectText', 'Completed');
    await driver('expectText', 'changes.patch');
    await driver('screenshot', 'delegation-restored');
  });
});

/** The word VS Code's focus-group commands use for an editor column. */
function ordinal(column: vscode.ViewColumn): string {
  return ['First', 'Second', 'Third', 'Fourth', 'Fifth', 'Sixth', 'Seventh', 'Eighth'][column - 1] ?? 'First';
}
