import * as assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { AgentEntry } from '../../../src/core/agentRegistry';
import { reviewDocQuery } from '../../../src/core/review/reviewUri';
import type { BatonApi } from '../../../src/extension/extension';
import { activateBaton, driver, hashTree, readOnScreen, sleep, waitFor } from './util';

function workspaceRoot(): string {
  const f = vscode.workspace.workspaceFolders?.[0];
  if (!f) throw new Error('no workspace folder');
  return f.uri.fsPath;
}

/** A review document: the file's own path, the review and the side in the query. */
function reviewDoc(id: string, kind: 'ours' | 'theirs', file: string): vscode.Uri {
  return vscode.Uri.file(join(workspaceRoot(), file)).with({
    scheme: 'baton-review',
    query: reviewDocQuery({ review: id, kind, file }),
  });
}

/** The title bar actions of the active editor, as the workbench shows them. */
const TITLE_ACTIONS = '.editor-group-container.active .editor-actions a.action-label';

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

describe('Delegations to the local gateway’s formatter, and review', () => {
  let api: BatonApi;
  let formatter: AgentEntry;
  let id: string;
  let original: Record<string, string>;

  before(async () => {
    api = await activateBaton();
    await api.ready;
    await vscode.commands.executeCommand('baton.startGateway');
    formatter = await waitFor(
      'the formatter agent from the local gateway',
      () => api.agents.approved().find((a) => a.approval?.card.name.startsWith('Formatter')),
      60_000,
    );
    original = hashTree(workspaceRoot());
  });

  it('delegates “format src” and streams it in the panel to a completed, signed result', async () => {
    id =
      (await vscode.commands.executeCommand<string>('baton.delegate', {
        agentId: formatter.cardUrl,
        task: 'Format the files under src/',
        confirm: false,
      })) ?? '';
    assert.ok(id, 'no delegation id');
    const settled = await settle(api, id);
    assert.equal(settled.outcome, 'completed', settled.outcomeReason);
    const panel = await waitFor('the signature check', () => api.delegations.panelView(id)?.signature);
    const v = api.delegations.journalView(id);
    assert.ok(v?.actions.reviewChanges, 'no changes.patch to review');
    assert.ok(v.timeline.length >= 2, JSON.stringify(v.timeline));
    assert.equal(panel.status, 'verified', panel.detail);
    await driver('expectText', 'Completed');
    await driver('expectText', 'Review Changes');
    await driver('screenshot', 'delegation-completed');
    // The agent worked in a throwaway copy: the user's tree is untouched until they apply.
    assert.deepEqual(hashTree(workspaceRoot()), original);
  });

  it('opens the changes editor with every changed file', async () => {
    await vscode.commands.executeCommand('baton.reviewChanges', id);
    const session = await waitFor('the review', () => api.review(id));
    await waitFor('the review to be ready', () => (session.view().state === 'ready' ? true : undefined));
    const paths = session
      .view()
      .files.map((f) => f.path)
      .sort();
    assert.ok(paths.includes('src/cart.js') && paths.includes('src/styles.css'), paths.join(', '));
    assert.equal(session.view().checkOk, true);
    const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs);
    // Says once what it is: who made the changes, and (VS Code adds it) how many files.
    const tab = tabs.find((t) => t.label.startsWith('Baton: Formatter'));
    assert.ok(tab, tabs.map((t) => t.label).join(' | '));
    assert.equal(tab.label.match(/files?\)/g)?.length, 1, tab.label);
    // The title bar has the review's actions, with their icons.
    const actions = await waitFor('the review actions in the title bar', async () => {
      const labels = await readOnScreen(TITLE_ACTIONS, 'aria-label');
      return labels.includes('Apply All') && labels.includes('Reject') ? labels : undefined;
    });
    assert.ok(!actions.includes('Apply This File'), `the changes editor shows no single file: ${actions.join(', ')}`);
    const icons = await readOnScreen(`${TITLE_ACTIONS}[aria-label="Apply All"]`, 'class');
    assert.match(icons[0] ?? '', /codicon-check-all/);
    // Each entry reads as the change it is: modified files carry no rename mark, the list has no review ids.
    const names = await readOnScreen('.multiDiffEntry .file-path .title.modified');
    const marks = await readOnScreen('.multiDiffEntry .file-path .status');
    assert.ok(names.length > 0, 'no entries on screen');
    assert.ok(
      names.every((n) => !n.includes(id) && !n.includes('/after')),
      names.join(' | '),
    );
    assert.ok(!marks.some((m) => m.trim() === 'R'), `files marked as renamed: ${marks.join(', ')}`);
    await driver('screenshot', 'changes-editor');
  });

  it('opens one file in the diff editor, the “after” side read-only from the patch', async () => {
    const session = api.review(id);
    assert.ok(session);
    await session.open('src/cart.js');
    const tab = await waitFor('the diff tab', () => vscode.window.tabGroups.activeTabGroup.activeTab);
    assert.ok(tab.input instanceof vscode.TabInputTextDiff, tab.label);
    assert.equal(tab.input.modified.scheme, 'baton-review');
    assert.equal(tab.input.original.fsPath, join(workspaceRoot(), 'src/cart.js'));
    const after = (await vscode.workspace.openTextDocument(tab.input.modified)).getText();
    assert.match(after, /const TAX_RATE|var TAX_RATE = 0\.2;/);
    await driver('screenshot', 'file-diff');
  });

  it('Apply This File in a file’s diff editor writes exactly that file; the rest can still be applied', async () => {
    const session = api.review(id);
    assert.ok(session);
    await session.open('src/styles.css');
    await waitFor('the diff of src/styles.css', () => {
      const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
      return input instanceof vscode.TabInputTextDiff &&
        input.modified.scheme === 'baton-review' &&
        input.modified.fsPath === join(workspaceRoot(), 'src/styles.css')
        ? true
        : undefined;
    });
    const actions = await waitFor('the file actions in the title bar', async () => {
      const labels = await readOnScreen(TITLE_ACTIONS, 'aria-label');
      return labels.includes('Apply This File') ? labels : undefined;
    });
    assert.ok(actions.includes('Apply All') && actions.includes('Reject'), actions.join(', '));
    await driver('screenshot', 'file-diff-actions');
    await driver('click', `${TITLE_ACTIONS}[aria-label="Apply This File"]`);
    await waitFor('the apply', () => (session.view().applied ? true : undefined));
    const now = hashTree(workspaceRoot());
    assert.deepEqual(
      Object.keys(now).filter((k) => now[k] !== original[k]),
      ['src/styles.css'],
    );
    const view = session.view();
    assert.equal(view.state, 'ready', 'the other files can still be applied');
    assert.deepEqual(
      view.files.filter((f) => f.applied !== 'none').map((f) => f.path),
      ['src/styles.css'],
    );
    await vscode.commands.executeCommand('baton.openDelegation', id);
    await driver('expectText', 'left to apply');
    await sleep(500);
    await driver('screenshot', 'review-partly-applied');
    await driver('click', '#undo');
    await waitFor('the undo', () =>
      session.view().applied === undefined && session.view().state === 'ready' ? true : undefined,
    );
    assert.deepEqual(hashTree(workspaceRoot()), original);
  });

  it('applies one file (per file) from the panel, writing exactly that file; undo restores it byte-for-byte', async () => {
    const session = api.review(id);
    assert.ok(session);
    for (const f of session.view().files) if (f.path !== 'src/styles.css') session.select(f.id, undefined, false);
    // The title-bar apply above wrote its own audit line: this apply must add exactly one more.
    const appliedLines = async () =>
      (await api.delegations.readAudit()).filter((l) => l.requestId === id && l.review?.action === 'applied');
    const auditBefore = (await appliedLines()).length;
    await vscode.commands.executeCommand('baton.openDelegation', id);
    await driver('expectText', 'Apply Selected (1)');
    await driver('screenshot', 'review-one-file');
    await driver('click', '#apply');
    // The others stay open for applying: the review is still ready, with what was applied marked.
    await waitFor('the apply', () => (session.view().applied ? true : undefined));
    assert.equal(session.view().state, 'ready');
    const now = hashTree(workspaceRoot());
    const changed = Object.keys(now).filter((k) => now[k] !== original[k]);
    assert.deepEqual(changed, ['src/styles.css']);
    // What was applied is in the delegation's journal and in the audit log, with digests.
    await waitFor(
      'the journal notice',
      () =>
        api.delegations
          .journalView(id)
          ?.timeline.some((e) => e.kind === 'notice' && e.text.includes('You applied 1 file(s): src/styles.css')) ||
        undefined,
    );
    const audit = await waitFor('the audit line', async () => {
      const lines = await appliedLines();
      return lines.length > auditBefore ? lines.slice(auditBefore) : undefined;
    });
    assert.equal(audit.length, 1);
    assert.deepEqual(
      audit[0].review?.files.map((f) => f.path),
      ['src/styles.css'],
    );
    assert.ok(audit[0].review?.digests.every((d) => d.before !== d.after));
    await driver('click', '#undo');
    // Still ready after a partial apply: the undo is done when nothing is applied and the review is checked again.
    await waitFor('the undo', () =>
      session.view().applied === undefined && session.view().state === 'ready' ? true : undefined,
    );
    assert.deepEqual(hashTree(workspaceRoot()), original);
  });

  it('applies chosen hunks only (per hunk)', async () => {
    const session = api.review(id);
    assert.ok(session);
    const pricing = session.view().files.find((f) => f.path === 'src/pricing.js');
    assert.ok(pricing && pricing.hunks.length >= 2, `pricing.js has ${pricing?.hunks.length} hunks`);
    for (const f of session.view().files) session.select(f.id, undefined, false);
    // The second hunk only: describePrice() is formatted, discountFor() is left as it was.
    session.select(pricing.id, pricing.hunks[1].id, true);
    assert.equal(session.view().files.find((f) => f.id === pricing.id)?.selection, 'some');
    await vscode.commands.executeCommand('baton.openDelegation', id);
    await driver('screenshot', 'review-one-hunk');
    await session.apply(false);
    const now = hashTree(workspaceRoot());
    assert.deepEqual(
      Object.keys(now).filter((k) => now[k] !== original[k]),
      ['src/pricing.js'],
    );
    const text = readFileSync(join(workspaceRoot(), 'src/pricing.js'), 'utf8');
    assert.match(text, /function describePrice\(customer, amount\) \{/);
    assert.match(text, /function discountFor\(customer\)\{/, 'the first hunk was applied too');
    session.undo();
    assert.deepEqual(hashTree(workspaceRoot()), original);
  });

  it('a conflicting change goes 3-way into the merge editor; abort restores the files', async () => {
    const session = api.review(id);
    assert.ok(session);
    const file = join(workspaceRoot(), 'src/cart.js');
    const mine = readFileSync(file, 'utf8').replace('var TAX_RATE = 0.2', 'var TAX_RATE = 0.25 // changed by the user');
    writeFileSync(file, mine);
    const edited = hashTree(workspaceRoot());
    await session.prepare();
    const cart = session.view().files.find((f) => f.path === 'src/cart.js');
    assert.equal(cart?.applies, false, 'the check should see the conflict');
    for (const f of session.view().files) session.select(f.id, undefined, f.path === 'src/cart.js');
    const applied = await session.apply(true);
    assert.equal(applied, false);
    assert.deepEqual(session.view().conflicts, ['src/cart.js']);
    const tab = await waitFor('the merge editor', () =>
      vscode.window.tabGroups.all
        .flatMap((g) => g.tabs)
        .find(
          (t) =>
            typeof t.input === 'object' &&
            t.input !== null &&
            'base' in t.input &&
            'input1' in t.input &&
            'result' in t.input,
        ),
    );
    assert.ok(tab);
    const base = await vscode.workspace.openTextDocument(reviewDoc(id, 'ours', 'src/cart.js'));
    assert.match(base.getText(), /changed by the user/);
    const theirs = await vscode.workspace.openTextDocument(reviewDoc(id, 'theirs', 'src/cart.js'));
    assert.match(theirs.getText(), /const TAX_RATE = 0\.2;|var TAX_RATE = 0\.2;/);
    await new Promise((r) => setTimeout(r, 1500)); // let the merge editor render before the screenshot
    await driver('screenshot', 'merge-editor');
    await session.abortMerge();
    assert.deepEqual(hashTree(workspaceRoot()), edited);
    writeFileSync(
      file,
      readFileSync(file, 'utf8').replace('var TAX_RATE = 0.25 // changed by the user', 'var TAX_RATE = 0.2'),
    );
    assert.deepEqual(hashTree(workspaceRoot()), original);
  });

  it('reject writes nothing and keeps the patch in the journal', async () => {
    const session = api.review(id);
    assert.ok(session);
    await session.prepare();
    await vscode.commands.executeCommand('baton.openDelegation', id);
    await driver('click', '#reject');
    await waitFor('the rejection', () => (session.view().state === 'rejected' ? true : undefined));
    assert.deepEqual(hashTree(workspaceRoot()), original);
    assert.ok(await api.delegations.reviewPatch(id));
    await vscode.commands.executeCommand('workbench.view.extension.baton');
    await driver('screenshot', 'delegations-view');
  });
});
