/**
 * The scope of a built-in agent's run: which files of the workspace copy it works on, decided from
 * the request alone, in this order:
 *   1. the files and folders sent as context (a folder arrives as its path with a trailing `/`);
 *   2. else the paths and globs the task text names ("src/", "src/**\/*.ts", "under src",
 *      "in src/cart.js", "*.css", quoted paths, Windows backslashes), resolved against the real files;
 *      names the task asks to leave out ("except config/", "not README.md") are taken away;
 *   3. else the whole repository.
 * A name that matches nothing is said; when every name matches nothing the run stops with a reason
 * that lists them and what exists, instead of formatting nothing or everything.
 *
 * Pure: the caller lists the files (git's tree of the copy) and which of them are ignored, and checks
 * each chosen file on disk before touching it. Every path here is untrusted input: anything that does
 * not stay inside the repository (`..`, an absolute path elsewhere, `.git`) is refused, and a name can
 * only ever select files that are in the list.
 */
import { posix } from 'node:path';

export type ScopeSource = 'context' | 'task' | 'repository';

export interface ScopeInput {
  /** The task as the user wrote it (without the text of the context parts). */
  readonly task: string;
  /** Repository-relative files and folders (`src/`) sent as context. */
  readonly context: readonly string[];
  /** Every file of the workspace copy, repository-relative and `/`-separated. */
  readonly files: readonly string[];
  /** Whether the agent works on this kind of file. */
  supports(path: string): boolean;
  /** Files an ignore file leaves out when a folder, a glob or the whole repository is expanded. */
  readonly ignored?: ReadonlySet<string>;
  /** Absolute paths that mean the repository (the caller's folder, the copy): a path under one counts as relative to it. */
  readonly roots?: readonly string[];
}

export interface Scope {
  readonly source: ScopeSource;
  /** What decided the scope, for the first step ("src/ (named in the task)"). */
  readonly label: string;
  /** The files to work on, repository-relative, without duplicates. */
  readonly files: readonly string[];
  /** Requested entries left out, each as `path (why)`. */
  readonly skipped: readonly string[];
  /** Other things the user should know: names that match nothing, names the context overrode. */
  readonly notes: readonly string[];
  /** Set when the run must stop: why, and what to do instead. */
  readonly failure?: string;
}

/** A path or glob the task text names. */
export interface NamedPath {
  /** As written, for messages. */
  readonly text: string;
  /** Repository-relative without a trailing `/` ('' is the repository itself); undefined when it leads outside. */
  readonly path: string | undefined;
  readonly glob: boolean;
  /** The task asks to leave it out ("except config/"). */
  readonly exclude: boolean;
  /**
   * Whether it is surely meant as a path. A bare word ("src", "config") or a product name ("Node.js")
   * only counts when it matches something; a certain name that matches nothing is said.
   */
  readonly certain: boolean;
}

/** Folders never expanded into unless named themselves (generated or vendored code). */
const SKIP_DIRS = /(^|\/)(node_modules|dist|build|out|coverage|vendor|\.next|\.nuxt|\.cache)\//;
const MAX_LISTED = 20;

export function resolveScope(input: ScopeInput): Scope {
  const names = input.task ? namedPaths(input.task, input.roots, (n) => matchName(input, n).all.length > 0) : [];
  if (input.context.length) return contextScope(input, names);
  return taskScope(input, names) ?? repositoryScope(input, [], []);
}

/** The first step of a run: "Scope: src/ (named in the task): 4 files". */
export function describeScope(scope: Scope, count: number = scope.files.length): string {
  return `Scope: ${scope.label}: ${count} file${count === 1 ? '' : 's'}`;
}

