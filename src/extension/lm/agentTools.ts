/**
 * What the four language-model tools do (src/extension/lm/lmTools.ts registers them): find agents,
 * delegate, get task, cancel task. A delegation a chat agent starts goes through `DelegationStarter`
 * like any other — journaled, in the Delegations view and the panel, its patch reviewed by the user —
 * with `startedBy: {kind: 'agent', via: 'vscode-lm'}` in its request. Nothing here applies a patch.
 * Inputs are parsed in src/core/delegation/agentTools.ts; every refusal of a delegate call is audited.
 */
import * as vscode from 'vscode';
import type { AgentEntry } from '../../core/agentRegistry';
import { callableEndpoint } from '../../core/agentRegistry';
import { isFinalOutcome } from '../../core/delegation';
import {
  AGENT_TOOL_NAMES,
  BurstCap,
  burstCapError,
  cancelConfirmation,
  DELEGATE_WAIT_MS,
  delegateConfirmation,
  parseDelegateInput,
  parseFindAgentsInput,
  parseTaskInput,
  taskReport,
  type DelegateInput,
} from '../../core/delegation/agentTools';
import type { StartedBy } from '../../core/delegation/tree';
import { isRecord } from '../../core/isRecord';
import { childState } from '../../core/delegation/tree';
import type { CapabilitySet } from '../../core/protocol/delegationView';
import type { AgentService } from '../agents/agentService';
import { collectContext } from '../delegate/context';
import type { DelegationService } from '../delegate/delegationService';
import type { DelegationStarter } from '../delegate/delegationStarter';
import { whatTravels } from '../delegate/startFlow';
import { errorMessage } from '../errors';
import type { GatewaySupervisor } from '../gateway/gatewaySupervisor';
import { delegationStateLabel } from '../views/delegationsView';

export const STARTED_BY_LM: StartedBy = { kind: 'agent', via: 'vscode-lm' };

export interface AgentToolDeps {
  readonly agents: AgentService;
  readonly service: DelegationService;
  readonly starter: DelegationStarter;
  readonly gateway: GatewaySupervisor;
  /** Whether a token is stored for this origin. */
  readonly hasToken: (origin: string) => Promise<boolean>;
  readonly defaultDeadlineMinutes: () => number;
  readonly log: vscode.LogOutputChannel;
}

/** A tool call refused before anything was sent: the model reads `message`. */
export class ToolRefusal extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Before a tool runs: what VS Code shows (a confirmation for delegate and cancel). */
export interface PreparedCall {
  readonly invocationMessage: string;
  readonly confirmationMessages?: { readonly title: string; readonly message: string };
}

/** One agent as find agents lists it. */
export interface AgentListing {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly skills: readonly { readonly name: string; readonly description: string }[];
  readonly usable: boolean;
  /** Why it cannot be used now, and what the user does about it. */
  readonly why?: string;
  /** Runs on this machine's gateway on a throwaway copy of the repository (it can read all of it). */
  readonly local: boolean;
}

export class BatonAgentTools {
  readonly cap = new BurstCap(5, 60_000);
  /** How long delegate waits for the task to settle; tests shorten it. */
  waitMs = DELEGATE_WAIT_MS;

  constructor(private readonly deps: AgentToolDeps) {}

  // ---- find agents ----

  async findAgents(raw: unknown): Promise<string> {
    const input = parseFindAgentsInput(raw);
    if (!input.ok) throw new ToolRefusal('invalid-input', input.error);
    const words = input.value.query?.toLowerCase().split(/\s+/).filter(Boolean) ?? [];
    const listed: AgentListing[] = [];
    for (const entry of this.deps.agents.agents) {
      if (!entry.approval) continue;
      const card = entry.approval.card;
      const haystack = [card.name, card.description, ...card.skills.flatMap((s) => [s.name, s.description, ...s.tags])]
        .join(' ')
        .toLowerCase();
      if (words.length && !words.every((w) => haystack.includes(w))) continue;
      const why = await this.unusableBecause(entry);
      listed.push({
        id: entry.cardUrl,
        name: card.name,
        description: card.description.slice(0, 1000),
        skills: card.skills.slice(0, 20).map((s) => ({ name: s.name, description: s.description.slice(0, 500) })),
        usable: why === undefined,
        ...(why ? { why } : {}),
        local: entry.source === 'local-gateway',
      });
    }
    if (!listed.length)
      return words.length
        ? `No approved agent matches "${input.value.query ?? ''}". Call ${AGENT_TOOL_NAMES.findAgents} without a query to list them all.`
        : 'No approved agents. The user adds one with Baton: Add Agent… and approves it, or starts the local gateway (Baton: Start Local Gateway) for its built-in agents.';
    return [
      `Approved agents (${listed.length}). Pass an agent's "id" to ${AGENT_TOOL_NAMES.delegate}; only agents with "usable": true can take a task now.`,
      JSON.stringify({ agents: listed }, null, 2),
    ].join('\n');
  }

