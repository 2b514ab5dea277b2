import * as vscode from 'vscode';
import { showError, showInfo, showWarning } from '../notify';
import type { AgentService } from '../agents/agentService';
import { AUDIT_URI, type AuditReportProvider } from '../delegate/auditReport';
import { againPlan, type AgainPlan } from '../../core/delegation/again';
import { collectAgainContext, collectContext, folderForRoot, summarizeContext } from '../delegate/context';
import type { CollectedContext } from '../delegate/context';
import type { DelegationService } from '../delegate/delegationService';
import type { DelegationStarter } from '../delegate/delegationStarter';
import { isDelegateArgs, runStartFlow, type AgentChoice, type DelegateArgs } from '../delegate/startFlow';
import { errorMessage } from '../errors';
import { askToken } from './agentCommands';
import type { DelegationPanelManager } from '../panel/delegationPanel';
import { delegationPanelTitle } from '../review/reviewSessions';
import { requireTrust } from '../trust';
import { childTaskInfoText } from '../views/delegationsView';
import { delegationIdOf } from './commandArgs';

export interface DelegationCommandDeps {
  readonly agents: AgentService;
  readonly service: DelegationService;
  readonly starter: DelegationStarter;
  readonly panels: DelegationPanelManager;
  readonly auditDocs: AuditReportProvider;
  /** Where the delegation journals (and the audit log) are kept. */
  readonly journalDir: string;
  /** Whether a token is stored for an origin. */
  readonly hasToken: (origin: string) => Promise<boolean>;
}