function contextScope(input: ScopeInput, names: readonly NamedPath[]): Scope {
  const files = new Set<string>();
  const skipped: string[] = [];
  const listed: string[] = [];
  let folders = 0;
  for (const raw of input.context) {
    const p = repoRelative(raw, input.roots);
    listed.push(raw);
    if (p === undefined) {
      skipped.push(`${raw} (not a path inside the repository)`);
      continue;
    }
    const isFile = input.files.includes(p);
    if (!isFile && (/[\\/]$/.test(raw) || p === '' || input.files.some((f) => f.startsWith(`${p}/`)))) {
      folders++;
      const inside = underFolder(input, p);
      if (!inside.all.length) skipped.push(`${raw} (no such folder)`);
      else if (!inside.eligible.length) skipped.push(`${raw} (no file of a supported type)`);
      for (const f of inside.eligible) files.add(f);
    } else if (!input.supports(p)) {
      skipped.push(`${raw} (not a supported file type)`);
    } else {
      // Not checked against the list: the caller's check on disk says "not found" for a file that is not there.
      files.add(p);
    }
  }
  const notes: string[] = [];
  const alsoNamed = names.filter((n) => !n.exclude && n.certain).map((n) => n.text);
  if (alsoNamed.length)
    notes.push(`The task also names ${list(alsoNamed)}; the files sent as context decide the scope.`);
  const what =
    folders === 0
      ? plural(listed.length, 'file')
      : folders === listed.length
        ? plural(listed.length, 'folder')
        : `${listed.length} files and folders`;
  const label = `the ${what} sent as context (${list(listed)})`;
  const failure = files.size
    ? undefined
    : `Nothing to work on in ${label}: ${skipped.join('; ')}. Send files of a type this agent supports, or name them in the task.`;
  return { source: 'context', label, files: [...files], skipped, notes, failure };
}

function taskScope(input: ScopeInput, names: readonly NamedPath[]): Scope | undefined {
  const notes: string[] = [];
  const skipped: string[] = [];
  const include: { name: NamedPath; match: Match }[] = [];
  const missing: NamedPath[] = [];
  const excluded = new Set<string>();
  const excludeText: string[] = [];
  for (const name of names) {
    const match = matchName(input, name);
    if (!match.all.length) {
      if (!name.certain) continue;
      if (name.exclude) notes.push(`Nothing matches ${name.text} (named in the task to leave out).`);
      else missing.push(name);
      continue;
    }
    if (name.exclude) {
      excludeText.push(shown(name, match));
      for (const f of match.all) excluded.add(f);
    } else include.push({ name, match });
  }
  for (const m of missing) {
    notes.push(
      `Nothing in the repository matches ${m.text} (named in the task)${m.path === undefined ? ': it is not a path inside the repository' : ''}; it was left out.`,
    );
  }
  if (!include.length && missing.length) {
    return {
      source: 'task',
      label: `${list(missing.map((m) => m.text))} (named in the task)`,
      files: [],
      skipped,
      notes,
      failure: nothingMatches(input, missing),
    };
  }
  if (!include.length)
    return excludeText.length ? repositoryScope(input, excludeText, [...excluded], notes) : undefined;
  const files = new Set<string>();
  for (const { name, match } of include) {
    for (const f of match.explicit) {
      if (excluded.has(f)) continue;
      if (input.supports(f)) files.add(f);
      else skipped.push(`${f} (not a supported file type)`);
    }
    const kept = match.eligible.filter((f) => !excluded.has(f));
    for (const f of kept) files.add(f);
    if (!match.explicit.length && !kept.length) {
      skipped.push(
        `${shown(name, match)} (${match.eligible.length ? 'everything in it is left out by the task' : 'no file of a supported type'})`,
      );
    }
  }
  const except = excludeText.length ? ` except ${list(excludeText)}` : '';
  const label = `${list(include.map((i) => shown(i.name, i.match)))}${except} (named in the task)`;
  const failure = files.size
    ? undefined
    : `Nothing to work on in ${list(include.map((i) => shown(i.name, i.match)))}${except}: ${skipped.join('; ')}. Name files of a type this agent supports.`;
  return { source: 'task', label, files: [...files], skipped, notes, failure };
}

function repositoryScope(
  input: ScopeInput,
  exceptText: readonly string[],
  excluded: readonly string[],
  notes: readonly string[] = [],
): Scope {
  const out = new Set(excluded);
  const files = underFolder(input, '').eligible.filter((f) => !out.has(f));
  const label = exceptText.length
    ? `the whole repository except ${list(exceptText)} (named in the task)`
    : 'the whole repository (no files were sent and the task names none)';
  return { source: 'repository', label, files, skipped: [], notes };
}

