import * as vscode from 'vscode';

export const REVIEW_SCHEME = 'baton-review';

/** The kinds of read-only document a review serves. */
export type ReviewDocKind = 'after' | 'empty' | 'base' | 'ours' | 'theirs';

export function reviewUri(sessionId: string, kind: ReviewDocKind, path: string): vscode.Uri {
  // The path keeps the file's name and extension so the editor picks the right language and icon.
  return vscode.Uri.from({ scheme: REVIEW_SCHEME, path: `/${sessionId}/${kind}/${path}` });
}

export function parseReviewUri(uri: vscode.Uri): { sessionId: string; kind: ReviewDocKind; path: string } | undefined {
  const m = /^\/([^/]+)\/(after|empty|base|ours|theirs)\/(.+)$/.exec(uri.path);
  return m ? { sessionId: m[1], kind: m[2] as ReviewDocKind, path: m[3] } : undefined;
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
