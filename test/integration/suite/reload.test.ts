import * as assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { activateBaton, driver, waitFor } from './util';

// The last test of the first phase: it leaves a slow delegation running in the local gateway (a stand-in
// for Claude Code, found on PATH) and the driver reloads the workbench while it runs. restore.test.ts
// checks that it re-attached and that the panel shows its whole history.
describe('A delegation that outlives a workbench reload', () => {
  it('starts a slow local delegation and leaves it running', async () => {
    const api = await activateBaton();
    await api.ready;
    // The coding CLI is configured by path (machine-scoped setting); the gateway restarts to pick it up.
    await vscode.workspace
      .getConfiguration('baton')
      .update(
        'cliPaths',
        { claude: join(process.env.BATON_REPO ?? '', 'test/fixtures/standin-cli/claude') },
        vscode.ConfigurationTarget.Global,
      );
    await vscode.commands.executeCommand('baton.startGateway');
    const agent = await waitFor(
      'the stand-in Claude Code agent from the local gateway',
      () => api.agents.approved().find((a) => /claude/i.test(a.approval?.card.name ?? '')),
      60_000,
    );
    const task = [
      'Write release notes slowly',
      '@standin write NOTES.md first draft',
      '@standin sleep 12000',
      '@standin write NOTES.md second draft',
    ].join('\n');
    const id = await vscode.commands.executeCommand<string>('baton.delegate', {
      agentId: agent.cardUrl,
      task,
      confirm: false,
      capabilities: { write: true },
    });
    assert.ok(id);
    await waitFor(
      'the first steps',
      () => {
        const v = api.delegations.journalView(id);
        return v && v.state === 'working' && v.timeline.length >= 3 ? v : undefined;
      },
      60_000,
    );
    await driver('expectText', 'Working');
    await driver('screenshot', 'before-reload');
    const dir = process.env.BATON_TEST_CONTROL ?? '';
    writeFileSync(
      join(dir, 'running-delegation.json'),
      JSON.stringify({ id, seen: api.delegations.journalView(id)?.timeline.length }),
    );
  });
});
