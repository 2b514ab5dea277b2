import { join } from 'node:path';
import * as vscode from 'vscode';
import { AgentService } from './agents/agentService';
import { RegistryFile } from './agents/registryFile';
import { addAgentsFromSettings, addLocalGatewayAgents, registerAgentCommands } from './commands/agentCommands';
import { registerDelegationCommands } from './commands/delegationCommands';
import { registerReviewCommands } from './commands/reviewCommands';
import { AUDIT_URI, AuditReportProvider } from './delegate/auditReport';
import { DelegationService } from './delegate/delegationService';
import { DelegationStarter } from './delegate/delegationStarter';
import { ConsentPrompts } from './delegate/consentPrompts';
import { errorMessage } from './errors';
import { GatewaySupervisor } from './gateway/gatewaySupervisor';
import { BatonAgentTools } from './lm/agentTools';
import { registerLanguageModelTools } from './lm/lmTools';
import { registerMcpServerDefinition } from './lm/mcpServer';
import { DelegationPanelManager, type DelegationPanel } from './panel/delegationPanel';
import { agentReviewRequestHandlers, delegationRequestHandlers } from './panel/panelRequestHandlers';
import { panelSnapshotter } from './panel/panelSnapshot';
import { ReviewDocumentProvider, REVIEW_SCHEME } from './review/reviewDocuments';
import type { ReviewSession } from './review/reviewSession';
import { ReviewSessions } from './review/reviewSessions';
import { DelegationStatusController } from './statusBar';
import { BatonStorage } from './storage';
import { registerTerminalCli } from './terminalCli';
import { AgentsViewProvider } from './views/agentsView';
import { DelegationsViewProvider } from './views/delegationsView';

/** What `activate` returns: used by Baton's integration tests and available to other extensions. */
export interface BatonApi {
  readonly panels: {
    readonly all: () => readonly DelegationPanel[];
    readonly onDidCreate: vscode.Event<DelegationPanel>;
  };
  readonly agents: AgentService;
  readonly gateway: GatewaySupervisor;
  readonly delegations: DelegationService;
  /** Resolves once the delegation journals are loaded. */
  readonly ready: Promise<void>;
  review(delegationId: string): ReviewSession | undefined;
  /** Whether a token is stored for this origin (a bare host means its https origin). */
  hasToken(origin: string): Promise<boolean>;
  /** What the language-model tools do (their calls and what they show before running). */
  readonly tools: BatonAgentTools;
}

