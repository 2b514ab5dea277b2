/**
 * Cuts a patch down to what the user chose (whole files and/or single hunks) as a patch `git apply`
 * accepts. Whole files are copied byte for byte from the original (so git applies exactly what was
 * reviewed, whatever its encoding); a file applied hunk by hunk is rewritten with only those hunks and
 * the new-side line numbers recomputed.
 */
import { concatBytes } from './bytes';
import type { ByteRange, ParsedPatch, PatchFile, PatchHunk, PatchSelection } from './patchModel';
import { gitQuotePath } from './patchParser';
import type { RiskItem, RiskReport } from './patchRisk';
import { unresolvedRefusals } from './patchRisk';

export type PatchPart =
  { readonly kind: 'bytes'; readonly range: ByteRange } | { readonly kind: 'text'; readonly text: string };

export interface SelectedFile {
  readonly file: PatchFile;
  /** The hunks that will be applied (all of them when `whole`). */
  readonly hunks: readonly PatchHunk[];
  readonly whole: boolean;
}

export interface SubPatch {
  readonly files: readonly SelectedFile[];
  readonly parts: readonly PatchPart[];
  /** Every file of the patch, whole, in order: the original bytes can be used as they are. */
  readonly isWholePatch: boolean;
}

export class PatchSelectionError extends Error {
  constructor(
    message: string,
    /** Refused items the selection includes without an override. */
    readonly refusals: readonly RiskItem[],
  ) {
    super(message);
    this.name = 'PatchSelectionError';
  }
}

/** Resolves a selection to files and hunks; throws PatchSelectionError for unknown ids, unoverridden refusals, or hunk choices a file cannot take. */
export function resolveSelection(patch: ParsedPatch, report: RiskReport, selection: PatchSelection): SelectedFile[] {
  const byId = new Map(patch.files.map((f) => [f.id, f] as const));
  const hunkOwner = new Map<string, PatchFile>();
  for (const f of patch.files) for (const h of f.hunks) hunkOwner.set(h.id, f);
  const whole = new Set<string>();
  const chosen = new Map<string, Set<string>>();
  const unknown: string[] = [];
  for (const id of selection.files ?? []) {
    if (byId.has(id)) whole.add(id);
    else unknown.push(id);
  }
  for (const id of selection.hunks ?? []) {
    const f = hunkOwner.get(id);
    if (!f) {
      unknown.push(id);
      continue;
    }
    const set = chosen.get(f.id) ?? new Set<string>();
    set.add(id);
    chosen.set(f.id, set);
  }
  if (unknown.length)
    throw new PatchSelectionError(
      `The selection names files or hunks that are not in this patch: ${unknown.join(', ')}.`,
      [],
    );
  const out: SelectedFile[] = [];
  const problems: string[] = [];
  for (const f of patch.files) {
    const hs = chosen.get(f.id);
    if (whole.has(f.id) || (hs && hs.size === f.hunks.length)) {
      out.push({ file: f, hunks: f.hunks, whole: true });
    } else if (hs) {
      const label = f.newPath ?? f.oldPath ?? f.id;
      if (f.status === 'added' || f.status === 'deleted')
        problems.push(`${label} is ${f.status} by the patch: apply it whole or not at all`);
      else if (f.binary) problems.push(`${label} is a binary change: apply it whole or not at all`);
      else if (f.lossy) problems.push(`${label} is not UTF-8 text: apply it whole or not at all`);
      out.push({ file: f, hunks: f.hunks.filter((h) => hs.has(h.id)), whole: false });
    }
  }
  if (problems.length)
    throw new PatchSelectionError(`Some choices cannot be applied hunk by hunk: ${problems.join('; ')}.`, []);
  const refusals = unresolvedRefusals(
    report,
    out.map((s) => s.file.id),
    selection.overrides,
  );
  if (refusals.length) {
    throw new PatchSelectionError(
      `The selection includes refused changes; override each one to apply it: ${refusals.map((r) => `${r.path} (${r.reason})`).join('; ')}.`,
      refusals,
    );
  }
  if (out.length === 0) throw new PatchSelectionError('Nothing is selected to apply.', []);
  return out;
}

function hunkText(h: PatchHunk, newStart: number): string {
  const count = (start: number, n: number): string => (n === 1 ? `${start}` : `${start},${n}`);
  const context = h.header.replace(/^@@ [^@]*@@/, '');
  const body = h.lines.map((l) => (l === '' ? ' ' : l)).join('\n');
  return `@@ -${count(h.oldStart, h.oldLines)} +${count(newStart, h.newLines)} @@${context}\n${body}\n`;
}

