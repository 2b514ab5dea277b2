/**
 * Decides, before anything is offered for applying, which parts of a patch Baton refuses by default
 * (docs/security.md "Patches"). Each finding is one item the user may override on its own; refusals name
 * the path and why. Paths are compared after folding the spellings that file systems treat alike:
 * case, Unicode compatibility forms (fullwidth `．ｇｉｔ`), characters that render as nothing
 * (zero-width, bidi controls, HFS+-ignored code points), Windows' trailing dots and spaces,
 * NTFS stream suffixes (`.git::$INDEX_ALLOCATION`) and 8.3 short names (`GIT~1`, `GITHUB~1`,
 * `VSCODE~1`: Windows generates one for every name that is not 8.3 itself, so each protected name has
 * one). Windows device names (`NUL`, `CON`, `COM1`, … with any extension) are refused: there, writing
 * such a path reaches the device instead of a file.
 */
import { english } from '../protocol/l10n';
import type { PatchFile, PatchHunk, ParsedPatch, PatchSelection } from './patchModel';
import { applyHunks } from './patchText';
import { riskReasonText, type RiskMessage, type SensitiveFolder, type SensitiveName } from './riskText';

export type RiskKind =
  | 'invalid-path'
  | 'absolute-path'
  | 'traversal'
  | 'git-dir'
  | 'symlink'
  | 'submodule'
  | 'executable'
  | 'odd-mode'
  | 'binary'
  | 'sensitive-file'
  | 'hook-file'
  | 'package-scripts';

export type RiskSeverity = 'refuse' | 'flag';

export interface RiskItem {
  /** Stable: `<file id>:<kind>`. Pass it in `PatchSelection.overrides` to allow the item. */
  readonly id: string;
  readonly fileId: string;
  /** The offending path as the patch names it. */
  readonly path: string;
  readonly kind: RiskKind;
  /** `refuse`: left out unless overridden. `flag`: applied by default, shown for attention. */
  readonly severity: RiskSeverity;
  /** Why, as data: the host says it in the user's language (`riskReasonText`). */
  readonly message: RiskMessage;
  /** Why, in English: one sentence for logs, the CLI and the audit record. */
  readonly reason: string;
}

export interface RiskReport {
  readonly items: readonly RiskItem[];
  /** File ids with at least one refusal. */
  readonly refusedFiles: ReadonlySet<string>;
}

export interface ClassifyOptions {
  /**
   * Reads a repository-relative text file as it is now (undefined when missing). Lets the classifier
   * compare `package.json` `scripts` exactly instead of guessing from hunk context.
   */
  readonly readText?: (path: string) => string | undefined;
}

// Characters that display as nothing or are ignored by HFS+ / NTFS name comparison. The class lists
// combining and joining characters on purpose, one by one.
const INVISIBLE =
  // eslint-disable-next-line no-misleading-character-class
  /[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8]|\udb40[\udc00-\udfff]/g;

/**
 * Folds one path segment to the spelling a case-insensitive, Unicode-normalising file system would
 * see: `.GIT`, `.git.`, `.git `, `．ｇｉｔ`, `.g\u200bit`, `.git::$DATA` all become `.git`.
 */
export function foldSegment(segment: string): string {
  let s = segment.normalize('NFKC').replace(INVISIBLE, '');
  const colon = s.indexOf(':');
  if (colon > 0) s = s.slice(0, colon);
  if (/^[. ]+$/.test(s)) {
    // Windows drops trailing dots and spaces, so `.. ` and `...` reach the parent like `..` does.
    const dots = s.replace(/ /g, '');
    return dots.length >= 2 ? '..' : dots;
  }
  return s.replace(/[. ]+$/, '').toLowerCase();
}

function segmentsOf(path: string): string[] {
  return path.split(/[\\/]/);
}

function isDotGit(folded: string): boolean {
  return folded === '.git' || /^git~\d+$/.test(folded);
}

