import * as vscode from 'vscode';
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
export function delegationStateLabel(state: string): string {
  return stateLabel(state, vscode.l10n.t);
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
    const look = stateLook(d.state);
    const color = TONE_COLOR[look.tone];
    item.iconPath = new vscode.ThemeIcon(
      look.spin ? `${look.icon}~spin` : look.icon,
      color ? new vscode.ThemeColor(color) : undefined,
    );
    const state = delegationStateLabel(d.state);
    item.description = vscode.l10n.t('{0} · {1}', d.agentName, state);
    const view = this.service.journalView(node.id);
    item.tooltip = new vscode.MarkdownString(undefined, false);
    item.tooltip.appendText(
      `${d.title}\n\n${vscode.l10n.t('{0} — {1}', d.agentName, state)}${view?.outcomeReason ? `\n${outcomeReasonText(view.outcomeBecause, view.outcomeReason, vscode.l10n.t)}` : ''}\n${new Date(d.createdAt).toLocaleString()}`,
    );
    const running = !look.final;
    item.contextValue = `delegation.${running ? 'running' : 'done'}${view?.actions.reviewChanges ? '.patch' : ''}`;
    item.command = { command: 'baton.openDelegation', title: vscode.l10n.t('Open'), arguments: [node.id] };
    return item;
  }

  private indexed(): DelegationIndex {
    return (this.index ??= indexDelegations(this.service.list()));
  }
}
