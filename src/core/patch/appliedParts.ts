/**
 * Which parts of a patch a review has applied so far, from the records of its applies (whole files and
 * single hunks), and what a selection means once some of it is in the tree. Pure: the review session
 * keeps the records, this says what they add up to.
 */
import type { ParsedPatch, PatchFile, PatchSelection } from './patchModel';
import type { RiskReport } from './patchRisk';
import type { AppliedParts } from './subPatch';

/** One file of one apply, as its record names it. */
export interface AppliedFileRef {
  readonly fileId: string;
  readonly whole: boolean;
  readonly hunkIds: readonly string[];
}

export type ApplyState = 'all' | 'some' | 'none';

/** What the applies (oldest first) wrote together; a file whose every hunk went in, one apply at a time, counts as whole. */
export function appliedParts(patch: ParsedPatch, applies: readonly (readonly AppliedFileRef[])[]): AppliedParts {
  const files = new Set<string>();
  const hunks = new Set<string>();
  for (const refs of applies) {
    for (const r of refs) {
      if (r.whole) files.add(r.fileId);
      else for (const h of r.hunkIds) hunks.add(h);
    }
  }
  for (const f of patch.files) if (f.hunks.length > 0 && f.hunks.every((h) => hunks.has(h.id))) files.add(f.id);
  return { files, hunks };
}

export function fileApplyState(f: PatchFile, parts: AppliedParts): ApplyState {
  if (parts.files.has(f.id)) return 'all';
  return f.hunks.some((h) => parts.hunks.has(h.id)) ? 'some' : 'none';
}

export function hunkApplied(f: PatchFile, hunkId: string, parts: AppliedParts): boolean {
  return parts.files.has(f.id) || parts.hunks.has(hunkId);
}

/**
 * A selection without what is already applied: applied files drop out, and a partly applied file
 * chosen whole becomes its hunks that are left.
 */
export function remainingOf(patch: ParsedPatch, selection: PatchSelection, parts: AppliedParts): PatchSelection {
  const whole = new Set(selection.files ?? []);
  const chosenHunks = new Set(selection.hunks ?? []);
  const files: string[] = [];
  const hunks: string[] = [];
  for (const f of patch.files) {
    const state = fileApplyState(f, parts);
    if (state === 'all') continue;
    if (whole.has(f.id)) {
      if (state === 'none') files.push(f.id);
      else hunks.push(...f.hunks.filter((h) => !parts.hunks.has(h.id)).map((h) => h.id));
    } else {
      hunks.push(...f.hunks.filter((h) => chosenHunks.has(h.id) && !parts.hunks.has(h.id)).map((h) => h.id));
    }
  }
  return { files, hunks, overrides: selection.overrides ?? [] };
}

/** "Apply All" once some is applied: every file that is not refused (or whose refusals were allowed), less what is in already. */
export function remainingOffered(
  patch: ParsedPatch,
  report: RiskReport,
  overrides: readonly string[],
  parts: AppliedParts,
): PatchSelection {
  const allowed = new Set(overrides);
  const blocked = new Set(
    report.items.filter((i) => i.severity === 'refuse' && !allowed.has(i.id)).map((i) => i.fileId),
  );
  return remainingOf(
    patch,
    { files: patch.files.filter((f) => !blocked.has(f.id)).map((f) => f.id), overrides: [...allowed] },
    parts,
  );
}

/** Whether a selection holds anything to apply. */
export function isEmptySelection(selection: PatchSelection): boolean {
  return !selection.files?.length && !selection.hunks?.length;
}
