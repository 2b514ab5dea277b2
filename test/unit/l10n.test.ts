// Every string a user sees is localisable: package.json's contributed strings are %keys% of
// package.nls.json, the runtime strings of l10n.t / vscode.l10n.t calls are in l10n/bundle.l10n.json,
// and both files travel in the .vsix.
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { bundlePath, bundleText, extractAll, extractFromSource, root } from '../../scripts/l10n';
import { english } from '../../src/core/protocol/l10n';

const readJson = (p: string): unknown => JSON.parse(readFileSync(join(root, p), 'utf8'));

/** Every `%key%` string value anywhere in a manifest, with the JSON path it was found at. */
function nlsKeys(value: unknown, path = ''): { key: string; at: string }[] {
  if (typeof value === 'string') {
    const m = /^%(.+)%$/.exec(value);
    return m ? [{ key: m[1], at: path }] : [];
  }
  if (Array.isArray(value)) return value.flatMap((v, i) => nlsKeys(v, `${path}[${i}]`));
  if (value && typeof value === 'object')
    return Object.entries(value).flatMap(([k, v]) => nlsKeys(v, path ? `${path}.${k}` : k));
  return [];
}

/** The contributed strings a user reads (command titles, view names, setting descriptions…). */
const USER_VISIBLE =
  /^(displayName|description|capabilities\..*\.description|contributes\.(commands\[\d+\]\.(title|category)|viewsContainers\..*\.title|views\..*\.(name|contextualTitle)|viewsWelcome\[\d+\]\.contents|walkthroughs.*\.(title|description)|configuration\.title|configuration\.properties\..*\.(description|markdownDescription|enumDescriptions\[\d+\]|markdownEnumDescriptions\[\d+\]|deprecationMessage|markdownDeprecationMessage)))$/;

function literalStrings(value: unknown, path = ''): string[] {
  if (typeof value === 'string') return USER_VISIBLE.test(path) && !/^%.+%$/.test(value) ? [path] : [];
  if (Array.isArray(value)) return value.flatMap((v, i) => literalStrings(v, `${path}[${i}]`));
  if (value && typeof value === 'object')
    return Object.entries(value).flatMap(([k, v]) => literalStrings(v, path ? `${path}.${k}` : k));
  return [];
}

describe('package.nls.json', () => {
  const pkg = readJson('package.json');
  const nls = readJson('package.nls.json') as Record<string, unknown>;

  it('has an entry for every %key% of package.json, and no entry package.json does not use', () => {
    const used = nlsKeys(pkg);
    const missing = used.filter((u) => typeof nls[u.key] !== 'string').map((u) => `${u.at}: %${u.key}%`);
    assert.deepEqual(missing, [], `package.nls.json lacks:\n${missing.join('\n')}`);
    const usedKeys = new Set(used.map((u) => u.key));
    const unused = Object.keys(nls).filter((k) => !usedKeys.has(k));
    assert.deepEqual(unused, [], `package.nls.json has entries package.json does not use: ${unused.join(', ')}`);
  });

  it('leaves no contributed string a user reads as a literal in package.json', () => {
    const literal = literalStrings(pkg);
    assert.deepEqual(literal, [], `use a %key% of package.nls.json for:\n${literal.join('\n')}`);
  });

  it('the manifest check itself finds a literal title and an unknown key', () => {
    const fake = { contributes: { commands: [{ command: 'x', title: 'Do It', category: '%nope%' }] } };
    assert.deepEqual(literalStrings(fake), ['contributes.commands[0].title']);
    assert.deepEqual(nlsKeys(fake), [{ key: 'nope', at: 'contributes.commands[0].category' }]);
  });
});

