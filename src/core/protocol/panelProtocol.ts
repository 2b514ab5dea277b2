/**
 * The delegation panel's message protocol: every message between the extension host and the panel
 * webview is declared here once and imported by both sides. Messages from the webview are untrusted
 * input (a compromised or buggy panel can post anything), so the host only acts on what
 * `parseWebviewMessage` returns.
 */
import { isRecord } from '../isRecord';
import type { DelegationState, DelegationView } from './delegationView';

export type { DelegationState, DelegationView, TimelineEntry } from './delegationView';

/** Bumped when the shape of `PanelUiState` changes; older saved state is migrated or dropped. */
export const PANEL_STATE_VERSION = 1;

/** What the webview persists with `setState`: UI state only, never task data (that lives in the host). */
export interface PanelUiState {
  readonly __v: typeof PANEL_STATE_VERSION;
  /** The delegation this panel shows, if any; the host re-reads its data from the journal. */
  readonly delegationId?: string;
  /** The agent whose card this panel reviews, if any. */
  readonly agentCardUrl?: string;
  readonly timelineExpanded: boolean;
}

/** Commands the panel may ask the host to run; anything else is refused. */
export const PANEL_COMMANDS = ['baton.delegate', 'baton.addAgent'] as const;
export type PanelCommand = (typeof PANEL_COMMANDS)[number];

type NoParams = Record<string, never>;

/**
 * What a panel shows; its kind decides which requests the panel may make. Saved with the panel as the
 * `delegationId` / `agentCardUrl` fields of `PanelUiState` (see `panelSubjectOf`).
 */
export type PanelSubject =
  | { readonly kind: 'overview' }
  | { readonly kind: 'delegation'; readonly delegationId: string }
  | { readonly kind: 'agentReview'; readonly agentId: string };
export type PanelKind = PanelSubject['kind'];
export type SubjectOf<K extends PanelKind> = Extract<PanelSubject, { kind: K }>;

/** One request: the params the webview sends and the result the host answers with. */
export interface PanelRequest<Params, Result> {
  readonly params: Params;
  readonly result: Result;
}

/** A set of requests, by method. */
export type RequestSet<Rs> = { [M in keyof Rs]: PanelRequest<unknown, unknown> };

/** Requests every panel may make, whatever it shows. */
export interface CommonRequests {
  /** Re-read the host's view of Baton (agents, delegations, gateway) and answer with a fresh snapshot. */
  refresh: PanelRequest<NoParams, PanelSnapshot>;
  /** Run one of the allow-listed commands. */
  runCommand: PanelRequest<{ command: PanelCommand }, { ran: PanelCommand }>;
}

/** Requests about the review of the changes.patch a delegation returned (the review part of its panel). */
export interface ReviewRequests {
  /** Choose a whole file, or one hunk of it, for applying (`selected: false` leaves it out). */
  reviewSelect: PanelRequest<{ fileId: string; hunkId?: string; selected: boolean }, { ok: true }>;
  /** Select every file that can still be applied (`selected: false`: none). */
  reviewSelectAll: PanelRequest<{ selected: boolean }, { ok: true }>;
  /** Allow (or refuse again) one refused risk item. */
  reviewOverride: PanelRequest<{ riskId: string; allow: boolean }, { ok: true }>;
  /** Apply what is selected and not applied yet, as one atomic step; `threeWay` only after the user chose it. */
  reviewApply: PanelRequest<{ threeWay: boolean }, { applied: boolean }>;
  /** Discard the patch (it stays in the journal for audit). */
  reviewReject: PanelRequest<NoParams, { ok: true }>;
  /** Restore the files every apply of this review touched. */
  reviewUndo: PanelRequest<NoParams, { restored: number }>;
  /** After a 3-way apply with conflicts: finish (every conflict resolved) or abort (restore the files). */
  reviewMerge: PanelRequest<{ action: 'finish' | 'abort' }, { ok: true }>;
  /** Open one file's diff (or the changes editor for all files when no file is given). */
  reviewOpen: PanelRequest<{ fileId?: string }, { ok: true }>;
}

