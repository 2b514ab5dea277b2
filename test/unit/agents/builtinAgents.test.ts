import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { build } from 'esbuild';
import { format } from 'prettier';
import { discoverLocalAgents } from '../../../src/gateway/agents/discover';
import type { LocalAgent, LocalRunEvent } from '../../../src/gateway/agents/localAgent';
import { WorkspaceManager } from '../../../src/gateway/workspace/workspaceManager';
import { applyCheck, applyToCopy, fingerprint, makeRepo, sh, tempSpace, write } from '../workspace/repoFixtures';
import type { TempSpace } from '../workspace/repoFixtures';

const SAMPLE = resolve(__dirname, '../../../samples/demo-repo');
const STANDIN = resolve(__dirname, '../../fixtures/standin-cli');

describe('built-in agents', () => {
  let space: TempSpace;
  let manager: WorkspaceManager;
  let formatter: LocalAgent;
  let lintFix: LocalAgent;
  let n = 0;

  before(async () => {
    space = tempSpace('baton-builtin-');
    manager = new WorkspaceManager({ root: space.root, userHome: space.home });
    const agents = await discoverLocalAgents({ manager, clis: false });
    formatter = agents.find((a) => a.id === 'formatter')!;
    lintFix = agents.find((a) => a.id === 'lint-fix')!;
  });
  after(() => space.dispose());

  const demoRepo = (name: string) => {
    const dir = join(space.base, name);
    cpSync(SAMPLE, dir, { recursive: true });
    sh(dir, 'init', '-q', '-b', 'main');
    sh(dir, 'add', '-A');
    sh(dir, 'commit', '-q', '-m', 'demo');
    return dir;
  };
  const run = async (agent: LocalAgent, repo: string, files: string[] = [], prompt = 'go') => {
    const events: LocalRunEvent[] = [];
    const result = await agent.run(
      {
        taskId: `b-${++n}`,
        repoPath: repo,
        prompt,
        files,
        capabilities: { write: false, shell: false, network: false },
        deadline: Date.now() + 60_000,
        signal: new AbortController().signal,
      },
      (e) => events.push(e),
    );
    return { result, events };
  };

  it('discovers the built-ins and the CLIs on PATH as LocalAgents', async () => {
    const all = await discoverLocalAgents({ manager, pathVar: STANDIN });
    assert.deepEqual(
      all.map((a) => a.id),
      ['formatter', 'lint-fix', 'refactor', 'claude', 'codex', 'gemini', 'copilot', 'opencode'],
    );
    assert.deepEqual(
      all.map((a) => a.kind),
      ['builtin', 'builtin', 'builtin', 'headless', 'headless', 'headless', 'headless', 'headless'],
    );
    for (const a of all) assert.ok(a.skills.length && a.name && a.description);
    const none = await discoverLocalAgents({ manager, pathVar: join(space.base, 'empty-path') });
    assert.deepEqual(
      none.map((a) => a.id),
      ['formatter', 'lint-fix', 'refactor'],
    );
  });

  it('formatter: Prettier over the whole sample repo with its .prettierrc; the patch applies and the result is formatted', async () => {
    const repo = demoRepo('demo-format');
    write(repo, 'src/untracked.js', 'const  x = {a:1}\n');
    const before = fingerprint(repo);
    const { result, events } = await run(formatter, repo);
    assert.equal(result.outcome, 'completed', result.reason);
    assert.equal(events[0].kind, 'started');
    for (const f of [
      'src/cart.js',
      'src/format.ts',
      'src/styles.css',
      'config/settings.json',
      'README.md',
      'package.json',
      'src/untracked.js',
    ]) {
      assert.match(result.patch, new RegExp(`diff --git a/${f.replace('.', '\\.')}`), `${f} formatted`);
    }
    assert.match(result.summary ?? '', /^Prettier formatted \d+ of \d+ file/);
    const check = applyCheck(repo, result.patch);
    assert.ok(check.ok, check.message);
    assert.equal(fingerprint(repo), before, 'the user repo is untouched');
    const applied = applyToCopy(repo, result.patch, join(space.base, 'demo-format-applied'));
    const cart = readFileSync(join(applied, 'src/cart.js'), 'utf8');
    assert.equal(
      await format(cart, { filepath: 'cart.js', singleQuote: true, printWidth: 100 }),
      cart,
      'stable under Prettier with the repo options',
    );
    assert.match(cart, /item\['price'\]/, 'singleQuote from .prettierrc');
    assert.equal(
      readFileSync(join(applied, 'src/styles.css'), 'utf8'),
      '.cart {\n  display: flex;\n  flex-direction: column;\n  gap: 8px;\n}\n.cart .item {\n  padding: 4px 8px;\n  border: 1px solid #ccc;\n  border-radius: 4px;\n}\n.total {\n  font-weight: bold;\n  color: #333;\n}\n',
    );
  });

  it('formatter: only the named files; paths outside the repo, symlinks and unknown types are skipped and said so', async () => {
    const repo = demoRepo('demo-named');
    symlinkSync('/etc/hostname', join(repo, 'src/link.js'));
    sh(repo, 'add', '-A');
    sh(repo, 'commit', '-qm', 'link');
    const { result, events } = await run(formatter, repo, [
      'src/styles.css',
      '../outside.js',
      '/etc/passwd',
      'src/link.js',
      'src/.git/x.js',
      'bin.exe',
    ]);
    assert.equal(result.outcome, 'completed', result.reason);
    assert.deepEqual(
      [...result.patch.matchAll(/^diff --git a\/(\S+)/gm)].map((m) => m[1]),
      ['src/styles.css'],
    );
    const skipped = events
      .filter((e) => e.kind === 'step' && e.text.startsWith('Skipped'))
      .map((e) => (e.kind === 'step' ? e.text : ''));
    assert.equal(skipped.length, 5, skipped.join('\n'));
    assert.ok(skipped.some((s) => /src\/link\.js \(a symbolic link\)/.test(s)));
    assert.ok(applyCheck(repo, result.patch).ok);
  });

  const touched = (patch: string) => [...patch.matchAll(/^diff --git a\/(\S+)/gm)].map((m) => m[1]).sort();
  const steps = (events: LocalRunEvent[]) => events.flatMap((e) => (e.kind === 'step' ? [e.text] : []));

  it('formatter: "Format the files under src/" formats src/ only, and the first step says so', async () => {
    const repo = demoRepo('scope-format-src');
    const { result, events } = await run(formatter, repo, [], 'Format the files under src/');
    assert.equal(result.outcome, 'completed', result.reason);
    assert.deepEqual(touched(result.patch), ['src/cart.js', 'src/format.ts', 'src/pricing.js', 'src/styles.css']);
    assert.equal(steps(events)[0], 'Scope: src/ (named in the task): 5 files');
    assert.ok(applyCheck(repo, result.patch).ok);
  });

  it('formatter: globs, Windows paths and quoted names in the task; what matches nothing is said', async () => {
    const repo = demoRepo('scope-format-glob');
    const { result, events } = await run(
      formatter,
      repo,
      [],
      'Format src/**/*.ts, "config\\settings.json" and src/missing.css',
    );
    assert.equal(result.outcome, 'completed', result.reason);
    assert.deepEqual(touched(result.patch), ['config/settings.json', 'src/format.ts']);
    assert.equal(steps(events)[0], 'Scope: src/**/*.ts and config\\settings.json (named in the task): 3 files');
    assert.ok(
      steps(events).includes('Nothing in the repository matches src/missing.css (named in the task); it was left out.'),
    );
  });

  it('formatter: a task whose every path matches nothing fails with the names and what exists, and changes nothing', async () => {
    const repo = demoRepo('scope-format-missing');
    const { result } = await run(formatter, repo, [], 'Format the files under lib/ and app.ts');
    assert.equal(result.outcome, 'failed');
    assert.equal(result.patch, '');
    assert.match(result.reason ?? '', /Nothing in the repository matches lib\/ and app\.ts/);
    assert.match(
      result.reason ?? '',
      /The repository has: \.gitignore, \.prettierrc, README\.md, config\/, package\.json, src\//,
    );
  });

  it('formatter: a folder sent as context is the scope, whatever the task names', async () => {
    const repo = demoRepo('scope-format-context');
    const { result, events } = await run(formatter, repo, ['config/', 'README.md'], 'Format src/cart.js');
    assert.equal(result.outcome, 'completed', result.reason);
    assert.deepEqual(touched(result.patch), ['README.md', 'config/settings.json']);
    assert.equal(steps(events)[0], 'Scope: the 2 files and folders sent as context (config/ and README.md): 2 files');
    assert.ok(steps(events).includes('The task also names src/cart.js; the files sent as context decide the scope.'));
  });

  it('formatter: with no files sent and none named, the whole repository, said first', async () => {
    const repo = demoRepo('scope-format-all');
    const { result, events } = await run(formatter, repo, [], 'Format the whole repository');
    assert.equal(result.outcome, 'completed', result.reason);
    assert.deepEqual(touched(result.patch), [
      'README.md',
      'config/settings.json',
      'package.json',
      'src/cart.js',
      'src/format.ts',
      'src/pricing.js',
      'src/styles.css',
    ]);
    assert.equal(steps(events)[0], 'Scope: the whole repository (no files were sent and the task names none): 9 files');
  });

  it('lint-fix: "Fix the lint problems in src/cart.js" fixes src/cart.js only', async () => {
    const repo = demoRepo('scope-lint-file');
    const { result, events } = await run(lintFix, repo, [], 'Fix the lint problems in src/cart.js');
    assert.equal(result.outcome, 'completed', result.reason);
    assert.deepEqual(touched(result.patch), ['src/cart.js']);
    assert.equal(steps(events)[0], 'Scope: src/cart.js (named in the task): 1 file');
    assert.match(result.summary ?? '', /^ESLint fixed 1 of 1 file/);
  });

  it('lint-fix: a file sent as context is the scope; no scope means every JS/TS file; a non-JS name fails', async () => {
    const repo = demoRepo('scope-lint-context');
    const ctx = await run(lintFix, repo, ['src/format.ts'], 'Fix the lint problems in src/cart.js');
    assert.equal(ctx.result.outcome, 'completed', ctx.result.reason);
    assert.deepEqual(touched(ctx.result.patch), ['src/format.ts']);
    assert.equal(steps(ctx.events)[0], 'Scope: the file sent as context (src/format.ts): 1 file');
    const all = await run(lintFix, repo, [], 'Fix all lint problems');
    assert.deepEqual(touched(all.result.patch), ['src/cart.js', 'src/format.ts']);
    assert.equal(
      steps(all.events)[0],
      'Scope: the whole repository (no files were sent and the task names none): 4 files',
    );
    const css = await run(lintFix, repo, [], 'Fix the lint problems in src/styles.css');
    assert.equal(css.result.outcome, 'failed');
    assert.match(css.result.reason ?? '', /src\/styles\.css \(not a supported file type\)/);
  });

  it('lint-fix: a symlink that leads out of the repository is never followed, whichever way it is named', async () => {
    const repo = demoRepo('scope-lint-link');
    symlinkSync('/etc', join(repo, 'src/etc'));
    sh(repo, 'add', '-A');
    sh(repo, 'commit', '-qm', 'link');
    for (const [files, prompt] of [
      [[], 'Fix lint in src/etc/'],
      [['src/etc/'], 'go'],
      [['src/etc/passwd.js'], 'go'],
      [[], 'Fix lint in src/etc'],
    ] as const) {
      const { result } = await run(lintFix, repo, [...files], prompt);
      assert.equal(result.outcome, 'failed', `${prompt} ${files.join(',')}`);
      assert.equal(result.patch, '');
    }
  });

  it('formatter: never loads a JavaScript Prettier config (repository code), says so, honours .prettierignore', async () => {
    const marker = join(space.base, 'config-ran');
    const repo = makeRepo(space.base, 'js-config', {
      'prettier.config.js': `require('fs').writeFileSync(${JSON.stringify(marker)}, 'ran'); module.exports = { tabWidth: 8 };\n`,
      'a.js': 'function f(){return 1}\n',
      'ignored/b.js': 'function g(){return 2}\n',
      '.prettierignore': 'ignored/\n',
    });
    const { result, events } = await run(formatter, repo);
    assert.equal(result.outcome, 'completed', result.reason);
    assert.equal(existsSync(marker), false);
    assert.ok(events.some((e) => e.kind === 'step' && /prettier\.config\.js was not loaded/.test(e.text)));
    assert.match(result.patch, /\+function f\(\) {\n\+ {2}return 1;\n\+}/);
    assert.doesNotMatch(result.patch, /ignored\/b\.js/);
  });

  it('lint-fix: ESLint safe fixes over JS and TS in the sample repo; the patch applies; nothing else changes', async () => {
    const repo = demoRepo('demo-lint');
    const before = fingerprint(repo);
    const { result } = await run(lintFix, repo);
    assert.equal(result.outcome, 'completed', result.reason);
    assert.match(result.summary ?? '', /^ESLint fixed \d+ of \d+ file\(s\) \(.*prefer-const/);
    assert.ok(applyCheck(repo, result.patch).ok);
    assert.equal(fingerprint(repo), before);
    const applied = applyToCopy(repo, result.patch, join(space.base, 'demo-lint-applied'));
    const cart = readFileSync(join(applied, 'src/cart.js'), 'utf8');
    assert.doesNotMatch(cart, /\bvar\b/);
    assert.match(cart, /const TAX_RATE = 0\.2/);
    assert.match(cart, /item\.price/);
    assert.match(cart, /typeof price === "string"/);
    assert.match(cart, /if \(coupon\)/);
    assert.match(cart, /{ total, discounted: true/);
    assert.match(cart, /module\.exports = { lineTotal, cartTotal, withTax }/);
    const ts = readFileSync(join(applied, 'src/format.ts'), 'utf8');
    assert.match(ts, /const DEFAULT_CURRENCY: string = "EUR"/);
    assert.match(ts, /10\*\*digits/);
    assert.match(ts, /total \+= v/);
    assert.doesNotMatch(result.patch, /README|styles\.css|settings\.json/);
    // The fixed code still runs and prints what it printed before.
    const run1 = execFileSync(process.execPath, [join(repo, 'src/cart.js')], { encoding: 'utf8' });
    const run2 = execFileSync(process.execPath, [join(applied, 'src/cart.js')], { encoding: 'utf8' });
    assert.equal(run2, run1);
  });

  it('lint-fix: a file that does not parse is reported, not changed', async () => {
    const repo = makeRepo(space.base, 'broken', { 'ok.js': 'var a = 1;\nconsole.log(a);\n', 'bad.js': 'function (\n' });
    const { result, events } = await run(lintFix, repo);
    assert.equal(result.outcome, 'completed', result.reason);
    assert.ok(events.some((e) => e.kind === 'log' && /Could not parse bad\.js/.test(e.text)));
    assert.match(result.patch, /\+const a = 1;/);
    assert.doesNotMatch(result.patch, /bad\.js/);
  });

  it('both built-ins work bundled as the gateway ships them: the agents in one file, their threads in gateway-format.js and gateway-lint.js beside it', async () => {
    const repo = demoRepo('demo-bundle');
    const entry = join(space.base, 'bundle-entry.ts');
    writeFileSync(
      entry,
      `import { discoverLocalAgents } from ${JSON.stringify(resolve(__dirname, '../../../src/gateway/agents/discover'))};
      (async () => {
        const [root, repo] = process.argv.slice(2);
        const agents = await discoverLocalAgents({ workspaceRoot: root, clis: false });
        const out: Record<string, unknown> = {};
        for (const a of agents) {
          out[a.id] = await a.run({ taskId: 'bundled-' + a.id, repoPath: repo, prompt: '', files: [], capabilities: { write: true, shell: false, network: false }, deadline: Date.now() + 60000, signal: new AbortController().signal }, () => {});
        }
        process.stdout.write(JSON.stringify(out));
      })();`,
    );
    const outfile = join(space.base, 'bundle.js');
    await build({
      entryPoints: [entry],
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      outfile,
      logLevel: 'silent',
    });
    for (const [worker, name] of [
      ['format/formatWorker.ts', 'gateway-format.js'],
      ['lint/lintWorker.ts', 'gateway-lint.js'],
    ])
      await build({
        entryPoints: [resolve(__dirname, '../../../src/gateway/agents', worker)],
        bundle: true,
        platform: 'node',
        format: 'cjs',
        target: 'node20',
        outfile: join(space.base, name),
        logLevel: 'silent',
      });
    const out = JSON.parse(
      execFileSync(process.execPath, [outfile, join(space.base, 'bundle-root'), repo], {
        cwd: space.base,
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
      }),
    ) as Record<string, { outcome: string; patch: string }>;
    assert.equal(out.formatter.outcome, 'completed');
    assert.equal(out['lint-fix'].outcome, 'completed');
    assert.ok(out.formatter.patch.includes('diff --git a/src/cart.js'));
    assert.ok(out['lint-fix'].patch.includes('diff --git a/src/format.ts'));
    assert.ok(applyCheck(repo, out.formatter.patch).ok);
    assert.ok(applyCheck(repo, out['lint-fix'].patch).ok);
  });
});
