import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { Artifact } from '@a2a-js/sdk';
import { callableEndpoint, pinnedKeysFor, type AgentEntry } from '../../core/agentRegistry';
import { META } from '../../core/batonProfile';
import { isFinalOutcome, type DelegationRequest, type OutcomeDecision } from '../../core/delegation';
import { buildDelegationMessage } from '../../core/delegation/context';
import { parsePatchText } from '../../core/patch';
import { boundDelegationView, PANEL_LIMITS } from '../../core/protocol/panelLimits';
import type { DelegationState as PanelState, DelegationView as PanelView, TimelineEntry as PanelEntry } from '../../core/protocol/panelProtocol';
import type { DelegationView as JournalView } from '../../core/protocol/delegationView';
import { connectAgent, normalizeCard } from '../../node/a2a/clientFactory';
import { DelegationManager } from '../../node/a2a/delegationManager';
import { auditRecordFor, JournalStore, type ReviewAuditInfo } from '../../node/journalStore';
import { captureWorkingState, repositoryTopLevel, type WorkingState } from '../../node/patchDrift';
import { verifyResultEnvelope, type ArtifactLike } from '../../node/signing';
import type { AgentService } from '../agents/agentService';
import type { GatewaySupervisor } from '../gateway/gatewaySupervisor';
import { Disposable } from '../lifecycle';
import type { BatonStorage } from '../storage';
import type { CollectedContext } from './context';
import type { StartChoice } from './startFlow';

/** The shortest time between two automatic checks of one delegation waiting for authorization. */
const AUTH_RECHECK_MIN_MS = 15_000;

/** What Baton checked about a finished delegation's signed result. */
export interface SignatureCheck {
  readonly status: 'verified' | 'invalid' | 'unsigned';
  readonly detail: string;
}

/** Per-delegation facts the journal does not hold: the drift base and where the repository is. */
interface Sidecar {
  readonly folder: string;
  readonly base?: WorkingState;
  signature?: SignatureCheck;
  executor?: string;
  confined?: boolean;
}

/**
 * The extension's side of delegations: builds the request from the user's explicit choices, connects
 * only to the endpoint the user approved (with a token bound to that origin), and drives everything
 * through the shared `DelegationManager` (journal, reconnect, cancel, deadline, audit).
 */
export class DelegationService extends Disposable {
  private manager: DelegationManager | undefined;
  private readonly store: JournalStore;
  private readonly sidecars = new Map<string, Sidecar>();
  private readonly _onDidChange = this._register(new vscode.EventEmitter<string>());
  readonly onDidChange = this._onDidChange.event;
  private readonly _onDidSettle = this._register(new vscode.EventEmitter<{ id: string; decision: OutcomeDecision }>());
  readonly onDidSettle = this._onDidSettle.event;

  constructor(
    private readonly dir: string,
    private readonly agents: AgentService,
    private readonly gateway: GatewaySupervisor,
    private readonly storage: BatonStorage,
    private readonly maxConcurrent: () => number,
    private readonly log: vscode.LogOutputChannel,
  ) {
    super();
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.store = new JournalStore(dir);
  }

  /** Reloads every journal and re-attaches the delegations still in flight. */
  async open(): Promise<void> {
    this.manager = await DelegationManager.open({
      store: this.store,
      connect: (request) => this.connect(request),
      maxConcurrent: this.maxConcurrent(),
      onOutcome: (id, decision) => void this.settled(id, decision),
    });
    const unsubscribe = this.manager.onDidChange((id) => this._onDidChange.fire(id));
    this._register({ dispose: () => unsubscribe() });
    this._register({ dispose: () => this.manager?.dispose() });
    for (const s of this.manager.list()) this.loadSidecar(s.requestId);
    this._onDidChange.fire('*');
  }

  private get m(): DelegationManager {
    if (!this.manager) throw new Error(vscode.l10n.t('Baton is still loading its delegations; try again in a moment.'));
    return this.manager;
  }

  private sidecarFile(id: string): string {
    return join(this.dir, `${id}.baton.json`);
  }

  private loadSidecar(id: string): Sidecar | undefined {
    if (this.sidecars.has(id)) return this.sidecars.get(id);
    const f = this.sidecarFile(id);
    if (!existsSync(f)) return undefined;
    try {
      const s = JSON.parse(readFileSync(f, 'utf8')) as Sidecar;
      this.sidecars.set(id, s);
      return s;
    } catch {
      return undefined;
    }
  }

