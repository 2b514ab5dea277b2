import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeScope, globToRegExp, namedPaths, repoRelative, resolveScope } from '../../../src/gateway/agents/scope';
import type { Scope, ScopeInput } from '../../../src/gateway/agents/scope';

/** The sample repository's files, and a few more to tell scopes apart. */
const FILES = [
  '.gitignore',
  '.prettierrc',
  'README.md',
  'config/settings.json',
  'package.json',
  'src/cart.js',
  'src/format.ts',
  'src/pricing.js',
  'src/styles.css',
  'src/lib/money.ts',
  'src/lib/legacy.min.js',
  'resources/icons.css',
  'test/cart.test.js',
  'vendor/lib.js',
  'docs/guide.md',
  'bin/tool.exe',
];
const prettier = (p: string): boolean =>
  /\.(js|ts|json|css|md)$/.test(p) || p.endsWith('/.prettierrc') || p === '.prettierrc';
const eslint = (p: string): boolean => /\.(js|ts)$/.test(p);

function scope(task: string, opts: Partial<ScopeInput> = {}): Scope {
  return resolveScope({ task, context: [], files: FILES, supports: prettier, ...opts });
}

const EVERYTHING_PRETTIER = FILES.filter((f) => prettier(f) && !f.startsWith('vendor/'));

