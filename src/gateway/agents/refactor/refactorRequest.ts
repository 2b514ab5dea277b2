/**
 * What the refactoring agent is asked, read from the task's text with a small grammar: a rename
 * ("rename calculateTotal to computeTotal [in src/cart.js]"), "organise imports", "fix all", or the
 * last two together. Which part of the text can name the scope is the grammar's to say (for a
 * rename, what follows the new name, so the names themselves are never read as paths); the files
 * are then chosen as for every built-in agent, by `resolveScope` in ../scope.ts. Anything else is
 * refused with what it can do, so a request is never guessed at. Pure: no I/O.
 */
import type { Candidate } from './languageService';
import { globToRegExp, namedPaths, repoRelative } from '../scope';

export type RefactorOp =
  | { readonly kind: 'rename'; readonly from: string; readonly to: string }
  | { readonly kind: 'organize-imports' }
  | { readonly kind: 'fix-all' };

export interface RefactorRequest {
  readonly ops: readonly RefactorOp[];
  /** The paths, folders and globs its scope text names, as written (empty: none named). */
  readonly paths: readonly string[];
}

export const HELP = [
  'The refactoring agent does one of these (in the files sent as context, else the paths the task names, else the whole repository):',
  '- rename a symbol everywhere it is used: "rename calculateTotal to computeTotal", "rename `Cart` to `Basket` in src/cart.js"',
  '- organise imports: "organise imports in src/"',
  '- fix all: apply the TypeScript language service\'s safe combined fixes (unused declarations and imports, missing await, unreachable code, …): "fix all in src/**/*.ts"',
  '- both of the last two: "organise imports and fix all"',
].join('\n');

const IDENT = '[A-Za-z_$][\\w$]*';
const QUOTED = (g: string) => `[\`'"]?(?<${g}>${IDENT})[\`'"]?`;
const RENAME = new RegExp(
  `^\\s*rename\\s+(?:the\\s+)?(?:symbol|function|method|class|interface|type|variable|constant|const|enum|identifier)?\\s*${QUOTED('from')}\\s+(?:to|as|into|->|→)\\s+${QUOTED('to')}(?<rest>.*)$`,
  'is',
);
const ORGANIZE = /\b(organi[sz]e|sort|tidy|clean\s*up)\s+(?:the\s+|all\s+)?imports?\b/i;
const FIX_ALL = /\bfix[\s-]*all\b|\bapply\s+(?:all\s+)?(?:the\s+)?(?:safe\s+)?(?:code\s+)?fix(?:es)?\b/i;
const RESERVED = new Set(
  'break case catch class const continue debugger default delete do else enum export extends false finally for function if import in instanceof new null return super switch this throw true try typeof var void while with yield let static implements interface package private protected public await'.split(
    ' ',
  ),
);

export function parseRefactorRequest(text: string): RefactorRequest | { readonly error: string } {
  const t = text.trim();
  const rename = RENAME.exec(t);
  if (rename?.groups) {
    const { from, to } = rename.groups;
    if (RESERVED.has(to))
      return { error: `"${to}" is a reserved word in JavaScript and cannot be a name; choose another.` };
    if (from === to) return { error: `"${from}" already has that name.` };
    return { ops: [{ kind: 'rename', from, to }], paths: pathsIn(scopeText(t)) };
  }
  const ops: RefactorOp[] = [];
  // Fixes first: they drop unused imports, which organising then sorts around.
  if (FIX_ALL.test(t)) ops.push({ kind: 'fix-all' });
  if (ORGANIZE.test(t)) ops.push({ kind: 'organize-imports' });
  if (!ops.length) {
    const looksLikeRename = /^\s*rename\b/i.test(t);
    return {
      error: `${looksLikeRename ? 'A rename reads "rename <name> to <new name>" with plain identifiers.' : 'This task is not one the refactoring agent understands.'}\n${HELP}`,
    };
  }
  return { ops, paths: pathsIn(t) };
}

/**
 * The part of the task that can name the scope: for a rename, what follows the new name ("in
 * src/cart.js"), so that `rename \`utils\` to \`helpers\`` never means the utils/ folder; otherwise
 * the whole text.
 */
export function scopeText(text: string): string {
  return RENAME.exec(text.trim())?.groups?.rest ?? text;
}

/** The paths, folders and globs the text surely names, as the shared scope reads them (`./` dropped). */
export function pathsIn(text: string): string[] {
  const names = namedPaths(text, [], () => false).filter((n) => !n.exclude);
  return [...new Set(names.map((n) => n.text.replace(/^(\.\/)+/, '')))];
}

/** Whether `file` (repository-relative) is named by a path, folder or glob, matched as the shared scope matches them. */
export function matchesPath(file: string, spec: string): boolean {
  if (/[*?[{]/.test(spec)) return globToRegExp(spec.replace(/^(\.\/)+/, '')).test(file);
  const p = repoRelative(spec);
  return p !== undefined && (p === '' || file === p || file.startsWith(`${p}/`));
}

/** The question asked when a name has several declarations: numbered, with file:line and kind. */
export function ambiguityQuestion(name: string, to: string, candidates: readonly Candidate[]): string {
  return [
    `"${name}" is declared in ${candidates.length} places. Which one should be renamed to "${to}"?`,
    ...candidates.map((c, i) => `  ${i + 1}. ${c.file}:${c.line} (${c.kind})`),
    'Reply with its number, its file (when only one is there) or file:line.',
  ].join('\n');
}

/** Which candidate a reply names: "2", "#2", "the one in src/cart.js", "src/cart.js:4"; or why none. */
export function pickCandidate(
  reply: string,
  candidates: readonly Candidate[],
): { readonly index: number } | { readonly why: string } {
  const r = reply.trim().replace(/^[`'"]+|[`'".!]+$/g, '');
  if (!r) return { why: 'the reply was empty' };
  const num = /^(?:#|no\.?\s*|number\s+|option\s+|the\s+)?(\d+)(?:st|nd|rd|th)?(?:\s+one)?$/i.exec(r);
  if (num) {
    const n = Number(num[1]);
    return n >= 1 && n <= candidates.length
      ? { index: n - 1 }
      : { why: `there is no number ${n}: choose 1 to ${candidates.length}` };
  }
  for (const m of r.matchAll(/([\w./@*-]+\.[\w]+)(?::(\d+))?/g)) {
    const path = m[1].replace(/^\.\//, '');
    const line = m[2] === undefined ? undefined : Number(m[2]);
    const inFile = candidates
      .map((c, i) => ({ c, i }))
      .filter(({ c }) => c.file === path || c.file.endsWith(`/${path}`));
    if (!inFile.length) continue;
    if (line !== undefined) {
      const at = inFile.find(({ c }) => c.line === line);
      if (at) return { index: at.i };
      return {
        why: `none of them is at line ${line} of ${inFile[0].c.file} (there: line ${inFile.map(({ c }) => c.line).join(', ')})`,
      };
    }
    if (inFile.length === 1) return { index: inFile[0].i };
    return { why: `${inFile[0].c.file} has ${inFile.length} of them: reply with the number or file:line` };
  }
  return { why: `"${reply.trim().slice(0, 80)}" names none of them` };
}
