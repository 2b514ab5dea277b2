import * as vscode from 'vscode';
import { showError, showInfo, showWarning } from '../notify';
import type { DelegationService } from '../delegate/delegationService';
import { errorMessage } from '../errors';
import type { DelegationPanelManager } from '../panel/delegationPanel';
import { reviewOf } from '../review/reviewDocuments';
import type { ReviewSession } from '../review/reviewSession';
import { showReview, type ReviewSessions } from '../review/reviewSessions';
import { requireTrust } from '../trust';
import { delegationIdOf } from './commandArgs';

export interface ReviewCommandDeps {
  readonly reviews: ReviewSessions;
  readonly panels: DelegationPanelManager;
  readonly service: DelegationService;
}

/** Opening a delegation's review, and the review editors' Apply All / Apply This File / Reject. */
export function registerReviewCommands(deps: ReviewCommandDeps): vscode.Disposable[] {
  return [
    vscode.commands.registerCommand('baton.reviewChanges', async (id?: unknown) => {
      const delegationId = delegationIdOf(id);
      if (!delegationId) return;
      try {
        await showReview(deps, delegationId);
      } catch (e) {
        void showError(errorMessage(e));
      }
    }),
    // The review editors' title actions: the editor's URI says which review (and which file) they act on.
    vscode.commands.registerCommand('baton.applyAllChanges', (uri?: unknown) =>
      fromReviewEditor(deps, uri, false, async (session) => {
        if (!requireTrust(vscode.l10n.t('Applying a patch'))) return;
        await session.applyAll();
        void showInfo(session.view().message ?? vscode.l10n.t('Applied.'));
      }),
    ),
    vscode.commands.registerCommand('baton.applyFileChanges', (uri?: unknown) =>
      fromReviewEditor(deps, uri, true, async (session, fileId) => {
        if (!requireTrust(vscode.l10n.t('Applying a patch')) || !fileId) return;
        await session.applyFile(fileId);
        void showInfo(session.view().message ?? vscode.l10n.t('Applied.'));
      }),
    ),
    vscode.commands.registerCommand('baton.rejectChanges', (uri?: unknown) =>
      fromReviewEditor(deps, uri, false, async (session) => {
        const reject = vscode.l10n.t('Reject');
        const pick = await showWarning(
          vscode.l10n.t('Reject the agent’s changes? Nothing is written; the patch stays in the delegation’s journal.'),
          { modal: true },
          reject,
        );
        if (pick === reject) session.reject();
      }),
    ),
  ];
}

/**
 * Runs a review action for the review an editor shows (its URI, as the title bar passes it); from the
 * palette, asks which open review (and which file).
 */
async function fromReviewEditor(
  deps: ReviewCommandDeps,
  arg: unknown,
  needsFile: boolean,
  run: (session: ReviewSession, fileId: string | undefined) => Promise<void>,
): Promise<void> {
  try {
    const target = arg instanceof vscode.Uri ? reviewOf(arg) : undefined;
    if (arg instanceof vscode.Uri && !target) throw new Error(vscode.l10n.t('This editor shows no Baton review.'));
    const session = target ? deps.reviews.get(target.review) : await pickReview(deps);
    if (!session) {
      if (target)
        throw new Error(
          vscode.l10n.t('This review is closed. Open it again with Review Changes in the delegation panel.'),
        );
      return;
    }
    let fileId = target?.file !== undefined ? session.fileIdOf(target.file) : undefined;
    if (target?.file !== undefined && !fileId)
      throw new Error(vscode.l10n.t('{0} is not in this review.', target.file));
    if (needsFile && !fileId) fileId = await pickReviewFile(session);
    if (needsFile && !fileId) return;
    await run(session, fileId);
  } catch (e) {
    void showError(errorMessage(e));
  }
}

async function pickReview(deps: ReviewCommandDeps): Promise<ReviewSession | undefined> {
  const { reviews, service } = deps;
  const open = reviews.all.filter((r) => r.view().state === 'ready');
  if (!open.length) {
    void showInfo(vscode.l10n.t('No review is open. Use Review Changes in a delegation’s panel first.'));
    return undefined;
  }
  const items = open.map((r) => ({
    label: service.journalView(r.id)?.title ?? r.id,
    description: service.journalView(r.id)?.agent.name,
    session: r,
  }));
  return (await vscode.window.showQuickPick(items, { placeHolder: vscode.l10n.t('Which delegation’s changes?') }))
    ?.session;
}

async function pickReviewFile(session: ReviewSession): Promise<string | undefined> {
  const items = session
    .view()
    .files.filter((f) => f.applied !== 'all')
    .map((f) => ({ label: f.path, description: f.status, fileId: f.id }));
  if (!items.length) {
    void showInfo(vscode.l10n.t('Every file of this review is applied.'));
    return undefined;
  }
  return (await vscode.window.showQuickPick(items, { placeHolder: vscode.l10n.t('Apply which file?') }))?.fileId;
}
