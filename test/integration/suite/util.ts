import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import * as vscode from 'vscode';
import type { BatonApi } from '../../../src/extension/extension';

export const EXTENSION_ID = 'baton.baton';

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Asks the browser driver (test/integration/driver.ts) to act on the workbench as a user would: click
 * an element of a webview, wait for text on screen, take a screenshot. The request goes out as a log
 * line; the driver answers by writing ack-<id>.json into $BATON_TEST_CONTROL, which this waits for.
 */
export async function driver(
  command:
    'click' | 'screenshot' | 'expectText' | 'type' | 'press' | 'reload' | 'windowFocus' | 'read' | 'count' | 'colors',
  ...args: string[]
): Promise<unknown> {
  const dir = process.env.BATON_TEST_CONTROL;
  if (!dir) throw new Error('BATON_TEST_CONTROL is not set');
  const id = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
  console.log(`BATON:DRIVER ${JSON.stringify({ id, pid: process.pid, command, args })}`);
  const file = join(dir, `ack-${process.pid}-${id}.json`);
  const ack = await waitFor(
    `the driver to ${command} ${args.join(' ')}`,
    () =>
      existsSync(file)
        ? (JSON.parse(readFileSync(file, 'utf8')) as { ok: boolean; error?: string; result?: unknown })
        : undefined,
    45_000,
  );
  if (!ack.ok) throw new Error(`driver could not ${command} ${args.join(' ')}: ${ack.error ?? 'no reason given'}`);
  return ack.result;
}

/** The attribute (or, without one, the text) of every element on screen matching a selector, as the driver reads them. */
export async function readOnScreen(selector: string, attribute?: string): Promise<string[]> {
  const r = await driver('read', selector, ...(attribute ? [attribute] : []));
  return Array.isArray(r) ? r.map(String) : [];
}

export async function activateBaton(): Promise<BatonApi> {
  const ext = vscode.extensions.getExtension<BatonApi>(EXTENSION_ID);
  if (!ext) throw new Error(`extension ${EXTENSION_ID} is not installed in this extension host`);
  return ext.activate();
}

export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(100);
  }
}

export function webviewTabs(viewType: string): vscode.Tab[] {
  return vscode.window.tabGroups.all
    .flatMap((g) => g.tabs)
    .filter((t) => t.input instanceof vscode.TabInputWebview && t.input.viewType.endsWith(viewType));
}

/** Every file of the user's tree (but .git) with its sha256: the tree is "byte-identical" when this is equal. */
export function hashTree(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      if (name === '.git') continue;
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else out[relative(root, p)] = createHash('sha256').update(readFileSync(p)).digest('hex');
    }
  };
  walk(root);
  return out;
}

/**
 * Waits until the Delegations view shows a row whose label has every one of these words (a title and
 * a state, say): the tree redraws after the panel does, so a screenshot taken on the panel's word
 * alone can catch the row one state behind.
 */
export async function waitForTreeRow(...words: string[]): Promise<void> {
  await waitFor(`a Delegations row saying ${words.map((w) => JSON.stringify(w)).join(' and ')}`, async () => {
    const rows = await readOnScreen('.monaco-list-row', 'aria-label');
    return rows.some((r) => words.every((w) => r.includes(w))) ? true : undefined;
  });
}

/** A team's gateway: a separate `baton-gateway` process of the build under test. */
export interface TeamGateway {
  readonly url: string;
  /** Writes `config` as its config file and sends it SIGHUP; resolves with the line it logged for it. */
  reload(config: Record<string, unknown>): Promise<string>;
  stop(): void;
}

/** Starts `baton-gateway` with `config` as its config file (and `args`), in a folder of its own. */
export async function startTeamGateway(
  config: Record<string, unknown>,
  args: readonly string[] = [],
): Promise<TeamGateway> {
  const repo = process.env.BATON_REPO ?? '';
  const dir = mkdtempSync(join(tmpdir(), 'baton-it-gw-'));
  const file = join(dir, 'gateway.json');
  writeFileSync(file, JSON.stringify(config));
  const child: ChildProcess = spawn(
    process.execPath,
    [join(repo, 'dist/gateway.js'), '--config', file, '--state', join(dir, 'state'), ...args],
    // Node itself, also where the extension host is Electron.
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' } },
  );
  const url = await new Promise<string>((ok, fail) => {
    let out = '';
    const to = setTimeout(() => fail(new Error(`the gateway did not start: ${out}`)), 30_000);
    child.stdout?.on('data', (b: Buffer) => {
      out += b.toString();
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) {
        clearTimeout(to);
        ok((JSON.parse(line) as { url: string }).url);
      }
    });
    child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
    child.on('exit', (c) => fail(new Error(`the gateway exited (${c}): ${out}`)));
  });
  let log = '';
  child.stderr?.on('data', (b: Buffer) => (log += b.toString()));
  const reloads = (): string[] => log.split('\n').filter((l) => l.includes('SIGHUP:'));
  return {
    url,
    reload: async (next) => {
      const before = reloads().length;
      writeFileSync(file, JSON.stringify(next));
      child.kill('SIGHUP');
      return waitFor('the gateway to read its config again', () => reloads()[before]);
    },
    stop: () => {
      child.kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The first workspace folder's path (the sample repository the suite runs on). */
export function workspaceRoot(): string {
  const f = vscode.workspace.workspaceFolders?.[0];
  if (!f) throw new Error('no workspace folder');
  return f.uri.fsPath;
}

/**
 * Adds a team gateway's agents as a user does (its host allowed as private, Add Agent with its URL)
 * and approves the one whose card URL has `/a2a/<agentId>`; answers its card URL.
 */
export async function approveTeamAgent(api: BatonApi, gatewayUrl: string, agentId: string): Promise<string> {
  const settings = vscode.workspace.getConfiguration('baton');
  const hosts = settings.get<string[]>('privateHosts') ?? [];
  await settings.update('privateHosts', [...hosts, new URL(gatewayUrl).host], vscode.ConfigurationTarget.Global);
  const added = (await vscode.commands.executeCommand<string[]>('baton.addAgent', gatewayUrl)) ?? [];
  const cardUrl = added.find((u) => u.includes(`/a2a/${agentId}`));
  if (!cardUrl) throw new Error(`no agent ${agentId} added from ${gatewayUrl}: ${JSON.stringify(added)}`);
  const entry = await waitFor(
    'the card to be read',
    () => api.agents.find(cardUrl)?.served && api.agents.find(cardUrl),
  );
  const r = await api.agents.approve(cardUrl, entry.served?.digest ?? '');
  if (!r.ok) throw new Error(r.message);
  return cardUrl;
}

/**
 * Stops a team gateway and removes its agents from Baton's list: a later test that looks for an
 * approved agent by name (say, the first "Formatter") must not find this one, gone with its gateway.
 */
export async function stopTeamGateway(api: BatonApi | undefined, gateway: TeamGateway | undefined): Promise<void> {
  if (!gateway) return;
  const base = gateway.url.replace(/\/$/, '');
  for (const a of api?.agents.agents ?? [])
    if (a.cardUrl === base || a.cardUrl.startsWith(`${base}/`)) await api?.agents.remove(a.cardUrl);
  gateway.stop();
}