  private saveSidecar(id: string, s: Sidecar): void {
    this.sidecars.set(id, s);
    writeFileSync(this.sidecarFile(id), JSON.stringify(s), { mode: 0o600 });
  }

  sidecar(id: string): { folder: string; base?: WorkingState } | undefined {
    return this.loadSidecar(id);
  }

  private entryFor(request: DelegationRequest): AgentEntry {
    const entry = this.agents.find(request.agent.id);
    const endpoint = entry && callableEndpoint(entry);
    if (!entry || !endpoint) throw new Error(vscode.l10n.t('{0} is no longer approved. Review it in the Agents view.', request.agent.name));
    if (endpoint.url !== request.agent.endpoint) throw new Error(vscode.l10n.t('{0} was re-approved with another endpoint; start the delegation again.', request.agent.name));
    return entry;
  }

  private async connect(request: DelegationRequest) {
    const entry = this.entryFor(request);
    const endpoint = callableEndpoint(entry);
    if (!endpoint || !entry.approval) throw new Error(vscode.l10n.t('{0} is no longer approved.', request.agent.name));
    // After a window reload the local gateway is still running (it is detached): find it by its state folder.
    const local = this.gateway.findRunning();
    const localOrigin = local ? new URL(local.url).origin : undefined;
    const allowedOrigin = this.agents.tokenOrigin(entry);
    return connectAgent({
      card: normalizeCard(entry.approval.card.raw),
      endpoint: { url: endpoint.url, protocolBinding: endpoint.binding, protocolVersion: endpoint.protocolVersion, tenant: endpoint.tenant },
      getToken: async (origin) => {
        if (local && origin === localOrigin) return this.gateway.token(local);
        // A token goes only to the origin the user approved for this agent, never to one a card names.
        if (origin !== allowedOrigin) return undefined;
        return this.storage.getToken(new URL(origin).host);
      },
    });
  }

  /** Builds the first message from exactly what the user chose and starts (or queues) the delegation. */
  async start(agent: AgentEntry, choice: StartChoice, context: CollectedContext): Promise<string> {
    const endpoint = callableEndpoint(agent);
    if (!endpoint || !agent.approval) throw new Error(vscode.l10n.t('{0} is not approved.', agent.cardUrl));
    const requestId = randomUUID();
    const folder = context.folder?.uri.fsPath;
    const root = folder ? await repositoryTopLevel(folder) : undefined;
    const base = root ? await captureWorkingState(root) : undefined;
    const deadline = Date.now() + choice.deadlineMinutes * 60_000;
    const { message, contextDigests } = buildDelegationMessage({
      requestId,
      task: choice.task,
      selection: context.selection,
      files: context.files,
      diagnostics: context.diagnostics,
      repository: root && base ? { root, baseCommit: base.baseCommit ?? '', uncommittedDigest: base.uncommittedDigest } : folder ? { root: folder, baseCommit: '', uncommittedDigest: '' } : undefined,
      capabilities: choice.capabilities,
      deadline,
      chain: [agent.cardUrl],
    });
    if (context.unsaved.length && message.metadata) message.metadata[`${META.files}.unsaved`] = context.unsaved;
    const request: DelegationRequest = {
      requestId,
      title: choice.task.split('\n')[0].slice(0, 200),
      who: userInfo().username,
      agent: { id: agent.cardUrl, name: agent.approval.card.name, endpoint: endpoint.url, protocolBinding: endpoint.binding, protocolVersion: endpoint.protocolVersion, cardDigest: agent.approval.digest },
      message,
      createdAt: Date.now(),
      deadline,
      capabilities: { requested: choice.capabilities, effective: choice.capabilities },
      contextDigests,
      chain: [agent.cardUrl],
    };
    this.saveSidecar(requestId, { folder: root ?? folder ?? '', base });
    await this.m.start(request);
    this.log.info(`delegation ${requestId}: started to ${request.agent.name} at ${request.agent.endpoint}`);
    return requestId;
  }

  list() {
    return this.manager?.list() ?? [];
  }