describe('l10n bundle', () => {
  it('package.json points VS Code at the l10n folder that holds bundle.l10n.json', () => {
    assert.equal((readJson('package.json') as { l10n?: string }).l10n, './l10n');
    assert.ok(readFileSync(bundlePath, 'utf8').length > 0);
  });

  it('every l10n.t / vscode.l10n.t message is a literal, so it can be extracted', () => {
    assert.deepEqual(extractAll().problems, []);
  });

  it('the committed l10n/bundle.l10n.json is what the sources give (run npm run l10n after changing a message)', () => {
    const { messages } = extractAll();
    const committed = readFileSync(bundlePath, 'utf8');
    const stale = messages.filter((m) => !(m in (JSON.parse(committed) as Record<string, string>)));
    assert.deepEqual(stale, [], 'messages missing from the bundle');
    assert.equal(committed, bundleText(messages));
  });

  it('extracts the first argument of l10n.t and vscode.l10n.t, and nothing else', () => {
    const source = [
      "import * as l10n from '@vscode/l10n';",
      "const a = l10n.t('Cancel');",
      'const b = vscode.l10n.t("Applied {0} file(s).", n);',
      'const c = l10n.t(`Apply with 3-way Merge`);',
      "const d = other.t('not a message'); const e = t('nor this');",
      "html`<b>${l10n.t('Inside a {0}', 'template')}</b>`;",
    ].join('\n');
    const found = extractFromSource('x.ts', source);
    assert.deepEqual(found.messages, ['Cancel', 'Applied {0} file(s).', 'Apply with 3-way Merge', 'Inside a {0}']);
    assert.deepEqual(found.problems, []);
  });

  it('reports a message it cannot extract, with file and line', () => {
    const found = extractFromSource('y.ts', 'const m = "x";\nl10n.t(m);\nvscode.l10n.t(`Hi ${m}`);\nl10n.t`tagged`;');
    assert.equal(found.problems.length, 3);
    assert.match(found.problems[0], /^y\.ts:2: the message must be a string literal/);
    assert.match(found.problems[1], /^y\.ts:3: /);
    assert.match(found.problems[2], /^y\.ts:4: .*tagged template/);
  });

  it('in src/core, also extracts the bare t(...) of a renderer that is given the translate function', () => {
    const source = "export const say = (t: Translate, n: number) => t('{0} file(s) refused', n);\nt(dynamic);";
    const core = extractFromSource('src/core/x.ts', source, true);
    assert.deepEqual(core.messages, ['{0} file(s) refused']);
    assert.equal(core.problems.length, 1);
    assert.deepEqual(extractFromSource('src/node/x.ts', source).messages, []);
  });

  it('a message looked up in a table of literals in the same file stands for every message of the table', () => {
    const source = [
      "const MESSAGES = { a: 'First {0}', b: 'Second' } as const;",
      "const MIXED = { a: 'ok', b: someVariable };",
      "export const line = (c: 'a' | 'b', t: Translate) => t(MESSAGES[c], 1);",
      "export const other = (c: 'a' | 'b', t: Translate) => t(MIXED[c]);",
    ].join('\n');
    const found = extractFromSource('src/core/x.ts', source, true);
    assert.deepEqual(found.messages, ['First {0}', 'Second']);
    assert.equal(found.problems.length, 1, 'a table with a computed message cannot be extracted');
    assert.match(found.problems[0], /src\/core\/x\.ts:4: .*MIXED\[c\]/);
  });

  it('english fills {0}, {1}… like vscode.l10n.t without a translation', () => {
    assert.equal(english('{0} of {1} files, {0} left, {2} stays', 3, 'four'), '3 of four files, 3 left, {2} stays');
  });

  it('a bundle is English: each message its own translation, one per line', () => {
    assert.equal(bundleText(['b {0}', 'a']), '{\n  "b {0}": "b {0}",\n  "a": "a"\n}\n');
  });
});

describe('the .vsix', () => {
  it('packs package.nls.json and l10n/bundle.l10n.json', () => {
    const vsce = join(root, 'node_modules/@vscode/vsce/vsce');
    const files = execFileSync(process.execPath, [vsce, 'ls', '--no-dependencies'], { cwd: root, encoding: 'utf8' })
      .split('\n')
      .map((l) => l.trim());
    assert.ok(files.includes('package.nls.json'), files.join('\n'));
    assert.ok(files.includes('l10n/bundle.l10n.json'), files.join('\n'));
  });
});
