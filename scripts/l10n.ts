// Writes l10n/bundle.l10n.json, the English runtime strings translators start from, from the
// sources: the first argument of every `l10n.t(...)` (webview, @vscode/l10n) and `vscode.l10n.t(...)`
// (host) call under src/, and of every `t(...)` call under src/core, whose pure renderers take the
// translate function as `t` (src/core/protocol/l10n.ts). The message is the key, as VS Code expects. A call
// whose message is not a plain string literal cannot be extracted and stops the script with its file
// and line.
//   npm run l10n            regenerate the bundle
//   npm run l10n -- --check exit 1 when the committed bundle is not what the sources give
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

export const root = resolve(__dirname, '..');
export const bundlePath = join(root, 'l10n', 'bundle.l10n.json');

export interface Extracted {
  readonly messages: readonly string[];
  /** Calls whose message is computed: `file:line` and what was found instead of a literal. */
  readonly problems: readonly string[];
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sourceFiles(p);
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') ? [p] : [];
  });
}

/** `l10n.t` or `<anything>.l10n.t`: the @vscode/l10n namespace import and `vscode.l10n`. */
function isL10nT(callee: ts.Expression): boolean {
  if (!ts.isPropertyAccessExpression(callee) || callee.name.text !== 't') return false;
  const owner = callee.expression;
  if (ts.isIdentifier(owner)) return owner.text === 'l10n';
  return ts.isPropertyAccessExpression(owner) && owner.name.text === 'l10n';
}

/** A bare `t(...)`: the translate function a pure renderer of src/core is given. */
function isBareT(callee: ts.Expression): boolean {
  return ts.isIdentifier(callee) && callee.text === 't';
}

/** The messages of one file's `l10n.t` calls (and bare `t` calls when `bareT`), in source order. */
export function extractFromSource(fileName: string, text: string, bareT = false): Extracted {
  const isMessageCall = (callee: ts.Expression) => isL10nT(callee) || (bareT && isBareT(callee));
  const file = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const messages: string[] = [];
  const problems: string[] = [];
  const where = (n: ts.Node) => `${fileName}:${file.getLineAndCharacterOfPosition(n.getStart(file)).line + 1}`;
  // `t(MESSAGES[code], …)`: a message looked up in a table of literals declared in the same file
  // (`const MESSAGES = { code: 'message', … } as const`) stands for every message of the table.
  const tables = new Map<string, string[] | undefined>();
  const tableValues = (name: string): string[] | undefined => {
    if (tables.has(name)) return tables.get(name);
    let found: string[] | undefined;
    const look = (n: ts.Node): void => {
      if (ts.isVariableDeclaration(n) && ts.isIdentifier(n.name) && n.name.text === name && n.initializer) {
        let init: ts.Expression = n.initializer;
        while (ts.isAsExpression(init) || ts.isSatisfiesExpression(init) || ts.isParenthesizedExpression(init))
          init = init.expression;
        if (ts.isObjectLiteralExpression(init)) {
          const values = init.properties.map((p) =>
            ts.isPropertyAssignment(p) &&
            (ts.isStringLiteral(p.initializer) || ts.isNoSubstitutionTemplateLiteral(p.initializer))
              ? p.initializer.text
              : undefined,
          );
          if (values.every((v) => v !== undefined)) found = values as string[];
        }
      }
      ts.forEachChild(n, look);
    };
    look(file);
    tables.set(name, found);
    return found;
  };
  const messageTableOf = (e: ts.Expression): string[] | undefined =>
    ts.isElementAccessExpression(e) && ts.isIdentifier(e.expression) ? tableValues(e.expression.text) : undefined;
  const visit = (node: ts.Node): void => {
    if (ts.isTaggedTemplateExpression(node) && isMessageCall(node.tag)) {
      problems.push(`${where(node)}: use l10n.t('…{0}…', value), not a tagged template`);
    } else if (ts.isCallExpression(node) && isMessageCall(node.expression)) {
      const first = node.arguments[0];
      const table = first && messageTableOf(first);
      if (first && (ts.isStringLiteral(first) || ts.isNoSubstitutionTemplateLiteral(first))) messages.push(first.text);
      else if (table) messages.push(...table);
      else
        problems.push(`${where(node)}: the message must be a string literal, found ${first?.getText(file) ?? 'none'}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return { messages, problems };
}

/** Every message under `src/`, each once, sorted so the bundle's diff shows only what changed. */
export function extractAll(srcDir: string = join(root, 'src')): Extracted {
  const messages = new Set<string>();
  const problems: string[] = [];
  const core = join(srcDir, 'core') + sep;
  for (const f of sourceFiles(srcDir)) {
    const found = extractFromSource(relative(root, f), readFileSync(f, 'utf8'), f.startsWith(core));
    found.messages.forEach((m) => messages.add(m));
    problems.push(...found.problems);
  }
  return { messages: [...messages].sort(), problems };
}

/** The bundle file's text for these messages: English, each message its own translation. */
export function bundleText(messages: readonly string[]): string {
  return JSON.stringify(Object.fromEntries(messages.map((m) => [m, m])), null, 2) + '\n';
}

function main(): void {
  const { messages, problems } = extractAll();
  if (problems.length) {
    console.error(`l10n: ${problems.length} call(s) cannot be extracted:\n  ${problems.join('\n  ')}`);
    process.exit(1);
  }
  const text = bundleText(messages);
  if (process.argv.includes('--check')) {
    const current = readFileSync(bundlePath, 'utf8');
    if (current !== text) {
      console.error(`l10n: ${relative(root, bundlePath)} is out of date with the sources: run npm run l10n`);
      process.exit(1);
    }
    return;
  }
  writeFileSync(bundlePath, text);
  console.log(`l10n: ${messages.length} messages in ${relative(root, bundlePath)}`);
}

if (require.main === module) main();
