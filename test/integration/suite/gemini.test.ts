import * as assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { DelegationRecord } from '../../../src/core/delegation';
import type { BatonApi } from '../../../src/extension/extension';
import { startGeminiPeer, type GeminiPeer, type ModelTurn } from '../../peers/geminiPeer';
import { delegationTitle } from '../../../src/core/delegation/request';
import {
  activateBaton,
  driver,
  hashTree,
  readOnScreen,
  sleep,
  startTeamGateway,
  waitFor,
  waitForTreeRow,
  stopTeamGateway,
} from './util';
import type { TeamGateway } from './util';

/**
 * Gemini CLI's own A2A server (`@google/gemini-cli-a2a-server`, installed by test/peers/setup.sh) with a
 * stand-in model the test scripts: from the panel, as a user would, directly and through a gateway that
 * proxies it. Its tool calls wait for the user's approval (its development-tool extension), its turns end
 * with the agent waiting for the user, and the patch is made from the edits its tool calls reported.
 */
const DEV_TOOL_URI = 'https://github.com/google-gemini/gemini-cli/blob/main/docs/a2a/developer-profile/v0/spec.md';
const FILE = 'src/pricing.js';

function workspaceRoot(): string {
  const f = vscode.workspace.workspaceFolders?.[0];
  if (!f) throw new Error('no workspace folder');
  return f.uri.fsPath;
}

/** A gateway of a team's that proxies the Gemini server (a separate `baton-gateway` process). */
function startProxyGateway(peer: GeminiPeer): Promise<TeamGateway> {
  return startTeamGateway(
    {
      host: '127.0.0.1',
      port: 0,
      anonymous: { principal: 'it' },
      agents: {
        gemini: {
          name: 'Gemini CLI (through the team gateway)',
          url: `${peer.baseUrl}/`,
          protocolVersion: '0.3',
          extensions: [DEV_TOOL_URI],
        },
      },
    },
    ['--no-local-agents'],
  );
}

