import * as vscode from 'vscode';
import type { PanelCommand } from '../core/protocol/panelProtocol';
import { DelegationPanelManager, type DelegationPanel } from './panel/delegationPanel';
import { AgentsViewProvider } from './views/agentsView';
import { DelegationsViewProvider } from './views/delegationsView';

/** What `activate` returns: used by Baton's integration tests and available to other extensions. */
export interface BatonApi {
  readonly panels: {
    readonly all: () => readonly DelegationPanel[];
    readonly onDidCreate: vscode.Event<DelegationPanel>;
  };
}

export function activate(context: vscode.ExtensionContext): BatonApi {
  const log = vscode.window.createOutputChannel('Baton', { log: true });
  context.subscriptions.push(log);
  log.info(`Baton ${String(context.extension.packageJSON.version)} activating (VS Code ${vscode.version}, Node ${process.versions.node})`);

  const agents = new AgentsViewProvider();
  const delegations = new DelegationsViewProvider();
  context.subscriptions.push(
    agents,
    delegations,
    vscode.window.createTreeView('baton.agents', { treeDataProvider: agents, showCollapseAll: false }),
    vscode.window.createTreeView('baton.delegations', { treeDataProvider: delegations, showCollapseAll: false }),
  );

  const runCommand = async (command: PanelCommand): Promise<void> => {
    await vscode.commands.executeCommand(command);
  };
  const panels = new DelegationPanelManager(context.extensionUri, {
    log,
    runCommand,
    act: async () => {
      throw new Error(vscode.l10n.t('This delegation is no longer available.'));
    },
    snapshot: (refreshCount) => ({
      title: vscode.l10n.t('Baton'),
      trusted: vscode.workspace.isTrusted,
      agents: agents.count,
      delegations: delegations.count,
      producedAt: new Date().toISOString(),
      refreshCount,
    }),
  });
  context.subscriptions.push(panels);

  const requireTrust = (action: string): boolean => {
    if (vscode.workspace.isTrusted) return true;
    void vscode.window.showWarningMessage(
      vscode.l10n.t('{0} is disabled in Restricted Mode. Trust this workspace to let Baton delegate, run or apply anything.', action),
    );
    return false;
  };

  context.subscriptions.push(
    vscode.commands.registerCommand('baton.openPanel', () => {
      panels.open();
    }),
    vscode.commands.registerCommand('baton.addAgent', () => {
      if (!requireTrust(vscode.l10n.t('Adding an agent'))) return;
      void vscode.window.showInformationMessage(vscode.l10n.t('Adding agents by Agent Card URL is not available in this build yet.'));
    }),
    vscode.commands.registerCommand('baton.delegate', () => {
      if (!requireTrust(vscode.l10n.t('Delegating'))) return;
      void vscode.window.showInformationMessage(vscode.l10n.t('Delegating needs an approved agent; adding agents is not available in this build yet.'));
    }),
  );

  return {
    panels: { all: () => panels.panels, onDidCreate: panels.onDidCreate },
  };
}

export function deactivate(): void {
  // Everything is disposed through context.subscriptions.
}