  /** Why an approved agent cannot take a task now (undefined: it can). */
  private async unusableBecause(entry: AgentEntry): Promise<string | undefined> {
    if (entry.status === 'pending' && entry.pendingReason === 'card-changed')
      return 'Its card changed since the user approved it: the user reviews it again in the Agents view before it can be used.';
    if (entry.unlistedAt)
      return `The gateway that listed it (${entry.listedBy ?? ''}) no longer serves it: its operator removed it. Choose another agent.`;
    if (entry.status === 'unavailable')
      return `Its card could not be fetched (${entry.lastError?.message ?? 'no answer'}); the user refreshes it in the Agents view.`;
    if (entry.status === 'rejected') return 'The user rejected it.';
    if (!callableEndpoint(entry)) return 'It is not approved.';
    if (entry.source === 'local-gateway') {
      const s = this.deps.gateway.status;
      if (s.kind !== 'running')
        return 'The local gateway is not running: the user starts it with Baton: Start Local Gateway (it is started again when needed after a reload).';
      return undefined;
    }
    const needsToken = (entry.approval?.card.securityRequirements.length ?? 0) > 0;
    const origin = this.deps.agents.tokenOrigin(entry);
    if (needsToken && (!origin || !(await this.deps.hasToken(origin))))
      return 'Its card asks for a token and none is stored: the user sets one with Baton: Set Token….';
    return undefined;
  }

  // ---- delegate ----

  /** The agent the model named: by its id, the card URL (any spelling that normalises to it). */
  private agentFor(id: string): AgentEntry | undefined {
    try {
      return this.deps.agents.find(id);
    } catch {
      return undefined;
    }
  }

  /** What the delegate call asks for, checked against the agent (no I/O but the editor's selection). */
  private plan(input: DelegateInput): {
    entry: AgentEntry;
    capabilities: CapabilitySet;
    deadlineMinutes: number;
    context: string;
  } {
    const entry = this.agentFor(input.agent);
    if (!entry?.approval)
      throw new ToolRefusal(
        'unknown-agent',
        `${AGENT_TOOL_NAMES.delegate}: no approved agent "${input.agent.slice(0, 200)}". Use an "id" from ${AGENT_TOOL_NAMES.findAgents}.`,
      );
    // Only what the call asks for; the agent's gateway grants no more than the agent declares, and the
    // panel shows what was granted in the end.
    const capabilities = input.capabilities;
    const parts: string[] = [];
    if (input.selection) {
      const editor = vscode.window.activeTextEditor;
      parts.push(
        editor && !editor.selection.isEmpty
          ? vscode.l10n.t(
              'selection in {0} (lines {1}–{2})',
              vscode.workspace.asRelativePath(editor.document.uri),
              editor.selection.start.line + 1,
              editor.selection.end.line + 1,
            )
          : editor
            ? vscode.l10n.t('the current line of {0}', vscode.workspace.asRelativePath(editor.document.uri))
            : vscode.l10n.t('the selection (no editor is active: the call will be refused)'),
      );
    }
    if (input.files.length) parts.push(input.files.join(', '));
    return {
      entry,
      capabilities,
      deadlineMinutes: input.deadlineMinutes ?? this.deps.defaultDeadlineMinutes(),
      context: whatTravels({ seesRepository: entry.source === 'local-gateway' }, parts.join(', ')),
    };
  }

  prepareDelegate(raw: unknown): PreparedCall {
    const input = parseDelegateInput(raw);
    // Nothing is sent on bad input: the call itself answers with the error.
    if (!input.ok) return { invocationMessage: vscode.l10n.t('Checking the delegation request…') };
    let plan: ReturnType<BatonAgentTools['plan']>;
    try {
      plan = this.plan(input.value);
    } catch {
      return { invocationMessage: vscode.l10n.t('Checking the delegation request…') };
    }
    const card = plan.entry.approval;
    const name = card?.card.name ?? plan.entry.cardUrl;
    const parent = input.value.parentRequestId ? this.deps.service.journalView(input.value.parentRequestId) : undefined;
    return {
      invocationMessage: vscode.l10n.t('Delegating to {0}…', name),
      confirmationMessages: delegateConfirmation(
        {
          agentName: name,
          endpoint: card?.endpoint.url ?? '',
          task: input.value.task,
          context: plan.context,
          capabilities: plan.capabilities,
          deadlineMinutes: plan.deadlineMinutes,
          ...(parent ? { parentTitle: parent.title } : {}),
        },
        vscode.l10n.t,
      ),
    };
  }

