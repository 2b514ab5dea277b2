import * as assert from 'node:assert/strict';
import { activateBaton, driver, waitFor, webviewTabs } from './util';

// Runs after the driver reloaded the workbench that the smoke phase left with the panel open.
describe('Baton after a workbench reload', () => {
  it('restores the delegation panel and reconnects it to the extension', async () => {
    const tab = await waitFor('the restored panel tab', () => webviewTabs('baton.delegation')[0], 30_000);
    assert.equal(tab.label, 'Baton Delegation');
    const api = await activateBaton();
    const panel = await waitFor('the extension to adopt the restored panel', () => api.panels.all()[0], 30_000);
    await waitFor('the restored panel to say ready', () => panel.isReady || undefined, 30_000);
    await driver('expectText', 'No delegation selected');
    await driver('click', '#refresh');
    await driver('expectText', 'Refreshed 1×');
    await driver('screenshot', 'panel-restored');
  });
});