/** The unified-diff text of one file with the given hunks (new-side starts recomputed for the ones left out). */
export function fileText(f: PatchFile, hunks: readonly PatchHunk[]): string {
  let text = f.headerText;
  let delta = 0;
  for (const h of hunks) {
    const newStart =
      h.oldLines === 0 ? h.oldStart + delta + 1 : h.newLines === 0 ? h.oldStart + delta - 1 : h.oldStart + delta;
    text += hunkText(h, newStart);
    delta += h.added - h.removed;
  }
  return text;
}

/** What earlier applies of the same review already wrote to the tree. */
export interface AppliedParts {
  /** File ids applied whole (or hunk by hunk until none was left). */
  readonly files: ReadonlySet<string>;
  /** Hunk ids applied on their own. */
  readonly hunks: ReadonlySet<string>;
}

export const NOTHING_APPLIED: AppliedParts = { files: new Set(), hunks: new Set() };

/**
 * The hunks of a file not applied yet, numbered against the file as it is now: each one's old side
 * moves by what the applied hunks before it added or removed. Hunks of one diff never share context
 * lines, so an applied hunk leaves the others' context as it was.
 */
export function remainingHunks(f: PatchFile, applied: ReadonlySet<string>): PatchHunk[] {
  let shift = 0;
  const out: PatchHunk[] = [];
  for (const h of f.hunks) {
    if (applied.has(h.id)) shift += h.added - h.removed;
    else out.push(shift === 0 ? h : { ...h, oldStart: h.oldStart + shift });
  }
  return out;
}

/**
 * A file some of whose hunks are already applied, as the plain modification of its new path that is
 * left: its rename, mode change and blob ids went in with the first hunks.
 */
export function continuationFile(f: PatchFile): PatchFile {
  const path = f.newPath ?? f.oldPath ?? f.id;
  const a = gitQuotePath(`a/${path}`);
  const b = gitQuotePath(`b/${path}`);
  return {
    ...f,
    status: 'modified',
    oldPath: path,
    newPath: path,
    oldMode: undefined,
    newMode: undefined,
    oldBlob: undefined,
    newBlob: undefined,
    headerText: `diff --git ${a} ${b}\n--- ${a}\n+++ ${b}\n`,
    bytes: undefined,
  };
}

/** Takes out of a resolved selection what is already applied; partly applied files continue from where they are. */
function withoutApplied(files: readonly SelectedFile[], applied: AppliedParts): SelectedFile[] {
  const out: SelectedFile[] = [];
  for (const s of files) {
    if (applied.files.has(s.file.id)) continue;
    if (!s.file.hunks.some((h) => applied.hunks.has(h.id))) {
      out.push(s);
      continue;
    }
    const chosen = new Set(s.hunks.map((h) => h.id));
    const hunks = remainingHunks(s.file, applied.hunks).filter((h) => chosen.has(h.id));
    if (hunks.length) out.push({ file: continuationFile(s.file), hunks, whole: false });
  }
  if (out.length === 0) throw new PatchSelectionError('Everything selected is already applied.', []);
  return out;
}

/**
 * Builds the patch for a selection (see resolveSelection for what it refuses). With `applied`, the
 * parts earlier applies wrote are left out and the rest is numbered against the tree as it is now.
 */
export function buildSubPatch(
  patch: ParsedPatch,
  report: RiskReport,
  selection: PatchSelection,
  applied: AppliedParts = NOTHING_APPLIED,
): SubPatch {
  const resolved = resolveSelection(patch, report, selection);
  const files = applied.files.size || applied.hunks.size ? withoutApplied(resolved, applied) : resolved;
  const parts: PatchPart[] = [];
  for (const s of files) {
    if (s.whole && s.file.bytes) {
      const last = parts[parts.length - 1];
      if (last?.kind === 'bytes' && last.range.end === s.file.bytes.start)
        parts[parts.length - 1] = { kind: 'bytes', range: { start: last.range.start, end: s.file.bytes.end } };
      else parts.push({ kind: 'bytes', range: s.file.bytes });
    } else {
      parts.push({ kind: 'text', text: fileText(s.file, s.hunks) });
    }
  }
  const isWholePatch = files.length === patch.files.length && files.every((s) => s.whole);
  return { files, parts, isWholePatch };
}

/** Materialises a sub-patch from the original bytes held in memory. */
export function renderSubPatch(sub: SubPatch, source: Uint8Array): Uint8Array {
  const enc = new TextEncoder();
  const chunks = sub.parts.map((p) =>
    p.kind === 'bytes' ? source.subarray(p.range.start, p.range.end) : enc.encode(p.text),
  );
  return concatBytes(chunks);
}
