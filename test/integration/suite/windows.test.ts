import * as assert from 'node:assert/strict';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { BatonApi } from '../../../src/extension/extension';
import { activateBaton, waitFor } from './util';

/**
 * Two VS Code windows on two folders at once (the driver's "windows" phase runs this file in both; the
 * role says which one this is). They must share one local gateway: the second window registers its
 * folder with the gateway the first one uses instead of replacing it, both delegate, and the first
 * window's delegations still work after the second attached.
 */
const role = process.env.BATON_WINDOW_ROLE ?? '';
const control = process.env.BATON_TEST_CONTROL ?? '';

interface Mark {
  readonly instanceId: string;
  readonly url: string;
  readonly roots: readonly string[];
}

function folder(): string {
  const f = vscode.workspace.workspaceFolders?.[0];
  if (!f) throw new Error('no workspace folder');
  return f.uri.fsPath;
}

function mark(name: string, value: unknown): void {
  const file = join(control, `window-${name}.json`);
  writeFileSync(`${file}.tmp`, JSON.stringify(value));
  renameSync(`${file}.tmp`, file);
}

function waitForMark<T>(name: string, timeoutMs = 180_000): Promise<T> {
  const file = join(control, `window-${name}.json`);
  return waitFor(
    `the other window to reach "${name}"`,
    () => (existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as T) : undefined),
    timeoutMs,
  );
}

/** What the gateway says about itself, asked with the window's own token (GET /baton/instance). */
async function instance(api: BatonApi): Promise<Mark> {
  const status = await waitFor('the local gateway', () =>
    api.gateway.status.kind === 'running' ? api.gateway.status : undefined,
  );
  const res = await fetch(new URL('/baton/instance', status.info.url), {
    headers: { authorization: `Bearer ${api.gateway.token(status.info)}` },
  });
  assert.equal(res.status, 200);
  const body = (await res.json()) as { instanceId: string; roots: string[] };
  return { instanceId: body.instanceId, url: status.info.url, roots: body.roots };
}

async function formatHere(api: BatonApi): Promise<void> {
  const formatter = await waitFor(
    'the formatter agent from the local gateway',
    () => api.agents.approved().find((a) => a.approval?.card.name.startsWith('Formatter')),
    60_000,
  );
  const id = await vscode.commands.executeCommand<string>('baton.delegate', {
    agentId: formatter.cardUrl,
    task: 'Format the files under src/',
    confirm: false,
  });
  assert.ok(id, 'no delegation id');
  const v = await waitFor(
    `delegation ${id} to settle`,
    () => {
      const j = api.delegations.journalView(id);
      return j?.outcome && j.outcome !== 'unknown' ? j : undefined;
    },
    90_000,
  );
  assert.equal(v.outcome, 'completed', v.outcomeReason);
}

describe(`Two windows share one local gateway (window ${role})`, () => {
  let api: BatonApi;

  before(async () => {
    assert.ok(role === 'A' || role === 'B', `unknown window role ${role}`);
    api = await activateBaton();
    await api.ready;
  });

  if (role === 'A') {
    it('the first window delegates, and still does after the second window attached', async () => {
      await vscode.commands.executeCommand('baton.startGateway');
      await formatHere(api);
      const first = await instance(api);
      assert.ok(first.roots.includes(folder()), JSON.stringify(first.roots));
      mark('A', first);
      const b = await waitForMark<Mark>('B');
      assert.equal(b.instanceId, first.instanceId, 'the second window started a gateway of its own');
      await formatHere(api);
      const after = await instance(api);
      assert.equal(after.instanceId, first.instanceId, 'the gateway was replaced');
      assert.ok(after.roots.includes(folder()) && b.roots.every((r) => after.roots.includes(r)), JSON.stringify(after));
      mark('A-done', after);
    });
  } else {
    it('the second window attaches to the same gateway and delegates on its own folder', async () => {
      const a = await waitForMark<Mark>('A');
      await vscode.commands.executeCommand('baton.startGateway');
      const mine = await instance(api);
      assert.equal(mine.instanceId, a.instanceId, 'a second gateway was started');
      assert.ok(mine.roots.includes(folder()) && mine.roots.includes(a.roots[0]), JSON.stringify(mine.roots));
      await formatHere(api);
      mark('B', await instance(api));
      await waitForMark('A-done');
    });
  }
});