  /**
   * Starts the delegation and waits up to `waitMs` for it to settle: answers with its id and state
   * (and its result when it settled), or the refusal — audited — when it could not start.
   */
  async delegate(raw: unknown, token?: vscode.CancellationToken): Promise<string> {
    const input = parseDelegateInput(raw);
    if (!input.ok) {
      const named = isRecord(raw) && typeof raw.agent === 'string' ? raw.agent : '';
      return this.refuse(new ToolRefusal('invalid-input', input.error), named);
    }
    const { value } = input;
    let id: string;
    try {
      if (!vscode.workspace.isTrusted)
        throw new ToolRefusal(
          'restricted-mode',
          `${AGENT_TOOL_NAMES.delegate}: refused: this workspace is in Restricted Mode. The user trusts it first (Manage Workspace Trust).`,
        );
      const plan = this.plan(value);
      if (!callableEndpoint(plan.entry)) {
        const why = (await this.unusableBecause(plan.entry)) ?? 'It is not approved.';
        throw new ToolRefusal('not-usable', `${AGENT_TOOL_NAMES.delegate}: refused: ${why}`);
      }
      if (value.parentRequestId && !this.deps.service.journalView(value.parentRequestId))
        throw new ToolRefusal(
          'unknown-parent',
          `${AGENT_TOOL_NAMES.delegate}: no delegation "${value.parentRequestId}" in this window. Leave "parentRequestId" out, or pass an id ${AGENT_TOOL_NAMES.delegate} answered.`,
        );
      const context = await this.collect(value);
      const slot = this.cap.take(Date.now());
      if (!slot.ok) throw new ToolRefusal('burst-cap', burstCapError(this.cap, slot.retryAfterMs));
      id = await this.deps.starter.start({
        agentId: plan.entry.cardUrl,
        task: value.task,
        capabilities: plan.capabilities,
        deadlineMinutes: plan.deadlineMinutes,
        context,
        startedBy: STARTED_BY_LM,
        ...(value.parentRequestId ? { parentRequestId: value.parentRequestId } : {}),
      });
    } catch (e) {
      return this.refuse(
        e instanceof ToolRefusal
          ? e
          : new ToolRefusal('not-started', `${AGENT_TOOL_NAMES.delegate}: ${errorMessage(e)}`),
        value.agent,
        value,
      );
    }
    this.deps.log.info(`delegation ${id}: started by a chat agent (language-model tool)`);
    await this.waitForSettle(id, this.waitMs, token);
    return this.report(id, true);
  }

  /** Audits a refused delegate call and throws it, for the model to read. */
  private async refuse(r: ToolRefusal, agentId: string, input?: DelegateInput): Promise<never> {
    const entry = agentId ? this.agentFor(agentId) : undefined;
    await this.deps.service
      .auditRefusal({
        code: r.code,
        reason: r.message,
        agent: {
          id: entry?.cardUrl ?? agentId.slice(0, 500),
          name: entry?.approval?.card.name ?? agentId.slice(0, 200),
          endpoint: entry?.approval?.endpoint.url ?? '',
        },
        startedBy: STARTED_BY_LM,
        ...(input ? { capabilities: input.capabilities } : {}),
        ...(input?.parentRequestId ? { parentRequestId: input.parentRequestId } : {}),
      })
      .catch((e: unknown) => this.deps.log.warn(`audit: could not record a refused delegation: ${errorMessage(e)}`));
    this.deps.log.info(`language-model tool: refused a delegation (${r.code}): ${r.message}`);
    throw r;
  }

  /** The files and selection the call names, read as the Delegate commands read them. */
  private async collect(input: DelegateInput) {
    const folders = vscode.workspace.workspaceFolders ?? [];
    const uris: vscode.Uri[] = [];
    for (const p of input.files) {
      const [first, ...rest] = p.split('/');
      // In a multi-root workspace a path may start with the folder's name, as VS Code shows it.
      const named = folders.length > 1 ? folders.find((f) => f.name === first) : undefined;
      const folder = named ?? folders[0];
      if (!folder)
        throw new ToolRefusal(
          'no-folder',
          `${AGENT_TOOL_NAMES.delegate}: no folder is open, so "files" cannot be read.`,
        );
      const uri = vscode.Uri.joinPath(folder.uri, ...(named ? rest : [first, ...rest]));
      try {
        await vscode.workspace.fs.stat(uri);
      } catch {
        throw new ToolRefusal(
          'no-such-file',
          `${AGENT_TOOL_NAMES.delegate}: there is no "${p}" in the workspace folder ${folder.name}. Give paths relative to it.`,
        );
      }
      uris.push(uri);
    }
    const editor = vscode.window.activeTextEditor;
    if (input.selection && !editor)
      throw new ToolRefusal(
        'no-selection',
        `${AGENT_TOOL_NAMES.delegate}: "selection" is true but no editor is active. Name the file in "files" instead.`,
      );
    return collectContext({ files: uris, ...(input.selection ? { editor, useSelection: true } : {}) });
  }

