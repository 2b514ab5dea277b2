/**
 * The patch model: what a `changes.patch` says it does, file by file and hunk by hunk. Parsed by
 * patchParser.ts (jsdiff plus git's extended headers); classified by patchRisk.ts; cut into sub-patches
 * by subPatch.ts. Pure data: the UI, the journal and the apply step all speak these types.
 */

export type PatchFileStatus = 'added' | 'deleted' | 'modified' | 'renamed' | 'copied';

/** Byte range `[start, end)` in the original patch. */
export interface ByteRange {
  readonly start: number;
  readonly end: number;
}

export interface PatchHunk {
  /** Stable across parses of the same patch: `<file id>#<1-based hunk number>`. */
  readonly id: string;
  readonly index: number;
  /** 1-based first line and line count on each side, as in the `@@` header (0 lines → start is where it would be). */
  readonly oldStart: number;
  readonly oldLines: number;
  readonly newStart: number;
  readonly newLines: number;
  /** The `@@ … @@` line as written, including any function-context text after it. */
  readonly header: string;
  /** Body lines with their ' ', '+', '-', '\' prefix; a CRLF file's lines keep their '\r'. */
  readonly lines: readonly string[];
  readonly added: number;
  readonly removed: number;
}

export interface PatchFile {
  /** Stable across parses: the file's path (new path, or old path when deleted), `~2`… when repeated. */
  readonly id: string;
  readonly index: number;
  /** Repository-relative path before (undefined when added) and after (undefined when deleted), one `a/` `b/` level stripped as git does. */
  readonly oldPath: string | undefined;
  readonly newPath: string | undefined;
  readonly status: PatchFileStatus;
  /** Git modes as six octal digits ('100644', '100755', '120000', '160000'), when the patch says. */
  readonly oldMode: string | undefined;
  readonly newMode: string | undefined;
  /** `index <old>..<new>` blob ids, when present (needed by `git apply --3way`). */
  readonly oldBlob: string | undefined;
  readonly newBlob: string | undefined;
  /** `Binary files … differ` or `GIT binary patch`. */
  readonly binary: boolean;
  /** A `GIT binary patch` with literal/delta data (git can apply it; the plain-folder patcher cannot). */
  readonly binaryData: boolean;
  readonly isGit: boolean;
  readonly hunks: readonly PatchHunk[];
  readonly added: number;
  readonly removed: number;
  /** Header text before the first hunk (`diff --git`, extended headers, `---`/`+++`), newline-terminated. */
  readonly headerText: string;
  /**
   * Where this file's text sits in the original bytes, when it can be copied verbatim (its section of
   * the patch holds exactly this file). Sub-patches copy these bytes, so git sees what the agent wrote.
   */
  readonly bytes: ByteRange | undefined;
  /** The file's section was not valid UTF-8: it can be applied whole (verbatim bytes) but not hunk by hunk. */
  readonly lossy: boolean;
}

export interface ParsedPatch {
  readonly files: readonly PatchFile[];
  /** Total bytes of the patch. */
  readonly size: number;
}

/** A user's choice of what to apply: whole files and/or individual hunks, plus risk overrides. */
export interface PatchSelection {
  /** File ids applied whole. */
  readonly files?: readonly string[];
  /** Hunk ids; their files are applied with only these hunks (plus any header-only change such as a rename). */
  readonly hunks?: readonly string[];
  /** Risk item ids the user chose to allow anyway (patchRisk.ts). */
  readonly overrides?: readonly string[];
}

/** Why a patch could not be read: the message is for the user. */
export class PatchParseError extends Error {
  constructor(
    message: string,
    readonly code: 'empty' | 'not-a-diff' | 'malformed',
    /** Byte offset of the section where parsing failed, when known. */
    readonly offset?: number,
  ) {
    super(message);
    this.name = 'PatchParseError';
  }
}

/** The path a file is known by in lists: new path, else old path. */
export function displayPath(f: Pick<PatchFile, 'oldPath' | 'newPath'>): string {
  return f.newPath ?? f.oldPath ?? '';
}