  get runningCount(): number {
    return this.manager?.runningCount ?? 0;
  }

  get queuedCount(): number {
    return this.manager?.queuedCount ?? 0;
  }

  journalView(id: string): JournalView | undefined {
    return this.manager?.view(id);
  }

  patchText(id: string): string | undefined {
    const p = this.manager?.get(id)?.patch();
    return p?.text;
  }

  reply(id: string, text: string): Promise<void> {
    return this.m.reply(id, text);
  }

  async cancel(id: string): Promise<boolean> {
    const d = await this.m.cancel(id);
    return d?.cancelConfirmed ?? false;
  }

  checkAgain(id: string): Promise<void> {
    return this.m.checkAgain(id);
  }

  private readonly lastAuthRecheck = new Map<string, number>();

  /**
   * Asks the agent again about every delegation waiting for authorization: called when the user comes
   * back to the window, the moment a sign-in done in a browser has most likely finished (A2A gives no
   * signal for it). A delegation that still waits is left as it is, with nothing added to its timeline;
   * one that went on is followed as Check Again does. At most once per delegation per
   * `AUTH_RECHECK_MIN_MS`, so a flickering focus asks no agent twice. Returns the ids it asked about.
   */
  recheckAuthRequired(now = Date.now()): string[] {
    const asked: string[] = [];
    for (const d of this.list()) {
      if (d.state !== 'auth-required') {
        this.lastAuthRecheck.delete(d.requestId);
        continue;
      }
      if (now - (this.lastAuthRecheck.get(d.requestId) ?? -Infinity) < AUTH_RECHECK_MIN_MS) continue;
      this.lastAuthRecheck.set(d.requestId, now);
      asked.push(d.requestId);
      this.m.checkIfAuthorized(d.requestId).then(
        (wentOn) => {
          if (wentOn) this.log.info(`delegation ${d.requestId}: the agent went on after authorization; following it again`);
        },
        (e: unknown) => this.log.warn(`delegation ${d.requestId}: checking again after the window regained focus failed: ${(e as Error).message}`),
      );
    }
    return asked;
  }

  idle(id: string): Promise<void> {
    return this.m.idle(id);
  }

  /**
   * Records what the user did with the patch in the delegation's journal (a timeline notice) and as an
   * audit line (files, hunks, digests before and after).
   */
  async recordReview(id: string, review: ReviewAuditInfo, text: string): Promise<void> {
    const journal = this.manager?.get(id);
    if (!journal) return;
    const entry = { kind: 'notice' as const, at: Date.now(), level: 'info' as const, text };
    journal.apply(entry);
    await this.store.append(id, entry, { sync: true });
    const decision = journal.decide();
    if (decision) await this.store.appendAudit({ ...auditRecordFor(journal, decision, Date.now()), review });
    this._onDidChange.fire(id);
  }

  readAudit() {
    return this.store.readAudit();
  }

  /** Verifies the signed result envelope (when the agent sends one) against the keys pinned for its origin. */
  private async settled(id: string, decision: OutcomeDecision): Promise<void> {
    try {
      // The final artifacts come from GetTask after the outcome: wait for that before checking them.
      await this.manager?.idle(id);
      const loaded = await this.store.load(id);
      const final = [...loaded.entries].reverse().find((e) => e.kind === 'snapshot');
      const task = final?.kind === 'snapshot' ? final.task : undefined;
      const side = this.loadSidecar(id) ?? { folder: '' };
      const executor = task?.metadata?.[META.executor];
      if (executor && typeof executor === 'object') {
        const x = executor as { id?: unknown; kind?: unknown; confined?: unknown };
        side.executor = `${String(x.id ?? '?')} (${String(x.kind ?? 'agent')})`;
        side.confined = typeof x.confined === 'boolean' ? x.confined : undefined;
      }
      const jws = task?.metadata?.[META.envelope];
      if (typeof jws !== 'string' || !task) {
        side.signature = { status: 'unsigned', detail: vscode.l10n.t('the agent sent no signed result') };
      } else {
        const entry = this.agents.find(loaded.entries[0]?.kind === 'request' ? loaded.entries[0].request.agent.id : '');
        const origin = entry ? new URL(entry.approval?.endpoint.url ?? entry.cardUrl).origin : '';
        const keys = entry ? pinnedKeysFor(this.agents.registry, entry.origin) : [];
        const fromCard = keys.length ? keys : [];
        const r = await verifyResultEnvelope(jws, { keys: fromCard, taskId: task.id, artifacts: task.artifacts.map((a) => Artifact.toJSON(a) as unknown as ArtifactLike) });
        side.signature = r.ok
          ? { status: 'verified', detail: vscode.l10n.t('signed by {0}’s key {1}', origin, r.key.kid.slice(0, 12)) }
          : { status: fromCard.length ? 'invalid' : 'unsigned', detail: fromCard.length ? r.message : vscode.l10n.t('signed, but no key is pinned for {0} to check it with', origin) };
      }
      this.saveSidecar(id, side);
    } catch (e) {
      this.log.warn(`delegation ${id}: could not check the result signature: ${e instanceof Error ? e.message : String(e)}`);
    }
    this._onDidSettle.fire({ id, decision });
    this._onDidChange.fire(id);
  }