  /** Resolves when the delegation settled or needs the user (input, auth, unknown), or after `ms`. */
  private waitForSettle(id: string, ms: number, token?: vscode.CancellationToken): Promise<void> {
    const settled = () => {
      const v = this.deps.service.journalView(id);
      return (
        !v ||
        isFinalOutcome(v.outcome) ||
        v.state === 'input-required' ||
        v.state === 'auth-required' ||
        v.state === 'unknown'
      );
    };
    if (settled()) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        sub.dispose();
        cancel?.dispose();
        resolve();
      };
      const timer = setTimeout(done, ms);
      const sub = this.deps.service.onDidChange((changed) => {
        if ((changed === id || changed === '*') && settled()) done();
      });
      const cancel = token?.onCancellationRequested(done);
    });
  }

  /** The delegation as the model reads it; `ofDelegate` adds how a running one is followed. */
  private async report(id: string, ofDelegate = false): Promise<string> {
    const r = this.deps.service.journalView(id);
    if (!r) throw new ToolRefusal('unknown-task', `${AGENT_TOOL_NAMES.getTask}: no delegation "${id}" in this window.`);
    // The patch summary is the checked patch's: wait for the result check of a settled delegation.
    const patch =
      r.outcome && isFinalOutcome(r.outcome)
        ? await this.deps.service.patchSummary(id).catch(() => undefined)
        : undefined;
    const fresh = this.deps.service.journalView(id) ?? r;
    const node = this.deps.service.tree().byId.get(id);
    const children = (node?.children ?? []).map((c) =>
      c.kind === 'delegation'
        ? `${c.id} "${c.delegation.title}" to ${c.delegation.agentName}: ${c.delegation.state}`
        : `task ${c.info.taskId} "${c.info.title}" to ${c.info.agentName} (started at the gateway): ${childState(c.info)}`,
    );
    const head = ofDelegate
      ? `Started delegation ${id} (id for ${AGENT_TOOL_NAMES.getTask} and ${AGENT_TOOL_NAMES.cancelTask}).\n`
      : '';
    return head + taskReport(fresh, { ...(patch ? { patch } : {}), children });
  }

  // ---- get task, cancel task ----

  async getTask(raw: unknown): Promise<string> {
    const input = parseTaskInput(raw, AGENT_TOOL_NAMES.getTask);
    if (!input.ok) throw new ToolRefusal('invalid-input', input.error);
    return this.report(input.value.id);
  }

  prepareCancel(raw: unknown): PreparedCall {
    const input = parseTaskInput(raw, AGENT_TOOL_NAMES.cancelTask);
    const r = input.ok ? this.deps.service.journalView(input.value.id) : undefined;
    if (!r) return { invocationMessage: vscode.l10n.t('Checking the delegation…') };
    return {
      invocationMessage: vscode.l10n.t('Canceling the delegation to {0}…', r.agent.name),
      confirmationMessages: cancelConfirmation(
        { title: r.title, agentName: r.agent.name, state: delegationStateLabel(r.state) },
        vscode.l10n.t,
      ),
    };
  }

  async cancelTask(raw: unknown): Promise<string> {
    const input = parseTaskInput(raw, AGENT_TOOL_NAMES.cancelTask);
    if (!input.ok) throw new ToolRefusal('invalid-input', input.error);
    const r = this.deps.service.journalView(input.value.id);
    if (!r)
      throw new ToolRefusal(
        'unknown-task',
        `${AGENT_TOOL_NAMES.cancelTask}: no delegation "${input.value.id}" in this window.`,
      );
    if (isFinalOutcome(r.outcome)) return `Delegation ${r.requestId} already ended: ${r.state}. Nothing to cancel.`;
    const confirmed = await this.deps.service.cancel(r.requestId);
    const after = this.deps.service.journalView(r.requestId);
    return `Cancel sent for delegation ${r.requestId}: ${confirmed ? 'the agent confirmed it' : 'the agent did not confirm it (it may still be running)'}. State: ${after?.state ?? r.state}.`;
  }
}