interface Match {
  /** Everything the name matches, whatever its type. */
  readonly all: readonly string[];
  /** Files named one by one (worked on if the agent supports their type; ignore files do not apply). */
  readonly explicit: readonly string[];
  /** Files a folder or glob expands to that the agent supports and no ignore file leaves out. */
  readonly eligible: readonly string[];
  /** The name is a folder (said with a trailing `/`, whether or not it was written with one). */
  readonly folder?: boolean;
}

function shown(name: NamedPath, match: Match): string {
  return match.folder && !/[\\/]$/.test(name.text) ? `${name.text}/` : name.text;
}

function matchName(input: ScopeInput, name: NamedPath): Match {
  const p = name.path;
  if (p === undefined) return { all: [], explicit: [], eligible: [] };
  if (name.glob) {
    const re = globToRegExp(p);
    const all = input.files.filter((f) => re.test(f));
    const base = literalFolder(p);
    return { all, explicit: [], eligible: all.filter((f) => eligible(input, f, base)) };
  }
  if (p !== '' && input.files.includes(p)) return { all: [p], explicit: [p], eligible: [] };
  const inside = underFolder(input, p);
  if (inside.all.length) return { all: inside.all, explicit: [], eligible: inside.eligible, folder: p !== '' };
  if (!p.includes('/') && posix.extname(p)) {
    // A bare file name ("cart.js") is that file wherever it is.
    const all = input.files.filter((f) => posix.basename(f) === p);
    return { all, explicit: all, eligible: [] };
  }
  return { all: [], explicit: [], eligible: [] };
}

function underFolder(input: ScopeInput, dir: string): { all: string[]; eligible: string[] } {
  const prefix = dir ? `${dir}/` : '';
  const all = input.files.filter((f) => f.startsWith(prefix));
  return { all, eligible: all.filter((f) => eligible(input, f, prefix)) };
}

/** `base` is the folder the user named: a skipped folder (dist/, vendor/) is only skipped below it. */
function eligible(input: ScopeInput, file: string, base: string): boolean {
  return input.supports(file) && !input.ignored?.has(file) && !SKIP_DIRS.test(file.slice(base.length));
}

