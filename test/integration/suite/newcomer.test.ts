import * as assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { BatonApi } from '../../../src/extension/extension';
import { activateBaton, driver, EXTENSION_ID, hashTree, readOnScreen, sleep, waitFor } from './util';

/**
 * A newcomer's first ten minutes, as `npm run demo` sets them up and as a person clicks through them:
 * the local gateway with its built-in agents (paced like the demo's, so progress can be watched and
 * canceled), a second gateway standing for a team's whose agent waits for review, and the palette,
 * quick picks, panel buttons and editor title actions. Everything runs for real: the gateways are
 * `dist/gateway.js`, the agents do their work with Prettier, ESLint and the TypeScript language service.
 */

const TITLE_ACTIONS = '.editor-group-container.active .editor-actions a.action-label';

function workspaceRoot(): string {
  const f = vscode.workspace.workspaceFolders?.[0];
  if (!f) throw new Error('no workspace folder');
  return f.uri.fsPath;
}

function extensionPath(): string {
  const ext = vscode.extensions.getExtension(EXTENSION_ID);
  if (!ext) throw new Error('Baton is not installed');
  return ext.extensionPath;
}

/** Starts `dist/gateway.js` as the demo does; resolves with its info line once it listens. */
async function startGateway(args: string[], detached: boolean): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [join(extensionPath(), 'dist', 'gateway.js'), ...args], {
    detached,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' },
  });
  let out = '';
  let err = '';
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const url = await new Promise<string>((ok, fail) => {
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n')[0];
      if (out.includes('\n')) ok((JSON.parse(line) as { url: string }).url);
    });
    child.on('exit', (code) => fail(new Error(`baton-gateway exited with ${code}: ${err}`)));
    setTimeout(() => fail(new Error(`baton-gateway did not start in 30 s: ${err}`)), 30_000).unref();
  });
  if (detached) child.unref();
  return { child, url };
}

/** Runs a palette command the way a person does: F1, its title, Enter. */
async function palette(title: string): Promise<void> {
  await driver('press', 'F1');
  await driver('expectText', 'Baton: Add Agent'); // the palette lists the commands
  await driver('type', title);
  await sleep(400);
  await driver('press', 'Enter');
}

function settled(api: BatonApi, id: string, timeoutMs = 90_000) {
  return waitFor(
    `delegation ${id} to settle`,
    () => {
      const v = api.delegations.journalView(id);
      return v?.outcome && v.outcome !== 'unknown' ? v : undefined;
    },
    timeoutMs,
  );
}

/** The delegation the panel shows now (the newest one). */
async function newestDelegation(api: BatonApi, after: ReadonlySet<string>): Promise<string> {
  return waitFor(
    'the new delegation',
    () => api.delegations.list().find((v) => !after.has(v.requestId))?.requestId,
    30_000,
  );
}

