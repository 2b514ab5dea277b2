import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { AgentEntry } from '../../../src/core/agentRegistry';
import type { BatonApi } from '../../../src/extension/extension';
import { activateBaton, driver, readOnScreen, sleep, waitFor } from './util';

const TOOLS = ['baton_find_agents', 'baton_delegate', 'baton_get_task', 'baton_cancel_task'];

/** The text of a tool's result. */
function textOf(r: vscode.LanguageModelToolResult): string {
  return r.content.map((p) => (p instanceof vscode.LanguageModelTextPart ? p.value : '')).join('');
}

/** Invokes a tool as a chat agent would, outside a chat request (no invocation token). */
async function invoke(name: string, input: object): Promise<string> {
  const r = await vscode.lm.invokeTool(name, { input, toolInvocationToken: undefined }, undefined);
  return textOf(r);
}

async function settle(api: BatonApi, id: string, timeoutMs = 90_000) {
  return waitFor(
    `delegation ${id} to settle`,
    () => {
      const v = api.delegations.journalView(id);
      return v?.outcome && v.outcome !== 'unknown' ? v : undefined;
    },
    timeoutMs,
  );
}

describe('Chat agents delegate through Baton’s language-model tools', () => {
  let api: BatonApi;
  let formatter: AgentEntry;
  let parentId = '';
  let restoreAi: boolean | undefined;

  before(async () => {
    api = await activateBaton();
    await api.ready;
    // The driver turns VS Code's AI features off for the other suites; when that hides the tools, they
    // are turned on for this suite (and off again after it).
    const listed = () => TOOLS.every((t) => vscode.lm.tools.some((x) => x.name === t));
    await waitFor('Baton’s tools', () => listed() || undefined, 5_000).catch(() => undefined);
    const chat = vscode.workspace.getConfiguration('chat');
    if (!listed() && chat.get<boolean>('disableAIFeatures')) {
      restoreAi = true;
      console.log(
        'BATON:LM chat.disableAIFeatures hides the language-model tools: turning AI features on for this suite',
      );
      await chat.update('disableAIFeatures', false, vscode.ConfigurationTarget.Global);
    }
    await vscode.commands.executeCommand('baton.startGateway');
    formatter = await waitFor(
      'the formatter agent from the local gateway',
      () => api.agents.approved().find((a) => a.approval?.card.name.startsWith('Formatter')),
      60_000,
    );
  });

  after(async () => {
    if (restoreAi)
      await vscode.workspace
        .getConfiguration('chat')
        .update('disableAIFeatures', restoreAi, vscode.ConfigurationTarget.Global);
  });

  it('registers the four tools under their names', async () => {
    const names = await waitFor('Baton’s tools in vscode.lm.tools', () => {
      const listed = vscode.lm.tools.map((t) => t.name).filter((n) => n.startsWith('baton_'));
      return TOOLS.every((t) => listed.includes(t)) ? listed : undefined;
    });
    assert.deepEqual([...names].sort(), [...TOOLS].sort());
    const delegate = vscode.lm.tools.find((t) => t.name === 'baton_delegate');
    assert.match(delegate?.description ?? '', /never applies anything/);
    assert.deepEqual((delegate?.inputSchema as { required?: string[] } | undefined)?.required, ['agent', 'task']);
  });

  it('find agents lists the formatter as usable', async () => {
    const text = await invoke('baton_find_agents', { query: 'format' });
    const json = JSON.parse(text.slice(text.indexOf('{'))) as { agents: { id: string; usable: boolean }[] };
    const f = json.agents.find((a) => a.id === formatter.cardUrl);
    assert.ok(f, text);
    assert.equal(f.usable, true, text);
  });

  it('shows the agent, the task, the context, the capabilities and the deadline before anything is sent', () => {
    const before = api.delegations.list().length;
    const prepared = api.tools.prepareDelegate({
      agent: formatter.cardUrl,
      task: 'Format src/cart.js',
      files: ['src/cart.js'],
      capabilities: { write: true },
      deadlineMinutes: 12,
    });
    const c = prepared.confirmationMessages;
    assert.ok(c, 'delegate asks for confirmation');
    assert.match(c.title, /^Delegate to Formatter/);
    assert.match(c.message, new RegExp(`Agent: Formatter.*\\(${formatter.approval?.endpoint.url ?? '?'}\\)`));
    assert.match(c.message, /Task: Format src\/cart\.js/);
    assert.match(c.message, /Context: Sent: this text and src\/cart\.js\. The agent works on a throwaway copy/);
    assert.match(c.message, /Capabilities: write/);
    assert.match(c.message, /Deadline: 12 minutes/);
    // Read-only tools ask for nothing; preparing sends nothing.
    assert.equal(api.tools.prepareCancel({ id: 'none' }).confirmationMessages, undefined);
    assert.equal(api.delegations.list().length, before);
  });

  it('baton_delegate starts a delegation to the formatter that shows in the Delegations view and the panel', async () => {
    const text = await invoke('baton_delegate', {
      agent: formatter.cardUrl,
      task: 'Format the files under src/',
      files: ['src/cart.js'],
    });
    parentId = /Started delegation ([0-9a-f-]{36})/.exec(text)?.[1] ?? '';
    assert.ok(parentId, text);
    const v = await settle(api, parentId);
    assert.equal(v.outcome, 'completed', v.outcomeReason);
    assert.deepEqual(v.startedBy, { kind: 'agent', via: 'vscode-lm' });
    assert.ok(api.delegations.list().some((d) => d.requestId === parentId));
    await vscode.commands.executeCommand('baton.openDelegation', parentId);
    await driver('expectText', 'started by a chat agent');
    await driver('expectText', 'Completed');
    await driver('screenshot', 'lm-delegation-panel');
  });

  it('baton_get_task returns the result with the patch summary and how to review it, applying nothing', async () => {
    const text = await waitFor('the patch summary', async () => {
      const t = await invoke('baton_get_task', { id: parentId });
      return /Patch: /.test(t) ? t : undefined;
    });
    assert.match(text, /State: completed\./);
    assert.match(text, /- src\/cart\.js \(\+\d+ −\d+\)/);
    assert.match(text, new RegExp(`command baton\\.reviewChanges and the argument "${parentId}"`));
    assert.equal(api.review(parentId), undefined, 'get task opened no review');
  });

  it('a child delegation (parentRequestId) shows under its parent in the view and the parent’s panel', async () => {
    await vscode.commands.executeCommand('workbench.view.extension.baton');
    const text = await invoke('baton_delegate', {
      agent: formatter.cardUrl,
      task: 'Format src/styles.css as part of the parent',
      files: ['src/styles.css'],
      parentRequestId: parentId,
    });
    const childId = /Started delegation ([0-9a-f-]{36})/.exec(text)?.[1] ?? '';
    assert.ok(childId, text);
    await settle(api, childId);
    const tree = api.delegations.tree();
    assert.equal(tree.parentOf.get(childId), parentId);
    // Shown under its parent, which is expanded: the child is a second-level row of the tree.
    await waitFor('the child under its parent in the Delegations view', async () => {
      const rows = await readOnScreen('.monaco-list-row[aria-level="2"]', 'aria-label');
      return rows.some((r) => r.includes('Format src/styles.css as part of the parent')) ? true : undefined;
    });
    await driver('screenshot', 'lm-task-tree');
    await vscode.commands.executeCommand('baton.openDelegation', parentId);
    await driver('expectText', 'Started from within this delegation');
    await driver('screenshot', 'lm-parent-panel-children');
    const panel = api.delegations.panelView(parentId);
    assert.deepEqual(
      panel?.children?.map((c) => [c.id, c.local, c.startedBy]),
      [[childId, true, 'agent']],
    );
    // A click on the child in the parent's panel opens the child's own panel.
    await driver('click', `#children li[data-child="${childId}"] a`);
    await waitFor('the child’s panel', () =>
      api.panels.all().some((p) => p.subject.kind === 'delegation' && p.subject.delegationId === childId)
        ? true
        : undefined,
    );
    await driver('expectText', 'Scope: the file sent as context (src/styles.css): 1 file');
    await driver('screenshot', 'lm-child-panel');
  });

  it('refuses a sixth agent-started delegation within a minute, says why, and audits it', async () => {
    api.tools.waitMs = 0;
    let refused: Error | undefined;
    try {
      // Two were started above; whichever of these is over five within the minute is refused.
      for (let i = 0; i < 6 && !refused; i++) {
        try {
          await invoke('baton_delegate', { agent: formatter.cardUrl, task: `Format burst ${i}` });
        } catch (e) {
          refused = e instanceof Error ? e : new Error(String(e));
        }
      }
    } finally {
      api.tools.waitMs = 50_000;
    }
    assert.ok(refused, 'six delegations in a row were all started');
    assert.match(refused.message, /at most 5 delegations per 60 seconds.*try again in \d+ seconds/);
    await waitFor('the refusal in the audit log', async () =>
      (await api.delegations.readAudit()).some((r) => r.refused?.code === 'burst-cap' && r.startedBy?.kind === 'agent')
        ? true
        : undefined,
    );
    // Let the burst's delegations finish before the next suite looks at the view.
    await sleep(500);
    for (const d of api.delegations.list().filter((x) => x.title.startsWith('Format burst')))
      await settle(api, d.requestId);
  });
});
