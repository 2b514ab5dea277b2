import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { userInfo } from 'node:os';
import * as vscode from 'vscode';
import { callableEndpoint, pinnedKeysFor, type AgentEntry } from '../../core/agentRegistry';
import { META } from '../../core/batonProfile';
import {
  DelegationJournal,
  type CapabilitySet,
  type DelegationRecord,
  type DelegationRequest,
  type ExecutorInfo,
  type JournalEntry,
  type OutcomeDecision,
} from '../../core/delegation';
import type { PatchSummary } from '../../core/delegation/agentTools';
import { delegationPanelView, panelTimelineEntry } from '../../core/delegation/panelView';
import type { ConsentRecord } from '../../core/delegation/consent';
import { recordedPatches, type RecordedPatch } from '../../core/delegation/record';
import {
  buildDelegationTree,
  childViews,
  type DelegationTree,
  type StartedBy,
  treeDelegationOf,
  type TreeDelegation,
} from '../../core/delegation/tree';
import { parsePatchText } from '../../core/patch';
import { oneLine } from '../../core/protocol/panelLimits';
import type { DelegationView, PatchChoice, PatchStats } from '../../core/protocol/delegationView';
import type { ReviewView } from '../../core/protocol/panelProtocol';
import { timelineEntryText } from '../../core/protocol/timelineText';
import { resultCheckText } from '../../core/resultText';
import { connectAgent, normalizeCard, scopedGetToken } from '../../node/a2a/clientFactory';
import { DelegationManager } from '../../node/a2a/delegationManager';
import { ApprovedPatchError, ApprovedPatches, type ApprovedPatch } from '../../node/approvedPatches';
import {
  adoptLegacyResultCheck,
  readSidecar,
  writeSidecar,
  type DelegationSidecar,
} from '../../node/delegationSidecar';
import { auditRecordFor, JournalStore, type ReviewAuditInfo } from '../../node/journalStore';
import { delegationRepository } from '../../node/patchDrift';
import { checkResult, finalTaskOf, resultKeys, signedResultsOf } from '../../node/resultCheck';
import type { AgentService } from '../agents/agentService';
import { unlistedText } from '../agents/unlisted';
import type { GatewaySupervisor } from '../gateway/gatewaySupervisor';
import { Disposable } from '../lifecycle';
import type { BatonStorage } from '../storage';
import type { CollectedContext } from './context';
import { extensionDelegationRequest } from './delegationRequest';
import type { StartChoice } from './startFlow';

/** The shortest time between two automatic checks of one delegation waiting for authorization. */
const AUTH_RECHECK_MIN_MS = 15_000;

/** Who ran it, as the result check found it: what the agent signed next to a verified result, else the task's metadata. */
function executorOf(executor: unknown): ExecutorInfo | undefined {
  if (!executor || typeof executor !== 'object') return undefined;
  const x = executor as { id?: unknown; kind?: unknown; confined?: unknown; detail?: unknown };
  return {
    label: `${String(x.id ?? '?')} (${String(x.kind ?? 'agent')})`,
    ...(typeof x.kind === 'string' ? { kind: x.kind } : {}),
    ...(typeof x.detail === 'string' ? { detail: x.detail.slice(0, 500) } : {}),
    ...(typeof x.confined === 'boolean' ? { confined: x.confined } : {}),
  };
}

/**
 * The extension's side of delegations: builds the request from the user's explicit choices, connects
 * only to the endpoint the user approved (with a token bound to that origin), and drives everything
 * through the shared `DelegationManager` (journal, reconnect, cancel, deadline, audit).
 */