describe('A newcomer’s first ten minutes, through the UI', function () {
  // Paced like the demo, each delegation takes several seconds on purpose.
  this.timeout(180_000);
  let api: BatonApi;
  let team: ChildProcess | undefined;
  let teamUrl = '';
  const teamState = mkdtempSync(join(tmpdir(), 'baton-team-gateway-'));

  before(async () => {
    api = await activateBaton();
    await api.ready;
    // The demo's local gateway: the built-in agents, paced so each step can be watched (and canceled).
    // Baton finds it in its own state folder and reuses it, as it reuses the one `npm run demo` starts.
    await vscode.commands.executeCommand('baton.stopGateway');
    await startGateway(
      [
        '--state',
        api.gateway.stateDir,
        '--host',
        '127.0.0.1',
        '--port',
        '0',
        '--root',
        workspaceRoot(),
        '--no-agent',
        'lint-fix',
        '--agent-pace-ms',
        '600',
      ],
      true,
    );
    // The team's gateway: a second, separate A2A server on loopback whose agent is not pre-approved.
    const config = join(teamState, 'team-gateway.json');
    writeFileSync(
      config,
      JSON.stringify({
        host: '127.0.0.1',
        roots: [workspaceRoot()],
        localAgents: ['lint-fix'],
        anonymous: { principal: 'demo' },
      }),
    );
    const started = await startGateway(['--config', config, '--state', join(teamState, 'state')], false);
    team = started.child;
    teamUrl = started.url;
  });

  after(() => {
    team?.kill('SIGTERM');
  });

  it('starts the local gateway from the palette and sees its agents, and which coding CLIs are missing', async () => {
    await palette('Baton: Start Local Gateway');
    const refactor = await waitFor(
      'the refactoring agent, approved',
      () => api.agents.approved().find((a) => a.approval?.card.name.startsWith('Refactor')),
      60_000,
    );
    assert.ok(refactor);
    // The agent may be listed from an earlier start while the command still checks the gateway it finds.
    const status = await waitFor(
      'the gateway, running',
      () => (api.gateway.status.kind === 'running' ? api.gateway.status : undefined),
      60_000,
    );
    assert.ok(status.reused, 'Baton reused the running gateway');
    await vscode.commands.executeCommand('workbench.view.extension.baton');
    await driver('expectText', 'coding CLIs not found');
    await driver('expectText', 'Refactor (TypeScript)');
    await driver('screenshot', 'newcomer-agents-view');
  });

  it('adds the team gateway’s agent, which waits for review, and approves it on its page', async () => {
    // What the error on a private host tells the user to do: allow that host and port.
    await vscode.workspace
      .getConfiguration('baton')
      .update('privateHosts', [new URL(teamUrl).host], vscode.ConfigurationTarget.Global);
    await palette('Baton: Add Agent');
    await driver('expectText', 'An Agent Card URL');
    await driver('type', teamUrl);
    await driver('press', 'Enter');
    const entry = await waitFor(
      'the lint fixer, pending',
      () => api.agents.agents.find((a) => a.cardUrl.startsWith(teamUrl) && a.status === 'pending'),
      30_000,
    );
    await driver('expectText', 'Pending review');
    await driver('expectText', 'optional: the card requires no authentication');
    await driver('screenshot', 'newcomer-agent-review');
    await driver('click', '#approve');
    await waitFor(
      'the approval',
      () => (api.agents.find(entry.cardUrl)?.status === 'approved' ? true : undefined),
      20_000,
    );
    await driver('expectText', 'Approved');
    await driver('screenshot', 'newcomer-agent-approved');
  });

  it('delegates an ambiguous rename from the palette: the agent streams its steps, asks which one, and continues after the answer', async () => {
    const before = new Set<string>(api.delegations.list().map((v) => v.requestId));
    const original = hashTree(workspaceRoot());
    await palette('Baton: Delegate…');
    await driver('expectText', 'Delegate to which agent?');
    await driver('type', 'Refactor');
    await sleep(300);
    await driver('press', 'Enter');
    await driver('expectText', 'Task for Refactor');
    await driver('expectText', 'throwaway copy of your repository');
    await driver('type', 'Rename lineTotal to itemTotal');
    await driver('press', 'Enter');
    await driver('expectText', 'Capabilities: read-only');
    await driver('screenshot', 'newcomer-confirm');
    await driver('press', 'Enter');
    const id = await newestDelegation(api, before);
    // Streams: steps arrive one by one while it works.
    await waitFor(
      'two steps while working',
      () => {
        const v = api.delegations.journalView(id);
        return v &&
          v.state === 'working' &&
          v.timeline.filter((e) => e.kind === 'step' || e.kind === 'status').length >= 2
          ? true
          : undefined;
      },
      60_000,
    );
    await driver('expectText', 'Loading the project');
    await driver('screenshot', 'newcomer-streaming');
    await waitFor(
      'the question',
      () => (api.delegations.journalView(id)?.state === 'input-required' ? true : undefined),
      90_000,
    );
    await driver('expectText', 'The agent asks');
    await driver('expectText', 'src/cart.js');
    await driver('screenshot', 'newcomer-question');
    const taskId = api.delegations.journalView(id)?.taskId;
    await driver('click', '#reply-text');
    await driver('type', 'the one in src/cart.js');
    await driver('click', '#send-reply');
    // Until the reply is taken the delegation still reads input-required: wait for the turn after it.
    const v = await waitFor(
      'the task to end after the answer',
      () => {
        const x = api.delegations.journalView(id);
        return x?.outcome && x.outcome !== 'unknown' && x.outcome !== 'input-required' ? x : undefined;
      },
      90_000,
    );
    assert.equal(v.outcome, 'completed', v.outcomeReason);
    assert.equal(v.taskId, taskId, 'the answer continued the same task');
    await driver('expectText', 'Review Changes');
    await driver('screenshot', 'newcomer-rename-completed');
    const patch = (await api.delegations.reviewPatch(id))?.toString('utf8') ?? '';
    assert.match(patch, /^\+.*itemTotal/m);
    assert.ok(!/invoice\.ts/.test(patch), 'the other lineTotal (src/invoice.ts) was left alone');
    assert.deepEqual(hashTree(workspaceRoot()), original, 'nothing is written before the user applies');
  });

  it('cancels a long-running delegation from the panel while it streams', async () => {
    const before = new Set<string>(api.delegations.list().map((v) => v.requestId));
    const refactor = api.agents.approved().find((a) => a.approval?.card.name.startsWith('Refactor'));
    assert.ok(refactor);
    void vscode.commands.executeCommand('baton.delegate', {
      agentId: refactor.cardUrl,
      task: 'Organise imports and fix all',
      confirm: false,
    });
    const id = await newestDelegation(api, before);
    // Mid-stream: the scope is said and the next step is on its way (paced) when the user cancels.
    await waitFor(
      'it to be working',
      () => (api.delegations.journalView(id)?.state === 'working' ? true : undefined),
      60_000,
    );
    await driver('expectText', 'Scope: the whole repository');
    await driver('expectText', 'Working');
    await driver('click', '#cancel');
    const v = await settled(api, id, 60_000);
    assert.equal(v.outcome, 'canceled', v.outcomeReason);
    await driver('expectText', 'Canceled');
    await driver('screenshot', 'newcomer-canceled');
  });

  it('a scoped request changes only the files in scope, and Apply This File from the changes editor writes exactly that file', async () => {
    const formatter = api.agents.approved().find((a) => a.approval?.card.name.startsWith('Formatter'));
    assert.ok(formatter);
    const original = hashTree(workspaceRoot());
    const id =
      (await vscode.commands.executeCommand<string>('baton.delegate', {
        agentId: formatter.cardUrl,
        task: 'Format the files under src/',
        confirm: false,
      })) ?? '';
    const v = await settled(api, id);
    assert.equal(v.outcome, 'completed', v.outcomeReason);
    const patch = (await api.delegations.reviewPatch(id))?.toString('utf8') ?? '';
    const touched = [...patch.matchAll(/^diff --git a\/(\S+)/gm)].map((m) => m[1]);
    assert.ok(touched.length > 0, patch);
    assert.deepEqual(
      touched.filter((p) => !p.startsWith('src/')),
      [],
      `outside src/: ${touched.join(', ')}`,
    );
    await vscode.commands.executeCommand('baton.openDelegation', id);
    await driver('click', '#review');
    const session = await waitFor('the review', () => api.review(id), 30_000);
    await waitFor('the review to be ready', () => (session.view().state === 'ready' ? true : undefined), 30_000);
    await waitFor(
      'the changes editor’s actions',
      async () => ((await readOnScreen(TITLE_ACTIONS, 'aria-label')).includes('Apply All') ? true : undefined),
      20_000,
    );
    await driver('screenshot', 'newcomer-changes-editor');
    const file = touched.includes('src/styles.css') ? 'src/styles.css' : touched[0];
    await session.open(file);
    await waitFor(
      'the file’s diff actions',
      async () => ((await readOnScreen(TITLE_ACTIONS, 'aria-label')).includes('Apply This File') ? true : undefined),
      20_000,
    );
    await driver('click', `${TITLE_ACTIONS}[aria-label="Apply This File"]`);
    await waitFor('the apply', () => (session.view().applied ? true : undefined), 20_000);
    const now = hashTree(workspaceRoot());
    assert.deepEqual(
      Object.keys(now).filter((k) => now[k] !== original[k]),
      [file],
    );
    await driver('screenshot', 'newcomer-applied-one-file');
    // Leave the tree as the next tests expect it.
    await driver('click', '#undo').catch(() => undefined);
    await vscode.commands.executeCommand('baton.openDelegation', id);
    await driver('click', '#undo');
    await waitFor(
      'the undo',
      () => {
        const h = hashTree(workspaceRoot());
        return Object.keys(h).every((k) => h[k] === original[k]) ? true : undefined;
      },
      20_000,
    );
    assert.ok(existsSync(join(workspaceRoot(), file)) && readFileSync(join(workspaceRoot(), file)).length > 0);
  });
});