/** Requests a delegation's panel makes about its delegation. */
export interface DelegationRequests extends ReviewRequests {
  /** Cancel the shown delegation at the agent. */
  cancel: PanelRequest<NoParams, { confirmed: boolean }>;
  /** Answer the agent's `input-required` question; the same task continues. */
  reply: PanelRequest<{ text: string }, { sent: true }>;
  /** Open a returned patch for review: the `patch`-th of several (from 0), else the first. */
  reviewChanges: PanelRequest<{ patch?: number }, { opened: true }>;
  /** Approve or deny a tool call the agent asks about (`outcome` is one it offered, e.g. proceed_once, cancel). */
  answerToolCall: PanelRequest<{ callId: string; outcome: string }, { sent: true }>;
  /** Done: the agent waits for the user; accept what it did and end the delegation as completed. */
  finish: PanelRequest<NoParams, { state: DelegationState }>;
  /** Reconcile an `unknown` outcome with the agent (GetTask), never a blind retry. */
  checkAgain: PanelRequest<NoParams, { state: DelegationState }>;
  /** `auth-required`: ask the user for a token for the agent's host (stored in SecretStorage). */
  provideToken: PanelRequest<NoParams, { stored: boolean }>;
  /**
   * Start a new delegation of the same task to the same agent (the start flow's confirmation first);
   * the shown one stays as it ended. `started` is the new delegation's id, null when the user backed out.
   */
  delegateAgain: PanelRequest<NoParams, { started: string | null }>;
  /**
   * Open the full text of a timeline entry the panel shows shortened (by `seq`), or of the agent's
   * question (no `seq`), in a plain-text editor: nothing of it is rendered.
   */
  showFullText: PanelRequest<{ seq?: number }, { opened: true }>;
  /**
   * One of the listed children (by the id the view gives it): a delegation of this window opens its own
   * panel; a child a gateway started for the task has no panel here, so its info is shown.
   */
  openChild: PanelRequest<{ childId: string }, { opened: 'panel' | 'info' }>;
}

/** Requests an agent review panel makes about the agent it reviews. */
export interface AgentReviewRequests {
  /** Approve the reviewed card: pins its digest and the chosen endpoint. */
  approveAgent: PanelRequest<
    { digest: string; endpointUrl?: string; acknowledgeOffOrigin: boolean },
    { approved: boolean; message?: string }
  >;
  rejectAgent: PanelRequest<NoParams, { ok: true }>;
}

/** The requests each kind of panel makes besides the common ones. */
export interface PanelRequestsByKind {
  overview: Record<never, never>;
  delegation: DelegationRequests;
  agentReview: AgentReviewRequests;
}

/** Every request a panel can send. */
export type PanelRequests = CommonRequests & DelegationRequests & AgentReviewRequests;

type KindOfMethod<M> = M extends keyof DelegationRequests
  ? 'delegation'
  : M extends keyof AgentReviewRequests
    ? 'agentReview'
    : 'any';

/** Which kind of panel may send each request (`any`: every panel); checked against the declarations above. */
export const PANEL_REQUEST_KIND: { readonly [M in keyof PanelRequests]: KindOfMethod<M> } = {
  refresh: 'any',
  runCommand: 'any',
  cancel: 'delegation',
  reply: 'delegation',
  answerToolCall: 'delegation',
  finish: 'delegation',
  reviewChanges: 'delegation',
  checkAgain: 'delegation',
  provideToken: 'delegation',
  delegateAgain: 'delegation',
  showFullText: 'delegation',
  openChild: 'delegation',
  reviewSelect: 'delegation',
  reviewSelectAll: 'delegation',
  reviewOverride: 'delegation',
  reviewApply: 'delegation',
  reviewReject: 'delegation',
  reviewUndo: 'delegation',
  reviewMerge: 'delegation',
  reviewOpen: 'delegation',
  approveAgent: 'agentReview',
  rejectAgent: 'agentReview',
};

export interface ReviewRiskView {
  readonly id: string;
  readonly kind: string;
  readonly severity: 'refuse' | 'flag';
  readonly reason: string;
  readonly allowed: boolean;
}

export interface ReviewHunkView {
  readonly id: string;
  readonly header: string;
  readonly added: number;
  readonly removed: number;
  readonly selected: boolean;
  /** Written to the tree by an earlier apply of this review. */
  readonly applied: boolean;
}

export interface ReviewFileView {
  readonly id: string;
  readonly path: string;
  readonly oldPath?: string;
  readonly status: 'added' | 'deleted' | 'modified' | 'renamed' | 'copied';
  readonly added: number;
  readonly removed: number;
  readonly binary: boolean;
  /** `git apply --check` for this file against the current tree. */
  readonly applies: boolean;
  readonly checkErrors: readonly string[];
  readonly risks: readonly ReviewRiskView[];
  /** 'all' = the whole file, 'some' = some hunks, 'none' = left out (refused files start as 'none'). */
  readonly selection: 'all' | 'some' | 'none';
  /** How much of the file earlier applies of this review wrote. */
  readonly applied: 'all' | 'some' | 'none';
  readonly hunks: readonly ReviewHunkView[];
  /** The user has unsaved changes to this file in an editor: applying is blocked until saved or reverted. */
  readonly dirty: boolean;
}