  /** The panel's view of a delegation. */
  panelView(id: string): PanelView | undefined {
    const v = this.journalView(id);
    if (!v) return undefined;
    const side = this.loadSidecar(id);
    const patch = this.patchText(id);
    let patchStats: PanelView['patch'];
    if (patch && v.outcome) {
      try {
        const parsed = parsePatchText(patch);
        patchStats = { files: parsed.files.length, additions: parsed.files.reduce((n, f) => n + f.added, 0), deletions: parsed.files.reduce((n, f) => n + f.removed, 0) };
      } catch {
        patchStats = undefined;
      }
    }
    const first = Math.max(0, v.timeline.length - PANEL_LIMITS.timelineEntries);
    return boundDelegationView({
      id: v.requestId,
      title: v.title,
      agent: { name: v.agent.name, endpoint: v.agent.endpoint },
      state: v.state as PanelState,
      terminal: isFinalOutcome(v.outcome),
      startedAt: v.createdAt,
      endedAt: v.endedAt,
      deadline: v.deadline,
      capabilities: v.capabilities.effective,
      executor: side?.executor,
      confined: side?.confined,
      reason: v.outcomeReason,
      question: v.prompt,
      // Only what the panel can show is mapped; the bounds also apply to each entry's text.
      timeline: v.timeline.slice(first).map((e, i) => panelEntry(e, first + i + 1 + v.timelineOmitted)),
      timelineOmitted: v.timelineOmitted + first,
      artifacts: v.artifacts.map((a) => ({ name: a.name || a.filename, mediaType: a.mediaType, bytes: a.size, isPatch: a.isPatch })),
      patch: patchStats,
      signature: side?.signature,
      cancelConfirmed: v.cancelConfirmed,
    });
  }

  /**
   * The whole text of one timeline entry (by the `seq` the panel shows), or of the agent's question,
   * for reading in an editor when the panel shows it shortened. Undefined once the journal no longer
   * keeps that entry in memory.
   */
  fullText(id: string, seq?: number): string | undefined {
    const v = this.journalView(id);
    if (!v) return undefined;
    if (seq === undefined) return v.prompt;
    const e = v.timeline[seq - 1 - v.timelineOmitted];
    return e ? panelEntry(e, seq).text : undefined;
  }
}

/** One journal timeline entry as the panel shows it (before the panel's bounds are applied). */
function panelEntry(e: JournalView['timeline'][number], seq: number): PanelEntry {
  switch (e.kind) {
    case 'status':
      return { seq, at: e.at, kind: 'status', text: e.text ? `**${e.state}** — ${e.text}` : e.state, markdown: true };
    case 'step':
      return { seq, at: e.at, kind: 'step', text: e.text, markdown: true };
    case 'artifact':
      return { seq, at: e.at, kind: 'artifact', text: `${e.name} · ${e.size.toLocaleString()} characters${e.chunks > 1 ? ` in ${e.chunks} chunks` : ''}${e.complete ? '' : ' (streaming…)'}` };
    case 'message':
      return { seq, at: e.at, kind: 'message', text: e.role === 'user' ? `You: ${e.text}` : e.text, markdown: e.role === 'agent' };
    case 'notice':
      return { seq, at: e.at, kind: e.level === 'error' ? 'error' : 'note', text: e.text };
  }
}

