import { join } from 'node:path';
import * as vscode from 'vscode';
import {
  CHANGES_SCHEME,
  changesQuery,
  parseReviewDoc,
  REVIEW_SCHEME,
  reviewDocQuery,
  reviewOfUri,
  type ReviewDocKind,
  type SideRef,
} from '../../core/review/reviewUri';

export { CHANGES_SCHEME, REVIEW_SCHEME, type ReviewDocKind };

/** A review document of a file: the working-tree file's own path (so both sides of a diff name the same file), the review and side in the query. */
export function reviewUri(sessionId: string, kind: ReviewDocKind, root: string, path: string): vscode.Uri {
  return vscode.Uri.file(join(root, path)).with({
    scheme: REVIEW_SCHEME,
    query: reviewDocQuery({ review: sessionId, kind, file: path }),
  });
}

export function parseReviewUri(uri: vscode.Uri): { sessionId: string; kind: ReviewDocKind; path: string } | undefined {
  const ref = parseReviewDoc(uri.scheme, uri.query);
  return ref && { sessionId: ref.review, kind: ref.kind, path: ref.file };
}

/** The resource of a review's changes editor: what its title actions are given back. */
export function changesUri(sessionId: string, root: string): vscode.Uri {
  return vscode.Uri.file(root).with({ scheme: CHANGES_SCHEME, query: changesQuery(sessionId) });
}

/** Which review (and file, for a file's diff) an editor's URI shows; undefined for other editors. */
export function reviewOf(uri: vscode.Uri): { readonly review: string; readonly file: string | undefined } | undefined {
  return reviewOfUri(uri.scheme, uri.query);
}

export function sideUri(sessionId: string, root: string, side: SideRef): vscode.Uri {
  return side.kind === 'file'
    ? vscode.Uri.file(join(root, side.file))
    : reviewUri(sessionId, side.doc.kind, root, side.doc.file);
}

/** Read-only documents for the "after" side of review diffs and the sides of a 3-way merge. */
export class ReviewDocumentProvider implements vscode.TextDocumentContentProvider {
  private readonly _onDidChange = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this._onDidChange.event;
  private readonly sources = new Map<string, (kind: ReviewDocKind, path: string) => string>();

  register(sessionId: string, source: (kind: ReviewDocKind, path: string) => string): vscode.Disposable {
    this.sources.set(sessionId, source);
    return { dispose: () => this.sources.delete(sessionId) };
  }

  changed(uri: vscode.Uri): void {
    this._onDidChange.fire(uri);
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    const parsed = parseReviewUri(uri);
    const source = parsed && this.sources.get(parsed.sessionId);
    if (!parsed || !source) return vscode.l10n.t('This review is closed. Open it again from the delegation panel.');
    return parsed.kind === 'empty' ? '' : source(parsed.kind, parsed.path);
  }

  dispose(): void {
    this._onDidChange.dispose();
  }
}