export interface ReviewView {
  readonly state: 'preparing' | 'ready' | 'applied' | 'conflicts' | 'rejected' | 'error';
  readonly message?: string;
  /** Progress while a large patch is read, 0..1. */
  readonly progress?: number;
  readonly target?: 'git' | 'folder';
  readonly checkOk?: boolean;
  readonly drift?: { readonly headMoved: boolean; readonly changedFiles: readonly string[] };
  readonly files: readonly ReviewFileView[];
  readonly conflicts?: readonly string[];
  /** What the applies so far wrote, when it can still be undone. */
  readonly applied?: { readonly at: string; readonly files: readonly string[]; readonly undoable: boolean };
}

/** The longest reply the panel may send (the host refuses longer ones). */
export const MAX_REPLY_LENGTH = 100_000;

export type PanelRequestMethod = keyof PanelRequests;

/** A request message for one of a set of requests, with the params of its method. */
export type PanelRequestMessage<Rs extends RequestSet<Rs> = PanelRequests> = {
  [M in keyof Rs]: { type: 'request'; id: number; method: M; params: Rs[M]['params'] };
}[keyof Rs];

export type WebviewToHostMessage = { type: 'ready'; stateVersion: number } | PanelRequestMessage;

/** The host's whole view for the panel; sent after `ready`, after each change, and as refresh results. */
export interface PanelSnapshot {
  readonly title: string;
  readonly trusted: boolean;
  readonly agents: number;
  readonly delegations: number;
  /** ISO time the host produced this snapshot. */
  readonly producedAt: string;
  /** How many refreshes the host has answered for this panel (visible proof the round trip happened). */
  readonly refreshCount: number;
  /** The delegation this panel shows, if any. */
  readonly delegation?: DelegationView;
  /** The agent this panel reviews, if any. */
  readonly agentReview?: AgentReviewView;
}

export interface AgentReviewView {
  readonly cardUrl: string;
  /** The card's origin: where a token stored for it may go (scheme://host[:port], normalised). */
  readonly origin: string;
  readonly status: 'pending' | 'approved' | 'rejected' | 'unavailable';
  readonly pendingReason?: 'new' | 'card-changed';
  readonly source: string;
  readonly name: string;
  readonly description: string;
  readonly provider?: string;
  readonly version?: string;
  /** The digest of the card the user sees; approval is refused if the served card differs by then. */
  readonly digest?: string;
  readonly interfaces: readonly {
    readonly url: string;
    /** The interface's origin, normalised; a token goes there only if the user stores one for it. */
    readonly origin: string;
    readonly binding: string;
    readonly protocolVersion: string;
    readonly preferred: boolean;
    /** Another origin than the card's (scheme, host or port differ). */
    readonly offOrigin: boolean;
    /** Plain http. */
    readonly insecure: boolean;
  }[];
  readonly skills: readonly { readonly name: string; readonly description: string; readonly tags: readonly string[] }[];
  readonly auth: readonly { readonly name: string; readonly detail: string }[];
  readonly extensions: readonly { readonly uri: string; readonly required: boolean }[];
  readonly signature: { readonly status: 'verified' | 'unsigned' | 'invalid' | 'unknown'; readonly detail: string };
  /** What changed since the approved card, when it is pending again. */
  readonly changes: readonly {
    readonly path: string;
    readonly kind: 'added' | 'removed' | 'changed';
    readonly before?: string;
    readonly after?: string;
  }[];
  readonly warnings: readonly string[];
  readonly error?: string;
  readonly approvedEndpoint?: string;
}

export type HostToWebviewMessage =
  | { type: 'snapshot'; snapshot: PanelSnapshot }
  | { type: 'response'; id: number; ok: true; result: PanelRequests[PanelRequestMethod]['result'] }
  | { type: 'response'; id: number; ok: false; error: string };

export type ParseResult<T> = { ok: true; value: T } | { ok: false; error: string };

const MAX_REQUEST_ID = Number.MAX_SAFE_INTEGER;

function hasOnlyKeys(v: Record<string, unknown>, allowed: readonly string[]): boolean {
  return Object.keys(v).every((k) => allowed.includes(k));
}

