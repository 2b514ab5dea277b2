/**
 * A file's text after (some of) its hunks, computed with jsdiff's `applyPatch`: the "after" side the
 * review's diff editor shows, the package.json scripts comparison, and the plain-folder patcher.
 * No fuzz and no line-ending conversion, so it accepts exactly what `git apply` would.
 */
import { applyPatch } from 'diff';
import type { PatchHunk } from './patchModel';

/** The text after applying the hunks, or undefined when one of them does not fit. */
export function applyHunks(before: string, hunks: readonly PatchHunk[]): string | undefined {
  if (hunks.length === 0) return before;
  const result = applyPatch(
    before,
    {
      oldFileName: undefined,
      newFileName: undefined,
      oldHeader: undefined,
      newHeader: undefined,
      // jsdiff keeps a 0-line side's start one past the header's number (its parser adds 1).
      hunks: hunks.map((h) => ({
        oldStart: h.oldLines === 0 ? h.oldStart + 1 : h.oldStart,
        oldLines: h.oldLines,
        newStart: h.newLines === 0 ? h.newStart + 1 : h.newStart,
        newLines: h.newLines,
        lines: h.lines.map((l) => (l === '' ? ' ' : l)),
      })),
    },
    { fuzzFactor: 0, autoConvertLineEndings: false },
  );
  return result === false ? undefined : result;
}
