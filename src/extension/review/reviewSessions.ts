import * as vscode from 'vscode';
import type { DelegationService } from '../delegate/delegationService';
import { errorMessage } from '../errors';
import { Disposable } from '../lifecycle';
import type { DelegationPanelManager } from '../panel/delegationPanel';
import type { ReviewDocumentProvider } from './reviewDocuments';
import { ReviewSession, type ReviewRecord } from './reviewSession';

/** The open reviews of delegations' changes, one per delegation; disposed with the extension. */
export class ReviewSessions extends Disposable {
  private readonly sessions = new Map<string, ReviewSession>();
  private readonly _onDidChange = this._register(new vscode.EventEmitter<string>());
  /** Fires the delegation id whenever its review changes. */
  readonly onDidChange = this._onDidChange.event;

  constructor(
    private readonly service: DelegationService,
    private readonly reviewDocs: ReviewDocumentProvider,
    private readonly log: vscode.LogOutputChannel,
  ) {
    super();
    this._register({ dispose: () => this.sessions.forEach((r) => r.dispose()) });
  }

  /** Which of a delegation's patches each open review is of (0: the first, or only, one). */
  private readonly indexes = new Map<string, number>();

  get(id: string): ReviewSession | undefined {
    return this.sessions.get(id);
  }

  /** Which of the delegation's patches its open review is of. */
  reviewing(id: string): number | undefined {
    return this.sessions.has(id) ? (this.indexes.get(id) ?? 0) : undefined;
  }

  get all(): readonly ReviewSession[] {
    return [...this.sessions.values()];
  }

  /**
   * The review of one of a delegation's returned patches (`index` among several; the first by
   * default): the open one, or a new one, prepared. Choosing another patch replaces an open review
   * that wrote nothing; one that applied changes must be undone or finished first.
   */
  async open(id: string, index?: number): Promise<ReviewSession> {
    const open = this.sessions.get(id);
    const want = index ?? this.indexes.get(id) ?? 0;
    if (open && (this.indexes.get(id) ?? 0) === want) return open;
    if (open) {
      const state = open.view().state;
      if (state === 'applied' || state === 'conflicts' || open.view().applied)
        throw new Error(
          vscode.l10n.t(
            'The review of another patch of this delegation has applied changes: undo them or finish that review before reviewing this one.',
          ),
        );
      this.sessions.delete(id);
      this.indexes.delete(id);
      open.dispose();
    }
    // The bytes the result check approved (the signed artifact when verified), held by the review from here on.
    const patch = await this.service.reviewPatch(id, want);
    if (patch === undefined)
      throw new Error(
        want === 0
          ? vscode.l10n.t('This delegation returned no patch.')
          : vscode.l10n.t('This delegation has no patch {0}.', want + 1),
      );
    // Opened by another click while the check was awaited: show that one.
    if (this.sessions.has(id)) return this.open(id, index);
    const side = this.service.sidecar(id);
    const folder = side?.folder || vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    if (!folder)
      throw new Error(vscode.l10n.t('Open the folder the delegation was started from to review its changes.'));
    // Apply only while the delegation's result still checks out as the same bytes this review holds.
    const stillChecked = async (): Promise<void> => {
      const now = await this.service.reviewPatch(id, want);
      if (!now?.equals(patch))
        throw new Error(
          vscode.l10n.t(
            'The result of this delegation changed since this review was opened; open Review Changes again.',
          ),
        );
    };
    const session = new ReviewSession(
      id,
      folder,
      { bytes: patch },
      side?.base,
      this.reviewDocs,
      (r) => this.record(id, r),
      stillChecked,
      this.service.journalView(id)?.agent.name,
      this.service.approvedPatchList(id)[want]?.name,
    );
    this.sessions.set(id, session);
    this.indexes.set(id, want);
    session.onDidChange(() => this._onDidChange.fire(id));
    await session.prepare();
    return session;
  }

  /** Writes what the user did with the review into the delegation's journal. */
  private record(id: string, r: ReviewRecord): void {
    this.log.info(`review ${id}: ${r.kind}${'record' in r ? ` ${r.record.files.length} file(s)` : ''}`);
    const rec = 'record' in r ? r.record : undefined;
    const files = (rec?.files ?? []).map((f) => ({
      path: f.newPath ?? f.oldPath ?? '',
      whole: f.whole,
      hunkIds: f.hunkIds,
    }));
    const text =
      r.kind === 'applied'
        ? vscode.l10n.t(
            'You applied {0} file(s): {1}',
            files.length,
            files.map((f) => (f.whole ? f.path : `${f.path} (${f.hunkIds.length} hunk(s))`)).join(', '),
          )
        : r.kind === 'undone'
          ? vscode.l10n.t('You undid the apply: {0} file(s) restored', r.restored.length)
          : r.kind === 'rejected'
            ? vscode.l10n.t('You rejected the patch; nothing was written')
            : vscode.l10n.t('You aborted the 3-way merge; your files were restored');
    void this.service
      .recordReview(id, { action: r.kind, files, overrides: rec?.overrides ?? [], digests: rec?.digests ?? [] }, text)
      .catch((e: unknown) => this.log.error(`review ${id}: could not record it in the journal: ${errorMessage(e)}`));
  }
}

/** The panel title of a delegation: its task's first words. */
export function delegationPanelTitle(service: DelegationService, id: string): string {
  return vscode.l10n.t('Delegation: {0}', service.journalView(id)?.title.slice(0, 40) ?? id);
}

/**
 * Opens a delegation's review: prepares it, shows the delegation's panel, and opens the changes editor
 * when the patch has files.
 */
export async function showReview(
  deps: {
    readonly reviews: ReviewSessions;
    readonly panels: DelegationPanelManager;
    readonly service: DelegationService;
  },
  id: string,
  index?: number,
): Promise<ReviewSession> {
  const session = await deps.reviews.open(id, index);
  deps.panels.open({ kind: 'delegation', delegationId: id }, delegationPanelTitle(deps.service, id));
  if (session.patchFiles.length) await session.open();
  return session;
}
