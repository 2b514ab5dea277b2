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

type Summary = ReturnType<DelegationService['list']>[number];

interface DelegationIndex {
  readonly byId: ReadonlyMap<string, Summary>;
  /** Children of each delegation, newest first; the key `undefined` holds the roots. */
  readonly children: ReadonlyMap<string | undefined, readonly Summary[]>;
}

function indexDelegations(list: readonly Summary[]): DelegationIndex {
  const byId = new Map(list.map((d) => [d.requestId, d]));
  const children = new Map<string | undefined, Summary[]>();
  for (const d of [...list].sort((a, b) => b.createdAt - a.createdAt)) {
    // A child whose parent is not (or no longer) listed is shown at the top level.
    const parent = d.parentRequestId && byId.has(d.parentRequestId) ? d.parentRequestId : undefined;
    const siblings = children.get(parent);
    if (siblings) siblings.push(d);
    else children.set(parent, [d]);
  }
  return { byId, children };
}

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

  /** The list as of the last change, indexed once: a tree of n items asks for n items and their children. */
  private index: DelegationIndex | undefined;

  constructor(private readonly service: DelegationService) {
    super();
    this._register(
      service.onDidChange(() => {
        this.index = undefined;
        this._onDidChangeTreeData.fire();
      }),
    );
  }

  get count(): number {
    return this.indexed().byId.size;
  }

  getChildren(node?: DelegationNode): DelegationNode[] {
    return (this.indexed().children.get(node?.id) ?? []).map((d) => ({ id: d.requestId }));
  }

  getTreeItem(node: DelegationNode): vscode.TreeItem {
    const { byId, children } = this.indexed();
    const d = byId.get(node.id);
    const hasChildren = (children.get(node.id)?.length ?? 0) > 0;
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

  private indexed(): DelegationIndex {
    return (this.index ??= indexDelegations(this.service.list()));
  }
}