/** Starting delegations (palette, selection, files, a problem), following and canceling them, the audit log. */
export function registerDelegationCommands(deps: DelegationCommandDeps): vscode.Disposable[] {
  const { service, panels, auditDocs, journalDir } = deps;
  const delegate = (source: Parameters<typeof collectContext>[0], args: DelegateArgs) =>
    startFromPalette(deps, () => collectContext(source), args);
  return [
    vscode.commands.registerCommand('baton.openPanel', () => {
      panels.open();
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
      const delegationId = delegationIdOf(id);
      if (!delegationId) return;
      panels.open({ kind: 'delegation', delegationId }, delegationPanelTitle(service, delegationId));
    }),
    vscode.commands.registerCommand('baton.delegateAgain', (id?: unknown, arg?: unknown) =>
      delegateAgain(deps, id, isDelegateArgs(arg) ? arg : {}),
    ),
    vscode.commands.registerCommand('baton.showChildTask', (id?: unknown) => showChildTask(service, panels, id)),
    vscode.commands.registerCommand('baton.cancelDelegation', async (id?: unknown) => {
      const delegationId = delegationIdOf(id);
      if (delegationId) await service.cancel(delegationId);
    }),
    vscode.commands.registerCommand('baton.showAuditLog', async () => {
      // A read-only report (newest first, agent text inert); the raw JSON Lines stay the record.
      const doc = await vscode.workspace.openTextDocument(AUDIT_URI);
      auditDocs.changed(AUDIT_URI);
      await vscode.window.showTextDocument(doc, { preview: true });
    }),
    vscode.commands.registerCommand('baton.exportAuditLog', async () => {
      const target = await vscode.window.showSaveDialog({
        filters: { [vscode.l10n.t('JSON Lines')]: ['jsonl'], [vscode.l10n.t('CSV')]: ['csv'] },
        saveLabel: vscode.l10n.t('Export Audit Log'),
      });
      if (!target) return;
      const { JournalStore } = await import('../../node/journalStore');
      await new JournalStore(journalDir).exportAudit(target.fsPath, target.fsPath.endsWith('.csv') ? 'csv' : 'jsonl');
      void showInfo(vscode.l10n.t('Audit log exported to {0}.', target.fsPath));
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
  ];
}

/**
 * The palette's start flow: collects the context, asks for the agent, the task, the capabilities and
 * the deadline (whatever `args` does not give), starts the delegation and shows its panel.
 */
async function startFromPalette(
  deps: DelegationCommandDeps,
  collect: () => Promise<CollectedContext>,
  args: DelegateArgs,
  origin: { readonly parentRequestId?: string } = {},
): Promise<string | undefined> {
  if (!requireTrust(vscode.l10n.t('Delegating'))) return undefined;
  const { agents, starter, panels } = deps;
  try {
    await starter.ready;
    const context = await collect();
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
      vscode.workspace.getConfiguration('baton').get<number>('defaultDeadlineMinutes', 30),
    );
    if (!choice) return undefined;
    if (args.confirm !== false && !(await tokenReady(deps, choice.agentId))) return undefined;
    const id = await starter.start({ ...choice, context, ...origin });
    panels.open(
      { kind: 'delegation', delegationId: id },
      vscode.l10n.t('Delegation: {0}', choice.task.split('\n')[0].slice(0, 40)),
    );
    if (context.unsaved.length)
      void showWarning(
        vscode.l10n.t(
          'Unsaved changes are not in the agent’s copy: {0}. Save first if the agent needs them.',
          context.unsaved.join(', '),
        ),
      );
    return id;
  } catch (e) {
    void showError(vscode.l10n.t('Could not delegate: {0}', errorMessage(e)));
    return undefined;
  }
}

/**
 * Before anything is sent to an agent whose card asks for a token when none is stored for its origin:
 * the user sets one (Set Token…), sends without one (the agent may take it anyway), or backs out.
 * Without this the first message would go out and come back refused. A local gateway's agents get
 * their token from the gateway itself.
 */
async function tokenReady(deps: DelegationCommandDeps, agentId: string): Promise<boolean> {
  const entry = deps.agents.find(agentId);
  if (!entry || entry.source === 'local-gateway' || !entry.approval?.card.securityRequirements.length) return true;
  // No origin: Baton would send no token there anyway (an endpoint off the card's origin, not acknowledged).
  const origin = deps.agents.tokenOrigin(entry);
  if (!origin || (await deps.hasToken(origin))) return true;
  // A quick pick, like the start flow's other steps (and not a modal dialog, which test runs of VS Code
  // dismiss). Set Token… asks for the token in the pick's place (see `askToken`).
  type Item = vscode.QuickPickItem & { readonly set: boolean };
  const pick = vscode.window.createQuickPick<Item>();
  pick.title = vscode.l10n.t('{0} asks for a token, and none is set for {1}', entry.approval.card.name, origin);
  pick.placeholder = vscode.l10n.t('Nothing has been sent yet.');
  pick.ignoreFocusOut = true;
  pick.items = [
    {
      label: `$(key) ${vscode.l10n.t('Set Token…')}`,
      detail: vscode.l10n.t('Kept in VS Code’s secret storage, sent only to {0}', origin),
      set: true,
    },
    {
      label: `$(rocket) ${vscode.l10n.t('Delegate Without a Token')}`,
      detail: vscode.l10n.t('The agent will likely refuse the task'),
      set: false,
    },
  ];
  const chosen = await new Promise<Item | undefined>((resolve) => {
    let item: Item | undefined;
    let token: Promise<string | undefined> | undefined;
    pick.onDidAccept(() => {
      item = pick.selectedItems[0];
      // Shown before the pick hides, so it takes the pick's place (and the focus). `item` is set first:
      // the pick's hide may be announced while the box is being shown.
      if (item?.set) token = askToken(origin);
      else pick.hide();
    });
    pick.onDidHide(() => {
      pick.dispose();
      if (!item?.set) return resolve(item);
      // Read once the accept handler has returned (`token` is assigned by then).
      void Promise.resolve().then(async () => {
        const t = await token;
        const stored =
          t !== undefined &&
          t !== '' &&
          (await vscode.commands.executeCommand<boolean | undefined>('baton.setToken', { origin, token: t })) === true;
        resolve(stored ? item : undefined);
      });
    });
    pick.show();
  });
  return chosen !== undefined;
}

/**
 * Delegate Again: the same task to the same agent as a new delegation, through the start flow (its
 * confirmation shows the task, the capabilities and the deadline asked for then, each open to change).
 * The files and the selection are read again as they are now; what is no longer there is left out
 * and said. The earlier delegation stays as it ended.
 */
async function delegateAgain(
  deps: DelegationCommandDeps,
  arg: unknown,
  args: DelegateArgs,
): Promise<string | undefined> {
  const id = delegationIdOf(arg);
  if (!id) return undefined;
  let plan: AgainPlan;
  let folder: vscode.WorkspaceFolder | undefined;
  try {
    await deps.starter.ready;
    const request = deps.service.request(id);
    if (!request) throw new Error(vscode.l10n.t('No delegation {0} in this window.', id));
    plan = againPlan(request);
    folder = folderForRoot(deps.service.sidecar(id)?.folder);
    if (!folder && (plan.files.length > 0 || plan.selection))
      throw new Error(
        vscode.l10n.t(
          'The folder this delegation was started from is not open in this window. Open it, then Delegate Again.',
        ),
      );
  } catch (e) {
    void showError(vscode.l10n.t('Could not delegate again: {0}', errorMessage(e)));
    return undefined;
  }
  const parent =
    plan.parentRequestId && deps.service.journalView(plan.parentRequestId) ? plan.parentRequestId : undefined;
  const stillApproved = deps.agents.approved().some((a) => a.cardUrl === plan.agentId);
  if (!stillApproved)
    void showInfo(vscode.l10n.t('{0} is no longer an approved agent: choose one for the same task.', plan.agentName));
  let missing: string[] = [];
  const id2 = await startFromPalette(
    deps,
    async () => {
      if (!folder) return collectContext({});
      const again = await collectAgainContext(plan, folder);
      missing = again.missing;
      return again.context;
    },
    {
      // An agent no longer approved (removed, or its card changed and not reviewed again): the user
      // picks one for the same task.
      ...(stillApproved ? { agentId: plan.agentId } : {}),
      task: plan.task,
      capabilities: plan.capabilities,
      ...(plan.deadlineMinutes !== undefined ? { deadlineMinutes: plan.deadlineMinutes } : {}),
      ...args,
    },
    parent ? { parentRequestId: parent } : {},
  );
  if (id2 && missing.length)
    void showWarning(vscode.l10n.t('Not sent again, no longer in the workspace: {0}.', missing.join(', ')));
  return id2;
}

/**
 * A child in the task tree (the Delegations view, a parent's panel): a delegation of this window opens
 * its panel; a child a gateway started for a task has no panel here, so what Baton knows of it is shown.
 */
export function showChildTask(service: DelegationService, panels: DelegationPanelManager, arg: unknown): void {
  const id = delegationIdOf(arg);
  if (!id) return;
  const node = service.tree().byId.get(id);
  if (node?.kind === 'reported') {
    void showInfo(childTaskInfoText(node.info));
    return;
  }
  if (!service.journalView(id)) throw new Error(vscode.l10n.t('No delegation {0} in this window.', id));
  panels.open({ kind: 'delegation', delegationId: id }, delegationPanelTitle(service, id));
}
