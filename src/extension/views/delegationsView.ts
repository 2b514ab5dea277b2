import * as vscode from 'vscode';
import type { DelegationState } from '../../core/protocol/panelProtocol';
import type { DelegationService } from '../delegate/delegationService';
import { Disposable } from '../lifecycle';

export interface DelegationNode {
  readonly id: string;
}

const ICON: Record<string, [string, string | undefined]> = {
  queued: ['clock', undefined],
  starting: ['loading~spin', undefined],
  submitted: ['loading~spin', undefined],
  working: ['loading~spin', 'progressBar.background'],
  reconnecting: ['sync~spin', 'editorWarning.foreground'],
  canceling: ['loading~spin', undefined],
  'input-required': ['comment-discussion', 'editorWarning.foreground'],
  'auth-required': ['key', 'editorWarning.foreground'],
  completed: ['pass', 'testing.iconPassed'],
  failed: ['error', 'errorForeground'],
  canceled: ['circle-slash', undefined],
  rejected: ['close', 'errorForeground'],
  unknown: ['question', 'editorWarning.foreground'],
  expired: ['watch', 'errorForeground'],
};

/** A delegation's state in words, as the panel says it; an unknown code is shown as it is. */
const STATE_LABEL: Record<DelegationState, () => string> = {
  queued: () => vscode.l10n.t('Queued'),
  starting: () => vscode.l10n.t('Starting'),
  reconnecting: () => vscode.l10n.t('Reconnecting'),
  canceling: () => vscode.l10n.t('Canceling'),
  submitted: () => vscode.l10n.t('Submitted'),
  working: () => vscode.l10n.t('Working'),
  'input-required': () => vscode.l10n.t('Needs your input'),
  'auth-required': () => vscode.l10n.t('Needs authorization'),
  completed: () => vscode.l10n.t('Completed'),
  failed: () => vscode.l10n.t('Failed'),
  canceled: () => vscode.l10n.t('Canceled'),
  rejected: () => vscode.l10n.t('Rejected by the agent'),
  unknown: () => vscode.l10n.t('Outcome unknown'),
  expired: () => vscode.l10n.t('Expired'),
};

export function delegationStateLabel(state: string): string {
  return Object.hasOwn(STATE_LABEL, state) ? STATE_LABEL[state as DelegationState]() : state;
}

/** The Delegations view: every delegation, newest first, children under the delegation that started them. */
export class DelegationsViewProvider extends Disposable implements vscode.TreeDataProvider<DelegationNode> {
  private readonly _onDidChangeTreeData = this._register(new vscode.EventEmitter<void>());
  readonly onDidChangeTreeData = this._onDidChangeTreeData.event;

  constructor(private readonly service: DelegationService) {
    super();
    this._register(service.onDidChange(() => this._onDidChangeTreeData.fire()));
  }

  get count(): number {
    return this.service.list().length;
  }

  getChildren(node?: DelegationNode): DelegationNode[] {
    const all = this.service.list().sort((a, b) => b.createdAt - a.createdAt);
    return all
      .filter((d) =>
        node
          ? d.parentRequestId === node.id
          : !d.parentRequestId || !all.some((p) => p.requestId === d.parentRequestId),
      )
      .map((d) => ({ id: d.requestId }));
  }

  getTreeItem(node: DelegationNode): vscode.TreeItem {
    const d = this.service.list().find((x) => x.requestId === node.id);
    const hasChildren = this.service.list().some((x) => x.parentRequestId === node.id);
    const item = new vscode.TreeItem(
      d?.title ?? node.id,
      hasChildren ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None,
    );
    item.id = node.id;
    if (!d) return item;
    const [icon, color] = ICON[d.state] ?? ['circle', undefined];
    item.iconPath = new vscode.ThemeIcon(icon, color ? new vscode.ThemeColor(color) : undefined);
    const state = delegationStateLabel(d.state);
    item.description = vscode.l10n.t('{0} · {1}', d.agentName, state);
    const view = this.service.journalView(node.id);
    item.tooltip = new vscode.MarkdownString(undefined, false);
    item.tooltip.appendText(
      `${d.title}\n\n${vscode.l10n.t('{0} — {1}', d.agentName, state)}${view?.outcomeReason ? `\n${view.outcomeReason}` : ''}\n${new Date(d.createdAt).toLocaleString()}`,
    );
    const running = !['completed', 'failed', 'canceled', 'rejected', 'expired'].includes(d.state);
    item.contextValue = `delegation.${running ? 'running' : 'done'}${view?.actions.reviewChanges ? '.patch' : ''}`;
    item.command = { command: 'baton.openDelegation', title: vscode.l10n.t('Open'), arguments: [node.id] };
    return item;
  }
}