/** Ids the host made (file, hunk and risk ids): bounded strings. */
function isId(v: unknown): v is string {
  return typeof v === 'string' && v.length > 0 && v.length <= 4096;
}

/** The answers a panel may send to a tool call (the development-tool extension's outcomes). */
const TOOL_CALL_OUTCOMES: readonly string[] = [
  'proceed_once',
  'proceed_always',
  'proceed_always_tool',
  'proceed_always_server',
  'cancel',
];

function isPanelCommand(v: unknown): v is PanelCommand {
  return typeof v === 'string' && (PANEL_COMMANDS as readonly string[]).includes(v);
}

/** Validates a raw message from the webview. Unknown types, extra fields and bad params are refused. */
export function parseWebviewMessage(raw: unknown): ParseResult<WebviewToHostMessage> {
  if (!isRecord(raw)) return { ok: false, error: 'message is not an object' };
  switch (raw.type) {
    case 'ready': {
      if (!hasOnlyKeys(raw, ['type', 'stateVersion'])) return { ok: false, error: 'ready: unexpected fields' };
      if (typeof raw.stateVersion !== 'number' || !Number.isInteger(raw.stateVersion)) {
        return { ok: false, error: 'ready: stateVersion must be an integer' };
      }
      return { ok: true, value: { type: 'ready', stateVersion: raw.stateVersion } };
    }
    case 'request': {
      if (!hasOnlyKeys(raw, ['type', 'id', 'method', 'params']))
        return { ok: false, error: 'request: unexpected fields' };
      const { id, method, params } = raw;
      if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > MAX_REQUEST_ID) {
        return { ok: false, error: 'request: id must be a non-negative integer' };
      }
      if (!isRecord(params)) return { ok: false, error: 'request: params must be an object' };
      switch (method) {
        case 'runCommand':
          if (!hasOnlyKeys(params, ['command']) || !isPanelCommand(params.command)) {
            return { ok: false, error: `runCommand: command must be one of ${PANEL_COMMANDS.join(', ')}` };
          }
          return { ok: true, value: { type: 'request', id, method, params: { command: params.command } } };
        case 'reviewChanges': {
          const n = params.patch;
          if (
            !hasOnlyKeys(params, ['patch']) ||
            (n !== undefined && (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0 || n > 10_000))
          )
            return { ok: false, error: 'reviewChanges: patch must be the index of one of the returned patches' };
          return { ok: true, value: { type: 'request', id, method, params: n === undefined ? {} : { patch: n } } };
        }
        case 'refresh':
        case 'cancel':
        case 'checkAgain':
        case 'provideToken':
        case 'delegateAgain':
        case 'finish':
          if (Object.keys(params).length !== 0) return { ok: false, error: `${method}: takes no params` };
          return { ok: true, value: { type: 'request', id, method, params: {} } };
        case 'rejectAgent':
        case 'reviewReject':
        case 'reviewUndo':
          if (Object.keys(params).length !== 0) return { ok: false, error: `${method}: takes no params` };
          return { ok: true, value: { type: 'request', id, method, params: {} } };
        case 'reviewSelect': {
          if (
            !hasOnlyKeys(params, ['fileId', 'hunkId', 'selected']) ||
            !isId(params.fileId) ||
            (params.hunkId !== undefined && !isId(params.hunkId)) ||
            typeof params.selected !== 'boolean'
          ) {
            return { ok: false, error: 'reviewSelect: needs fileId, optional hunkId and selected' };
          }
          return {
            ok: true,
            value: {
              type: 'request',
              id,
              method,
              params: { fileId: params.fileId, hunkId: params.hunkId, selected: params.selected },
            },
          };
        }
        case 'reviewOverride':
          if (!hasOnlyKeys(params, ['riskId', 'allow']) || !isId(params.riskId) || typeof params.allow !== 'boolean')
            return { ok: false, error: 'reviewOverride: needs riskId and allow' };
          return {
            ok: true,
            value: { type: 'request', id, method, params: { riskId: params.riskId, allow: params.allow } },
          };
        case 'reviewSelectAll':
          if (!hasOnlyKeys(params, ['selected']) || typeof params.selected !== 'boolean')
            return { ok: false, error: 'reviewSelectAll: needs selected' };
          return { ok: true, value: { type: 'request', id, method, params: { selected: params.selected } } };
        case 'reviewApply':
          if (!hasOnlyKeys(params, ['threeWay']) || typeof params.threeWay !== 'boolean')
            return { ok: false, error: 'reviewApply: needs threeWay' };
          return { ok: true, value: { type: 'request', id, method, params: { threeWay: params.threeWay } } };
        case 'approveAgent':
          if (
            !hasOnlyKeys(params, ['digest', 'endpointUrl', 'acknowledgeOffOrigin']) ||
            !isId(params.digest) ||
            (params.endpointUrl !== undefined && !isId(params.endpointUrl)) ||
            typeof params.acknowledgeOffOrigin !== 'boolean'
          ) {
            return { ok: false, error: 'approveAgent: needs digest, optional endpointUrl and acknowledgeOffOrigin' };
          }
          return {
            ok: true,
            value: {
              type: 'request',
              id,
              method,
              params: {
                digest: params.digest,
                endpointUrl: params.endpointUrl,
                acknowledgeOffOrigin: params.acknowledgeOffOrigin,
              },
            },
          };
        case 'reviewMerge':
          if (!hasOnlyKeys(params, ['action']) || (params.action !== 'finish' && params.action !== 'abort'))
            return { ok: false, error: 'reviewMerge: action must be finish or abort' };
          return { ok: true, value: { type: 'request', id, method, params: { action: params.action } } };
        case 'reviewOpen':
          if (!hasOnlyKeys(params, ['fileId']) || (params.fileId !== undefined && !isId(params.fileId)))
            return { ok: false, error: 'reviewOpen: fileId must be a string' };
          return {
            ok: true,
            value: {
              type: 'request',
              id,
              method,
              params: params.fileId === undefined ? {} : { fileId: params.fileId },
            },
          };
        case 'showFullText':
          if (
            !hasOnlyKeys(params, ['seq']) ||
            (params.seq !== undefined &&
              (typeof params.seq !== 'number' || !Number.isInteger(params.seq) || params.seq < 0))
          ) {
            return { ok: false, error: 'showFullText: seq must be a non-negative integer' };
          }
          return {
            ok: true,
            value: { type: 'request', id, method, params: params.seq === undefined ? {} : { seq: params.seq } },
          };
        case 'openChild':
          if (!hasOnlyKeys(params, ['childId']) || !isId(params.childId))
            return { ok: false, error: 'openChild: needs childId' };
          return { ok: true, value: { type: 'request', id, method, params: { childId: params.childId } } };
        case 'answerToolCall':
          if (!hasOnlyKeys(params, ['callId', 'outcome']) || !isId(params.callId))
            return { ok: false, error: 'answerToolCall: callId must be a string' };
          if (typeof params.outcome !== 'string' || !TOOL_CALL_OUTCOMES.includes(params.outcome))
            return { ok: false, error: `answerToolCall: outcome must be one of ${TOOL_CALL_OUTCOMES.join(', ')}` };
          return {
            ok: true,
            value: { type: 'request', id, method, params: { callId: params.callId, outcome: params.outcome } },
          };
        case 'reply':
          if (!hasOnlyKeys(params, ['text']) || typeof params.text !== 'string')
            return { ok: false, error: 'reply: text must be a string' };
          if (params.text.trim().length === 0) return { ok: false, error: 'reply: the reply is empty' };
          if (params.text.length > MAX_REPLY_LENGTH)
            return { ok: false, error: `reply: longer than ${MAX_REPLY_LENGTH} characters` };
          return { ok: true, value: { type: 'request', id, method, params: { text: params.text } } };
        default:
          return { ok: false, error: `request: unknown method ${JSON.stringify(String(method)).slice(0, 80)}` };
      }
    }
    default:
      return { ok: false, error: `unknown message type ${JSON.stringify(String(raw.type)).slice(0, 80)}` };
  }
}

