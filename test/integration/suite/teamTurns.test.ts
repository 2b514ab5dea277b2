import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { BatonApi } from '../../../src/extension/extension';
import {
  activateBaton,
  approveTeamAgent,
  driver,
  startTeamGateway,
  waitFor,
  workspaceRoot,
  stopTeamGateway,
} from './util';
import type { TeamGateway } from './util';

/**
 * A team's gateway that runs one task at a time per member (`limits.maxRunningTasksPerPrincipal: 1`),
 * a separate `baton-gateway` process with its refactoring agent. The member's first task waits for
 * her answer to its question, which keeps its turn; her second is held until the first gives it back,
 * and the panel shows that wait as the gateway says it.
 */

describe('A team gateway’s turns, from the panel', () => {
  let api: BatonApi;
  let gateway: TeamGateway | undefined;
  let cardUrl = '';

  before(async function () {
    this.timeout(90_000);
    api = await activateBaton();
    await api.ready;
    gateway = await startTeamGateway(
      {
        host: '127.0.0.1',
        port: 0,
        roots: [workspaceRoot()],
        localAgents: ['refactor'],
        anonymous: { principal: 'member' },
        limits: { maxRunningTasksPerPrincipal: 1 },
      },
      ['--agent-pace-ms', '300'],
    );
    cardUrl = await approveTeamAgent(api, gateway.url, 'refactor');
  });

  after(async () => {
    await stopTeamGateway(api, gateway);
  });

  const stateOf = (id: string): string | undefined => api.delegations.journalView(id)?.state;
  const delegate = async (task: string): Promise<string> =>
    (await vscode.commands.executeCommand<string>('baton.delegate', { agentId: cardUrl, task, confirm: false })) ?? '';

  it('holds a second task for its turn while the first waits for an answer, shows it waiting, and runs it once the first ends', async () => {
    const first = await delegate('Rename lineTotal to itemTotal');
    await waitFor('the first to ask', () => (stateOf(first) === 'input-required' ? true : undefined), 60_000);
    const second = await delegate('Organise imports and fix all');
    await waitFor('the second to wait for its turn', () => (stateOf(second) === 'waiting' ? true : undefined), 60_000);
    await vscode.commands.executeCommand('baton.openDelegation', second);
    await driver('expectText', 'Waiting for its turn');
    await driver('expectText', 'it starts next');
    await driver('screenshot', 'team-turn-waiting');
    // The first ends (canceled while it asks): the second gets the turn and runs.
    await vscode.commands.executeCommand('baton.cancelDelegation', first);
    await waitFor(
      'the first to end',
      () => (api.delegations.journalView(first)?.outcome === 'canceled' ? true : undefined),
      60_000,
    );
    await waitFor('the second to run', () => (stateOf(second) === 'working' ? true : undefined), 60_000);
    await driver('expectText', 'Working');
    await driver('screenshot', 'team-turn-running');
    const timeline = api.delegations.journalView(second)?.timeline ?? [];
    const texts = timeline.flatMap((e) => ('text' in e && typeof e.text === 'string' ? [e.text] : []));
    const waited = texts.findIndex((t) => t.includes('waiting for its turn'));
    const accepted = texts.findIndex((t) => t.includes('accepted by'));
    assert.ok(waited >= 0 && accepted > waited, texts.join('\n'));
    await vscode.commands.executeCommand('baton.cancelDelegation', second);
    await waitFor(
      'the second to end',
      () => {
        const o = api.delegations.journalView(second)?.outcome;
        return o && o !== 'unknown' ? o : undefined;
      },
      60_000,
    );
  });
});
