import * as vscode from 'vscode';
import { showInfo, showWarning } from './notify';
import type { OutcomeDecision } from '../core/delegation';
import type { DelegationService } from './delegate/delegationService';
import { Disposable } from './lifecycle';

/** The status bar item (how many delegations run) and the notification when one finishes, fails or needs input. */
export class DelegationStatusController extends Disposable {
  private readonly status = this._register(
    vscode.window.createStatusBarItem('baton.status', vscode.StatusBarAlignment.Left, 50),
  );

  constructor(private readonly service: DelegationService) {
    super();
    this.status.name = vscode.l10n.t('Baton Delegations');
    this.status.command = 'workbench.view.extension.baton';
    this._register(service.onDidChange(() => this.update()));
    this._register(service.onDidSettle(({ id, decision }) => this.notify(id, decision)));
  }

  update(): void {
    const running = this.service.runningCount;
    const queued = this.service.queuedCount;
    if (running + queued === 0) return this.status.hide();
    this.status.text = `$(rocket) ${running}${queued ? ` +${queued}` : ''}`;
    this.status.tooltip = vscode.l10n.t('{0} delegation(s) running, {1} queued', running, queued);
    this.status.show();
  }

  private notify(id: string, decision: OutcomeDecision): void {
    const v = this.service.journalView(id);
    const title = v?.title ?? id;
    const open = vscode.l10n.t('Open');
    const review = vscode.l10n.t('Review Changes');
    const buttons = decision.outcome === 'completed' && v?.actions.reviewChanges ? [review, open] : [open];
    const text =
      decision.outcome === 'completed'
        ? vscode.l10n.t('{0} finished “{1}”.', v?.agent.name ?? '', title)
        : decision.outcome === 'input-required'
          ? vscode.l10n.t('{0} needs your input for “{1}”.', v?.agent.name ?? '', title)
          : vscode.l10n.t('“{0}” ended: {1}. {2}', title, decision.outcome, decision.reason ?? '');
    const show = decision.outcome === 'completed' || decision.outcome === 'input-required' ? showInfo : showWarning;
    void show(text, ...buttons).then((pick) => {
      if (pick === review) void vscode.commands.executeCommand('baton.reviewChanges', id);
      else if (pick === open) void vscode.commands.executeCommand('baton.openDelegation', id);
    });
  }
}