/** Reads state saved by any earlier version of the panel; returns a fresh state when it cannot. */
export function migratePanelState(saved: unknown): PanelUiState {
  const fresh: PanelUiState = { __v: PANEL_STATE_VERSION, timelineExpanded: true };
  if (!isRecord(saved) || saved.__v !== PANEL_STATE_VERSION) return fresh;
  return {
    __v: PANEL_STATE_VERSION,
    ...(typeof saved.delegationId === 'string' ? { delegationId: saved.delegationId } : {}),
    ...(typeof saved.agentCardUrl === 'string' ? { agentCardUrl: saved.agentCardUrl } : {}),
    timelineExpanded: typeof saved.timelineExpanded === 'boolean' ? saved.timelineExpanded : true,
  };
}

/** The subject a panel saved with its state (an agent review when both ids are there, as the panel shows it). */
export function panelSubjectOf(state: Pick<PanelUiState, 'delegationId' | 'agentCardUrl'>): PanelSubject {
  if (state.agentCardUrl !== undefined) return { kind: 'agentReview', agentId: state.agentCardUrl };
  if (state.delegationId !== undefined) return { kind: 'delegation', delegationId: state.delegationId };
  return { kind: 'overview' };
}

/** The fields of `PanelUiState` that save a subject. */
export function panelStateFields(subject: PanelSubject): Pick<PanelUiState, 'delegationId' | 'agentCardUrl'> {
  switch (subject.kind) {
    case 'overview':
      return {};
    case 'delegation':
      return { delegationId: subject.delegationId };
    case 'agentReview':
      return { agentCardUrl: subject.agentId };
  }
}

