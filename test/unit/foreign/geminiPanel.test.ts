// What the delegation panel shows of Gemini CLI's real A2A server (test/peers/geminiPeer.ts), and what its
// buttons do: the DelegationManager the extension drives, its journal's view made into the panel's view
// (delegationPanelView), rendered by the panel's own script in Chromium; the buttons' requests, parsed as
// the host parses them, go back to the manager. Screenshots go to test-results/webview/.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { delegationPanelView } from '../../../src/core/delegation/panelView';
import type { DelegationView, PanelSnapshot } from '../../../src/core/protocol/panelProtocol';
import { parseWebviewMessage } from '../../../src/core/protocol/panelProtocol';
import { cliDelegationRequest } from '../../../src/gateway/batonCli';
import { connectAgent, normalizeCard } from '../../../src/node/a2a/clientFactory';
import { DelegationManager } from '../../../src/node/a2a/delegationManager';
import { JournalStore } from '../../../src/node/journalStore';
import { checkResult, finalTaskOf } from '../../../src/node/resultCheck';
import { startGeminiPeer, type GeminiPeer } from '../../peers/geminiPeer';

const repo = resolve(__dirname, '../../..');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const bundle = join(repo, 'dist/webview/panel.js');
const shots = join(repo, 'test-results/webview');
const ORIGINAL = 'export const x = 1;\nexport const y = 10;\n';

const page = `<!DOCTYPE html><html><head><meta charset="utf-8">
<link rel="stylesheet" href="/codicon.css" id="vscode-codicon-stylesheet">
<style>:root{--vscode-font-family:sans-serif;--vscode-font-size:13px;--vscode-editor-font-family:monospace;--vscode-foreground:#3b3b3b;--vscode-editor-background:#fff;--vscode-descriptionForeground:#717171;--vscode-button-background:#005fb8;--vscode-button-foreground:#fff;--vscode-errorForeground:#c00;--vscode-editorWarning-foreground:#b89500;--vscode-textCodeBlock-background:#f3f3f3;--vscode-widget-border:#e5e5e5;--vscode-textLink-foreground:#005fb8;--vscode-progressBar-background:#005fb8}</style>
<script>window.__posted=[];window.acquireVsCodeApi=()=>({postMessage:m=>{window.__posted.push(m);if(m.type==='request'&&m.method!=='refresh')setTimeout(()=>window.postMessage({type:'response',id:m.id,ok:true,result:{}},'*'),10)},getState:()=>undefined,setState:()=>undefined});</script>
</head><body><main id="app"></main><script type="module" src="/panel.js"></script></body></html>`;

async function until<T>(what: string, get: () => T | undefined, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = get();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((ok) => setTimeout(ok, 100));
  }
}

