import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { activateBaton, driver, waitFor } from './util';

// The flow a user goes through from the command palette, driven with the keyboard in the real
// workbench: pick the agent, write the task, see the capabilities and deadline, delegate.
describe('Delegating from the palette, as a user does it', () => {
  it('picks the agent, takes the task, shows read-only and the deadline before sending', async () => {
    const api = await activateBaton();
    await api.ready;
    await waitFor(
      'an approved formatter',
      () => api.agents.approved().find((a) => a.approval?.card.name.startsWith('Formatter')),
      30_000,
    );
    const started = Promise.resolve(vscode.commands.executeCommand<string | undefined>('baton.delegate'));
    await driver('expectText', 'Delegate to which agent?');
    await driver('type', 'Formatter');
    await driver('screenshot', 'pick-agent');
    await driver('press', 'Enter');
    await driver('expectText', 'Task for Formatter');
    await driver('type', 'Format src/styles.css');
    await driver('press', 'Enter');
    await driver('expectText', 'Capabilities: read-only');
    await driver('expectText', 'Deadline: 30 minutes');
    await driver('screenshot', 'confirm-step');
    await driver('press', 'Enter');
    const id = await started;
    assert.ok(id, 'the flow did not start a delegation');
    const v = await waitFor(
      'the delegation to settle',
      () => {
        const x = api.delegations.journalView(id);
        return x?.outcome ? x : undefined;
      },
      60_000,
    );
    assert.equal(v.outcome, 'completed', v.outcomeReason);
    assert.equal(v.title, 'Format src/styles.css');
    assert.deepEqual(v.capabilities.requested, { write: false, shell: false, network: false });
  });
});