export function sameSubject(a: PanelSubject, b: PanelSubject): boolean {
  switch (a.kind) {
    case 'overview':
      return b.kind === 'overview';
    case 'delegation':
      return b.kind === 'delegation' && b.delegationId === a.delegationId;
    case 'agentReview':
      return b.kind === 'agentReview' && b.agentId === a.agentId;
  }
}

/** A request checked against the panel it came from: common, or one of the requests its kind makes. */
export type RoutedPanelRequest =
  | { readonly kind: 'any'; readonly message: PanelRequestMessage<CommonRequests> }
  | {
      readonly kind: 'delegation';
      readonly subject: SubjectOf<'delegation'>;
      readonly message: PanelRequestMessage<DelegationRequests>;
    }
  | {
      readonly kind: 'agentReview';
      readonly subject: SubjectOf<'agentReview'>;
      readonly message: PanelRequestMessage<AgentReviewRequests>;
    };

const KIND_NAMES: Record<PanelKind, string> = {
  overview: 'the overview',
  delegation: 'a delegation',
  agentReview: 'an agent review',
};

function isCommonRequest(m: PanelRequestMessage): m is PanelRequestMessage<CommonRequests> {
  return PANEL_REQUEST_KIND[m.method] === 'any';
}

function isDelegationRequest(m: PanelRequestMessage): m is PanelRequestMessage<DelegationRequests> {
  return PANEL_REQUEST_KIND[m.method] === 'delegation';
}

function isAgentReviewRequest(m: PanelRequestMessage): m is PanelRequestMessage<AgentReviewRequests> {
  return PANEL_REQUEST_KIND[m.method] === 'agentReview';
}

/**
 * Checks a validated request against what its panel shows: a delegation's requests are refused by an
 * agent review's panel and by the overview, and the other way round.
 */
export function routePanelRequest(
  subject: PanelSubject,
  message: PanelRequestMessage,
): ParseResult<RoutedPanelRequest> {
  if (isCommonRequest(message)) return { ok: true, value: { kind: 'any', message } };
  if (subject.kind === 'delegation' && isDelegationRequest(message))
    return { ok: true, value: { kind: 'delegation', subject, message } };
  if (subject.kind === 'agentReview' && isAgentReviewRequest(message))
    return { ok: true, value: { kind: 'agentReview', subject, message } };
  const wanted = PANEL_REQUEST_KIND[message.method];
  return {
    ok: false,
    error: `${message.method} is a request for ${KIND_NAMES[wanted]}'s panel, and this panel shows ${KIND_NAMES[subject.kind]}. Close it and open the panel from the Delegations or Agents view.`,
  };
}

/** One handler per request of a set, each given the panel's subject and that request's params. */
export type PanelRequestHandlers<S extends PanelSubject, Rs extends RequestSet<Rs>> = {
  readonly [M in keyof Rs]: (subject: S, params: Rs[M]['params']) => Promise<Rs[M]['result']>;
};

/** The handlers of every kind of panel that makes requests of its own. */
export interface PanelHandlers {
  readonly delegation: PanelRequestHandlers<SubjectOf<'delegation'>, DelegationRequests>;
  readonly agentReview: PanelRequestHandlers<SubjectOf<'agentReview'>, AgentReviewRequests>;
}

/** Calls the handler of a request's method; its result is typed by that method. */
export function dispatchPanelRequest<S extends PanelSubject, Rs extends RequestSet<Rs>, M extends keyof Rs>(
  handlers: PanelRequestHandlers<S, Rs>,
  subject: S,
  message: { readonly method: M; readonly params: Rs[M]['params'] },
): Promise<Rs[M]['result']> {
  return handlers[message.method](subject, message.params);
}