function literalFolder(glob: string): string {
  const first = glob.search(/[*?[{]/);
  const head = first < 0 ? glob : glob.slice(0, first);
  const slash = head.lastIndexOf('/');
  return slash < 0 ? '' : head.slice(0, slash + 1);
}

function nothingMatches(input: ScopeInput, missing: readonly NamedPath[]): string {
  const lines = [
    `Nothing in the repository matches ${list(missing.map((m) => m.text))}, the ${missing.length === 1 ? 'path' : 'paths'} the task names.`,
  ];
  const top = entries(input.files, '');
  lines.push(top.length ? `The repository has: ${listed(top)}.` : 'The repository has no files.');
  const shown = new Set<string>(['']);
  for (const m of missing) {
    const dir = m.path === undefined ? '' : deepestFolder(input.files, m.path);
    if (shown.has(dir)) continue;
    shown.add(dir);
    lines.push(`${dir}/ has: ${listed(entries(input.files, dir))}.`);
  }
  lines.push('Name files or folders that exist, or send the files as context.');
  return lines.join(' ');
}

/** The deepest existing folder on the way to `path` ('' when none). */
function deepestFolder(files: readonly string[], path: string): string {
  const parts = path.split('/');
  for (let n = parts.length - 1; n > 0; n--) {
    const dir = parts.slice(0, n).join('/');
    if (!dir.includes('*') && files.some((f) => f.startsWith(`${dir}/`))) return dir;
  }
  return '';
}

/** The names directly in `dir`, folders with a trailing `/`. */
function entries(files: readonly string[], dir: string): string[] {
  const prefix = dir ? `${dir}/` : '';
  const out = new Set<string>();
  for (const f of files) {
    if (!f.startsWith(prefix)) continue;
    const rest = f.slice(prefix.length);
    const slash = rest.indexOf('/');
    out.add(slash < 0 ? rest : rest.slice(0, slash + 1));
  }
  return [...out].sort();
}

function listed(items: readonly string[]): string {
  return items.length > MAX_LISTED
    ? `${items.slice(0, MAX_LISTED).join(', ')} and ${items.length - MAX_LISTED} more`
    : items.join(', ');
}

function list(items: readonly string[]): string {
  if (items.length <= 1) return items.join('');
  const shown =
    items.length > MAX_LISTED ? [...items.slice(0, MAX_LISTED), `${items.length - MAX_LISTED} more`] : items;
  return `${shown.slice(0, -1).join(', ')} and ${shown[shown.length - 1]}`;
}

function plural(n: number, word: string): string {
  return n === 1 ? word : `${n} ${word}s`;
}

/**
 * A path as the user or a client wrote it, made repository-relative and `/`-separated without a
 * trailing `/`; undefined when it leads outside the repository or into `.git`. '' is the repository.
 */
export function repoRelative(raw: string, roots: readonly string[] = []): string | undefined {
  let p = raw.trim().replace(/\\/g, '/');
  if (p.startsWith('~')) return undefined;
  if (p.startsWith('/') || /^[A-Za-z]:\//.test(p)) {
    const root = roots
      .map((r) => r.replace(/\\/g, '/').replace(/\/+$/, ''))
      .find((r) => r && (p === r || p.startsWith(`${r}/`)));
    if (root === undefined) return undefined;
    p = p.slice(root.length + 1);
  }
  p = posix.normalize(p || '.').replace(/\/+$/, '');
  if (p === '.') return '';
  if (p.startsWith('/') || p === '..' || p.startsWith('../') || /^[A-Za-z]:/.test(p)) return undefined;
  // `.git` in any case, and its 8.3 short name on Windows.
  if (p.split('/').some((s) => s.toLowerCase() === '.git' || /^git~\d+$/i.test(s))) return undefined;
  return p;
}

/**
 * A glob as a RegExp over repository-relative paths: `*` and `?` stay within a folder, `**` crosses
 * folders, `[abc]` and `{a,b}` as in shells. A glob without a `/` matches the name in any folder
 * ("*.css" is every CSS file), as in .gitignore.
 */
export function globToRegExp(glob: string): RegExp {
  let re = '';
  let braces = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*') {
      if (glob[i + 1] === '*') {
        const slashAfter = glob[i + 2] === '/';
        re += slashAfter ? '(?:.*/)?' : '.*';
        i += slashAfter ? 2 : 1;
      } else re += '[^/]*';
    } else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end < 0) re += '\\[';
      else {
        const body = glob
          .slice(i + 1, end)
          .replace(/^!/, '^')
          .replace(/[\\\]]/g, '\\$&');
        re += `[${body}]`;
        i = end;
      }
    } else if (c === '{') {
      braces++;
      re += '(?:';
    } else if (c === '}' && braces) {
      braces--;
      re += ')';
    } else if (c === ',' && braces) re += '|';
    else re += c.replace(/[.+^$()|\\]/g, '\\$&');
  }
  re += ')'.repeat(braces);
  return new RegExp(glob.includes('/') ? `^${re}$` : `^(?:.*/)?${re}$`);
}

// ---- Reading names from the task text ----