describe('the panel of a delegation to Gemini CLI’s A2A server', () => {
  let peer: GeminiPeer;
  let dir: string;
  let manager: DelegationManager;
  let server: Server | undefined;
  let base = '';
  let browser: Browser | undefined;
  const browserSkip = !existsSync(CHROMIUM)
    ? 'Chromium is not installed (test/integration/setup.sh installs it)'
    : !existsSync(bundle)
      ? 'dist/webview/panel.js is not built (npm run build)'
      : undefined;

  before(async () => {
    peer = await startGeminiPeer({ files: { 'src/a.ts': ORIGINAL } });
    dir = mkdtempSync(join(tmpdir(), 'baton-gemini-panel-'));
    const card = normalizeCard(await (await fetch(peer.cardUrl)).json());
    manager = await DelegationManager.open({
      store: new JournalStore(join(dir, 'journals')),
      // The server's card names http://localhost:<port>/; the pinned endpoint is the address it was reached at.
      connect: () =>
        connectAgent({
          card,
          endpoint: { url: `${peer.baseUrl}/`, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
        }),
    });
    if (!browserSkip) {
      mkdirSync(shots, { recursive: true });
      server = createServer((req, res) => {
        const name = (req.url ?? '/').split('?')[0];
        const file = join(repo, 'dist/webview', name.replace(/^\/+/, ''));
        if (name === '/index.html') res.writeHead(200, { 'content-type': 'text/html' }).end(page);
        else if (existsSync(file))
          res
            .writeHead(200, {
              'content-type': file.endsWith('.js')
                ? 'text/javascript'
                : file.endsWith('.css')
                  ? 'text/css'
                  : 'font/ttf',
            })
            .end(readFileSync(file));
        else res.writeHead(404).end();
      });
      await new Promise<void>((ok) => server?.listen(0, '127.0.0.1', ok));
      const addr = server.address();
      base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: ['--no-sandbox', '--disable-gpu'],
      });
    }
  });
  after(async () => {
    manager?.dispose();
    await browser?.close();
    server?.close();
    await peer?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Renders the view in the panel's script; clicks `selector` and returns the request it posted, parsed as the host does. */
  async function renderAndClick(view: DelegationView, shot: string, selector: string) {
    if (!browser) return undefined;
    const p: Page = await browser.newPage({ viewport: { width: 1000, height: 900 } });
    try {
      await p.goto(`${base}/index.html`);
      await p.waitForFunction(() =>
        (globalThis as unknown as { __posted: { type: string }[] }).__posted.some((m) => m.type === 'ready'),
      );
      const snap: PanelSnapshot = {
        title: 'Baton',
        trusted: true,
        agents: 1,
        delegations: 1,
        producedAt: new Date().toISOString(),
        refreshCount: 0,
        delegation: view,
      };
      await p.evaluate(
        (s) =>
          (globalThis as unknown as { postMessage: (m: unknown, o: string) => void }).postMessage(
            { type: 'snapshot', snapshot: s },
            '*',
          ),
        snap,
      );
      await p.waitForSelector(selector);
      await p.screenshot({ path: join(shots, shot), fullPage: true });
      const text = await p.innerText('body');
      await p.click(selector);
      await p.waitForFunction(() =>
        (globalThis as unknown as { __posted: { type: string; method?: string }[] }).__posted.some(
          (m) => m.type === 'request' && m.method !== 'refresh',
        ),
      );
      const posted = (await p.evaluate(() => (globalThis as unknown as { __posted: unknown[] }).__posted)) as {
        type: string;
        method?: string;
      }[];
      const request = posted.find((m) => m.type === 'request' && m.method !== 'refresh');
      const parsed = parseWebviewMessage(request);
      assert.ok(parsed.ok, JSON.stringify(request));
      assert.equal(parsed.value.type, 'request');
      return { text, request: parsed.value.type === 'request' ? parsed.value : undefined };
    } finally {
      await p.close();
    }
  }

  it('shows the tool call with its diff and Approve/Deny; Approve runs the edit; waiting for you with Done; Done completes with the patch', async (t) => {
    // As test/unit/webview/panelRender.test.ts: the rendering needs Chromium and the built panel script.
    if (browserSkip) t.diagnostic(`the panel is not rendered: ${browserSkip}`);
    peer.model.push(
      {
        functionCalls: [
          {
            name: 'replace',
            args: {
              file_path: join(peer.workspace, 'src', 'a.ts'),
              instruction: 'bump x',
              old_string: 'export const x = 1;',
              new_string: 'export const x = 2;',
            },
          },
        ],
      },
      { text: 'I changed **x** to 2.' },
    );
    const request = cliDelegationRequest({
      requestId: '6f1c3c52-9c43-4b4c-9d55-1e7a4f1d2a01',
      createdAt: Date.now(),
      who: 'tester',
      agent: {
        id: peer.cardUrl,
        name: 'Gemini SDLC Agent',
        endpoint: `${peer.baseUrl}/`,
        protocolBinding: 'JSONRPC',
        protocolVersion: '0.3',
      },
      task: 'bump x in src/a.ts',
      files: [],
      repository: undefined,
      write: true,
    });
    const id = request.requestId;
    await manager.start(request);
    const asking = await until('the approval', () => {
      const v = manager.view(id);
      return v?.waiting === 'approval' ? v : undefined;
    });
    const view = delegationPanelView(asking);
    assert.equal(view.state, 'input-required');
    assert.equal(view.waiting, 'approval');
    const [call] = view.toolCalls ?? [];
    assert.ok(call, JSON.stringify(view));
    assert.equal(call.name, 'replace');
    assert.equal(call.displayName, 'Edit');
    assert.equal(call.status, 'awaiting_approval');
    assert.ok(call.options.includes('proceed_once') && call.options.includes('cancel'), call.options.join());
    assert.match(call.confirmation?.fileDiff ?? '', /-export const x = 1;\n\+export const x = 2;/);
    assert.equal(call.args.file_path, join(peer.workspace, 'src', 'a.ts'));
    assert.ok(!('edit' in call), 'the file contents stay in the host');
    assert.ok(!JSON.stringify(view).includes('parameterSchema'));

    // The user looks at it for a while before deciding (the server drops a task whose connection closed).
    await new Promise((ok) => setTimeout(ok, 10_000));
    const clicked = await renderAndClick(
      view,
      'tool-call-approval.png',
      `li.tool-call[data-call-id="${call.callId}"] vscode-button.approve`,
    );
    if (clicked) {
      assert.match(clicked.text, /Edit \(replace\)/);
      assert.match(clicked.text, /waiting for your approval/);
      assert.deepEqual(clicked.request?.method, 'answerToolCall');
      assert.deepEqual(clicked.request?.params, { callId: call.callId, outcome: 'proceed_once' });
    }
    await manager.answerToolCall(id, call.callId, 'proceed_once');

    const waiting = await until('the end of the turn', () => {
      const v = manager.view(id);
      return v?.waiting === 'turn' ? v : undefined;
    });
    assert.equal(
      readFileSync(join(peer.workspace, 'src', 'a.ts'), 'utf8'),
      'export const x = 2;\nexport const y = 10;\n',
    );
    const turn = delegationPanelView(waiting);
    assert.equal(turn.waiting, 'turn');
    assert.equal(turn.question, undefined);
    assert.equal(turn.toolCalls?.[0].status, 'success');
    assert.equal(waiting.actions.done, true);
    assert.equal(waiting.actions.reply, true);
    assert.equal(waiting.actions.cancel, true);
    const done = await renderAndClick(turn, 'waiting-for-you.png', '#done');
    if (done) {
      assert.match(done.text, /Gemini SDLC Agent finished its turn and is waiting for you/);
      assert.doesNotMatch(done.text, /The agent asks/);
      assert.equal(done.request?.method, 'finish');
    }
    const decision = await manager.finish(id);
    assert.equal(decision.outcome, 'completed');
    await manager.idle(id);
    const loaded = await new JournalStore(join(dir, 'journals')).load(id);
    assert.ok(loaded.entries.some((e) => e.kind === 'finished' && e.by === 'user'));
    const journal = manager.get(id);
    assert.ok(journal);
    const check = await checkResult({
      journal,
      final: finalTaskOf(loaded.entries),
      keys: [],
      signaturesPromised: false,
      signer: peer.baseUrl,
    });
    assert.equal(check.status, 'unsigned');
    assert.equal(
      check.patch?.bytes.toString('utf8'),
      'diff --git a/src/a.ts b/src/a.ts\n--- a/src/a.ts\n+++ b/src/a.ts\n@@ -1,2 +1,2 @@\n-export const x = 1;\n+export const x = 2;\n export const y = 10;\n',
    );
    // The task does not linger at the agent: Done canceled it there.
    const task = (await (
      await fetch(`${peer.baseUrl}/`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: journal.taskId } }),
      })
    ).json()) as { result?: { status?: { state?: string } } };
    assert.equal(task.result?.status?.state, 'canceled');
  });

  it('approves on its own only for an agent the user turned automatic approval on for, and says so', async () => {
    const card = normalizeCard(await (await fetch(peer.cardUrl)).json());
    const auto = await DelegationManager.open({
      store: new JournalStore(join(dir, 'auto-journals')),
      connect: () =>
        connectAgent({
          card,
          endpoint: { url: `${peer.baseUrl}/`, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
        }),
      autoApproveToolCalls: (r) => r.agent.id === 'the-agent-turned-on',
    });
    try {
      const before = readFileSync(join(peer.workspace, 'src', 'a.ts'), 'utf8');
      const replaceY = (to: string) =>
        peer.model.push({
          functionCalls: [
            {
              name: 'replace',
              args: {
                file_path: join(peer.workspace, 'src', 'a.ts'),
                instruction: 'bump y',
                old_string: before.match(/export const y = \d+;/)?.[0] ?? '',
                new_string: `export const y = ${to};`,
              },
            },
          ],
        });
      const start = async (agentId: string, requestId: string) => {
        await auto.start(
          cliDelegationRequest({
            requestId,
            createdAt: Date.now(),
            who: 'tester',
            agent: {
              id: agentId,
              name: 'Gemini',
              endpoint: `${peer.baseUrl}/`,
              protocolBinding: 'JSONRPC',
              protocolVersion: '0.3',
            },
            task: 'bump y',
            files: [],
            repository: undefined,
            write: true,
          }),
        );
      };
      // Another agent: the call waits for the user.
      replaceY('11');
      await start('another-agent', '6f1c3c52-9c43-4b4c-9d55-1e7a4f1d2a02');
      const asked = await until('the approval', () => {
        const v = auto.view('6f1c3c52-9c43-4b4c-9d55-1e7a4f1d2a02');
        return v?.waiting === 'approval' ? v : undefined;
      });
      assert.equal(asked.toolCalls?.[0].autoApproved, undefined);
      await new Promise((ok) => setTimeout(ok, 1_000));
      assert.equal(readFileSync(join(peer.workspace, 'src', 'a.ts'), 'utf8'), before);
      await auto.cancel('6f1c3c52-9c43-4b4c-9d55-1e7a4f1d2a02');

      // The agent the user listed: approved without asking, and the journal says so.
      replaceY('12');
      peer.model.push({ text: 'y is 12 now.' });
      await start('the-agent-turned-on', '6f1c3c52-9c43-4b4c-9d55-1e7a4f1d2a03');
      const ended = await until('the end of the turn', () => {
        const v = auto.view('6f1c3c52-9c43-4b4c-9d55-1e7a4f1d2a03');
        return v?.waiting === 'turn' ? v : undefined;
      });
      assert.match(readFileSync(join(peer.workspace, 'src', 'a.ts'), 'utf8'), /export const y = 12;/);
      assert.equal(ended.toolCalls?.[0].autoApproved, true);
      assert.equal(ended.toolCalls?.[0].status, 'success');
      const notes = ended.timeline.filter((e) => e.kind === 'notice').map((e) => e.text);
      assert.ok(
        notes.some((n) => /Approved Edit \(replace\) a\.ts automatically \(proceed_once\)/.test(n)),
        notes.join('\n'),
      );
    } finally {
      auto.dispose();
    }
  });
});
