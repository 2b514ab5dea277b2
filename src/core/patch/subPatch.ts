/**
 * Cuts a patch down to what the user chose (whole files and/or single hunks) as a patch `git apply`
 * accepts. Whole files are copied byte for byte from the original (so git applies exactly what was
 * reviewed, whatever its encoding); a file applied hunk by hunk is rewritten with only those hunks and
 * the new-side line numbers recomputed.
 */
import type { ByteRange, ParsedPatch, PatchFile, PatchHunk, PatchSelection } from './patchModel';
import type { RiskItem, RiskReport } from './patchRisk';
import { unresolvedRefusals } from './patchRisk';

export type PatchPart = { readonly kind: 'bytes'; readonly range: ByteRange } | { readonly kind: 'text'; readonly text: string };

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
  if (unknown.length) throw new PatchSelectionError(`The selection names files or hunks that are not in this patch: ${unknown.join(', ')}.`, []);
  const out: SelectedFile[] = [];
  const problems: string[] = [];
  for (const f of patch.files) {
    const hs = chosen.get(f.id);
    if (whole.has(f.id) || (hs && hs.size === f.hunks.length)) {
      out.push({ file: f, hunks: f.hunks, whole: true });
    } else if (hs) {
      const label = f.newPath ?? f.oldPath ?? f.id;
      if (f.status === 'added' || f.status === 'deleted') problems.push(`${label} is ${f.status} by the patch: apply it whole or not at all`);
      else if (f.binary) problems.push(`${label} is a binary change: apply it whole or not at all`);
      else if (f.lossy) problems.push(`${label} is not UTF-8 text: apply it whole or not at all`);
      out.push({ file: f, hunks: f.hunks.filter((h) => hs.has(h.id)), whole: false });
    }
  }
  if (problems.length) throw new PatchSelectionError(`Some choices cannot be applied hunk by hunk: ${problems.join('; ')}.`, []);
  const refusals = unresolvedRefusals(report, out.map((s) => s.file.id), selection.overrides);
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
    const newStart = h.oldLines === 0 ? h.oldStart + delta + 1 : h.newLines === 0 ? h.oldStart + delta - 1 : h.oldStart + delta;
    text += hunkText(h, newStart);
    delta += h.added - h.removed;
  }
  return text;
}

/** Builds the patch for a selection (see resolveSelection for what it refuses). */
export function buildSubPatch(patch: ParsedPatch, report: RiskReport, selection: PatchSelection): SubPatch {
  const files = resolveSelection(patch, report, selection);
  const parts: PatchPart[] = [];
  for (const s of files) {
    if (s.whole && s.file.bytes) {
      const last = parts[parts.length - 1];
      if (last?.kind === 'bytes' && last.range.end === s.file.bytes.start) parts[parts.length - 1] = { kind: 'bytes', range: { start: last.range.start, end: s.file.bytes.end } };
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
  const chunks = sub.parts.map((p) => (p.kind === 'bytes' ? source.subarray(p.range.start, p.range.end) : enc.encode(p.text)));
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let o = 0;
  for (const c of chunks) {
    out.set(c, o);
    o += c.length;
  }
  return out;
}
