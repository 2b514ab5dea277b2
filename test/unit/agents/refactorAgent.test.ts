/**
 * The refactoring agent on its own, on real git repositories: rename across files (imports and
 * exports included), organise imports, fix all, the question when a name is ambiguous (and again when
 * a reply names none), scope, pacing, cancel mid-run and the deadline while it waits for a reply.
 * Every patch is checked with `git apply --check` on the original repository.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { build } from 'esbuild';
import type { LocalRunEvent, LocalRunRequest, LocalRunResult } from '../../../src/gateway/agents/localAgent';
import { ProjectService } from '../../../src/gateway/agents/refactor/languageService';
import { createRefactorAgent } from '../../../src/gateway/agents/refactorAgent';
import { WorkspaceManager } from '../../../src/gateway/workspace/workspaceManager';
import { applyCheck, applyToCopy, fingerprint, makeRepo, tempSpace } from '../workspace/repoFixtures';
import type { TempSpace } from '../workspace/repoFixtures';

const SHOP = {
  'src/money.ts':
    'export function calculateTotal(prices: number[]): number {\n  return prices.reduce((a, b) => a + b, 0);\n}\n\nexport const CURRENCY = "EUR";\n',
  'src/cart.ts':
    "import { calculateTotal, CURRENCY } from './money';\n\nexport function describeCart(prices: number[]): string {\n  return `${calculateTotal(prices)} ${CURRENCY}`;\n}\n",
  'src/checkout.js':
    "import { calculateTotal } from './money';\n\nexport function checkout(prices) {\n  const total = calculateTotal(prices);\n  return { total };\n}\n",
  'README.md': 'calculateTotal is documented here, but prose is not code.\n',
};

const AMBIGUOUS = {
  'src/cart.js':
    'export class Cart {\n  constructor() {\n    this.items = [];\n  }\n}\n\nexport function newCart() {\n  return new Cart();\n}\n',
  'src/legacy/cart.js': 'export class Cart {}\n',
  'src/shop.js':
    "import { newCart } from './cart';\nimport { Cart as OldCart } from './legacy/cart';\n\nexport const carts = [newCart(), new OldCart()];\n",
};

describe('refactor agent', () => {
  let space: TempSpace;
  let manager: WorkspaceManager;
  let n = 0;
  before(() => {
    space = tempSpace('baton-refactor-');
    manager = new WorkspaceManager({ root: space.root, userHome: space.home });
  });
  after(() => space.dispose());

  const run = async (
    repo: string,
    prompt: string,
    o: {
      files?: string[];
      ask?: (q: string) => Promise<string>;
      paceMs?: number;
      deadlineMs?: number;
      signal?: AbortSignal;
      onEvent?: (e: LocalRunEvent) => void;
    } = {},
  ): Promise<{ result: LocalRunResult; events: LocalRunEvent[]; steps: string[] }> => {
    const events: LocalRunEvent[] = [];
    const agent = createRefactorAgent({ manager, paceMs: o.paceMs });
    const request: LocalRunRequest = {
      taskId: `r-${++n}`,
      repoPath: repo,
      prompt,
      files: o.files ?? [],
      capabilities: { write: true, shell: false, network: false },
      deadline: Date.now() + (o.deadlineMs ?? 120_000),
      signal: o.signal ?? new AbortController().signal,
      ...(o.ask ? { ask: o.ask } : {}),
    };
    const result = await agent.run(request, (e) => {
      events.push(e);
      o.onEvent?.(e);
    });
    return { result, events, steps: events.flatMap((e) => (e.kind === 'step' ? [e.text] : [])) };
  };
  const changedFiles = (patch: string) => [...patch.matchAll(/^diff --git a\/(\S+)/gm)].map((m) => m[1]);

  it('renames a symbol across files, through its export and the imports (TS and JS); the patch applies', async () => {
    const repo = makeRepo(space.base, 'rename', SHOP);
    const before = fingerprint(repo);
    const { result, steps } = await run(repo, 'rename calculateTotal to computeTotal');
    assert.equal(result.outcome, 'completed', result.reason);
    assert.deepEqual(changedFiles(result.patch), ['src/cart.ts', 'src/checkout.js', 'src/money.ts']);
    assert.ok(applyCheck(repo, result.patch).ok, applyCheck(repo, result.patch).message);
    assert.equal(fingerprint(repo), before, 'the repository itself is untouched');
    const out = applyToCopy(repo, result.patch, join(space.base, 'rename-applied'));
    assert.match(readFileSync(join(out, 'src/money.ts'), 'utf8'), /^export function computeTotal\(prices/);
    assert.equal(
      readFileSync(join(out, 'src/cart.ts'), 'utf8'),
      SHOP['src/cart.ts'].replaceAll('calculateTotal', 'computeTotal'),
    );
    assert.equal(
      readFileSync(join(out, 'src/checkout.js'), 'utf8'),
      SHOP['src/checkout.js'].replaceAll('calculateTotal', 'computeTotal'),
    );
    assert.equal(readFileSync(join(out, 'README.md'), 'utf8'), SHOP['README.md']);
    assert.match(
      steps[0],
      /^Rename "calculateTotal" to "computeTotal"\. Scope: the whole repository \(no files were sent and the task names none\): 3 files\.$/,
    );
    assert.ok(
      steps.includes('Loading the project: 3 JavaScript/TypeScript file(s) found, 3 in scope.'),
      steps.join('\n'),
    );
    assert.ok(steps.includes('Renamed in src/cart.ts (2 places).'), steps.join('\n'));
    assert.match(result.summary ?? '', /Renamed "calculateTotal" to "computeTotal": 5 place\(s\) in 3 file\(s\)/);
  });

  it('refuses a name already declared, and a name nobody declares, saying what to do', async () => {
    const repo = makeRepo(space.base, 'rename-clash', SHOP);
    const clash = await run(repo, 'rename calculateTotal to CURRENCY');
    assert.equal(clash.result.outcome, 'failed');
    assert.match(
      clash.result.reason ?? '',
      /"CURRENCY" is already declared at src\/money\.ts:5 \(const\).*Choose another name/,
    );
    const missing = await run(repo, 'rename calculateTotals to x');
    assert.match(missing.result.reason ?? '', /No declaration named "calculateTotals" was found in the repository/);
  });

  it('an ambiguous name: asks with the numbered candidates, a reply that names none asks again saying why, then the chosen one is renamed', async () => {
    const repo = makeRepo(space.base, 'ambiguous', AMBIGUOUS);
    const questions: string[] = [];
    const replies = ['the blue one', '7', 'the one in src/legacy/cart.js'];
    const { result, steps } = await run(repo, 'rename `Cart` to `Basket`', {
      ask: async (q) => {
        questions.push(q);
        return replies[questions.length - 1] ?? '1';
      },
    });
    assert.equal(result.outcome, 'completed', result.reason);
    assert.equal(questions.length, 3);
    assert.equal(
      questions[0],
      '"Cart" is declared in 2 places. Which one should be renamed to "Basket"?\n  1. src/cart.js:1 (class)\n  2. src/legacy/cart.js:1 (class)\nReply with its number, its file (when only one is there) or file:line.',
    );
    assert.match(
      questions[1],
      /^That did not pick one: "the blue one" names none of them\.\n\n"Cart" is declared in 2 places/,
    );
    assert.match(questions[2], /^That did not pick one: there is no number 7: choose 1 to 2\./);
    assert.ok(
      steps.some((s) => s === 'Reply "the one in src/legacy/cart.js": src/legacy/cart.js:1 (class).'),
      steps.join('\n'),
    );
    assert.deepEqual(changedFiles(result.patch), ['src/legacy/cart.js', 'src/shop.js']);
    assert.ok(applyCheck(repo, result.patch).ok);
    const out = applyToCopy(repo, result.patch, join(space.base, 'ambiguous-applied'));
    assert.equal(readFileSync(join(out, 'src/legacy/cart.js'), 'utf8'), 'export class Basket {}\n');
    assert.match(
      readFileSync(join(out, 'src/shop.js'), 'utf8'),
      /import \{ Basket as OldCart \} from '\.\/legacy\/cart';/,
    );
    assert.equal(readFileSync(join(out, 'src/cart.js'), 'utf8'), AMBIGUOUS['src/cart.js']);
  });

  it('the path in the task picks the declaration without asking; a path:line reply works too', async () => {
    const repo = makeRepo(space.base, 'ambiguous-scoped', AMBIGUOUS);
    const asked: string[] = [];
    const scoped = await run(repo, 'rename `Cart` to `Basket` in src/cart.js', {
      ask: async (q) => (asked.push(q), '1'),
    });
    assert.equal(scoped.result.outcome, 'completed', scoped.result.reason);
    assert.equal(asked.length, 0);
    assert.match(scoped.steps[0], /Scope: src\/cart\.js \(named in the task\): 1 file\./);
    assert.deepEqual(changedFiles(scoped.result.patch), ['src/cart.js']);
    assert.ok(applyCheck(repo, scoped.result.patch).ok);
    const byLine = await run(repo, 'rename Cart to Basket', { ask: async () => 'src/cart.js:1' });
    assert.deepEqual(changedFiles(byLine.result.patch), ['src/cart.js']);
    // Without anyone to ask, the question is the reason it failed.
    const nobody = await run(repo, 'rename Cart to Basket');
    assert.equal(nobody.result.outcome, 'failed');
    assert.match(nobody.result.reason ?? '', /1\. src\/cart\.js:1 \(class\)[\s\S]*name the file in the task/);
  });

  it('organise imports and fix all in the files of the request: unused imports and declarations go, a missing await is added', async () => {
    const repo = makeRepo(space.base, 'tidy', {
      'src/lib.ts':
        'export const b = 2;\nexport const a = 1;\nexport async function load(): Promise<number> {\n  return 1;\n}\n',
      'src/use.ts':
        "import { b, a } from './lib';\nimport { load } from './lib';\nimport { readFileSync } from 'node:fs';\n\nexport async function main(): Promise<number> {\n  const unused = 3;\n  const n = load();\n  return a + b * n;\n}\n",
      'src/other.ts': "import { b, a } from './lib';\nexport const x = a + b;\n",
    });
    const { result, steps } = await run(repo, 'organise imports and fix all', { files: ['src/use.ts'] });
    assert.equal(result.outcome, 'completed', result.reason);
    assert.match(
      steps[0],
      /^Fix all \(safe combined code fixes\), then Organise imports\. Scope: the file sent as context \(src\/use\.ts\): 1 file\.$/,
    );
    assert.deepEqual(changedFiles(result.patch), ['src/use.ts'], 'only the file in scope');
    assert.ok(applyCheck(repo, result.patch).ok);
    const out = applyToCopy(repo, result.patch, join(space.base, 'tidy-applied'));
    assert.equal(
      readFileSync(join(out, 'src/use.ts'), 'utf8'),
      "import { a, b, load } from './lib';\n\nexport async function main(): Promise<number> {\n  const n = await load();\n  return a + b * n;\n}\n",
    );
    assert.ok(
      steps.some((s) => /^src\/use\.ts: Add missing 'await' \(1 edit\)\.$/.test(s)),
      steps.join('\n'),
    );
    assert.ok(
      steps.some((s) => /^src\/use\.ts: Delete unused declarations \(1 edit\)\.$/.test(s)),
      steps.join('\n'),
    );
    assert.ok(steps.includes('Organised imports in src/use.ts.'), steps.join('\n'));
  });

  it('fix all on the sample-style JavaScript: the whole repository, unused code removed, nothing else', async () => {
    const repo = makeRepo(space.base, 'fix-js', {
      'a.js':
        "import { helper } from './b';\n\nexport function run(x, unusedArg) {\n  const tmp = 1;\n  return helper(x);\n}\n",
      'b.js': 'export function helper(v) {\n  return v * 2;\n}\n',
    });
    const { result } = await run(repo, 'fix all');
    assert.equal(result.outcome, 'completed', result.reason);
    assert.deepEqual(changedFiles(result.patch), ['a.js']);
    const out = applyToCopy(repo, result.patch, join(space.base, 'fix-js-applied'));
    assert.equal(
      readFileSync(join(out, 'a.js'), 'utf8'),
      "import { helper } from './b';\n\nexport function run(x) {\n  return helper(x);\n}\n",
    );
  });

  it('the scope is chosen as for the other built-in agents: a bare folder name, what the task leaves out, the task without the text of the context parts', async () => {
    const unused = (name: string) => `export function ${name}(x: number): number {\n  const tmp = 1;\n  return x;\n}\n`;
    const repo = makeRepo(space.base, 'shared-scope', {
      'src/a.ts': unused('a'),
      'src/legacy/b.ts': unused('b'),
      'tools/c.ts': unused('c'),
    });
    const bare = await run(repo, 'fix all in src');
    assert.equal(bare.result.outcome, 'completed', bare.result.reason);
    assert.equal(bare.steps[0], 'Fix all (safe combined code fixes). Scope: src/ (named in the task): 2 files.');
    assert.deepEqual(changedFiles(bare.result.patch), ['src/a.ts', 'src/legacy/b.ts']);
    const except = await run(repo, 'fix all in src/ except src/legacy/');
    assert.equal(
      except.steps[0],
      'Fix all (safe combined code fixes). Scope: src/ except src/legacy/ (named in the task): 1 file.',
    );
    assert.deepEqual(changedFiles(except.result.patch), ['src/a.ts']);
    // The text of the context parts (here a file's contents) names no scope: the task alone is read.
    const events: LocalRunEvent[] = [];
    const withContext = await createRefactorAgent({ manager }).run(
      {
        taskId: `r-${++n}`,
        repoPath: repo,
        prompt: 'fix all\n\nSee tools/c.ts for how it is used.',
        task: 'fix all',
        files: [],
        capabilities: { write: true, shell: false, network: false },
        deadline: Date.now() + 120_000,
        signal: new AbortController().signal,
      },
      (e) => events.push(e),
    );
    assert.equal(withContext.outcome, 'completed', withContext.reason);
    assert.deepEqual(changedFiles(withContext.patch), ['src/a.ts', 'src/legacy/b.ts', 'tools/c.ts']);
    const outside = await run(repo, 'fix all in ../elsewhere/');
    assert.equal(outside.result.outcome, 'failed');
    assert.match(outside.result.reason ?? '', /Nothing in the repository matches \.\.\/elsewhere\//);
    assert.ok(
      outside.steps.some((t) =>
        /\.\.\/elsewhere\/ \(named in the task\): it is not a path inside the repository/.test(t),
      ),
      outside.steps.join('\n'),
    );
  });

  it('the names of a rename are not read as paths: renaming `lib` does not mean the lib/ folder', async () => {
    const repo = makeRepo(space.base, 'rename-folder-name', {
      'src/config.ts': 'export const lib = 1;\n',
      'src/use.ts': "import { lib } from './config';\nexport const twice = lib * 2;\n",
      'lib/other.ts': 'export const other = 2;\n',
    });
    const { result, steps } = await run(repo, 'rename `lib` to `library`');
    assert.equal(result.outcome, 'completed', result.reason);
    assert.match(steps[0], /Scope: the whole repository/);
    assert.deepEqual(changedFiles(result.patch), ['src/config.ts', 'src/use.ts']);
  });

  it('a task it does not understand fails with what it can do; a path that matches nothing fails naming it', async () => {
    const repo = makeRepo(space.base, 'help', SHOP);
    const vague = await run(repo, 'make the code nicer');
    assert.equal(vague.result.outcome, 'failed');
    assert.match(
      vague.result.reason ?? '',
      /not one the refactoring agent understands[\s\S]*rename calculateTotal to computeTotal[\s\S]*organise imports[\s\S]*fix all/,
    );
    const nowhere = await run(repo, 'organise imports in lib/');
    assert.match(
      nowhere.result.reason ?? '',
      /Nothing in the repository matches lib\/, the path the task names\. The repository has: README\.md, src\/\./,
    );
  });

  it('pacing: the first step says so, and the run takes at least the steps times the pace', async () => {
    const repo = makeRepo(space.base, 'paced', SHOP);
    const t0 = Date.now();
    const { result, steps } = await run(repo, 'rename calculateTotal to computeTotal', { paceMs: 150 });
    assert.equal(result.outcome, 'completed', result.reason);
    assert.match(steps[0], /Pacing is on: 150 ms between steps \(the gateway's --agent-pace-ms\)/);
    assert.ok(Date.now() - t0 >= steps.length * 150 - 50, `${Date.now() - t0} ms for ${steps.length} steps`);
  });

  it('cancel mid-run: canceled, no patch, the workspace removed', async () => {
    const repo = makeRepo(space.base, 'cancel', SHOP);
    const abort = new AbortController();
    const t0 = Date.now();
    const { result, steps } = await run(repo, 'rename calculateTotal to computeTotal', {
      paceMs: 2_000,
      signal: abort.signal,
      onEvent: (e) => {
        if (e.kind === 'step' && e.text.startsWith('Loading the project')) abort.abort();
      },
    });
    assert.equal(result.outcome, 'canceled');
    assert.equal(result.patch, '');
    assert.ok(Date.now() - t0 < 8_000, 'stopped during the pause, not after it');
    assert.ok(!steps.some((s) => s.startsWith('Renamed in')));
    assert.deepEqual(readdirNames(space.root), [], 'no workspace left');
  });

  it('cancel while the language service is busy loading the project: the thread is ended at once, not waited for', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 200; i++)
      files[`src/m${i}.ts`] =
        `import { f${(i + 1) % 200} } from './m${(i + 1) % 200}';\nexport function f${i}(n: number): number {\n  return n > 0 ? f${(i + 1) % 200}(n - 1) : ${i};\n}\n`;
    const repo = makeRepo(space.base, 'cancel-busy', files);
    const abort = new AbortController();
    let abortedAt = 0;
    const { result, steps } = await run(repo, 'fix all', {
      signal: abort.signal,
      onEvent: (e) => {
        // The load (a new thread reading TypeScript, then 200 files) is under way a moment later.
        if (e.kind === 'step' && e.text.startsWith('Loading the project')) {
          setTimeout(() => {
            abortedAt = Date.now();
            abort.abort();
          }, 300);
        }
      },
    });
    assert.equal(result.outcome, 'canceled');
    assert.ok(abortedAt > 0);
    assert.ok(Date.now() - abortedAt < 1_500, `${Date.now() - abortedAt} ms from cancel to the result`);
    assert.ok(!steps.some((s) => s.startsWith('TypeScript language service ready')), 'the load never finished');
  });

  it('the deadline passes while it waits for a reply: expired, no patch', async () => {
    const repo = makeRepo(space.base, 'deadline', AMBIGUOUS);
    let asked = false;
    const { result } = await run(repo, 'rename Cart to Basket', {
      deadlineMs: 15_000,
      ask: () => {
        asked = true;
        return new Promise<string>(() => undefined);
      },
    });
    assert.ok(asked);
    assert.equal(result.outcome, 'expired');
    assert.equal(result.patch, '');
  });

  it('works bundled as the gateway ships it: the agent in one bundle, its thread in gateway-refactor.js beside it, the lib files in ts-lib/', async () => {
    const repo = makeRepo(space.base, 'bundled', SHOP);
    const out = join(space.base, 'dist');
    const entry = join(space.base, 'refactor-entry.ts');
    writeFileSync(
      entry,
      `import { createRefactorAgent } from ${JSON.stringify(resolve(__dirname, '../../../src/gateway/agents/refactorAgent'))};
      import { WorkspaceManager } from ${JSON.stringify(resolve(__dirname, '../../../src/gateway/workspace/workspaceManager'))};
      (async () => {
        const [root, repo] = process.argv.slice(2);
        const agent = createRefactorAgent({ manager: new WorkspaceManager({ root }) });
        const r = await agent.run({ taskId: 'bundled', repoPath: repo, prompt: 'rename calculateTotal to computeTotal', files: [], capabilities: { write: true, shell: false, network: false }, deadline: Date.now() + 60000, signal: new AbortController().signal }, () => {});
        process.stdout.write(JSON.stringify(r));
      })();`,
    );
    const common = {
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      logLevel: 'silent',
      minify: true,
    } as const;
    await build({ ...common, entryPoints: [entry], outfile: join(out, 'gateway.js') });
    await build({
      ...common,
      entryPoints: [resolve(__dirname, '../../../src/gateway/agents/refactor/refactorWorker.ts')],
      outfile: join(out, 'gateway-refactor.js'),
    });
    const tsLib = dirname(require.resolve('typescript'));
    mkdirSync(join(out, 'ts-lib'));
    for (const f of readdirSync(tsLib)) if (/^lib\..*\.d\.ts$/.test(f)) cpSync(join(tsLib, f), join(out, 'ts-lib', f));
    const r = JSON.parse(
      execFileSync(process.execPath, [join(out, 'gateway.js'), join(space.base, 'bundle-ws'), repo], {
        cwd: space.base,
        encoding: 'utf8',
      }),
    ) as LocalRunResult;
    assert.equal(r.outcome, 'completed', r.reason);
    assert.deepEqual(changedFiles(r.patch), ['src/cart.ts', 'src/checkout.js', 'src/money.ts']);
    assert.ok(applyCheck(repo, r.patch).ok);
  });
});

function readdirNames(dir: string): string[] {
  return readdirSync(dir).filter((n) => !n.startsWith('.'));
}

describe('refactor agent: the language service reads nothing outside the workspace', () => {
  it('a module reached through a symbolic link to a file outside is not read', () => {
    const space = tempSpace('baton-refactor-link-');
    try {
      const outside = join(space.base, 'outside');
      mkdirSync(outside);
      writeFileSync(join(outside, 'secret.ts'), 'export function leak(): string {\n  return "secret";\n}\n');
      const files = { 'src/use.ts': "import { leak } from './secret';\nexport const x = leak();\n" };
      const linked = makeRepo(space.base, 'linked', files);
      symlinkSync(join(outside, 'secret.ts'), join(linked, 'src/secret.ts'));
      const copied = makeRepo(space.base, 'copied', {
        ...files,
        'src/secret.ts': readFileSync(join(outside, 'secret.ts'), 'utf8'),
      });
      const viaLink = new ProjectService(linked, ['src/use.ts']).warmUp();
      const viaCopy = new ProjectService(copied, ['src/use.ts']).warmUp();
      assert.equal(viaLink, viaCopy - 1, 'the linked file is not part of the program');
    } finally {
      space.dispose();
    }
  });
});
