/**
 * The refactoring agent's TypeScript language service over one workspace, kept in memory: the
 * project's JS and TS files are read once, every edit is applied here and handed back as the file's
 * new text (the agent writes it into the workspace). It runs in the agent's worker thread
 * (`refactorWorker.ts`), never on the gateway's event loop.
 *
 * It reads only the workspace's files and TypeScript's own lib files, and runs no repository code:
 * the repository's tsconfig/jsconfig is not loaded (a config can `extends` packages and plugins), so
 * the compiler options are fixed here, with `allowJs` so JavaScript is a first-class part of the
 * project.
 */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, join, posix, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

/** One declaration a name may mean. */
export interface Candidate {
  /** Repository-relative path. */
  readonly file: string;
  /** 1-based line and column of the name. */
  readonly line: number;
  readonly column: number;
  /** What it declares, in the language service's words (function, class, const, …). */
  readonly kind: string;
  /** Offset of the name in the file (what `rename` takes). */
  readonly pos: number;
}

/** A file's new text after an edit. */
export interface FileEdit {
  readonly file: string;
  readonly text: string;
  /** How many places in it changed. */
  readonly places: number;
}

export interface FixStep {
  readonly fixId: string;
  readonly description: string;
  /** How many edits it makes in the file. */
  readonly count: number;
}

/**
 * The combined code fixes "fix all" applies: ones that remove what is unused or unreachable or add
 * what is plainly missing. Fixes that guess (spelling), add types, silence diagnostics
 * (`// @ts-ignore`) or change a function's signature (making it async) are left out.
 */
export const FIX_ALL: ReadonlyMap<string, string> = new Map([
  ['unusedIdentifier_deleteImports', 'Delete unused imports'],
  ['unusedIdentifier_delete', 'Delete unused declarations'],
  ['addMissingAwait', "Add missing 'await'"],
  ['removeUnnecessaryAwait', "Remove unnecessary 'await'"],
  ['fixUnreachableCode', 'Remove unreachable code'],
  ['fixUnusedLabel', 'Remove unused labels'],
  ['addMissingConst', "Add missing 'const'"],
  ['fixNaNEquality', 'Use Number.isNaN() for NaN comparisons'],
  ['fixMissingImport', 'Add missing imports'],
]);

export const COMPILER_OPTIONS: ts.CompilerOptions = {
  allowJs: true,
  // JavaScript is checked too: without it the service reports nothing (not even unused code) for JS files.
  checkJs: true,
  noEmit: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.Preserve,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  jsx: ts.JsxEmit.Preserve,
  resolveJsonModule: true,
  allowImportingTsExtensions: true,
  esModuleInterop: true,
  strict: true,
  skipLibCheck: true,
  types: [],
  lib: ['lib.es2022.full.d.ts'],
};

const FORMAT: ts.FormatCodeSettings = {
  ...ts.getDefaultFormatCodeSettings('\n'),
  indentSize: 2,
  tabSize: 2,
  convertTabsToSpaces: true,
  semicolons: ts.SemicolonPreference.Ignore,
};
const PREFERENCES: ts.UserPreferences = {
  quotePreference: 'auto',
  importModuleSpecifierPreference: 'relative',
  providePrefixAndSuffixTextForRename: false,
  allowRenameOfImportPath: false,
};

/** TypeScript's lib files: beside the bundle (dist/ts-lib) when bundled, else the package's own. */
function libDir(): string {
  const bundled = join(__dirname, 'ts-lib');
  return existsSync(bundled) ? bundled : dirname(ts.getDefaultLibFilePath(COMPILER_OPTIONS));
}

export class ProjectService {
  private readonly texts = new Map<string, string>();
  private readonly versions = new Map<string, number>();
  private readonly service: ts.LanguageService;
  private readonly libs: string;

  /** `root`: the workspace; `files`: the project's repository-relative JS/TS files. */
  private readonly root: string;