/** Names folded by foldSegment, matched at any depth. */
const SENSITIVE_NAMES = new Map<string, SensitiveName>([
  ['.gitattributes', 'git-attributes'],
  ['.gitmodules', 'git-modules'],
  ['.envrc', 'direnv'],
  ['.devcontainer.json', 'devcontainer-file'],
]);
const SENSITIVE_DIRS = new Map<string, SensitiveFolder>([
  ['.vscode', 'editor-folder'],
  ['.devcontainer', 'devcontainer-folder'],
]);
const HOOK_DIRS = new Set(['.husky', '.githooks', '.git-hooks', '.hooks']);
const HOOK_FILES = new Set([
  '.pre-commit-config.yaml',
  '.pre-commit-hooks.yaml',
  'lefthook.yml',
  'lefthook.yaml',
  '.lefthook.yml',
  '.lefthook.yaml',
  '.huskyrc',
  '.huskyrc.json',
  '.huskyrc.js',
]);
const MODES = new Set(['100644', '100755', '120000', '160000', '040000']);

/** Every name the checks below look for, as foldSegment spells it (`.git` first: it wins a tie). */
const PROTECTED_NAMES: readonly string[] = [
  '.git',
  '.github',
  'workflows',
  'actions',
  ...SENSITIVE_DIRS.keys(),
  ...HOOK_DIRS,
  ...SENSITIVE_NAMES.keys(),
  ...HOOK_FILES,
];

/** The parts of the 8.3 name Windows generates for a long name: the stem before `~N` and up to 3 extension characters. */
function shortNameParts(long: string): { stem: string; ext: string } {
  const bare = long.replace(/^\.+/, '');
  const dot = bare.lastIndexOf('.');
  const clean = (t: string): string => t.replace(/[. ]/g, '').replace(/[+,;=[\]]/g, '_');
  return dot < 0
    ? { stem: clean(bare), ext: '' }
    : { stem: clean(bare.slice(0, dot)), ext: clean(bare.slice(dot + 1)) };
}

/**
 * Whether a folded segment can be the 8.3 alias of a long name: `github~1` of `.github`,
 * `devcon~1.jso` of `.devcontainer.json`, or the hashed form past the fourth alias (`gi4f2a~1`: two
 * characters of the name and four hex digits).
 */
function isShortNameOf(folded: string, long: string): boolean {
  const m = /^([^~]+)~(\d+)(?:\.([^.]+))?$/.exec(folded);
  if (!m) return false;
  const { stem, ext } = shortNameParts(long);
  if ((m[3] ?? '') !== ext.slice(0, 3)) return false;
  const keep = Math.min(stem.length, 7 - m[2].length);
  if (m[1] === stem.slice(0, keep)) return true;
  return (
    m[1].length === keep && keep >= 6 && m[1].slice(0, 2) === stem.slice(0, 2) && /^[0-9a-f]{4}$/.test(m[1].slice(2))
  );
}

/** The protected name a folded segment stands for, when it is one's 8.3 alias; else the segment itself. */
function longNameOf(folded: string): string {
  if (!folded.includes('~')) return folded;
  return PROTECTED_NAMES.find((long) => isShortNameOf(folded, long)) ?? folded;
}

/** The Windows device name a folded segment opens (`nul`, `com1.txt`, `lpt9 .log`), if any. */
function deviceName(folded: string): string | undefined {
  const m = /^(con|prn|aux|nul|com[0-9]|lpt[0-9]|conin\$|conout\$) *(?:\..*)?$/.exec(folded);
  return m ? m[1].toUpperCase() : undefined;
}

interface PathFinding {
  kind: RiskKind;
  message: RiskMessage;
}