export function activate(context: vscode.ExtensionContext): BatonApi {
  const log = vscode.window.createOutputChannel('Baton', { log: true });
  context.subscriptions.push(log);
  log.info(
    `Baton ${String(context.extension.packageJSON.version)} activating (VS Code ${vscode.version}, Node ${process.versions.node})`,
  );

  const storage = new BatonStorage(context.globalState, context.secrets);
  const config = () => vscode.workspace.getConfiguration('baton');
  const httpConfig = () => vscode.workspace.getConfiguration('http');
  const agents = new AgentService(
    new RegistryFile(join(context.globalStorageUri.fsPath, 'agents.json')),
    () => ({
      allowPrivateHosts: config().get<string[]>('privateHosts', []),
      proxy: httpConfig().get<string>('proxy') || undefined,
      noProxy: httpConfig().get<string[]>('noProxy', []),
    }),
    log,
  );
  // BATON_GATEWAY_STATE lets a gateway someone started (e.g. `npm run demo`) be the one Baton reuses.
  const gatewayState = process.env.BATON_GATEWAY_STATE || join(context.globalStorageUri.fsPath, 'gateway');
  const gateway = new GatewaySupervisor(context.extensionUri, gatewayState, log);
  activeGateway = gateway;
  context.subscriptions.push(registerTerminalCli(context, gatewayState, log));
  const hasToken = async (origin: string) => (await storage.getToken(origin)) !== undefined;
  const agentsView = new AgentsViewProvider(agents, () => gateway.status, {
    has: hasToken,
    onDidChange: context.secrets.onDidChange,
  });
  const journalDir = join(context.globalStorageUri.fsPath, 'delegations');
  const service = new DelegationService(
    journalDir,
    agents,
    gateway,
    storage,
    () => config().get<number>('maxConcurrent', 4),
    log,
  );
  const delegations = new DelegationsViewProvider(service);
  const reviewDocs = new ReviewDocumentProvider();
  const auditDocs = new AuditReportProvider(() => service.readAudit(), join(journalDir, 'audit.jsonl'));
  context.subscriptions.push(
    auditDocs,
    vscode.workspace.registerTextDocumentContentProvider(AUDIT_URI.scheme, auditDocs),
  );
  const reviews = new ReviewSessions(service, reviewDocs, log);
  context.subscriptions.push(
    service,
    reviewDocs,
    vscode.workspace.registerTextDocumentContentProvider(REVIEW_SCHEME, reviewDocs),
    reviews,
  );
  context.subscriptions.push(
    agents,
    gateway,
    agentsView,
    delegations,
    gateway.onDidChange(() => agentsView.refresh()),
    vscode.window.createTreeView('baton.agents', { treeDataProvider: agentsView, showCollapseAll: false }),
    vscode.window.createTreeView('baton.delegations', { treeDataProvider: delegations, showCollapseAll: false }),
    // Back from signing in elsewhere (a browser, most often): delegations waiting for that go on by themselves.
    vscode.window.onDidChangeWindowState((s) => {
      if (s.focused) service.recheckAuthRequired();
    }),
    // An agent that refused a delegation before any task may have been removed from the gateway that
    // listed it: its index is read again, so Baton stops offering it (and Delegate Again asks for another).
    service.onDidSettle(({ id, decision }) => {
      const agentId = service.request(id)?.agent.id;
      if (decision.because?.code === 'failed.refused' && agentId) void agents.recheckListing(agentId);
    }),
  );

  const panels = new DelegationPanelManager(context.extensionUri, {
    log,
    runCommand: async (command) => {
      await vscode.commands.executeCommand(command);
    },
    snapshot: panelSnapshotter({ agents, agentsView, delegations, service, reviews }),
  });
  context.subscriptions.push(
    panels,
    panels.registerHandlers({
      delegation: delegationRequestHandlers({ service, reviews, panels }),
      agentReview: agentReviewRequestHandlers(agents),
    }),
    agents.onDidChange(() => panels.update()),
    service.onDidChange((id) => {
      panels.update(id === '*' ? undefined : { kind: 'delegation', delegationId: id });
      // A parent's panel lists its children's states.
      const parent = id === '*' ? undefined : service.tree().parentOf.get(id);
      if (parent) panels.update({ kind: 'delegation', delegationId: parent });
    }),
    reviews.onDidChange((id) => panels.update({ kind: 'delegation', delegationId: id })),
  );
  const status = new DelegationStatusController(service);
  context.subscriptions.push(status, new ConsentPrompts(service, gateway, log));

  const ready = service.open().then(
    () => status.update(),
    (e: unknown) => log.error(`delegations: could not load the journals: ${errorMessage(e)}`),
  );
  const starter = new DelegationStarter(agents, service, ready);
  context.subscriptions.push(
    ...registerAgentCommands({ agents, gateway, panels, storage, log }),
    ...registerDelegationCommands({ agents, service, starter, panels, auditDocs, journalDir, hasToken }),
    ...registerReviewCommands({ reviews, panels, service }),
  );

  // Chat agents delegate too: the language-model tools and `baton mcp` for VS Code's agent sessions.
  const tools = new BatonAgentTools({
    agents,
    service,
    starter,
    gateway,
    hasToken,
    defaultDeadlineMinutes: () => config().get<number>('defaultDeadlineMinutes', 30),
    log,
  });
  context.subscriptions.push(
    ...registerLanguageModelTools(tools, log),
    ...registerMcpServerDefinition(context, gatewayState, log),
  );

  // A local gateway that is already running (started by another window, or by the demo) is reused.
  void gateway
    .findRunning()
    .then((running) => (running ? addLocalGatewayAgents({ agents, gateway }) : undefined))
    .catch((e: unknown) => log.warn(`gateway: ${errorMessage(e)}`));
  addAgentsFromSettings(agents, log);

  return {
    panels: { all: () => panels.panels, onDidCreate: panels.onDidCreate },
    agents,
    gateway,
    delegations: service,
    ready,
    review: (id) => reviews.get(id),
    hasToken,
    tools,
  };
}

/** The supervisor of the window that is open, for `deactivate`. */
let activeGateway: GatewaySupervisor | undefined;

export function deactivate(): Promise<void> | undefined {
  // Everything else is disposed through context.subscriptions. The local gateway keeps running on
  // purpose (delegations it runs survive a window reload); this window's folders are let go of first,
  // and VS Code waits for that before the extension host ends.
  const gateway = activeGateway;
  activeGateway = undefined;
  return gateway?.release();
}
