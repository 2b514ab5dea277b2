import { join } from 'node:path';
import * as vscode from 'vscode';
import type { PanelCommand, PanelRequests } from '../core/protocol/panelProtocol';
import { normalizeOrigin, tryNormalizeOrigin } from '../core/origin';
import { agentReviewView } from './agents/agentReview';
import { AgentService, RegistryFile } from './agents/agentService';
import { AUDIT_URI, AuditReportProvider } from './delegate/auditReport';
import { collectContext, summarizeContext } from './delegate/context';
import { DelegationService } from './delegate/delegationService';
import { isDelegateArgs, runStartFlow, type AgentChoice, type DelegateArgs } from './delegate/startFlow';
import { GatewaySupervisor } from './gateway/gatewaySupervisor';
import { ReviewDocumentProvider, reviewOf, REVIEW_SCHEME } from './review/reviewDocuments';
import { ReviewSession, type ReviewRecord } from './review/reviewSession';
import {
  DelegationPanelManager,
  type DelegationPanel,
  type DelegationRequestMethod,
  type PanelSubject,
} from './panel/delegationPanel';
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
  readonly delegations: DelegationService;
  /** Resolves once the delegation journals are loaded. */
  readonly ready: Promise<void>;
  review(delegationId: string): ReviewSession | undefined;
  /** Whether a token is stored for this origin (a bare host means its https origin). */
  hasToken(origin: string): Promise<boolean>;
}

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
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
  const gateway = new GatewaySupervisor(
    context.extensionUri,
    process.env.BATON_GATEWAY_STATE || join(context.globalStorageUri.fsPath, 'gateway'),
    log,
  );
  const agentsView = new AgentsViewProvider(agents, () => gateway.status);
  const service = new DelegationService(
    join(context.globalStorageUri.fsPath, 'delegations'),
    agents,
    gateway,
    storage,
    () => config().get<number>('maxConcurrent', 4),
    log,
  );
  const delegations = new DelegationsViewProvider(service);
  const reviewDocs = new ReviewDocumentProvider();
  const reviews = new Map<string, ReviewSession>();
  const auditDocs = new AuditReportProvider(
    () => service.readAudit(),
    join(context.globalStorageUri.fsPath, 'delegations', 'audit.jsonl'),
  );
  context.subscriptions.push(
    auditDocs,
    vscode.workspace.registerTextDocumentContentProvider(AUDIT_URI.scheme, auditDocs),
  );
  context.subscriptions.push(
    service,
    reviewDocs,
    vscode.workspace.registerTextDocumentContentProvider(REVIEW_SCHEME, reviewDocs),
    { dispose: () => reviews.forEach((r) => r.dispose()) },
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
  );

  const runCommand = async (command: PanelCommand): Promise<void> => {
    await vscode.commands.executeCommand(command);
  };
  const panels: DelegationPanelManager = new DelegationPanelManager(context.extensionUri, {
    log,
    runCommand,
    act: (subject, method, params) => panelRequests[method](subject, params as never),
    snapshot: (refreshCount, subject: PanelSubject) => {
      const entry = subject.agentCardUrl ? agents.find(subject.agentCardUrl) : undefined;
      return {
        title: vscode.l10n.t('Baton'),
        trusted: vscode.workspace.isTrusted,
        agents: agentsView.count,
        delegations: delegations.count,
        producedAt: new Date().toISOString(),
        refreshCount,
        agentReview: entry ? agentReviewView(agents.registry, entry, agents.viaProxy.get(entry.cardUrl)) : undefined,
        delegation: subject.delegationId ? delegationView(subject.delegationId) : undefined,
      };
    },
  });
  context.subscriptions.push(
    panels,
    agents.onDidChange(() => panels.update()),
    service.onDidChange((id) => panels.update(id === '*' ? undefined : { delegationId: id })),
  );

  function delegationView(id: string) {
    return service.panelView(id, reviews.get(id)?.view());
  }

  async function openReview(id: string): Promise<ReviewSession> {
    let session = reviews.get(id);
    if (!session) {
      // The bytes the result check approved (the signed artifact when verified), held by the review from here on.
      const patch = await service.reviewPatch(id);
      if (patch === undefined) throw new Error(vscode.l10n.t('This delegation returned no changes.patch.'));
      // Opened by another click while the check was awaited: show that one.
      if (reviews.has(id)) return openReview(id);
      const side = service.sidecar(id);
      const folder = side?.folder || vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
      if (!folder)
        throw new Error(vscode.l10n.t('Open the folder the delegation was started from to review its changes.'));
      // Apply only while the delegation's result still checks out as the same bytes this review holds.
      const stillChecked = async (): Promise<void> => {
        const now = await service.reviewPatch(id);
        if (!now?.equals(patch))
          throw new Error(
            vscode.l10n.t(
              'The result of this delegation changed since this review was opened; open Review Changes again.',
            ),
          );
      };
      const recordReview = (r: ReviewRecord): void => {
        log.info(`review ${id}: ${r.kind}${'record' in r ? ` ${r.record.files.length} file(s)` : ''}`);
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
        void service
          .recordReview(
            id,
            { action: r.kind, files, overrides: rec?.overrides ?? [], digests: rec?.digests ?? [] },
            text,
          )
          .catch((e: unknown) => log.error(`review ${id}: could not record it in the journal: ${errorMessage(e)}`));
      };
      session = new ReviewSession(
        id,
        folder,
        { bytes: patch },
        side?.base,
        reviewDocs,
        recordReview,
        stillChecked,
        service.journalView(id)?.agent.name,
      );
      reviews.set(id, session);
      const s = session;
      s.onDidChange(() => panels.update({ delegationId: id }));
      await s.prepare();
    }
    panels.open(
      { delegationId: id },
      vscode.l10n.t('Delegation: {0}', service.journalView(id)?.title.slice(0, 40) ?? id),
    );
    if (session.patchFiles.length) await session.open();
    return session;
  }

  /** Every request a panel can make about its subject, typed by the panel protocol; one handler each. */
  type Handler<M extends DelegationRequestMethod> = (
    subject: PanelSubject,
    params: PanelRequests[M]['params'],
  ) => Promise<PanelRequests[M]['result']>;
  const delegationOf = (subject: PanelSubject): string => {
    if (!subject.delegationId) throw new Error(vscode.l10n.t('This panel shows no delegation.'));
    return subject.delegationId;
  };
  const agentOf = (subject: PanelSubject): string => {
    if (!subject.agentCardUrl) throw new Error(vscode.l10n.t('This panel reviews no agent.'));
    return subject.agentCardUrl;
  };
  const sessionOf = (subject: PanelSubject): ReviewSession => {
    const session = reviews.get(delegationOf(subject));
    if (!session) throw new Error(vscode.l10n.t('Open the review first (Review Changes).'));
    return session;
  };
  const panelRequests: { [M in DelegationRequestMethod]: Handler<M> } = {
    approveAgent: async (subject, p) => {
      requireTrustOrThrow(vscode.l10n.t('Approving an agent'));
      const cardUrl = agentOf(subject);
      const r = await agents.approve(cardUrl, p.digest, {
        endpointUrl: p.endpointUrl,
        acknowledgeOffOrigin: p.acknowledgeOffOrigin,
      });
      if (!r.ok) throw new Error(r.message);
      const approved = agents.find(cardUrl)?.approval;
      void vscode.window.showInformationMessage(
        vscode.l10n.t(
          'Approved {0}. Baton will only call {1}.',
          approved?.card.name ?? cardUrl,
          approved?.endpoint.url ?? '',
        ),
      );
      return { approved: true };
    },
    rejectAgent: async (subject) => {
      await agents.reject(agentOf(subject));
      return { ok: true };
    },
    cancel: async (subject) => ({ confirmed: await service.cancel(delegationOf(subject)) }),
    reply: async (subject, p) => {
      requireTrustOrThrow(vscode.l10n.t('Replying to an agent'));
      await service.reply(delegationOf(subject), p.text);
      return { sent: true };
    },
    checkAgain: async (subject) => {
      const id = delegationOf(subject);
      await service.checkAgain(id);
      return { state: service.panelView(id)?.state ?? 'unknown' };
    },
    provideToken: async (subject) => {
      const id = delegationOf(subject);
      const endpoint = service.journalView(id)?.agent.endpoint;
      const stored =
        (await vscode.commands.executeCommand<boolean | undefined>(
          'baton.setToken',
          endpoint ? { origin: new URL(endpoint).origin } : undefined,
        )) === true;
      // With the token in place, ask the agent where the task is and follow it from there.
      if (stored && service.panelView(id)?.state === 'auth-required') await service.checkAgain(id);
      return { stored };
    },
    reviewChanges: async (subject) => {
      await openReview(delegationOf(subject));
      return { opened: true };
    },
    reviewSelect: async (subject, p) => {
      sessionOf(subject).select(p.fileId, p.hunkId, p.selected);
      return { ok: true };
    },
    reviewSelectAll: async (subject, p) => {
      sessionOf(subject).selectAll(p.selected);
      return { ok: true };
    },
    reviewOverride: async (subject, p) => {
      sessionOf(subject).override(p.riskId, p.allow);
      return { ok: true };
    },
    reviewApply: async (subject, p) => {
      requireTrustOrThrow(vscode.l10n.t('Applying a patch'));
      return { applied: await sessionOf(subject).apply(p.threeWay) };
    },
    reviewReject: async (subject) => {
      sessionOf(subject).reject();
      return { ok: true };
    },
    reviewUndo: async (subject) => ({ restored: sessionOf(subject).undo() }),
    reviewMerge: async (subject, p) => {
      const session = sessionOf(subject);
      if (p.action === 'finish') session.finishMerge();
      else await session.abortMerge();
      return { ok: true };
    },
    showFullText: async (subject, p) => {
      const text = service.fullText(delegationOf(subject), p.seq);
      if (text === undefined)
        throw new Error(
          vscode.l10n.t("Baton no longer keeps that text in memory; the delegation's journal still has it."),
        );
      // A plain-text editor: the agent's text is read, never rendered or run.
      await vscode.window.showTextDocument(
        await vscode.workspace.openTextDocument({ content: text, language: 'plaintext' }),
        { preview: true },
      );
      return { opened: true };
    },
    reviewOpen: async (subject, p) => {
      await sessionOf(subject).open(p.fileId);
      return { ok: true };
    },
  };

  function requireTrustOrThrow(action: string): void {
    if (!vscode.workspace.isTrusted)
      throw new Error(
        vscode.l10n.t(
          '{0} is disabled in Restricted Mode. Trust this workspace to let Baton delegate, run or apply anything.',
          action,
        ),
      );
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
  const pickAgent = async (
    placeHolder: string,
    filter: (s: string) => boolean = () => true,
  ): Promise<string | undefined> => {
    const items = agents.agents
      .filter((a) => filter(a.status))
      .map((a) => ({
        label: a.served?.card.name ?? a.cardUrl,
        description: a.status,
        detail: a.cardUrl,
        cardUrl: a.cardUrl,
      }));
    if (!items.length) {
      void vscode.window.showInformationMessage(vscode.l10n.t('No agents yet. Use Baton: Add Agent… first.'));
      return undefined;
    }
    return (await vscode.window.showQuickPick(items, { placeHolder }))?.cardUrl;
  };

  const addLocalGatewayAgents = async (): Promise<void> => {
    const roots = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    const info = await gateway.ensureRunning(roots, config().get<Record<string, string>>('cliPaths', {}));
    const host = new URL(info.url).host;
    agents.allowPrivateHost(host);
    // A restarted local gateway listens on a new port: its old entries are gone for good.
    for (const a of agents.agents)
      if (a.source === 'local-gateway' && a.origin !== new URL(info.url).origin) await agents.remove(a.cardUrl);
    const { entries: added } = await agents.add(info.url, 'local-gateway');
    // Baton started this gateway itself (its own program, its own token): its agents need no review.
    for (const a of added) if (a.status === 'pending' && a.served) await agents.approve(a.cardUrl, a.served.digest);
  };

  context.subscriptions.push(
    vscode.commands.registerCommand('baton.openPanel', () => {
      panels.open();
    }),
    vscode.commands.registerCommand('baton.addAgent', async (arg?: unknown) => {
      if (!requireTrust(vscode.l10n.t('Adding an agent'))) return undefined;
      // `{ value }` opens the box again with what the user typed (after an error), so a typo costs one edit.
      const prefill =
        typeof arg === 'object' && arg !== null && typeof (arg as { value?: unknown }).value === 'string'
          ? (arg as { value: string }).value
          : '';
      const input =
        typeof arg === 'string'
          ? arg
          : await vscode.window.showInputBox({
              title: vscode.l10n.t('Add Agent'),
              prompt: vscode.l10n.t(
                'An Agent Card URL, an agent’s base URL, or a gateway’s URL (its index adds each agent it fronts).',
              ),
              placeHolder: 'https://agents.example.com/.well-known/agent-card.json',
              value: prefill,
              ignoreFocusOut: true,
              validateInput: (v) => {
                try {
                  const u = new URL(v.trim());
                  return u.protocol === 'https:' || u.protocol === 'http:'
                    ? undefined
                    : vscode.l10n.t('Use an https:// URL.');
                } catch {
                  return vscode.l10n.t('Enter an absolute URL, e.g. https://agents.example.com');
                }
              },
            });
      if (!input) return undefined;
      const value = input.trim();
      const wasApproved = new Set(agents.approved().map((a) => a.cardUrl));
      try {
        const { entries: added, summary } = await vscode.window.withProgress(
          { location: { viewId: 'baton.agents' }, title: vscode.l10n.t('Fetching the agent card…') },
          () => agents.add(value),
        );
        const pending = added.filter((a) => a.status === 'pending');
        const already = added.filter((a) => wasApproved.has(a.cardUrl) && a.status === 'approved');
        // Part of what an index listed was left out (a limit, or a card that failed): say what was added, what was not, and what to do.
        if (summary) {
          const showLog = vscode.l10n.t('Show Log');
          void vscode.window.showWarningMessage(summary, showLog).then((pick) => {
            if (pick === showLog) log.show();
          });
        }
        if (pending.length === 1)
          panels.open(
            { agentCardUrl: pending[0].cardUrl },
            vscode.l10n.t('Review: {0}', pending[0].served?.card.name ?? pending[0].cardUrl),
          );
        else if (pending.length > 1 && !summary) {
          void vscode.window.showInformationMessage(
            already.length
              ? vscode.l10n.t(
                  'Added {0} agents for review ({1} were already approved). Review each one in the Agents view before use.',
                  pending.length,
                  already.length,
                )
              : vscode.l10n.t(
                  'Added {0} agents for review. Review each one in the Agents view before use.',
                  pending.length,
                ),
          );
        } else if (pending.length === 0 && added.length > 0 && !summary) {
          void vscode.window.showInformationMessage(
            vscode.l10n.t(
              'Nothing new to review: {0} already approved.',
              added.map((a) => a.served?.card.name ?? a.cardUrl).join(', '),
            ),
          );
        }
        return added.map((a) => a.cardUrl);
      } catch (e) {
        const message = errorMessage(e);
        const edit = vscode.l10n.t('Edit URL');
        const settings = vscode.l10n.t('Open Settings');
        const actions = /baton\.privateHosts/.test(message) ? [settings, edit] : [edit];
        void vscode.window
          .showErrorMessage(vscode.l10n.t('Could not add the agent: {0}', message), ...actions)
          .then((pick) => {
            if (pick === settings)
              return vscode.commands.executeCommand('workbench.action.openSettings', 'baton.privateHosts');
            if (pick === edit) return vscode.commands.executeCommand('baton.addAgent', { value });
            return undefined;
          });
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
      await vscode.window.withProgress({ location: { viewId: 'baton.agents' } }, () =>
        cardUrl ? agents.refresh(cardUrl) : agents.refreshAll(),
      );
      const changed = agents.agents.filter((a) => a.status === 'pending' && a.pendingReason === 'card-changed');
      if (changed.length) {
        const review = vscode.l10n.t('Review');
        void vscode.window
          .showWarningMessage(
            vscode.l10n.t(
              '{0} changed its card and needs review again before Baton uses it.',
              changed.map((a) => a.served?.card.name ?? a.cardUrl).join(', '),
            ),
            review,
          )
          .then((pick) =>
            pick === review ? vscode.commands.executeCommand('baton.reviewAgent', changed[0].cardUrl) : undefined,
          );
      }
    }),
    /** Resolves true when a token was stored (false when removed, undefined when dismissed). */
    vscode.commands.registerCommand('baton.setToken', async (arg?: unknown): Promise<boolean | undefined> => {
      const fromAgent = cardUrlOf(arg);
      const entry = fromAgent ? agents.find(fromAgent) : undefined;
      const suggested = entry ? (agents.tokenOrigin(entry) ?? entry.origin) : undefined;
      const given =
        typeof arg === 'object' && arg !== null ? (arg as { origin?: unknown; token?: unknown }) : undefined;
      // An origin named by the caller (the delegation panel knows its agent's endpoint) is not asked for again.
      const knownOrigin = typeof given?.origin === 'string' && given.origin ? given.origin : undefined;
      const typed =
        knownOrigin ??
        (await vscode.window.showInputBox({
          title: vscode.l10n.t('Set Token for Origin'),
          prompt: vscode.l10n.t(
            'The token is sent only to this origin (scheme, host and port), as its agent card asks. Without a scheme, https is meant.',
          ),
          value: suggested,
          placeHolder: 'https://agents.example.com',
          validateInput: (v) =>
            v.trim() && !tryNormalizeOrigin(v)
              ? vscode.l10n.t(
                  'Give an origin: https://host[:port], or http://host[:port] for an agent you allowed as private.',
                )
              : undefined,
        }));
      if (!typed) return undefined;
      const origin = normalizeOrigin(typed);
      const token =
        typeof given?.token === 'string'
          ? given.token
          : await vscode.window.showInputBox({
              title: vscode.l10n.t('Token for {0}', origin),
              password: true,
              prompt: origin.startsWith('http:')
                ? vscode.l10n.t(
                    '{0} is plain http: the token travels unencrypted to it, and only to it. Stored in VS Code’s secret storage. Leave empty to remove it.',
                    origin,
                  )
                : vscode.l10n.t('Stored in VS Code’s secret storage. Leave empty to remove it.'),
            });
      if (token === undefined) return undefined;
      if (token === '') await storage.deleteToken(origin);
      else await storage.setToken(origin, token);
      log.info(`tokens: ${token === '' ? 'removed' : 'stored'} the token for ${origin}`);
      return token !== '';
    }),
    vscode.commands.registerCommand('baton.startGateway', async () => {
      if (!requireTrust(vscode.l10n.t('Starting the local gateway'))) return;
      try {
        await vscode.window.withProgress(
          { location: { viewId: 'baton.agents' }, title: vscode.l10n.t('Starting the local gateway…') },
          addLocalGatewayAgents,
        );
      } catch (e) {
        void vscode.window.showErrorMessage(vscode.l10n.t('The local gateway did not start: {0}', errorMessage(e)));
      }
    }),
    vscode.commands.registerCommand('baton.stopGateway', async () => {
      await gateway.stop();
    }),
    vscode.commands.registerCommand('baton.delegate', (arg?: unknown) => delegate({}, isDelegateArgs(arg) ? arg : {})),
    vscode.commands.registerCommand('baton.delegateSelection', (arg?: unknown) =>
      delegate({ editor: vscode.window.activeTextEditor, useSelection: true }, isDelegateArgs(arg) ? arg : {}),
    ),
    vscode.commands.registerCommand(
      'baton.delegateFiles',
      (clicked?: vscode.Uri, selected?: vscode.Uri[], arg?: unknown) => {
        const files = selected?.length ? selected : clicked instanceof vscode.Uri ? [clicked] : [];
        return delegate({ files }, isDelegateArgs(arg) ? arg : {});
      },
    ),
    vscode.commands.registerCommand(
      'baton.fixWithAgent',
      (uri?: vscode.Uri, diagnostics?: vscode.Diagnostic[], arg?: unknown) => {
        const target = uri ?? vscode.window.activeTextEditor?.document.uri;
        const diags = diagnostics ?? (target ? vscode.languages.getDiagnostics(target) : []);
        const task = diags.length
          ? vscode.l10n.t(
              'Fix: {0}',
              diags
                .map((d) => d.message)
                .join('; ')
                .slice(0, 300),
            )
          : undefined;
        const extra = isDelegateArgs(arg) ? arg : {};
        return delegate(
          {
            files: target ? [target] : [],
            diagnostics: target ? diags.map((d) => ({ uri: target, diagnostic: d })) : [],
          },
          { task, ...extra },
        );
      },
    ),
    vscode.commands.registerCommand('baton.openDelegation', (id?: unknown) => {
      const delegationId = typeof id === 'string' ? id : (id as { id?: string } | undefined)?.id;
      if (!delegationId) return;
      panels.open(
        { delegationId },
        vscode.l10n.t('Delegation: {0}', service.journalView(delegationId)?.title.slice(0, 40) ?? delegationId),
      );
    }),
    vscode.commands.registerCommand('baton.cancelDelegation', async (id?: unknown) => {
      const delegationId = typeof id === 'string' ? id : (id as { id?: string } | undefined)?.id;
      if (delegationId) await service.cancel(delegationId);
    }),
    vscode.commands.registerCommand('baton.reviewChanges', async (id?: unknown) => {
      const delegationId = typeof id === 'string' ? id : (id as { id?: string } | undefined)?.id;
      if (!delegationId) return;
      try {
        await openReview(delegationId);
      } catch (e) {
        void vscode.window.showErrorMessage(errorMessage(e));
      }
    }),
    // The review editors' title actions: the editor's URI says which review (and which file) they act on.
    vscode.commands.registerCommand('baton.applyAllChanges', (uri?: unknown) =>
      fromReviewEditor(uri, false, async (session) => {
        if (!requireTrust(vscode.l10n.t('Applying a patch'))) return;
        await session.applyAll();
        void vscode.window.showInformationMessage(session.view().message ?? vscode.l10n.t('Applied.'));
      }),
    ),
    vscode.commands.registerCommand('baton.applyFileChanges', (uri?: unknown) =>
      fromReviewEditor(uri, true, async (session, fileId) => {
        if (!requireTrust(vscode.l10n.t('Applying a patch')) || !fileId) return;
        await session.applyFile(fileId);
        void vscode.window.showInformationMessage(session.view().message ?? vscode.l10n.t('Applied.'));
      }),
    ),
    vscode.commands.registerCommand('baton.rejectChanges', (uri?: unknown) =>
      fromReviewEditor(uri, false, async (session) => {
        const reject = vscode.l10n.t('Reject');
        const pick = await vscode.window.showWarningMessage(
          vscode.l10n.t('Reject the agent’s changes? Nothing is written; the patch stays in the delegation’s journal.'),
          { modal: true },
          reject,
        );
        if (pick === reject) session.reject();
      }),
    ),
    vscode.commands.registerCommand('baton.showAuditLog', async () => {
      // A read-only report (newest first, agent text inert); the raw JSON Lines stay the record.
      const doc = await vscode.workspace.openTextDocument(AUDIT_URI);
      auditDocs.changed(AUDIT_URI);
      await vscode.window.showTextDocument(doc, { preview: true });
    }),
    vscode.commands.registerCommand('baton.exportAuditLog', async () => {
      const target = await vscode.window.showSaveDialog({
        filters: { 'JSON Lines': ['jsonl'], CSV: ['csv'] },
        saveLabel: vscode.l10n.t('Export Audit Log'),
      });
      if (!target) return;
      const { JournalStore } = await import('../node/journalStore');
      await new JournalStore(join(context.globalStorageUri.fsPath, 'delegations')).exportAudit(
        target.fsPath,
        target.fsPath.endsWith('.csv') ? 'csv' : 'jsonl',
      );
      void vscode.window.showInformationMessage(vscode.l10n.t('Audit log exported to {0}.', target.fsPath));
    }),
    vscode.languages.registerCodeActionsProvider(
      { scheme: 'file' },
      {
        provideCodeActions: (document, _range, ctx) => {
          if (!ctx.diagnostics.length || !vscode.workspace.isTrusted) return [];
          const action = new vscode.CodeAction(vscode.l10n.t('Ask an agent to fix'), vscode.CodeActionKind.QuickFix);
          action.command = {
            command: 'baton.fixWithAgent',
            title: action.title,
            arguments: [document.uri, [...ctx.diagnostics]],
          };
          action.diagnostics = [...ctx.diagnostics];
          return [action];
        },
      },
      { providedCodeActionKinds: [vscode.CodeActionKind.QuickFix] },
    ),
  );

  /**
   * Runs a review action for the review an editor shows (its URI, as the title bar passes it); from the
   * palette, asks which open review (and which file).
   */
  async function fromReviewEditor(
    arg: unknown,
    needsFile: boolean,
    run: (session: ReviewSession, fileId: string | undefined) => Promise<void>,
  ): Promise<void> {
    try {
      const target = arg instanceof vscode.Uri ? reviewOf(arg) : undefined;
      if (arg instanceof vscode.Uri && !target) throw new Error(vscode.l10n.t('This editor shows no Baton review.'));
      const session = target ? reviews.get(target.review) : await pickReview();
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
      void vscode.window.showErrorMessage(errorMessage(e));
    }
  }

  async function pickReview(): Promise<ReviewSession | undefined> {
    const open = [...reviews.values()].filter((r) => r.view().state === 'ready');
    if (!open.length) {
      void vscode.window.showInformationMessage(
        vscode.l10n.t('No review is open. Use Review Changes in a delegation’s panel first.'),
      );
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
      void vscode.window.showInformationMessage(vscode.l10n.t('Every file of this review is applied.'));
      return undefined;
    }
    return (await vscode.window.showQuickPick(items, { placeHolder: vscode.l10n.t('Apply which file?') }))?.fileId;
  }

  async function delegate(
    source: Parameters<typeof collectContext>[0],
    args: DelegateArgs,
  ): Promise<string | undefined> {
    if (!requireTrust(vscode.l10n.t('Delegating'))) return undefined;
    try {
      await ready;
      const context = await collectContext(source);
      const choices: AgentChoice[] = agents.approved().map((a) => ({
        id: a.cardUrl,
        name: a.approval?.card.name ?? a.cardUrl,
        description: a.approval?.card.description,
        skills: a.approval?.card.skills.map((s) => s.name) ?? [],
        endpoint: a.approval?.endpoint.url ?? '',
        seesRepository: a.source === 'local-gateway',
      }));
      const choice = await runStartFlow(
        choices,
        args,
        summarizeContext(context),
        config().get<number>('defaultDeadlineMinutes', 30),
      );
      if (!choice) return undefined;
      const entry = agents.find(choice.agentId);
      if (!entry) return undefined;
      const id = await service.start(entry, choice, context);
      panels.open({ delegationId: id }, vscode.l10n.t('Delegation: {0}', choice.task.split('\n')[0].slice(0, 40)));
      if (context.unsaved.length)
        void vscode.window.showWarningMessage(
          vscode.l10n.t(
            'Unsaved changes are not in the agent’s copy: {0}. Save first if the agent needs them.',
            context.unsaved.join(', '),
          ),
        );
      return id;
    } catch (e) {
      void vscode.window.showErrorMessage(vscode.l10n.t('Could not delegate: {0}', errorMessage(e)));
      return undefined;
    }
  }

  // Status bar: how many delegations run; notifications when one finishes, fails or needs input.
  const status = vscode.window.createStatusBarItem('baton.status', vscode.StatusBarAlignment.Left, 50);
  status.name = vscode.l10n.t('Baton Delegations');
  status.command = 'workbench.view.extension.baton';
  const updateStatus = () => {
    const running = service.runningCount;
    const queued = service.queuedCount;
    if (running + queued === 0) return status.hide();
    status.text = `$(rocket) ${running}${queued ? ` +${queued}` : ''}`;
    status.tooltip = vscode.l10n.t('{0} delegation(s) running, {1} queued', running, queued);
    status.show();
  };
  context.subscriptions.push(
    status,
    service.onDidChange(updateStatus),
    service.onDidSettle(({ id, decision }) => {
      const v = service.journalView(id);
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
      const show =
        decision.outcome === 'completed' || decision.outcome === 'input-required'
          ? vscode.window.showInformationMessage
          : vscode.window.showWarningMessage;
      void show(text, ...buttons).then((pick) => {
        if (pick === review) void vscode.commands.executeCommand('baton.reviewChanges', id);
        else if (pick === open) void vscode.commands.executeCommand('baton.openDelegation', id);
      });
    }),
  );

  const ready = service.open().then(
    () => updateStatus(),
    (e: unknown) => log.error(`delegations: could not load the journals: ${errorMessage(e)}`),
  );
  // A local gateway that is already running (started by another window, or by the demo) is reused.
  if (gateway.findRunning())
    void addLocalGatewayAgents().catch((e: unknown) => log.warn(`gateway: ${errorMessage(e)}`));

  // Agents named in settings are added (pending review) on activation.
  const fromSettings = config().get<string[]>('agents', []);
  for (const url of fromSettings) {
    if (!agents.agents.some((a) => a.cardUrl === url || a.cardUrl.startsWith(url)))
      void agents
        .add(url, 'settings')
        .catch((e: unknown) => log.warn(`agents: ${url} from settings: ${errorMessage(e)}`));
  }

  return {
    panels: { all: () => panels.panels, onDidCreate: panels.onDidCreate },
    agents,
    gateway,
    delegations: service,
    ready,
    review: (id) => reviews.get(id),
    hasToken: async (origin) => (await storage.getToken(origin)) !== undefined,
  };
}

export function deactivate(): void {
  // Everything is disposed through context.subscriptions. The local gateway keeps running on purpose:
  // delegations it runs survive a window reload.
}