/** Every reason a single repository-relative path is refused; empty when it is acceptable. */
export function classifyPath(path: string): PathFinding[] {
  const out: PathFinding[] = [];
  if (path === '') return [{ kind: 'invalid-path', message: { code: 'empty-path' } }];
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(path)) out.push({ kind: 'invalid-path', message: { code: 'control-characters' } });
  if (/^[\\/]/.test(path) || /^[A-Za-z]:/.test(path) || /^[\\/]{2}/.test(path) || /^[\uff0f\uff3c]/.test(path)) {
    out.push({ kind: 'absolute-path', message: { code: 'absolute' } });
  }
  const segs = segmentsOf(path);
  const folded = segs.map(foldSegment).map(longNameOf);
  if (folded.some((f) => f === '..')) out.push({ kind: 'traversal', message: { code: 'traversal' } });
  else if (
    segs.slice(0, -1).some((s) => s === '' || s === '.') ||
    segs[segs.length - 1] === '' ||
    folded.some((f) => f === '.')
  ) {
    if (!out.some((f) => f.kind === 'absolute-path'))
      out.push({ kind: 'invalid-path', message: { code: 'empty-segments' } });
  }
  const device = folded.map(deviceName).find((d) => d !== undefined);
  if (device) out.push({ kind: 'invalid-path', message: { code: 'device-name', device } });
  if (folded.some(isDotGit)) out.push({ kind: 'git-dir', message: { code: 'git-dir' } });
  for (let i = 0; i < folded.length; i++) {
    const f = folded[i];
    const last = i === folded.length - 1;
    if (f === '.github' && (folded[i + 1] === 'workflows' || folded[i + 1] === 'actions') && !last) {
      out.push({ kind: 'sensitive-file', message: { code: 'ci-workflow' } });
      break;
    }
    const dir = SENSITIVE_DIRS.get(f);
    if (!last && dir) {
      out.push({ kind: 'sensitive-file', message: { code: dir, folder: f } });
      break;
    }
    if (!last && HOOK_DIRS.has(f)) {
      out.push({ kind: 'hook-file', message: { code: 'hook-folder', folder: f } });
      break;
    }
    const name = last ? SENSITIVE_NAMES.get(f) : undefined;
    if (name) out.push({ kind: 'sensitive-file', message: { code: name, name: f } });
    if (last && HOOK_FILES.has(f)) out.push({ kind: 'hook-file', message: { code: 'hook-config', name: f } });
    if (last && (dir || HOOK_DIRS.has(f))) {
      out.push({ kind: 'sensitive-file', message: { code: 'replaces-folder', folder: f } });
    }
  }
  return out;
}

function isExec(mode: string | undefined): boolean {
  return mode !== undefined && /^100[0-7]{3}$/.test(mode) && (parseInt(mode.slice(3), 8) & 0o111) !== 0;
}

/** Names of scripts whose command differs, or undefined when either side is not JSON. */
export function changedPackageScripts(before: string | undefined, after: string | undefined): string[] | undefined {
  const scripts = (text: string | undefined): Record<string, unknown> | undefined => {
    if (text === undefined) return {};
    try {
      const v: unknown = JSON.parse(text);
      if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
      const s = (v as Record<string, unknown>)['scripts'];
      return s !== null && typeof s === 'object' && !Array.isArray(s) ? (s as Record<string, unknown>) : {};
    } catch {
      return undefined;
    }
  };
  const a = scripts(before);
  const b = scripts(after);
  if (!a || !b) return undefined;
  const names = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...names].filter((n) => JSON.stringify(a[n]) !== JSON.stringify(b[n])).sort();
}

/**
 * Guesses whether a hunk edits the `scripts` object of a package.json when the file itself is not
 * available: a changed line inside a visible `"scripts": {` block, or a changed `"name": "command"`
 * line whose enclosing key is not in the hunk's context and is not a dependency list.
 */
function hunkTouchesScripts(h: PatchHunk): boolean {
  let block: string | undefined;
  for (const l of h.lines) {
    const op = l[0];
    const body = l.slice(1);
    const opens = /^\s*"([^"]+)"\s*:\s*\{/.exec(body);
    if (opens) {
      if ((op === '+' || op === '-') && opens[1] === 'scripts') return true;
      block = opens[1];
      continue;
    }
    if (/^\s*}/.test(body)) {
      block = undefined;
      continue;
    }
    if (op !== '+' && op !== '-') continue;
    if (block === 'scripts' || /"scripts"\s*:/.test(body)) return true;
    if (
      block === undefined &&
      /^\s*"[^"]+"\s*:\s*"/.test(body) &&
      !/^\s*"(name|version|description|main|module|types|license|author|homepage|type)"\s*:/.test(body)
    )
      return true;
  }
  return false;
}

