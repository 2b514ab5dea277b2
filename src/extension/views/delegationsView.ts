import * as vscode from 'vscode';
import { childState, type DelegationTree, type TreeNode } from '../../core/delegation/tree';
import { stateLabel, stateLook, type StateTone } from '../../core/protocol/delegationStates';
import { outcomeReasonText } from '../../core/protocol/outcomeText';
import type { DelegationService } from '../delegate/delegationService';
import { Disposable } from '../lifecycle';

export interface DelegationNode {
  readonly id: string;
}

/** The tree's colour for each tone of a state (the panel has its own in its styles). */
const TONE_COLOR: Record<StateTone, string | undefined> = {
  running: 'progressBar.background',
  ok: 'testing.iconPassed',
  bad: 'errorForeground',
  warn: 'editorWarning.foreground',
  muted: undefined,
};

/** A delegation's state in words, as the panel says it; an unknown code is shown as it is. */
export function delegationStateLabel(state: string): string {
  return stateLabel(state, vscode.l10n.t);
}

/** The tree item's icon for a state. */
function stateIcon(state: string): vscode.ThemeIcon {
  const look = stateLook(state);
  const color = TONE_COLOR[look.tone];
  return new vscode.ThemeIcon(
    look.spin ? `${look.icon}~spin` : look.icon,
    color ? new vscode.ThemeColor(color) : undefined,
  );
}

/**
 * The Delegations view: every delegation, newest first, as a task tree: children under the delegation
 * they were started from within, whether this window started them (a chat agent, `parentRequestId`) or
 * a gateway reported them on the parent's stream (`baton/child`). Who started each is in its line.
 */
export class DelegationsViewProvider extends Disposable implements vscode.TreeDataProvider<DelegationNode> {
  private readonly _onDidChangeTreeData = this._register(new vscode.EventEmitter<void>());
  readonly onDidChangeTreeData = this._onDidChangeTreeData.event;

  /** The tree as of the last change, built once: a tree of n items asks for n items and their children. */
  private index: DelegationTree | undefined;

  constructor(private readonly service: DelegationService) {
    super();
    this._register(
      service.onDidChange(() => {
        this.index = undefined;
        this._onDidChangeTreeData.fire();
      }),
    );
  }

  /** How many of this window's delegations there are (children reported by a gateway not counted). */
  get count(): number {
    return [...this.indexed().byId.values()].filter((n) => n.kind === 'delegation').length;
  }

  getChildren(node?: DelegationNode): DelegationNode[] {
    const t = this.indexed();
    const list = node ? (t.byId.get(node.id)?.children ?? []) : t.roots;
    return list.map((n) => ({ id: n.id }));
  }

  getParent(node: DelegationNode): DelegationNode | undefined {
    const p = this.indexed().parentOf.get(node.id);
    return p ? { id: p } : undefined;
  }

  getTreeItem(node: DelegationNode): vscode.TreeItem {
    const n = this.indexed().byId.get(node.id);
    const collapsible = n?.children.length
      ? vscode.TreeItemCollapsibleState.Expanded
      : vscode.TreeItemCollapsibleState.None;
    if (n?.kind === 'reported') return this.reportedItem(n, collapsible);
    const d = n?.kind === 'delegation' ? n.delegation : undefined;
    const item = new vscode.TreeItem(d?.title ?? node.id, collapsible);
    item.id = treeItemId(node.id, n);
    if (!d) return item;
    const look = stateLook(d.state);
    item.iconPath = stateIcon(d.state);
    const state = delegationStateLabel(d.state);
    const byAgent = d.startedBy?.kind === 'agent';
    item.description = byAgent
      ? vscode.l10n.t('{0} · {1} · started by a chat agent', d.agentName, state)
      : vscode.l10n.t('{0} · {1}', d.agentName, state);
    const view = this.service.journalView(node.id);
    item.tooltip = new vscode.MarkdownString(undefined, false);
    item.tooltip.appendText(
      `${d.title}\n\n${vscode.l10n.t('{0} — {1}', d.agentName, state)}${view?.outcomeReason ? `\n${outcomeReasonText(view.outcomeBecause, view.outcomeReason, vscode.l10n.t)}` : ''}\n${new Date(d.createdAt).toLocaleString()}${byAgent ? `\n${vscode.l10n.t('Started by a chat agent')}` : ''}`,
    );
    const running = !look.final;
    item.contextValue = `delegation.${running ? 'running' : 'done'}${view?.actions.reviewChanges ? '.patch' : ''}`;
    item.command = { command: 'baton.openDelegation', title: vscode.l10n.t('Open'), arguments: [node.id] };
    return item;
  }

  /** A child a gateway started for one of this window's delegations: it has no panel here, only its info. */
  private reportedItem(
    n: Extract<TreeNode, { kind: 'reported' }>,
    collapsible: vscode.TreeItemCollapsibleState,
  ): vscode.TreeItem {
    const state = childState(n.info);
    const item = new vscode.TreeItem(n.info.title || n.info.taskId, collapsible);
    item.id = treeItemId(n.id, n);
    item.iconPath = stateIcon(state);
    item.description = vscode.l10n.t(
      '{0} · {1} · started at the gateway',
      n.info.agentName,
      delegationStateLabel(state),
    );
    item.tooltip = new vscode.MarkdownString(undefined, false);
    item.tooltip.appendText(childTaskInfoText(n.info));
    item.contextValue = 'delegation.reported';
    item.command = { command: 'baton.showChildTask', title: vscode.l10n.t('Show'), arguments: [n.id] };
    return item;
  }

  private indexed(): DelegationTree {
    return (this.index ??= this.service.tree());
  }
}

/**
 * The tree item's id: the node's, with a mark once it has children. VS Code keeps the collapsible state
 * it first saw for an id, so a delegation shown without children would stay collapsed when its first
 * child appears; under a new id it opens expanded, as a parent does.
 */
function treeItemId(id: string, n: TreeNode | undefined): string {
  return n?.children.length ? `${id}#children` : id;
}

/** What Baton knows of a child a gateway reported, in lines (its tooltip and its info message). */
export function childTaskInfoText(info: Extract<TreeNode, { kind: 'reported' }>['info']): string {
  return [
    info.title,
    vscode.l10n.t('{0} — {1}', info.agentName, delegationStateLabel(childState(info))),
    vscode.l10n.t('Started at the gateway by {0}; task {1}', info.startedBy || vscode.l10n.t('an agent'), info.taskId),
    ...(info.startedAt ? [new Date(info.startedAt).toLocaleString()] : []),
  ].join('\n');
}