/** Words after which a bare word is a place: "in src", "under config", "format src", "except docs". */
const LEADS = new Set([
  // Not "to", "of", "on", "at": "according to the docs", "on top of the tests" do not name folders.
  'in',
  'inside',
  'into',
  'under',
  'within',
  'from',
  'across',
  'throughout',
  'below',
  'beneath',
  'only',
  'format',
  'reformat',
  'prettify',
  'lint',
  'fix',
  'clean',
  'tidy',
  'check',
  'touch',
  'process',
]);
/** Words that start a list of things to leave out, until the end of the sentence. */
const EXCLUDES = new Set([
  'except',
  'excluding',
  'exclude',
  'not',
  'skip',
  'skipping',
  'ignore',
  'ignoring',
  'without',
  'besides',
  'leave',
  'leaving',
  'avoid',
  'never',
  "don't",
  'dont',
]);
/** Words skipped when looking at what comes before a bare word ("in the files of the src folder"). */
const FILLER = new Set([
  'the',
  'a',
  'an',
  'my',
  'our',
  'your',
  'this',
  'that',
  'these',
  'those',
  'all',
  'every',
  'each',
  'any',
  'whole',
  'entire',
  'files',
  'file',
  'folder',
  'folders',
  'directory',
  'directories',
  'dir',
  'code',
  'source',
  'sources',
]);
const FOLDER_WORDS = new Set(['folder', 'folders', 'directory', 'dir', 'tree', 'files', 'file', 'sources']);
/** Slashed words that are English, not paths. */
const SLASH_WORDS = new Set([
  'and/or',
  'either/or',
  'w/',
  'w/o',
  'i/o',
  'n/a',
  'y/n',
  'on/off',
  'read/write',
  'true/false',
  'yes/no',
  'input/output',
  'client/server',
]);
const ABBREVIATION = /^(e\.g|i\.e|etc|vs|cf|a\.k\.a|w\.r\.t|incl|approx|resp)$/i;
/** Dotted names that are usually products or sites: names only when such a file exists. */
const NOT_SURELY_A_FILE =
  /^(node|vue|next|nuxt|react|express|three|d3|chart|angular|ember|backbone|nest|deno|alpine|moment|socket)\.(js|io)$|\.(com|org|net|io|dev|app)$/i;

interface Token {
  /** The word or path with surrounding punctuation removed. */
  readonly text: string;
  readonly quoted: boolean;
  /** Written as a mention (`@src/a.ts`), which is also how npm scopes are written (`@types/node`). */
  readonly mention?: boolean;
  /** It ends a sentence or clause (. ; ! ?). */
  readonly endsClause: boolean;
  readonly endsWithComma: boolean;
}

const TOKEN =
  /"([^"\n]+)"(?=$|[\s,.;:!?)\]}])|'([^'\n]+)'(?=$|[\s,.;:!?)\]}])|`([^`\n]+)`|\u201c([^\u201d\n]+)\u201d|\u2018([^\u2019\n]+)\u2019|\S+/g;

function tokenize(task: string): Token[] {
  const text = task.replace(/\u2019(?=[a-z])/gi, "'");
  const re = new RegExp(TOKEN.source, 'g');
  const out: Token[] = [];
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const quoted = m.slice(1).find((g) => g !== undefined);
    const raw = m[0];
    if (quoted !== undefined) {
      // Punctuation right after the closing quote belongs to it ("'a.js'." ends a sentence; it is not a path ".").
      const tail = /^[,.;:!?)\]}]*/.exec(text.slice(re.lastIndex))?.[0] ?? '';
      re.lastIndex += tail.length;
      out.push({
        text: quoted.trim(),
        quoted: true,
        endsClause: /[.;!?]/.test(tail),
        endsWithComma: tail.startsWith(','),
      });
      continue;
    }
    const endsClause = /[.;!?][)"'\]]*$/.test(raw) && raw !== '.' && !/\.\.$/.test(raw);
    const endsWithComma = /,[)"'\]]*$/.test(raw);
    out.push({
      text: raw === '.' || raw === './' ? '.' : strip(raw),
      quoted: false,
      mention: /^[("'`[{<]*@/.test(raw),
      endsClause,
      endsWithComma,
    });
  }
  return out;
}