function fileFindings(f: PatchFile, opts: ClassifyOptions): PathFinding[] {
  const out: PathFinding[] = [];
  const paths = [...new Set([f.oldPath, f.newPath].filter((p): p is string => p !== undefined))];
  if (paths.length === 0) out.push({ kind: 'invalid-path', message: { code: 'no-path' } });
  for (const p of paths) out.push(...classifyPath(p));
  if (f.newMode === '120000' || f.oldMode === '120000') out.push({ kind: 'symlink', message: { code: 'symlink' } });
  if (f.newMode === '160000' || f.oldMode === '160000') out.push({ kind: 'submodule', message: { code: 'submodule' } });
  for (const m of [f.oldMode, f.newMode]) {
    if (m !== undefined && !MODES.has(m) && !/^100[0-7]{3}$/.test(m))
      out.push({ kind: 'odd-mode', message: { code: 'odd-mode', mode: m } });
  }
  if (isExec(f.newMode) && !isExec(f.oldMode) && f.status !== 'deleted') {
    out.push({ kind: 'executable', message: { code: f.status === 'added' ? 'new-executable' : 'made-executable' } });
  }
  if (f.binary) out.push({ kind: 'binary', message: { code: 'binary' } });
  const base = (f.newPath ?? f.oldPath ?? '').split('/').pop();
  if (base === 'package.json' && !f.binary) {
    let changed: string[] | undefined;
    if (opts.readText && f.status !== 'added' && f.oldPath !== undefined) {
      const before = opts.readText(f.oldPath);
      if (before !== undefined) {
        const after = f.status === 'deleted' ? undefined : applyHunks(before, f.hunks);
        if (after !== undefined || f.status === 'deleted') changed = changedPackageScripts(before, after);
      }
    } else if (f.status === 'added') {
      const after = applyHunks('', f.hunks);
      changed = after === undefined ? undefined : changedPackageScripts(undefined, after);
    }
    const flagged = changed === undefined ? f.hunks.some(hunkTouchesScripts) : changed.length > 0;
    if (flagged) {
      out.push({
        kind: 'package-scripts',
        message: changed?.length ? { code: 'package-scripts', scripts: changed } : { code: 'package-scripts-maybe' },
      });
    }
  }
  return out;
}

/** Classifies every file of a patch. */
export function classifyPatch(patch: ParsedPatch, opts: ClassifyOptions = {}): RiskReport {
  const items: RiskItem[] = [];
  const refused = new Set<string>();
  for (const f of patch.files) {
    const seen = new Set<RiskKind>();
    for (const finding of fileFindings(f, opts)) {
      if (seen.has(finding.kind)) continue;
      seen.add(finding.kind);
      const severity: RiskSeverity = finding.kind === 'package-scripts' ? 'flag' : 'refuse';
      if (severity === 'refuse') refused.add(f.id);
      items.push({
        id: `${f.id}:${finding.kind}`,
        fileId: f.id,
        path: f.newPath ?? f.oldPath ?? '',
        kind: finding.kind,
        severity,
        message: finding.message,
        reason: riskReasonText(finding.message, english),
      });
    }
  }
  return { items, refusedFiles: refused };
}

/** Refusals of these files that the selection has not overridden. */
export function unresolvedRefusals(
  report: RiskReport,
  fileIds: Iterable<string>,
  overrides: readonly string[] = [],
): RiskItem[] {
  const ids = new Set(fileIds);
  const allowed = new Set(overrides);
  return report.items.filter((i) => i.severity === 'refuse' && ids.has(i.fileId) && !allowed.has(i.id));
}

/** "Apply all" as offered by default: every file with no refusal (overridden refusals count as allowed). */
export function defaultSelection(
  patch: ParsedPatch,
  report: RiskReport,
  overrides: readonly string[] = [],
): PatchSelection {
  const allowed = new Set(overrides);
  const blocked = new Set(
    report.items.filter((i) => i.severity === 'refuse' && !allowed.has(i.id)).map((i) => i.fileId),
  );
  return { files: patch.files.filter((f) => !blocked.has(f.id)).map((f) => f.id), overrides: [...allowed] };
}
