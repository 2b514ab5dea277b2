import { join } from 'node:path';
import * as vscode from 'vscode';
import type { PanelCommand } from '../core/protocol/panelProtocol';
import { agentReviewView } from './agents/agentReview';
import { AgentService } from './agents/agentService';
import { GatewaySupervisor } from './gateway/gatewaySupervisor';
import { DelegationPanelManager, type DelegationPanel, type PanelSubject } from './panel/delegationPanel';
import { BatonStorage } from './storage';
import { AgentsViewProvider, type AgentsNode } from './views/agentsView';
import { DelegationsViewProvider } from './views/delegationsView';

/** What `activate` returns: used by Baton's integration tests and available to other extensions. */
export interface BatonApi {
  readonly panels: {
    readonly all: () => readonly DelegationPanel[];
    readonly onDidCreate: vscode.Event<DelegationPanel>;
  };
  readonly agents: AgentService;
  readonly gateway: GatewaySupervisor;
  hasToken(host: string): Promise<boolean>;
}

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export function activate(context: vscode.ExtensionContext): BatonApi {
  const log = vscode.window.createOutputChannel('Baton', { log: true });
  context.subscriptions.push(log);
  log.info(`Baton ${String(context.extension.packageJSON.version)} activating (VS Code ${vscode.version}, Node ${process.versions.node})`);

  const storage = new BatonStorage(context.globalState, context.secrets);
  const config = () => vscode.workspace.getConfiguration('baton');
  const httpConfig = () => vscode.workspace.getConfiguration('http');
  const agents = new AgentService(
    storage,
    () => ({
      allowPrivateHosts: config().get<string[]>('privateHosts', []),
      proxy: httpConfig().get<string>('proxy') || undefined,
      noProxy: httpConfig().get<string[]>('noProxy', []),
    }),
    log,
  );
  const gateway = new GatewaySupervisor(context.extensionUri, join(context.globalStorageUri.fsPath, 'gateway'), log);
  const agentsView = new AgentsViewProvider(agents, () => gateway.status);
  const delegations = new DelegationsViewProvider();
  context.subscriptions.push(
    agents,
    gateway,
    agentsView,
    delegations,
    gateway.onDidChange(() => agentsView.refresh()),
    vscode.window.createTreeView('baton.agents', { treeDataProvider: agentsView, showCollapseAll: false }),
    vscode.window.createTreeView('baton.delegations', { treeDataProvider: delegations, showCollapseAll: false }),
  );

  const runCommand = async (command: PanelCommand): Promise<void> => {
    await vscode.commands.executeCommand(command);
  };
  const panels: DelegationPanelManager = new DelegationPanelManager(context.extensionUri, {
    log,
    runCommand,
    act: async (subject, method, params) => {
      if (subject.agentCardUrl) {
        const cardUrl = subject.agentCardUrl;
        if (method === 'approveAgent') {
          requireTrustOrThrow(vscode.l10n.t('Approving an agent'));
          const p = params as { digest: string; endpointUrl?: string; acknowledgeOffOrigin: boolean };
          const r = await agents.approve(cardUrl, p.digest, { endpointUrl: p.endpointUrl, acknowledgeOffOrigin: p.acknowledgeOffOrigin });
          if (!r.ok) throw new Error(r.message);
          void vscode.window.showInformationMessage(vscode.l10n.t('Approved {0}. Baton will only call {1}.', agents.find(cardUrl)?.approval?.card.name ?? cardUrl, agents.find(cardUrl)?.approval?.endpoint.url ?? ''));
          return { approved: true } as never;
        }
        if (method === 'rejectAgent') {
          await agents.reject(cardUrl);
          return { ok: true } as never;
        }
      }
      throw new Error(vscode.l10n.t('This panel cannot do that.'));
    },
    snapshot: (refreshCount, subject: PanelSubject) => {
      const entry = subject.agentCardUrl ? agents.find(subject.agentCardUrl) : undefined;
      return {
        title: vscode.l10n.t('Baton'),
        trusted: vscode.workspace.isTrusted,
        agents: agentsView.count,
        delegations: delegations.count,
        producedAt: new Date().toISOString(),
        refreshCount,
        agentReview: entry ? agentReviewView(agents.registry, entry) : undefined,
      };
    },
  });
  context.subscriptions.push(panels, agents.onDidChange(() => panels.update()));

  function requireTrustOrThrow(action: string): void {
    if (!vscode.workspace.isTrusted) throw new Error(vscode.l10n.t('{0} is disabled in Restricted Mode. Trust this workspace to let Baton delegate, run or apply anything.', action));
  }
  const requireTrust = (action: string): boolean => {
    try {
      requireTrustOrThrow(action);
      return true;
    } catch (e) {
      void vscode.window.showWarningMessage(errorMessage(e));
      return false;
    }
  };
  const cardUrlOf = (arg: unknown): string | undefined => {
    if (typeof arg === 'string') return arg;
    const node = arg as AgentsNode | undefined;
    return node?.kind === 'agent' ? node.entry.cardUrl : undefined;
  };
  const pickAgent = async (placeHolder: string, filter: (s: string) => boolean = () => true): Promise<string | undefined> => {
    const items = agents.agents.filter((a) => filter(a.status)).map((a) => ({ label: a.served?.card.name ?? a.cardUrl, description: a.status, detail: a.cardUrl, cardUrl: a.cardUrl }));
    if (!items.length) {
      void vscode.window.showInformationMessage(vscode.l10n.t('No agents yet. Use Baton: Add Agent… first.'));
      return undefined;
    }
    return (await vscode.window.showQuickPick(items, { placeHolder }))?.cardUrl;
  };

  const addLocalGatewayAgents = async (): Promise<void> => {
    const roots = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    const info = await gateway.ensureRunning(roots);
    const host = new URL(info.url).host;
    agents.allowPrivateHost(host);
    const added = await agents.add(info.url, 'local-gateway');
    // Baton started this gateway itself (its own program, its own token): its agents need no review.
    for (const a of added) if (a.status === 'pending' && a.served) await agents.approve(a.cardUrl, a.served.digest);
  };

  context.subscriptions.push(
    vscode.commands.registerCommand('baton.openPanel', () => {
      panels.open();
    }),
    vscode.commands.registerCommand('baton.addAgent', async (arg?: unknown) => {
      if (!requireTrust(vscode.l10n.t('Adding an agent'))) return undefined;
      const input =
        typeof arg === 'string'
          ? arg
          : await vscode.window.showInputBox({
              title: vscode.l10n.t('Add Agent'),
              prompt: vscode.l10n.t('An Agent Card URL, an agent’s base URL, or a gateway’s URL (its index adds each agent it fronts).'),
              placeHolder: 'https://agents.example.com/.well-known/agent-card.json',
              ignoreFocusOut: true,
              validateInput: (v) => {
                try {
                  const u = new URL(v.trim());
                  return u.protocol === 'https:' || u.protocol === 'http:' ? undefined : vscode.l10n.t('Use an https:// URL.');
                } catch {
                  return vscode.l10n.t('Enter an absolute URL, e.g. https://agents.example.com');
                }
              },
            });
      if (!input) return undefined;
      try {
        const added = await vscode.window.withProgress({ location: { viewId: 'baton.agents' }, title: vscode.l10n.t('Fetching the agent card…') }, () => agents.add(input.trim()));
        const pending = added.filter((a) => a.status === 'pending');
        if (pending.length === 1) panels.open({ agentCardUrl: pending[0].cardUrl }, vscode.l10n.t('Review: {0}', pending[0].served?.card.name ?? pending[0].cardUrl));
        else if (added.length > 1) void vscode.window.showInformationMessage(vscode.l10n.t('Added {0} agents for review. Review each one in the Agents view before use.', added.length));
        return added.map((a) => a.cardUrl);
      } catch (e) {
        void vscode.window.showErrorMessage(vscode.l10n.t('Could not add the agent: {0}', errorMessage(e)));
        return undefined;
      }
    }),
    vscode.commands.registerCommand('baton.reviewAgent', async (arg?: unknown) => {
      const cardUrl = cardUrlOf(arg) ?? (await pickAgent(vscode.l10n.t('Review which agent?')));
      if (!cardUrl) return;
      const entry = agents.find(cardUrl);
      if (!entry) return;
      panels.open({ agentCardUrl: cardUrl }, vscode.l10n.t('Review: {0}', entry.served?.card.name ?? cardUrl));
    }),
    vscode.commands.registerCommand('baton.removeAgent', async (arg?: unknown) => {
      const cardUrl = cardUrlOf(arg) ?? (await pickAgent(vscode.l10n.t('Remove which agent?')));
      if (!cardUrl) return;
      panels.close({ agentCardUrl: cardUrl });
      await agents.remove(cardUrl);
    }),
    vscode.commands.registerCommand('baton.refreshAgents', async (arg?: unknown) => {
      const cardUrl = cardUrlOf(arg);
      await vscode.window.withProgress({ location: { viewId: 'baton.agents' } }, () => (cardUrl ? agents.refresh(cardUrl) : agents.refreshAll()));
      const changed = agents.agents.filter((a) => a.status === 'pending' && a.pendingReason === 'card-changed');
      if (changed.length) {
        const review = vscode.l10n.t('Review');
        void vscode.window
          .showWarningMessage(vscode.l10n.t('{0} changed its card and needs review again before Baton uses it.', changed.map((a) => a.served?.card.name ?? a.cardUrl).join(', ')), review)
          .then((pick) => (pick === review ? vscode.commands.executeCommand('baton.reviewAgent', changed[0].cardUrl) : undefined));
      }
    }),
    vscode.commands.registerCommand('baton.setToken', async (arg?: unknown) => {
      const fromAgent = cardUrlOf(arg);
      const entry = fromAgent ? agents.find(fromAgent) : undefined;
      const suggested = entry ? new URL(agents.tokenOrigin(entry) ?? entry.origin).host : undefined;
      const args = typeof arg === 'object' && arg !== null && 'host' in arg && 'token' in arg ? (arg as { host: string; token: string }) : undefined;
      const host = args?.host ?? (await vscode.window.showInputBox({ title: vscode.l10n.t('Set Token for Host'), prompt: vscode.l10n.t('The token is sent only to this host, as its agent card asks.'), value: suggested, placeHolder: 'agents.example.com' }));
      if (!host) return;
      const token = args?.token ?? (await vscode.window.showInputBox({ title: vscode.l10n.t('Token for {0}', host), password: true, prompt: vscode.l10n.t('Stored in VS Code’s secret storage. Leave empty to remove it.') }));
      if (token === undefined) return;
      if (token === '') await storage.deleteToken(host);
      else await storage.setToken(host, token);
      log.info(`tokens: ${token === '' ? 'removed' : 'stored'} the token for ${host}`);
    }),
    vscode.commands.registerCommand('baton.startGateway', async () => {
      if (!requireTrust(vscode.l10n.t('Starting the local gateway'))) return;
      try {
        await vscode.window.withProgress({ location: { viewId: 'baton.agents' }, title: vscode.l10n.t('Starting the local gateway…') }, addLocalGatewayAgents);
      } catch (e) {
        void vscode.window.showErrorMessage(vscode.l10n.t('The local gateway did not start: {0}', errorMessage(e)));
      }
    }),
    vscode.commands.registerCommand('baton.stopGateway', async () => {
      await gateway.stop();
    }),
    vscode.commands.registerCommand('baton.delegate', () => {
      if (!requireTrust(vscode.l10n.t('Delegating'))) return;
      void vscode.window.showInformationMessage(vscode.l10n.t('Delegating needs an approved agent; adding agents is not available in this build yet.'));
    }),
  );

  // Agents named in settings are added (pending review) on activation.
  const fromSettings = config().get<string[]>('agents', []);
  for (const url of fromSettings) {
    if (!agents.agents.some((a) => a.cardUrl === url || a.cardUrl.startsWith(url))) void agents.add(url, 'settings').catch((e: unknown) => log.warn(`agents: ${url} from settings: ${errorMessage(e)}`));
  }

  return {
    panels: { all: () => panels.panels, onDidCreate: panels.onDidCreate },
    agents,
    gateway,
    hasToken: async (host) => (await storage.getToken(host)) !== undefined,
  };
}

export function deactivate(): void {
  // Everything is disposed through context.subscriptions. The local gateway keeps running on purpose:
  // delegations it runs survive a window reload.
}
