/**
 * How the review's documents are named. VS Code's changes editor shows a file as renamed when its two
 * sides have different paths, so every side of one file carries the file's own path (the working-tree
 * path, as the `file:` side has it) and the review and the side go in the query. The editor's title
 * actions get these URIs back and read which review and which file they are about from them.
 */
import type { PatchFileStatus } from '../patch/patchModel';

/** The read-only sides of a file under review. */
export const REVIEW_SCHEME = 'baton-review';
/** The changes editor of one review (the multi-diff editor's own resource; nothing is read from it). */
export const CHANGES_SCHEME = 'baton-changes';

/** The kinds of read-only document a review serves. */
export type ReviewDocKind = 'after' | 'empty' | 'base' | 'ours' | 'theirs';
const KINDS: readonly string[] = ['after', 'empty', 'base', 'ours', 'theirs'];

export interface ReviewDocRef {
  /** The review's id (its delegation's id). */
  readonly review: string;
  readonly kind: ReviewDocKind;
  /** Repository-relative, '/'-separated. */
  readonly file: string;
}

/** The query of a review document's URI. */
export function reviewDocQuery(ref: ReviewDocRef): string {
  return new URLSearchParams({ review: ref.review, side: ref.kind, file: ref.file }).toString();
}

/** Reads a review document's URI (scheme and query); undefined for anything else. */
export function parseReviewDoc(scheme: string, query: string): ReviewDocRef | undefined {
  if (scheme !== REVIEW_SCHEME) return undefined;
  const q = new URLSearchParams(query);
  const review = q.get('review');
  const kind = q.get('side');
  const file = q.get('file');
  if (!review || !file || kind === null || !KINDS.includes(kind)) return undefined;
  return { review, kind: kind as ReviewDocKind, file };
}

export function changesQuery(review: string): string {
  return new URLSearchParams({ review }).toString();
}

/** The review a URI belongs to: a review document or a review's changes editor. */
export function reviewOfUri(
  scheme: string,
  query: string,
): { readonly review: string; readonly file: string | undefined } | undefined {
  if (scheme === CHANGES_SCHEME) {
    const review = new URLSearchParams(query).get('review');
    return review ? { review, file: undefined } : undefined;
  }
  const doc = parseReviewDoc(scheme, query);
  return doc && { review: doc.review, file: doc.file };
}

/** One side of a file in the changes editor: the file in the working tree, or a review document with the same path. */
export type SideRef =
  { readonly kind: 'file'; readonly file: string } | { readonly kind: 'review'; readonly doc: ReviewDocRef };

export interface ChangeEntry {
  /** The working-tree file the entry is about. */
  readonly file: string;
  /** Absent for an added file: VS Code then shows it as added. */
  readonly original: SideRef | undefined;
  /** Absent for a deleted file: VS Code then shows it as deleted. */
  readonly modified: SideRef | undefined;
}

/**
 * The changes editor's entry for a file: the working tree on the left (the file as it is now), the
 * patched text on the right, both under the same path. A rename's left side is the old path (VS Code
 * shows it as a rename, which it is).
 */
export function changeEntry(
  review: string,
  f: { readonly status: PatchFileStatus; readonly oldPath: string | undefined; readonly newPath: string | undefined },
): ChangeEntry {
  const file = f.newPath ?? f.oldPath ?? '';
  const after: SideRef = { kind: 'review', doc: { review, kind: 'after', file } };
  if (f.status === 'added') return { file, original: undefined, modified: after };
  if (f.status === 'deleted') return { file, original: { kind: 'file', file }, modified: undefined };
  return { file, original: { kind: 'file', file: f.oldPath ?? file }, modified: after };
}