export class DelegationService extends Disposable {
  private manager: DelegationManager | undefined;
  private readonly store: JournalStore;
  private readonly sidecars = new Map<string, DelegationSidecar>();
  /** The result check running or done per delegation: a review waits for it. */
  private readonly checks = new Map<string, Promise<void>>();
  /** The patch bytes each check approved, with their statistics (computed once per patch). */
  private readonly patches: ApprovedPatches;
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
    this.patches = new ApprovedPatches(dir);
  }

  /** Reloads every journal and re-attaches the delegations still in flight. */
  async open(): Promise<void> {
    this.manager = await DelegationManager.open({
      store: this.store,
      connect: (request) => this.connect(request),
      maxConcurrent: this.maxConcurrent(),
      onOutcome: (id, decision) => void this.settled(id, decision),
      // Never automatic unless the user listed this agent (its card URL) in baton.autoApproveToolCalls.
      autoApproveToolCalls: (request) =>
        (vscode.workspace.getConfiguration('baton').get<unknown[]>('autoApproveToolCalls') ?? []).some(
          (id) => id === request.agent.id,
        ),
    });
    const unsubscribe = this.manager.onDidChange((id) => {
      this.treeCache = undefined;
      this._onDidChange.fire(id);
    });
    this._register({ dispose: () => unsubscribe() });
    this._register({ dispose: () => this.manager?.dispose() });
    for (const s of this.manager.list()) {
      this.loadSidecar(s.requestId);
      const journal = this.manager.get(s.requestId);
      if (journal) adoptLegacyResultCheck(this.dir, journal, Date.now());
    }
    this._onDidChange.fire('*');
  }

  private get m(): DelegationManager {
    if (!this.manager) throw new Error(vscode.l10n.t('Baton is still loading its delegations; try again in a moment.'));
    return this.manager;
  }

  private loadSidecar(id: string): DelegationSidecar | undefined {
    if (this.sidecars.has(id)) return this.sidecars.get(id);
    const s = readSidecar(this.dir, id);
    if (s) this.sidecars.set(id, s);
    return s;
  }

  sidecar(id: string): DelegationSidecar | undefined {
    return this.loadSidecar(id);
  }

  private entryFor(request: DelegationRequest): AgentEntry {
    const entry = this.agents.find(request.agent.id);
    const endpoint = entry && callableEndpoint(entry);
    if (!entry || !endpoint)
      throw new Error(vscode.l10n.t('{0} is no longer approved. Review it in the Agents view.', request.agent.name));
    if (endpoint.url !== request.agent.endpoint)
      throw new Error(
        vscode.l10n.t('{0} was re-approved with another endpoint; start the delegation again.', request.agent.name),
      );
    return entry;
  }

  private async connect(request: DelegationRequest) {
    const entry = this.entryFor(request);
    const endpoint = callableEndpoint(entry);
    if (!endpoint || !entry.approval) throw new Error(vscode.l10n.t('{0} is no longer approved.', request.agent.name));
    // After a window reload the local gateway is still running (it is detached): found by asking it who it is.
    const local = await this.gateway.findRunning();
    return connectAgent({
      card: normalizeCard(entry.approval.card.raw),
      endpoint: {
        url: endpoint.url,
        protocolBinding: endpoint.binding,
        protocolVersion: endpoint.protocolVersion,
        tenant: endpoint.tenant,
      },
      // The local gateway's token goes to the local gateway, for agents whose card it served; a token
      // the user stored goes only to the origin the user approved for this agent, looked up under that
      // exact origin (never to one a card names, never from https to http on the same host).
      getToken: scopedGetToken(
        { gatewayOrigin: local?.url, approvedOrigin: this.agents.tokenOrigin(entry), cardOrigin: entry.origin },
        {
          gateway: () => (local ? this.gateway.token(local) : undefined),
          stored: (origin) => this.storage.getToken(origin),
        },
      ),
    });
  }

  /** Builds the first message from exactly what the user chose and starts (or queues) the delegation. */
  async start(
    agent: AgentEntry,
    choice: StartChoice,
    context: CollectedContext,
    origin: { readonly startedBy?: StartedBy; readonly parentRequestId?: string } = {},
  ): Promise<string> {
    const endpoint = callableEndpoint(agent);
    if (agent.unlistedAt) throw new Error(unlistedText(agent));
    if (!endpoint || !agent.approval) throw new Error(vscode.l10n.t('{0} is not approved.', agent.cardUrl));
    const requestId = randomUUID();
    const folder = context.folder?.uri.fsPath;
    const { root, base, repository } = await delegationRepository(folder);
    const createdAt = Date.now();
    const request = extensionDelegationRequest({
      requestId,
      createdAt,
      who: userInfo().username,
      agent: {
        id: agent.cardUrl,
        name: agent.approval.card.name,
        endpoint: endpoint.url,
        protocolBinding: endpoint.binding,
        protocolVersion: endpoint.protocolVersion,
        cardDigest: agent.approval.digest,
        cardUrl: agent.cardUrl,
      },
      choice,
      context,
      repository,
      deadline: createdAt + choice.deadlineMinutes * 60_000,
      ...(origin.startedBy ? { startedBy: origin.startedBy } : {}),
      ...(origin.parentRequestId ? { parentRequestId: origin.parentRequestId } : {}),
    });
    const sidecar: DelegationSidecar = { folder: root ?? folder ?? '', ...(base ? { base } : {}) };
    writeSidecar(this.dir, requestId, sidecar);
    this.sidecars.set(requestId, sidecar);
    await this.m.start(request);
    this.log.info(`delegation ${requestId}: started to ${request.agent.name} at ${request.agent.endpoint}`);
    return requestId;
  }

  list() {
    return this.manager?.list() ?? [];
  }

  /** The consent questions a gateway asked on this delegation's stream, with the delegation's agent. */
  consents(id: string): { agentName: string; endpoint: string; consents: ConsentRecord[] } | undefined {
    const journal = this.manager?.get(id);
    if (!journal) return undefined;
    const { name, endpoint } = journal.request.agent;
    return { agentName: name, endpoint, consents: journal.consents() };
  }

  private treeCache: DelegationTree | undefined;

  /**
   * The task tree of this window's delegations (src/core/delegation/tree.ts): parents, children from
   * the journals (`parentRequestId`) and the children gateways reported on their parents' streams.
   * Rebuilt after a change.
   */
  tree(): DelegationTree {
    if (this.treeCache) return this.treeCache;
    const nodes: TreeDelegation[] = [];
    for (const s of this.list()) {
      const j = this.manager?.get(s.requestId);
      if (j) nodes.push(treeDelegationOf(j));
    }
    return (this.treeCache = buildDelegationTree(nodes));
  }

  /**
   * Writes an audit line for a delegation refused before anything was sent (a chat agent over its
   * burst cap, an agent that is not approved, a capability the agent does not declare…).
   */
  async auditRefusal(refusal: {
    readonly code: string;
    readonly reason: string;
    readonly agent: { readonly id: string; readonly name: string; readonly endpoint: string };
    readonly startedBy: StartedBy;
    readonly capabilities?: CapabilitySet;
    readonly parentRequestId?: string;
  }): Promise<void> {
    const caps = refusal.capabilities ?? { write: false, shell: false, network: false };
    await this.store.appendAudit({
      at: new Date().toISOString(),
      requestId: randomUUID(),
      who: userInfo().username,
      agent: refusal.agent,
      ...(refusal.parentRequestId ? { parentRequestId: refusal.parentRequestId } : {}),
      contextDigests: [],
      capabilities: { requested: caps, effective: { write: false, shell: false, network: false } },
      outcome: 'rejected',
      reason: refusal.reason,
      artifacts: [],
      startedBy: refusal.startedBy,
      refused: { code: refusal.code },
    });
  }

  /** The approved patch per file, for a caller that reports it (get task); undefined without one. */
  async patchSummary(id: string): Promise<PatchSummary | undefined> {
    const record = this.journalView(id);
    if (!record?.resultCheck?.patch || record.resultCheck.signature.status === 'invalid') return undefined;
    const bytes = await this.reviewPatch(id);
    if (!bytes) return undefined;
    try {
      const parsed = parsePatchText(bytes.toString('utf8'));
      const files = parsed.files.map((f) => ({
        path: f.newPath ?? f.oldPath ?? f.id,
        added: f.added,
        removed: f.removed,
      }));
      return {
        files,
        additions: files.reduce((n, f) => n + f.added, 0),
        deletions: files.reduce((n, f) => n + f.removed, 0),
      };
    } catch {
      return undefined;
    }
  }

  get runningCount(): number {
    return this.manager?.runningCount ?? 0;
  }

  get queuedCount(): number {
    return this.manager?.queuedCount ?? 0;
  }

  /** The request a delegation was started with, as its journal keeps it. */
  request(id: string): DelegationRequest | undefined {
    return this.manager?.get(id)?.request;
  }

  journalView(id: string): DelegationRecord | undefined {
    return this.manager?.view(id);
  }

  /**
   * The patch to review and apply: exactly the bytes the result check approved (for a verified result,
   * the signed artifact), never the journal's live view, which later events could change. Waits for a
   * check still running; refuses a result that did not verify. A copy, so no holder can change another's.
   */
  async reviewPatch(id: string, index = 0): Promise<Buffer | undefined> {
    await (this.checks.get(id) ?? this.check(id));
    const check = this.manager?.get(id)?.resultCheck;
    if (!check)
      throw new Error(vscode.l10n.t('Baton could not check this result, so it will not review it. See the Baton log.'));
    if (check.signature.status === 'invalid') {
      throw new Error(
        vscode.l10n.t('The result did not verify, so Baton will not review or apply it: {0}', check.signature.detail),
      );
    }
    const patch = recordedPatches(check)[index];
    if (!patch) return undefined;
    return Buffer.from(this.approvedPatch(id, patch.sha256, index).bytes);
  }

  /** The patches the result check approved (name, where from, verified or not), in order. */
  approvedPatchList(id: string): readonly RecordedPatch[] {
    const check = this.manager?.get(id)?.resultCheck;
    return check && check.signature.status !== 'invalid' ? recordedPatches(check) : [];
  }

  /** The approved patch with this digest, or an error that says what to do. */
  private approvedPatch(id: string, digest: string, index: number): ApprovedPatch {
    try {
      return this.patches.get(id, digest, index);
    } catch (e) {
      if (!(e instanceof ApprovedPatchError)) throw e;
      throw new Error(
        e.reason === 'missing'
          ? vscode.l10n.t('The checked patch of this delegation is missing from {0}.', this.dir)
          : vscode.l10n.t(
              'The checked patch of this delegation changed on disk since it was checked; Baton will not review it.',
            ),
      );
    }
  }

  reply(id: string, text: string): Promise<void> {
    return this.m.reply(id, text);
  }

  /** Approves or denies a tool call the agent asks about (development-tool extension). */
  answerToolCall(id: string, callId: string, outcome: string): Promise<void> {
    return this.m.answerToolCall(id, callId, outcome);
  }

  /** Done: ends a delegation whose agent waits for the user as completed by the user. */
  async finish(id: string): Promise<void> {
    await this.m.finish(id);
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
          if (wentOn)
            this.log.info(`delegation ${d.requestId}: the agent went on after authorization; following it again`);
        },
        (e: unknown) =>
          this.log.warn(
            `delegation ${d.requestId}: checking again after the window regained focus failed: ${(e as Error).message}`,
          ),
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
    await this.record(journal, { kind: 'notice', at: Date.now(), level: 'info', text });
    const decision = journal.decide();
    if (decision) await this.store.appendAudit({ ...auditRecordFor(journal, decision, Date.now()), review });
    this._onDidChange.fire(id);
  }

  /**
   * Applies an entry the service learned to the delegation's journal and persists it (fsync'd) — only
   * when this window may write that journal: while another window or `baton` process runs the
   * delegation, the entry is only applied here (src/node/a2a/delegationManager.ts, `record`).
   */
  private async record(journal: DelegationJournal, entry: JournalEntry): Promise<void> {
    if (!this.manager) {
      journal.apply(entry);
      return;
    }
    await this.manager.record(journal.requestId, entry);
  }

  readAudit() {
    return this.store.readAudit();
  }

  private async settled(id: string, decision: OutcomeDecision): Promise<void> {
    await this.check(id);
    this._onDidSettle.fire({ id, decision });
    this._onDidChange.fire(id);
  }

  /** Runs the result check (one at a time per delegation); a review waits for the latest. */
  private check(id: string): Promise<void> {
    const previous = this.checks.get(id) ?? Promise.resolve();
    const run = previous.then(() => this.checkNow(id));
    this.checks.set(id, run);
    return run;
  }

  /**
   * Checks the result against the keys held for the agent's origin (src/node/resultCheck.ts), keeps the
   * patch it approves (the bytes checked) and records what it found in the journal.
   */
  private async checkNow(id: string): Promise<void> {
    try {
      // The final artifacts come from GetTask after the outcome: wait for that before checking them.
      await this.manager?.idle(id);
      const loaded = await this.store.load(id);
      const journal = DelegationJournal.fromEntries(loaded.entries);
      const final = finalTaskOf(loaded.entries);
      const entry = this.agents.find(journal.request.agent.id);
      const card = entry?.approval ? normalizeCard(entry.approval.card.raw) : undefined;
      const pinned = entry ? pinnedKeysFor(this.agents.registry, entry.origin) : [];
      const r = await checkResult({
        journal,
        final,
        keys: card ? await resultKeys(pinned, card) : pinned,
        signaturesPromised: card ? signedResultsOf(card).promised : pinned.length > 0,
        signer: new URL(journal.request.agent.endpoint).origin,
      });
      // Next to a verified result, who ran it is what the agent signed, not the task's metadata.
      const executor = executorOf(r.status === 'verified' ? r.executor : final?.metadata?.[META.executor]);
      const approved = r.status !== 'invalid' ? (r.patches ?? []) : [];
      approved.forEach((p, i) => this.patches.store(id, p.bytes, p.sha256, i));
      this.patches.remove(id, approved.length);
      if (r.status === 'invalid')
        this.log.warn(`delegation ${id}: the result did not verify (${r.failure}): ${r.detail}`);
      const live = this.manager?.get(id);
      const checked: JournalEntry = {
        kind: 'resultCheck',
        at: Date.now(),
        signature: { status: r.status, detail: r.detail },
        message: r.text,
        ...(executor ? { executor } : {}),
        ...(approved.length
          ? {
              patch: { artifactId: approved[0].artifactId, sha256: approved[0].sha256 },
              patches: approved.map((p) => ({
                artifactId: p.artifactId,
                sha256: p.sha256,
                name: p.name,
                source: p.source,
                signature: p.signature,
              })),
            }
          : {}),
        ...(r.status !== 'invalid' && r.links?.length ? { links: r.links } : {}),
      };
      if (live) await this.record(live, checked);
      else if (await this.store.claim(id)) await this.store.append(id, checked, { sync: true });
    } catch (e) {
      this.log.warn(
        `delegation ${id}: could not check the result signature: ${e instanceof Error ? e.message : String(e)}`,
      );
    }
  }

  /** The panel's view of a delegation, with the review of its patch when one is open. */
  panelView(id: string, review?: ReviewView, reviewing?: number): DelegationView | undefined {
    const record = this.journalView(id);
    if (!record) return undefined;
    const tree = this.tree();
    const children = childViews(tree.byId.get(id)).map((c) => ({
      ...c,
      title: oneLine(c.title),
      agentName: oneLine(c.agentName),
    }));
    const view = {
      ...delegationPanelView(record, {
        patch: this.patchStats(id, record),
        patches: this.patchChoices(id, record),
        review,
        reviewing,
      }),
      ...(record.startedBy?.kind === 'agent' ? { startedBy: 'agent' as const } : {}),
      ...(children.length ? { children } : {}),
    };
    // The check is journaled as data (and in English for logs); the panel says it in the user's language.
    const message = record.resultCheck?.message;
    return message && view.signature
      ? { ...view, signature: { ...view.signature, detail: resultCheckText(message, vscode.l10n.t) } }
      : view;
  }

  /** Every approved patch with its statistics, for choosing which one to review. */
  private patchChoices(id: string, record: DelegationRecord): PatchChoice[] {
    return recordedPatches(record.resultCheck).map((p, index) => {
      let stats: PatchStats | undefined;
      try {
        stats = this.patches.get(id, p.sha256, index).stats;
      } catch {
        stats = undefined;
      }
      return { index, name: p.name, source: p.source, signature: p.signature, ...(stats ? { stats } : {}) };
    });
  }

  /** The approved patch's statistics (computed when it was stored or read back), if there is one. */
  private patchStats(id: string, record: DelegationRecord): PatchStats | undefined {
    const approved = record.resultCheck?.patch;
    if (!approved) return undefined;
    try {
      return this.patches.get(id, approved.sha256).stats;
    } catch {
      return undefined;
    }
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
    return e ? timelineEntryText(panelTimelineEntry(e, seq)) : undefined;
  }
}