function strip(raw: string): string {
  return (
    raw
      .replace(/^[("'`[{<@]+/, '')
      .replace(/[)"'`\]}>,;:!?.]+$/, '')
      .replace(/'s$/, '')
      .replace(/:\d+(?::\d+)?$/, '')
      // Markdown emphasis ("**everything**") is a word, not a glob.
      .replace(/^(\*{1,2}|_{1,2})([\w-]+)\1$/, '$2')
  );
}

type Kind = 'glob' | 'path' | 'weak-path' | 'word' | undefined;

function kindOf(t: Token): Kind {
  const s = t.text;
  if (!s || /^[a-z][a-z0-9+.-]*:\/\//i.test(s) || /^(mailto|https?):/i.test(s)) return undefined;
  if (/[*?[\]{}]/.test(s) && /[\w.*]/.test(s)) return 'glob';
  if (s === '.') return 'path';
  if (/[\\/]/.test(s)) {
    if (SLASH_WORDS.has(s.toLowerCase()) || /^[\d/.\\-]+$/.test(s)) return undefined;
    // "github.com/org/repo" and "@types/node" are usually not files of this repository.
    return t.mention || NOT_SURELY_A_FILE.test(s.split(/[\\/]/)[0]) ? 'weak-path' : 'path';
  }
  if (/^\.[\w][\w.-]*$/.test(s)) return 'path';
  if (/^[\w@+~-][\w.@+~-]*\.[A-Za-z][\w-]{0,9}$/.test(s)) {
    if (ABBREVIATION.test(s.replace(/\.$/, ''))) return undefined;
    return NOT_SURELY_A_FILE.test(s) ? 'weak-path' : 'path';
  }
  if (t.quoted) return 'weak-path';
  if (/^[\w][\w-]*$/.test(s)) return 'word';
  return undefined;
}

/**
 * The paths and globs a task names, in order, each marked as to include or to leave out. Names that
 * are not surely paths (bare words, product names) are only kept when `matches` says they match
 * something (without it, they are kept and marked uncertain).
 */
export function namedPaths(
  task: string,
  roots: readonly string[] = [],
  matches?: (name: NamedPath) => boolean,
): NamedPath[] {
  const tokens = tokenize(task);
  const out: NamedPath[] = [];
  const isName = new Set<number>();
  let excluding = false;
  let afterComma = false;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    const word = t.text.toLowerCase();
    const kind = kindOf(t);
    const certain = kind === 'glob' || kind === 'path';
    const candidate = certain || kind === 'weak-path' || (kind === 'word' && leadsToPlace(tokens, i, isName));
    const name: NamedPath | undefined = candidate
      ? {
          text: t.text,
          path: kind === 'glob' ? globPath(t.text) : repoRelative(t.text, roots),
          glob: kind === 'glob',
          exclude: false,
          certain,
        }
      : undefined;
    const named = name !== undefined && (certain || !matches || matches(name));
    if (afterComma && !named) excluding = false;
    afterComma = false;
    if (!t.quoted && EXCLUDES.has(word)) excluding = true;
    else if (!t.quoted && word === 'but') excluding = /^(all|everything|anything)$/i.test(tokens[i - 1]?.text ?? '');
    else if (
      !t.quoted &&
      (word === 'than' || word === 'from') &&
      /^(other|apart|aside)$/i.test(tokens[i - 1]?.text ?? '')
    )
      excluding = true;
    if (named) {
      isName.add(i);
      out.push({ ...name, exclude: excluding });
    }
    if (t.endsClause) excluding = false;
    if (t.endsWithComma) afterComma = true;
  }
  return out;
}

/** A glob's path: backslashes are folder separators (Windows), the rest is checked like a path. */
function globPath(text: string): string | undefined {
  const p = text.replace(/\\/g, '/');
  const literal = p.slice(0, Math.max(0, p.search(/[*?[{]/)));
  if (p.startsWith('/') || repoRelative(literal || '.') === undefined || /(^|\/)(\.\.|\.git)(\/|$)/i.test(p))
    return undefined;
  return p.replace(/^(\.\/)+/, '');
}

/** Whether a bare word stands where a place is named: after "in", "under", a verb, "except", or in a list of names. */
function leadsToPlace(tokens: readonly Token[], i: number, isName: ReadonlySet<number>): boolean {
  const next = tokens[i + 1]?.text.toLowerCase();
  if (next && FOLDER_WORDS.has(next) && !tokens[i].endsClause) return true;
  let j = i - 1;
  while (j >= 0 && FILLER.has(tokens[j].text.toLowerCase()) && !tokens[j].endsClause) j--;
  if (j < 0 || tokens[j].endsClause) return false;
  const prev = tokens[j].text.toLowerCase();
  if (LEADS.has(prev) || EXCLUDES.has(prev)) return true;
  if (isName.has(j) && tokens[j].endsWithComma) return true;
  return (prev === 'and' || prev === 'or' || prev === '&') && isName.has(j - 1);
}