  constructor(root: string, files: readonly string[]) {
    // Real paths, so a symbolic link in the repository cannot make the service read a file outside it.
    this.root = realpathSync(root);
    this.libs = realpathSync(libDir());
    for (const f of files) {
      this.texts.set(this.abs(f), readFileSync(join(root, f), 'utf8'));
      this.versions.set(this.abs(f), 1);
    }
    const within = (dir: string, p: string): boolean => {
      const r = relative(dir, p);
      return r === '' || (r.split(sep)[0] !== '..' && !isAbsolute(r));
    };
    const real = (p: string): string => {
      try {
        return realpathSync(p);
      } catch {
        return p;
      }
    };
    const inside = (p: string): boolean => {
      const r = real(p);
      return within(this.root, r) || within(this.libs, r);
    };
    const read = (p: string): string | undefined => {
      const mem = this.texts.get(p);
      if (mem !== undefined) return mem;
      if (!inside(p)) return undefined;
      try {
        return readFileSync(p, 'utf8');
      } catch {
        return undefined;
      }
    };
    const host: ts.LanguageServiceHost = {
      getCompilationSettings: () => COMPILER_OPTIONS,
      getScriptFileNames: () => [...this.texts.keys()],
      getScriptVersion: (p) => String(this.versions.get(p) ?? 0),
      getScriptSnapshot: (p) => {
        const t = read(p);
        return t === undefined ? undefined : ts.ScriptSnapshot.fromString(t);
      },
      getCurrentDirectory: () => this.root,
      getDefaultLibFileName: () => join(this.libs, 'lib.es2022.full.d.ts'),
      fileExists: (p) => this.texts.has(p) || (inside(p) && existsSync(p)),
      readFile: (p) => read(p),
      // Module resolution looks for folders; nothing outside the workspace (and the libs) exists for it.
      directoryExists: (p) => inside(p) && existsSync(p),
      getDirectories: () => [],
      useCaseSensitiveFileNames: () => true,
    };
    this.service = ts.createLanguageService(host, ts.createDocumentRegistry());
  }

  get fileCount(): number {
    return this.texts.size;
  }

  /** Builds the program once (the slow part), so the first question is answered as fast as the rest. */
  warmUp(): number {
    return this.service.getProgram()?.getSourceFiles().length ?? 0;
  }

  private abs(rel: string): string {
    return resolve(this.root, rel);
  }

  private rel(abs: string): string {
    return relative(this.root, abs).split(sep).join(posix.sep);
  }

  private isProjectFile(abs: string): boolean {
    return this.texts.has(abs);
  }

  /**
   * The declarations of `name` in the project (restricted to `scope` when given), one per symbol:
   * an export, its local declaration and its imports are one candidate (the declaration), because
   * renaming any of them renames all.
   */
  declarationsOf(name: string, scope?: readonly string[]): Candidate[] {
    const inScope = scope ? new Set(scope.map((f) => this.abs(f))) : undefined;
    const items = this.service
      .getNavigateToItems(name, 1000, undefined, false, false)
      .filter((i) => i.name === name && i.matchKind === 'exact' && this.isProjectFile(i.fileName));
    // One group per symbol: items whose rename locations or definitions meet are the same thing
    // (a declaration, its export and the imports or `require` bindings that point at it).
    const groups: { key: Set<string>; items: { item: ts.NavigateToItem; own: boolean }[] }[] = [];
    for (const item of items) {
      const at = `${item.fileName}:${item.textSpan.start}`;
      const locs =
        this.service.findRenameLocations(item.fileName, item.textSpan.start, false, false, PREFERENCES) ?? [];
      const defs = this.service.getDefinitionAtPosition(item.fileName, item.textSpan.start) ?? [];
      const key = new Set([
        at,
        ...locs.map((l) => `${l.fileName}:${l.textSpan.start}`),
        ...defs.map((d) => `${d.fileName}:${d.textSpan.start}`),
      ]);
      const own =
        defs.length === 0 || defs.some((d) => d.fileName === item.fileName && d.textSpan.start === item.textSpan.start);
      const same = groups.filter((g) => [...key].some((k) => g.key.has(k)));
      for (const g of same) groups.splice(groups.indexOf(g), 1);
      groups.push({
        key: new Set([...key, ...same.flatMap((g) => [...g.key])]),
        items: [{ item, own }, ...same.flatMap((g) => g.items)],
      });
    }
    const out: Candidate[] = [];
    for (const g of groups) {
      const pool = inScope ? g.items.filter((i) => inScope.has(i.item.fileName)) : g.items;
      if (!pool.length) continue;
      const chosen = [...pool].sort(
        (a, b) =>
          Number(b.own) - Number(a.own) ||
          rank(a.item.kind) - rank(b.item.kind) ||
          a.item.fileName.localeCompare(b.item.fileName) ||
          a.item.textSpan.start - b.item.textSpan.start,
      )[0].item;
      const sf = this.service.getProgram()?.getSourceFile(chosen.fileName);
      const lc = sf ? sf.getLineAndCharacterOfPosition(chosen.textSpan.start) : { line: 0, character: 0 };
      out.push({
        file: this.rel(chosen.fileName),
        line: lc.line + 1,
        column: lc.character + 1,
        kind: kindWords(chosen),
        pos: chosen.textSpan.start,
      });
    }
    return out.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
  }

