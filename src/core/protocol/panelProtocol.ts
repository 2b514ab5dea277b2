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

/** A request the webview sends and the host answers with a `response` carrying the same `id`. */
export interface PanelRequests {
  /** Re-read the host's view of Baton (agents, delegations, gateway) and answer with a fresh snapshot. */
  refresh: { params: NoParams; result: PanelSnapshot };
  /** Run one of the allow-listed commands. */
  runCommand: { params: { command: PanelCommand }; result: { ran: PanelCommand } };
  /** Cancel the shown delegation at the agent. */
  cancel: { params: NoParams; result: { confirmed: boolean } };
  /** Answer the agent's `input-required` question; the same task continues. */
  reply: { params: { text: string }; result: { sent: true } };
  /** Open the returned changes.patch for review. */
  reviewChanges: { params: NoParams; result: { opened: true } };
  /** Reconcile an `unknown` outcome with the agent (GetTask), never a blind retry. */
  checkAgain: { params: NoParams; result: { state: DelegationState } };
  /** `auth-required`: ask the user for a token for the agent's host (stored in SecretStorage). */
  provideToken: { params: NoParams; result: { stored: boolean } };
  /** Choose a whole file, or one hunk of it, for applying (`selected: false` leaves it out). */
  reviewSelect: { params: { fileId: string; hunkId?: string; selected: boolean }; result: { ok: true } };
  /** Select every file that can still be applied (`selected: false`: none). */
  reviewSelectAll: { params: { selected: boolean }; result: { ok: true } };
  /** Allow (or refuse again) one refused risk item. */
  reviewOverride: { params: { riskId: string; allow: boolean }; result: { ok: true } };
  /** Apply what is selected and not applied yet, as one atomic step; `threeWay` only after the user chose it. */
  reviewApply: { params: { threeWay: boolean }; result: { applied: boolean } };
  /** Discard the patch (it stays in the journal for audit). */
  reviewReject: { params: NoParams; result: { ok: true } };
  /** Restore the files every apply of this review touched. */
  reviewUndo: { params: NoParams; result: { restored: number } };
  /** Approve the reviewed card: pins its digest and the chosen endpoint. */
  approveAgent: {
    params: { digest: string; endpointUrl?: string; acknowledgeOffOrigin: boolean };
    result: { approved: boolean; message?: string };
  };
  rejectAgent: { params: NoParams; result: { ok: true } };
  /** After a 3-way apply with conflicts: finish (every conflict resolved) or abort (restore the files). */
  reviewMerge: { params: { action: 'finish' | 'abort' }; result: { ok: true } };
  /**
   * Open the full text of a timeline entry the panel shows shortened (by `seq`), or of the agent's
   * question (no `seq`), in a plain-text editor: nothing of it is rendered.
   */
  showFullText: { params: { seq?: number }; result: { opened: true } };
  /** Open one file's diff (or the changes editor for all files when no file is given). */
  reviewOpen: { params: { fileId?: string }; result: { ok: true } };
}

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

export type WebviewToHostMessage =
  | { type: 'ready'; stateVersion: number }
  | {
      [M in PanelRequestMethod]: { type: 'request'; id: number; method: M; params: PanelRequests[M]['params'] };
    }[PanelRequestMethod];

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
        case 'refresh':
        case 'cancel':
        case 'reviewChanges':
        case 'checkAgain':
        case 'provideToken':
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