describe('Gemini CLI’s A2A server, from the panel', () => {
  let api: BatonApi;
  let peer: GeminiPeer;
  let gateway: TeamGateway | undefined;
  let original: string;
  /** The line the scripted model edits, as it is in the user's tree now. */
  let line: string;

  before(async function () {
    this.timeout(90_000);
    api = await activateBaton();
    await api.ready;
    original = readFileSync(join(workspaceRoot(), FILE), 'utf8');
    line = original.split('\n').find((l) => l.includes('customer.loyal ?')) ?? '';
    assert.ok(line, `no discount line in ${FILE}`);
    // The agent works on its own copy of the repository, as an agent elsewhere would.
    peer = await startGeminiPeer({ files: { [FILE]: original } });
    gateway = await startProxyGateway(peer);
    const port = new URL(peer.baseUrl).port;
    const gwHost = new URL(gateway.url).host;
    await vscode.workspace
      .getConfiguration('baton')
      .update('privateHosts', [`localhost:${port}`, `127.0.0.1:${port}`, gwHost], vscode.ConfigurationTarget.Global);
  });

  after(async () => {
    await stopTeamGateway(api, gateway);
    await peer?.stop();
  });

  /** Adds and approves an agent as a user does after reviewing its card; returns its card URL. */
  async function approved(url: string, pick: (cardUrl: string) => boolean): Promise<string> {
    const added = (await vscode.commands.executeCommand<string[]>('baton.addAgent', url)) ?? [];
    const cardUrl = added.find(pick);
    assert.ok(cardUrl, `no agent added from ${url}: ${JSON.stringify(added)}`);
    const entry = await waitFor(
      'the card to be read',
      () => api.agents.find(cardUrl)?.served && api.agents.find(cardUrl),
    );
    const r = await api.agents.approve(cardUrl, entry.served?.digest ?? '');
    assert.ok(r.ok, r.ok ? '' : r.message);
    return cardUrl;
  }

  function view(id: string): DelegationRecord | undefined {
    return api.delegations.journalView(id);
  }

  /**
   * The model's next turns: an edit of the discount line, then (once the tool ran) a sentence that ends
   * the turn. A task canceled before its edit runs asks for no second turn: it is left out then, so it
   * cannot answer the next test's first request.
   */
  function scriptEdit(ending = true): void {
    const turns: ModelTurn[] = [
      {
        functionCalls: [
          {
            name: 'replace',
            args: {
              file_path: join(peer.workspace, FILE),
              instruction: 'Raise the loyalty discount to 15%',
              old_string: line,
              new_string: line.replace('0.1', '0.15'),
            },
          },
        ],
      },
    ];
    if (ending) turns.push({ text: 'I raised the loyalty discount to 15%.' });
    peer.model.push(...turns);
  }

  async function delegate(cardUrl: string, task: string): Promise<string> {
    const id = await vscode.commands.executeCommand<string>('baton.delegate', {
      agentId: cardUrl,
      task,
      confirm: false,
    });
    assert.ok(id, 'no delegation id');
    return id;
  }

  async function approveInPanel(id: string, shot: string): Promise<void> {
    await waitFor(
      'the tool call to wait for approval',
      () => (view(id)?.toolCalls?.some((c) => c.status === 'awaiting_approval') ? true : undefined),
      60_000,
    );
    // The panel's own approve button, not the word anywhere on screen: the panel may still be loading.
    await readOnScreen('li.tool-call.waiting vscode-button.approve');
    await driver('screenshot', shot);
    // The user takes a moment to read the diff: the agent's connection is held meanwhile.
    await sleep(6000);
    await driver('click', 'li.tool-call.waiting vscode-button.approve');
  }

  async function waitingForYou(id: string): Promise<void> {
    await waitFor(
      'the agent to end its turn, waiting for the user',
      () => (view(id)?.waiting === 'turn' ? true : undefined),
      60_000,
    );
  }

  async function reviewAndApply(id: string): Promise<void> {
    const before = hashTree(workspaceRoot());
    await waitFor('Review Changes', () => (view(id)?.actions.reviewChanges ? true : undefined), 30_000);
    await driver('expectText', 'Review Changes');
    await vscode.commands.executeCommand('baton.reviewChanges', id);
    const session = await waitFor('the review', () => api.review(id));
    await waitFor('the review to be ready', () => (session.view().state === 'ready' ? true : undefined));
    assert.deepEqual(
      session.view().files.map((f) => f.path),
      [FILE],
    );
    assert.deepEqual(hashTree(workspaceRoot()), before, 'reviewing wrote something');
    await vscode.commands.executeCommand('baton.openDelegation', id);
    await driver('screenshot', `${id.slice(0, 8)}-review`);
    await driver('click', '#apply');
    await waitFor('the apply', () => (session.view().state === 'applied' ? true : undefined));
    const applied = readFileSync(join(workspaceRoot(), FILE), 'utf8');
    assert.equal(applied, original.replace(line, line.replace('0.1', '0.15')));
    session.undo();
    assert.equal(readFileSync(join(workspaceRoot(), FILE), 'utf8'), original);
  }

  it('directly: a tool call approved in the panel, a reply, Done, and the edit reviewed as a patch', async function () {
    this.timeout(180_000);
    const port = new URL(peer.baseUrl).port;
    // The card Gemini's server logs on start names localhost.
    const cardUrl = await approved(`http://localhost:${port}/.well-known/agent-card.json`, () => true);
    scriptEdit();
    const id = await delegate(cardUrl, 'Raise the loyalty discount to 15%');
    await vscode.commands.executeCommand('baton.openDelegation', id);
    await approveInPanel(id, 'gemini-tool-call');
    await waitingForYou(id);
    await driver('expectText', 'waiting for you');
    await driver('screenshot', 'gemini-waiting-for-you');
    assert.equal(readFileSync(join(peer.workspace, FILE), 'utf8'), original.replace(line, line.replace('0.1', '0.15')));

    peer.model.push({ text: 'Nothing else needs to change for the discount.' });
    await driver('click', '#reply-text');
    await driver('type', 'Anything else to change?');
    await driver('click', '#send-reply');
    await waitFor(
      'the answer to the reply',
      () =>
        view(id)?.timeline.some((e) => 'text' in e && String(e.text).includes('Nothing else needs to change'))
          ? true
          : undefined,
      60_000,
    );
    await waitingForYou(id);

    await driver('click', '#done');
    const done = await waitFor('Done', () => (view(id)?.outcome === 'completed' ? view(id) : undefined), 30_000);
    assert.match(done.outcomeReason ?? '', /You finished the delegation/);
    await driver('expectText', 'Completed');
    await waitForTreeRow(delegationTitle('Raise the loyalty discount to 15%'), 'Completed');
    await driver('screenshot', 'gemini-done');
    await reviewAndApply(id);
  });

  it('directly: cancel while a tool call waits ends the task at the agent', async function () {
    this.timeout(120_000);
    const port = new URL(peer.baseUrl).port;
    const cardUrl = `http://localhost:${port}/.well-known/agent-card.json`;
    writeFileSync(join(peer.workspace, FILE), original);
    scriptEdit(false);
    const id = await delegate(cardUrl, 'Raise the loyalty discount, then wait');
    await vscode.commands.executeCommand('baton.openDelegation', id);
    await waitFor(
      'the tool call to wait for approval',
      () => (view(id)?.toolCalls?.some((c) => c.status === 'awaiting_approval') ? true : undefined),
      60_000,
    );
    await driver('click', '#cancel');
    const v = await waitFor('the cancel', () => (view(id)?.outcome === 'canceled' ? view(id) : undefined), 30_000);
    assert.equal(v.cancelConfirmed, true);
    await driver('expectText', 'Canceled');
    await driver('screenshot', 'gemini-canceled');
    // The edit the user never approved was not made.
    assert.equal(readFileSync(join(peer.workspace, FILE), 'utf8'), original);
  });

  it('through a team gateway: the same approval, Done and review', async function () {
    this.timeout(180_000);
    assert.ok(gateway);
    // The agent's copy starts again from the user's tree.
    writeFileSync(join(peer.workspace, FILE), original);
    const cardUrl = await approved(gateway.url, (u) => u.includes('/a2a/gemini/'));
    scriptEdit();
    const task = 'Raise the loyalty discount to 15% (through the gateway)';
    const id = await delegate(cardUrl, task);
    await vscode.commands.executeCommand('baton.openDelegation', id);
    await approveInPanel(id, 'gemini-gateway-tool-call');
    await waitingForYou(id);
    await driver('click', '#done');
    await waitFor('Done', () => (view(id)?.outcome === 'completed' ? true : undefined), 30_000);
    await driver('expectText', 'Completed');
    await waitForTreeRow(delegationTitle(task), 'Completed');
    await driver('screenshot', 'gemini-gateway-done');
    await reviewAndApply(id);
  });
});
