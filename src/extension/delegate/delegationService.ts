import { createHash, randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { callableEndpoint, pinnedKeysFor, type AgentEntry } from '../../core/agentRegistry';
import { META } from '../../core/batonProfile';
import { DelegationJournal, isFinalOutcome, type DelegationRequest, type OutcomeDecision } from '../../core/delegation';
import { buildDelegationMessage } from '../../core/delegation/context';
import { parsePatchText } from '../../core/patch';
import { boundDelegationView, PANEL_LIMITS } from '../../core/protocol/panelLimits';
import type {
  DelegationState as PanelState,
  DelegationView as PanelView,
  TimelineEntry as PanelEntry,
} from '../../core/protocol/panelProtocol';
import type { DelegationView as JournalView } from '../../core/protocol/delegationView';
import { resultCheckText } from '../../core/resultText';
import { connectAgent, normalizeCard, scopedGetToken } from '../../node/a2a/clientFactory';
import { DelegationManager } from '../../node/a2a/delegationManager';
import { auditRecordFor, JournalStore, type ReviewAuditInfo } from '../../node/journalStore';
import { captureWorkingState, repositoryTopLevel, type WorkingState } from '../../node/patchDrift';
import { checkResult, finalTaskOf, resultKeys, signedResultsOf } from '../../node/resultCheck';
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

/**
 * Per-delegation facts the journal does not hold: the drift base, where the repository is, and the
 * result check with the patch it approved for review (its bytes in `<id>.review.patch`, their digest here).
 */
interface Sidecar {
  readonly folder: string;
  readonly base?: WorkingState;
  signature?: SignatureCheck;
  patch?: { readonly artifactId: string; readonly sha256: string };
  executor?: string;
  executorKind?: string;
  /** How the agent runs, as the gateway said it (why unconfined, what the sandbox allows). */
  executorDetail?: string;
  confined?: boolean;
}

function sha256(bytes: Uint8Array): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
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
  /** The result check running or done per delegation: a review waits for it. */
  private readonly checks = new Map<string, Promise<void>>();
  /** The patch bytes the check approved, by delegation (also on disk, for after a reload). */
  /** The approved patch bytes per delegation, with the digest they were checked against and their statistics (computed once). */
  private readonly reviewBytes = new Map<
    string,
    { readonly sha256: string; readonly bytes: Buffer; stats?: PanelView['patch'] }
  >();
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

  private reviewPatchFile(id: string): string {
    return join(this.dir, `${id}.review.patch`);
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
    // After a window reload the local gateway is still running (it is detached): find it by its state folder.
    const local = this.gateway.findRunning();
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
      repository:
        root && base
          ? { root, baseCommit: base.baseCommit ?? '', uncommittedDigest: base.uncommittedDigest }
          : folder
            ? { root: folder, baseCommit: '', uncommittedDigest: '' }
            : undefined,
      capabilities: choice.capabilities,
      deadline,
      chain: [agent.cardUrl],
    });
    if (context.unsaved.length && message.metadata) message.metadata[`${META.files}.unsaved`] = context.unsaved;
    const request: DelegationRequest = {
      requestId,
      title: choice.task.split('\n')[0].slice(0, 200),
      who: userInfo().username,
      agent: {
        id: agent.cardUrl,
        name: agent.approval.card.name,
        endpoint: endpoint.url,
        protocolBinding: endpoint.binding,
        protocolVersion: endpoint.protocolVersion,
        cardDigest: agent.approval.digest,
      },
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

  /**
   * The patch to review and apply: exactly the bytes the result check approved (for a verified result,
   * the signed artifact), never the journal's live view, which later events could change. Waits for a
   * check still running; refuses a result that did not verify. A copy, so no holder can change another's.
   */
  async reviewPatch(id: string): Promise<Buffer | undefined> {
    await (this.checks.get(id) ?? this.check(id));
    const side = this.loadSidecar(id);
    if (!side?.signature)
      throw new Error(vscode.l10n.t('Baton could not check this result, so it will not review it. See the Baton log.'));
    if (side.signature.status === 'invalid') {
      throw new Error(
        vscode.l10n.t('The result did not verify, so Baton will not review or apply it: {0}', side.signature.detail),
      );
    }
    const bytes = this.approvedBytes(id, side);
    return bytes && Buffer.from(bytes);
  }

  /** The approved patch bytes, checked against the digest recorded when they were approved. */
  private approvedBytes(id: string, side: Sidecar | undefined): Buffer | undefined {
    if (!side?.patch || side.signature?.status === 'invalid') return undefined;
    return this.approved(id, side.patch.sha256).bytes;
  }

  /**
   * The approved bytes held in memory for this digest, or read from disk and checked against it. Bytes
   * in memory were checked when they were stored: the panel asks for them on every snapshot, so they
   * are not hashed again.
   */
  private approved(
    id: string,
    digest: string,
  ): { readonly sha256: string; readonly bytes: Buffer; stats?: PanelView['patch'] } {
    const held = this.reviewBytes.get(id);
    if (held?.sha256 === digest) return held;
    let bytes: Buffer;
    try {
      bytes = readFileSync(this.reviewPatchFile(id));
    } catch {
      throw new Error(vscode.l10n.t('The checked patch of this delegation is missing from {0}.', this.dir));
    }
    if (sha256(bytes) !== digest) {
      this.reviewBytes.delete(id);
      throw new Error(
        vscode.l10n.t(
          'The checked patch of this delegation changed on disk since it was checked; Baton will not review it.',
        ),
      );
    }
    const entry = { sha256: digest, bytes };
    this.reviewBytes.set(id, entry);
    return entry;
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
   * Checks the result against the keys held for the agent's origin (src/node/resultCheck.ts) and keeps
   * the patch it approves: the bytes checked, written once, with their digest in the sidecar.
   */
  private async checkNow(id: string): Promise<void> {
    try {
      // The final artifacts come from GetTask after the outcome: wait for that before checking them.
      await this.manager?.idle(id);
      const loaded = await this.store.load(id);
      const journal = DelegationJournal.fromEntries(loaded.entries);
      const final = finalTaskOf(loaded.entries);
      const side = this.loadSidecar(id) ?? { folder: '' };
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
      // Shown in the panel in the user's language; the log line below keeps the English detail.
      side.signature = { status: r.status, detail: resultCheckText(r.text, vscode.l10n.t) };
      // Next to a verified result, who ran it is what the agent signed, not the task's metadata.
      const executor = r.status === 'verified' ? r.executor : final?.metadata?.[META.executor];
      side.executor = undefined;
      side.confined = undefined;
      if (executor && typeof executor === 'object') {
        const x = executor as { id?: unknown; kind?: unknown; confined?: unknown; detail?: unknown };
        side.executor = `${String(x.id ?? '?')} (${String(x.kind ?? 'agent')})`;
        side.executorKind = typeof x.kind === 'string' ? x.kind : undefined;
        side.executorDetail = typeof x.detail === 'string' ? x.detail.slice(0, 500) : undefined;
        side.confined = typeof x.confined === 'boolean' ? x.confined : undefined;
      }
      this.reviewBytes.delete(id);
      if (r.status !== 'invalid' && r.patch) {
        writeFileSync(this.reviewPatchFile(id), r.patch.bytes, { mode: 0o600 });
        side.patch = { artifactId: r.patch.artifactId, sha256: r.patch.sha256 };
        this.reviewBytes.set(id, { sha256: r.patch.sha256, bytes: r.patch.bytes });
      } else {
        side.patch = undefined;
        rmSync(this.reviewPatchFile(id), { force: true });
      }
      if (r.status === 'invalid')
        this.log.warn(`delegation ${id}: the result did not verify (${r.failure}): ${r.detail}`);
      this.saveSidecar(id, side);
    } catch (e) {
      this.log.warn(
        `delegation ${id}: could not check the result signature: ${e instanceof Error ? e.message : String(e)}`,
      );
    }
  }

  /** The panel's view of a delegation. */
  panelView(id: string): PanelView | undefined {
    const v = this.journalView(id);
    if (!v) return undefined;
    const side = this.loadSidecar(id);
    let patchStats: PanelView['patch'];
    if (v.outcome && side?.patch && side.signature?.status !== 'invalid') {
      try {
        // Parsed once per approved patch, not on every snapshot.
        const held = this.approved(id, side.patch.sha256);
        if (!held.stats) {
          const parsed = parsePatchText(held.bytes.toString('utf8'));
          held.stats = {
            files: parsed.files.length,
            additions: parsed.files.reduce((n, f) => n + f.added, 0),
            deletions: parsed.files.reduce((n, f) => n + f.removed, 0),
          };
        }
        patchStats = held.stats;
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
      executorKind: side?.executorKind,
      executorDetail: side?.executorDetail,
      confined: side?.confined,
      reason: v.outcomeReason,
      question: v.prompt,
      // Only what the panel can show is mapped; the bounds also apply to each entry's text.
      timeline: v.timeline.slice(first).map((e, i) => panelEntry(e, first + i + 1 + v.timelineOmitted)),
      timelineOmitted: v.timelineOmitted + first,
      artifacts: v.artifacts.map((a) => ({
        name: a.name || a.filename,
        mediaType: a.mediaType,
        bytes: a.size,
        isPatch: a.isPatch,
      })),
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
      return {
        seq,
        at: e.at,
        kind: 'artifact',
        text: `${e.name} · ${e.size.toLocaleString()} characters${e.chunks > 1 ? ` in ${e.chunks} chunks` : ''}${e.complete ? '' : ' (streaming…)'}`,
      };
    case 'message':
      return {
        seq,
        at: e.at,
        kind: 'message',
        text: e.role === 'user' ? `You: ${e.text}` : e.text,
        markdown: e.role === 'agent',
      };
    case 'notice':
      return { seq, at: e.at, kind: e.level === 'error' ? 'error' : 'note', text: e.text };
  }
}