describe('scope of a built-in agent: the pure resolution', () => {
  const cases: {
    task: string;
    files: readonly string[];
    source?: Scope['source'];
    label?: string;
    supports?: (p: string) => boolean;
  }[] = [
    // The two requests seen in the demo.
    {
      task: 'Format the files under src/',
      files: [
        'src/cart.js',
        'src/format.ts',
        'src/pricing.js',
        'src/styles.css',
        'src/lib/money.ts',
        'src/lib/legacy.min.js',
      ],
      label: 'src/ (named in the task)',
    },
    {
      task: 'Fix the lint problems in src/cart.js',
      files: ['src/cart.js'],
      supports: eslint,
      label: 'src/cart.js (named in the task)',
    },
    { task: 'Format src/**/*.ts', files: ['src/format.ts', 'src/lib/money.ts'] },
    {
      task: 'Format everything under src',
      files: [
        'src/cart.js',
        'src/format.ts',
        'src/pricing.js',
        'src/styles.css',
        'src/lib/money.ts',
        'src/lib/legacy.min.js',
      ],
      label: 'src/ (named in the task)',
    },
    {
      task: 'format src',
      files: [
        'src/cart.js',
        'src/format.ts',
        'src/pricing.js',
        'src/styles.css',
        'src/lib/money.ts',
        'src/lib/legacy.min.js',
      ],
    },
    { task: 'Format the files in config', files: ['config/settings.json'], label: 'config/ (named in the task)' },
    { task: 'Format *.css', files: ['src/styles.css', 'resources/icons.css'] },
    { task: 'Format "src/cart.js" and \'config/settings.json\'.', files: ['src/cart.js', 'config/settings.json'] },
    { task: 'Format `docs/guide.md`', files: ['docs/guide.md'] },
    { task: 'Format src\\lib\\money.ts please', files: ['src/lib/money.ts'] },
    { task: 'Fix the lint problem at src/cart.js:12.', files: ['src/cart.js'], supports: eslint },
    { task: 'Fix lint in cart.js', files: ['src/cart.js'], supports: eslint },
    {
      task: 'Fix lint problems in src/*.{js,ts}',
      files: ['src/cart.js', 'src/format.ts', 'src/pricing.js'],
      supports: eslint,
    },
    {
      task: 'Lint test and src/lib',
      files: ['test/cart.test.js', 'src/lib/money.ts', 'src/lib/legacy.min.js'],
      supports: eslint,
      label: 'test/ and src/lib/ (named in the task)',
    },
    { task: 'Format ./README.md, package.json', files: ['README.md', 'package.json'] },
    {
      task: 'Format src/ but not src/styles.css',
      files: ['src/cart.js', 'src/format.ts', 'src/pricing.js', 'src/lib/money.ts', 'src/lib/legacy.min.js'],
      label: 'src/ except src/styles.css (named in the task)',
    },
    {
      task: 'Fix lint problems in src/ except src/lib/',
      files: ['src/cart.js', 'src/format.ts', 'src/pricing.js'],
      supports: eslint,
    },
    {
      task: 'Format everything except config/ and README.md',
      files: EVERYTHING_PRETTIER.filter((f) => f !== 'README.md' && !f.startsWith('config/')),
      source: 'repository',
      label: 'the whole repository except config/ and README.md (named in the task)',
    },
    { task: "Don't worry about speed, just format src/lib", files: ['src/lib/money.ts', 'src/lib/legacy.min.js'] },
    { task: 'Skip the tests; format test/cart.test.js only', files: ['test/cart.test.js'] },
    { task: 'Format vendor/', files: ['vendor/lib.js'] },
    // No scope: the whole repository, whatever else the words look like.
    {
      task: 'Format the whole repository',
      files: EVERYTHING_PRETTIER,
      source: 'repository',
      label: 'the whole repository (no files were sent and the task names none)',
    },
    {
      task: 'Fix the lint problems in the resource loader',
      files: EVERYTHING_PRETTIER.filter(eslint),
      supports: eslint,
      source: 'repository',
    },
    { task: 'Format the source code of the project', files: EVERYTHING_PRETTIER, source: 'repository' },
    {
      task: 'Format everything according to the docs, on top of the test changes',
      files: EVERYTHING_PRETTIER,
      source: 'repository',
    },
    {
      task: 'Fix lint in this Node.js project, e.g. unused vars',
      files: EVERYTHING_PRETTIER.filter(eslint),
      supports: eslint,
      source: 'repository',
    },
    {
      task: 'Format and/or lint, as https://prettier.io/docs/options says',
      files: EVERYTHING_PRETTIER,
      source: 'repository',
    },
    { task: 'Format **everything** (v1.2)', files: EVERYTHING_PRETTIER, source: 'repository' },
    {
      task: 'Fix lint after the @typescript-eslint/parser upgrade, like github.com/prettier/prettier does',
      files: EVERYTHING_PRETTIER.filter(eslint),
      supports: eslint,
      source: 'repository',
    },
    { task: 'Format @src/cart.js', files: ['src/cart.js'] },
    { task: '', files: EVERYTHING_PRETTIER, source: 'repository' },
  ];
  for (const c of cases) {
    it(`${JSON.stringify(c.task)} → ${c.files.length <= 3 ? c.files.join(', ') : `${c.files.length} files`}`, () => {
      const s = scope(c.task, c.supports ? { supports: c.supports } : {});
      assert.equal(s.failure, undefined, s.failure);
      assert.deepEqual([...s.files].sort(), [...c.files].sort());
      assert.equal(s.source, c.source ?? 'task');
      if (c.label) assert.equal(s.label, c.label);
    });
  }

  it('says the scope in the first step, in the three forms a user sees', () => {
    assert.equal(describeScope(scope('Format the files under src/')), 'Scope: src/ (named in the task): 6 files');
    assert.equal(
      describeScope(scope('Format everything')),
      `Scope: the whole repository (no files were sent and the task names none): ${EVERYTHING_PRETTIER.length} files`,
    );
    const ctx = scope('Format these', { context: ['src/cart.js', 'src/styles.css'] });
    assert.equal(describeScope(ctx), 'Scope: the 2 files sent as context (src/cart.js and src/styles.css): 2 files');
    assert.equal(
      describeScope(scope('', { context: ['README.md'] })),
      'Scope: the file sent as context (README.md): 1 file',
    );
  });

  it('a path that matches nothing fails the run, listing the names and what exists', () => {
    const s = scope('Format src/nope.ts and lib/');
    assert.deepEqual(s.files, []);
    assert.ok(s.failure);
    assert.match(s.failure, /Nothing in the repository matches src\/nope\.ts and lib\//);
    assert.match(
      s.failure,
      /The repository has: \.gitignore, \.prettierrc, README\.md, bin\/, config\/, docs\/, package\.json, resources\/, src\/, test\/, vendor\/\./,
    );
    assert.match(s.failure, /src\/ has: cart\.js, format\.ts, lib\/, pricing\.js, styles\.css\./);
    assert.ok(s.notes.some((n) => /src\/nope\.ts/.test(n)));
    assert.match(scope('Format *.scss').failure ?? '', /matches \*\.scss/);
  });

  it('a name that matches nothing beside one that does is said in a note and left out', () => {
    const s = scope('Format src/cart.js and src/cart.jss');
    assert.equal(s.failure, undefined);
    assert.deepEqual(s.files, ['src/cart.js']);
    assert.deepEqual(s.notes, ['Nothing in the repository matches src/cart.jss (named in the task); it was left out.']);
  });

  it('paths outside the repository are refused, never resolved: .., absolute, home, .git', () => {
    for (const task of [
      'Format ../other/x.js',
      'Format /etc/passwd',
      'Format ~/notes.md',
      'Format .git/config',
      'Format src/../../x.js',
      'Format ../*.js',
      'Format C:\\Windows\\win.ini',
      'Format SRC/GIT~1/config',
    ]) {
      const s = scope(task);
      assert.deepEqual(s.files, [], task);
      assert.match(s.failure ?? '', /Nothing in the repository matches/, task);
    }
    assert.match(scope('Format /etc/passwd').notes.join('\n'), /not a path inside the repository/);
    // An absolute path inside the caller's repository is that repository's file.
    assert.deepEqual(scope('Format /home/u/shop/src/cart.js', { roots: ['/home/u/shop'] }).files, ['src/cart.js']);
    assert.deepEqual(scope('Format /home/u/shopping/src/cart.js', { roots: ['/home/u/shop'] }).files, []);
  });

  it('an unsupported file named in the task is skipped and said; if it was all, the run fails', () => {
    const s = scope('Fix the lint problems in README.md', { supports: eslint });
    assert.deepEqual(s.files, []);
    assert.deepEqual(s.skipped, ['README.md (not a supported file type)']);
    assert.match(s.failure ?? '', /Nothing to work on in README\.md: README\.md \(not a supported file type\)/);
    const bin = scope('Format bin/');
    assert.match(bin.failure ?? '', /bin\/ \(no file of a supported type\)/);
  });

  it('folders and globs leave out ignored files; a file named on its own is taken', () => {
    const ignored = new Set(['src/lib/legacy.min.js']);
    assert.deepEqual(scope('Format src/lib/', { ignored }).files, ['src/lib/money.ts']);
    assert.deepEqual(scope('Format src/**/*.js', { ignored }).files, ['src/cart.js', 'src/pricing.js']);
    assert.ok(!scope('Format everything', { ignored }).files.includes('src/lib/legacy.min.js'));
    assert.deepEqual(scope('Format src/lib/legacy.min.js', { ignored }).files, ['src/lib/legacy.min.js']);
  });

  it('the files sent as context come first; folders arrive with a trailing / and are expanded', () => {
    const s = scope('Format config/ too', { context: ['src/cart.js', 'src/lib/'] });
    assert.equal(s.source, 'context');
    assert.deepEqual(s.files, ['src/cart.js', 'src/lib/money.ts', 'src/lib/legacy.min.js']);
    assert.equal(s.label, 'the 2 files and folders sent as context (src/cart.js and src/lib/)');
    assert.deepEqual(s.notes, ['The task also names config/; the files sent as context decide the scope.']);
    assert.equal(scope('', { context: ['src\\lib\\'] }).label, 'the folder sent as context (src\\lib\\)');
    assert.deepEqual(scope('', { context: ['src\\lib\\'] }).files, ['src/lib/money.ts', 'src/lib/legacy.min.js']);
  });

  it('context that cannot be worked on fails with the reason, not with the whole repository', () => {
    const s = scope('Fix these', { context: ['README.md', 'nowhere/', '../x.js'], supports: eslint });
    assert.deepEqual(s.files, []);
    assert.deepEqual(s.skipped, [
      'README.md (not a supported file type)',
      'nowhere/ (no such folder)',
      '../x.js (not a path inside the repository)',
    ]);
    assert.match(
      s.failure ?? '',
      /^Nothing to work on in the 3 files and folders sent as context \(README\.md, nowhere\/ and \.\.\/x\.js\): README\.md \(not a supported file type\); nowhere\/ \(no such folder\)/,
    );
    assert.match(
      scope('', { context: ['bin/tool.exe'] }).failure ?? '',
      /^Nothing to work on in the file sent as context \(bin\/tool\.exe\): bin\/tool\.exe \(not a supported file type\)\. /,
    );
  });

  it('reads names from the text only where they stand for paths', () => {
    const names = (t: string) => namedPaths(t, [], () => false).map((n) => `${n.exclude ? '-' : '+'}${n.text}`);
    assert.deepEqual(names('Format src/ but leave src/vendor/ alone. Then format docs/'), [
      '+src/',
      '-src/vendor/',
      '+docs/',
    ]);
    assert.deepEqual(names('Format everything except a.js, b.js and c/'), ['-a.js', '-b.js', '-c/']);
    assert.deepEqual(names('e.g. i.e. etc. v1.2.3 12/05 w/o'), []);
    // "src" inside a longer word is never the src folder.
    assert.deepEqual(scope('Fix the resource loader and the srcset').files, EVERYTHING_PRETTIER);
  });

  it('globs: * and ? stay in a folder, ** crosses folders, a glob without / matches the name anywhere', () => {
    assert.ok(globToRegExp('src/*.js').test('src/cart.js'));
    assert.ok(!globToRegExp('src/*.js').test('src/lib/a.js'));
    assert.ok(globToRegExp('src/**/*.js').test('src/cart.js'));
    assert.ok(globToRegExp('src/**/*.js').test('src/lib/deep/a.js'));
    assert.ok(globToRegExp('*.css').test('a/b/c.css'));
    assert.ok(globToRegExp('src/?.ts').test('src/a.ts'));
    assert.ok(!globToRegExp('src/?.ts').test('src/ab.ts'));
    assert.ok(globToRegExp('src/[ab].ts').test('src/b.ts'));
    assert.ok(!globToRegExp('src/[!ab].ts').test('src/b.ts'));
    assert.ok(globToRegExp('src/*.{js,ts}').test('src/x.ts'));
    assert.ok(!globToRegExp('src/*.{js,ts}').test('src/x.css'));
    assert.ok(!globToRegExp('src/a.js').test('src/aXjs'), 'a dot is a dot');
  });

  it('repoRelative: relative, /-separated, inside the repository or undefined', () => {
    assert.equal(repoRelative('src\\cart.js'), 'src/cart.js');
    assert.equal(repoRelative('./src//lib/'), 'src/lib');
    assert.equal(repoRelative('.'), '');
    assert.equal(repoRelative('src/../README.md'), 'README.md');
    for (const bad of [
      '..',
      '../x',
      'src/../../x',
      '/etc/passwd',
      'C:\\x',
      '~/x',
      '.git/config',
      'a/.GIT/x',
      'GIT~1/config',
    ])
      assert.equal(repoRelative(bad), undefined, bad);
    assert.equal(repoRelative('/r/repo/src/a.js', ['/r/repo']), 'src/a.js');
    assert.equal(repoRelative('/r/repo', ['/r/repo/']), '');
    assert.equal(repoRelative('/r/repo2/a.js', ['/r/repo']), undefined);
  });
});