  /** Renames the symbol declared at `file`/`pos` everywhere in the project; the files it changed. */
  rename(file: string, pos: number, newName: string): FileEdit[] {
    const abs = this.abs(file);
    const info = this.service.getRenameInfo(abs, pos, PREFERENCES);
    if (!info.canRename) throw new Error(`it cannot be renamed: ${info.localizedErrorMessage}`);
    const locs = this.service.findRenameLocations(abs, pos, false, false, PREFERENCES) ?? [];
    const outside = locs.filter((l) => !this.isProjectFile(l.fileName));
    if (outside.length)
      throw new Error(`it is declared outside the repository (${outside[0].fileName}), so it cannot be renamed here`);
    const byFile = new Map<string, ts.TextChange[]>();
    for (const l of locs) {
      const list = byFile.get(l.fileName) ?? [];
      list.push({ span: l.textSpan, newText: `${l.prefixText ?? ''}${newName}${l.suffixText ?? ''}` });
      byFile.set(l.fileName, list);
    }
    return [...byFile].map(([f, changes]) => this.apply(f, changes)).sort((a, b) => a.file.localeCompare(b.file));
  }

  /** Sorts and merges the file's imports and drops unused ones; its new text, or undefined when unchanged. */
  organizeImports(file: string): FileEdit | undefined {
    const abs = this.abs(file);
    const changes = this.service.organizeImports({ type: 'file', fileName: abs }, FORMAT, PREFERENCES);
    return this.applyAll(changes).find((e) => e.file === file);
  }

  /**
   * The allowed combined fixes that would change the file, in FIX_ALL's order. Each is asked for
   * directly: the service names a fix's combined form (`fixId`) on a diagnostic only when the file has
   * several of its kind, so one unused variable would otherwise go unfixed.
   */
  fixesFor(file: string): FixStep[] {
    const abs = this.abs(file);
    if (!this.service.getSemanticDiagnostics(abs).length && !this.service.getSuggestionDiagnostics(abs).length)
      return [];
    const out: FixStep[] = [];
    for (const [fixId, description] of FIX_ALL) {
      const changes = this.combined(abs, fixId);
      const count = changes.reduce((n, c) => n + c.textChanges.length, 0);
      if (count) out.push({ fixId, description, count });
    }
    return out;
  }

  /** Applies one combined fix to the file; the files it changed (normally only this one). */
  applyFix(file: string, fixId: string): FileEdit[] {
    if (!FIX_ALL.has(fixId)) throw new Error(`${fixId} is not a fix this agent applies`);
    return this.applyAll(this.combined(this.abs(file), fixId));
  }

  /** The fix's edits to project files (never a new file, or one outside the project). */
  private combined(abs: string, fixId: string): ts.FileTextChanges[] {
    const { changes } = this.service.getCombinedCodeFix({ type: 'file', fileName: abs }, fixId, FORMAT, PREFERENCES);
    return changes.filter((c) => !c.isNewFile && this.isProjectFile(c.fileName) && c.textChanges.length);
  }

  private applyAll(changes: readonly ts.FileTextChanges[]): FileEdit[] {
    const out: FileEdit[] = [];
    for (const c of changes) {
      // Never a new file or one outside the project.
      if (c.isNewFile || !this.isProjectFile(c.fileName) || !c.textChanges.length) continue;
      const before = this.texts.get(c.fileName);
      const edit = this.apply(c.fileName, c.textChanges);
      if (edit.text !== before) out.push(edit);
    }
    return out;
  }

  private apply(abs: string, changes: readonly ts.TextChange[]): FileEdit {
    let next = this.texts.get(abs) ?? '';
    // From the end, so earlier offsets stay valid.
    for (const c of [...changes].sort((a, b) => b.span.start - a.span.start)) {
      next = next.slice(0, c.span.start) + c.newText + next.slice(c.span.start + c.span.length);
    }
    this.texts.set(abs, next);
    this.versions.set(abs, (this.versions.get(abs) ?? 0) + 1);
    return { file: this.rel(abs), text: next, places: changes.length };
  }
}

/** Declarations before aliases (imports) and properties (an export object's `name: name`). */
function rank(kind: string): number {
  if (kind === ts.ScriptElementKind.alias) return 3;
  if (kind === ts.ScriptElementKind.memberVariableElement || kind === 'property') return 2;
  return 1;
}

function kindWords(item: ts.NavigateToItem): string {
  const kind =
    item.kind === ts.ScriptElementKind.localFunctionElement
      ? 'function'
      : item.kind === ts.ScriptElementKind.localClassElement
        ? 'class'
        : item.kind;
  return item.containerName ? `${kind} in ${item.containerName}` : kind;
}
