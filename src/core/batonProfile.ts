/**
 * Baton's A2A profile: the extension URIs Baton declares in agent cards and negotiates with the
 * `A2A-Extensions` header, and the metadata keys Baton puts on messages, tasks and events. Both the
 * gateway (which serves them) and the client (which reads them) import these; nothing else spells them.
 */

/**
 * Replay profile. Every event of a task gets a per-task, strictly increasing `seq`, persisted before
 * it is sent, written as the SSE `id:` line and as event metadata `SEQ_KEY` (the SDK's client does
 * not expose SSE ids). A subscriber that sends `Last-Event-ID: <seq>` (or metadata `CURSOR_KEY` on
 * the request) gets every event after it, then live events; on a terminal task it gets the rest and
 * the stream closes.
 */
export const REPLAY_EXTENSION_URI = 'urn:baton:a2a:replay:v1';

/** Signed results: terminal tasks carry a signed envelope in task metadata `ENVELOPE_KEY`. */
export const SIGNED_RESULT_EXTENSION_URI = 'urn:baton:a2a:signed-result:v1';

export const META = {
  /** On every event (status/artifact update) and on the Task snapshot: the event's per-task sequence number. */
  seq: 'baton/seq',
  /** On a subscribe request: replay everything after this seq. */
  cursor: 'baton/cursor',
  /** On the first message: the caller's repository (absolute path on the gateway's machine). */
  repository: 'baton/repository',
  /** On the first message: the commit the caller's tree was at, and a digest of its uncommitted state. */
  baseCommit: 'baton/baseCommit',
  uncommittedDigest: 'baton/uncommittedDigest',
  /** On the first message: repository-relative files named as context. */
  files: 'baton/files',
  /** On the first message: requested capabilities `{write, shell, network}`; on the task: the effective ones. */
  capabilities: 'baton/capabilities',
  /** On the first message: the deadline, an ISO 8601 time. */
  deadline: 'baton/deadline',
  /** Delegation chain: agent ids from the root caller down, for depth/breadth/cycle guards. */
  chain: 'baton/chain',
  /** On a terminal task: the signed result envelope (compact JWS). */
  envelope: 'baton/resultEnvelope',
  /**
   * On the task, set by the gateway when it creates it: `requestDigest` (src/node/signing.ts) of the
   * request that created it, the digest its result envelope signs. Kept with the task so that an outcome
   * the gateway records after a restart (a run that ended with an earlier process) is signed for the
   * request the client sent, like any other result.
   */
  requestDigest: 'baton/requestDigest',
  /** On the task: who executed it (agent id and kind), and whether it ran confined. */
  executor: 'baton/executor',
  /** On a context part of the first message: what it is (`selection` | `file` | `diagnostics`). */
  context: 'baton/context',
  /** On a context part: `sha256:<hex>` of its content (UTF-8 text, or the JSON of a data part). */
  digest: 'baton/digest',
  /** On a selection or diagnostic part: the 0-based range `{startLine, startCharacter, endLine, endCharacter}`. */
  range: 'baton/range',
  /**
   * On a terminal task and its last status event: the outcome in Baton's words (`completed`, `failed`,
   * `canceled`, `rejected`, `expired`, `unknown`), which A2A states alone cannot tell apart (an expired
   * or orphaned task is FAILED on the wire).
   */
  outcome: 'baton/outcome',
  /**
   * On the first message of a delegation an agent started: the parent (`{taskId, requestId?, agentId}`
   * of the task that delegated), so the gateway can enforce depth, breadth and cycles and record lineage.
   */
  parent: 'baton/parent',
  /**
   * On a status event of a parent task: one of its children, as the gateway saw it start or change
   * (`ChildTaskInfo`): how the task tree reaches the client for children it did not start itself.
   */
  child: 'baton/child',
  /**
   * On a status update a proxy relays as working: the state the remote really sent. An A2A 0.3 remote
   * may send input-required with `final: false` and go on (Gemini CLI reports a tool's progress after
   * an approval that way); in A2A 1.0 that state ends the stream, so it is relayed as working.
   */
  remoteState: 'baton/remoteState',
  /**
   * On a status event of a parent task: a child it asks to start waits for the user's consent
   * (`{id, agentId, agentName, title, capabilities, expiresAt, …}`, answered with
   * `POST /baton/consent/<id>` by the local principal), then the decision (`{id, decision}`).
   */
  consent: 'baton/consent',
  /**
   * On a working status update the gateway records in a proxied task's log where it may lack events:
   * the gateway restarted while relaying a remote that cannot replay what it sent meanwhile
   * (`{reason: 'restart', lastSeq, lastEventAt, resumedAt}`; times ISO 8601). What follows is the
   * remote's task as it is now; the events in between are not in the log.
   */
  gap: 'baton/gap',
  /**
   * On the Task event a replay gets for a finished task whose event log retention compacted (after its
   * replay window): the events before it are no longer kept; this snapshot (final status, artifacts,
   * signed envelope) stands for them, and the stream then closes.
   */
  compacted: 'baton/compacted',
  /**
   * On the message of a `submitted` status: the gateway holds the task until its turn, as its
   * principal already has `limit` tasks running there (`{place, limit}`; place 1: it starts next). On
   * the message, so a task read with GetTask says it too.
   */
  turn: 'baton/turn',
} as const;

/** A child task, as a gateway reports it on its parent's stream (`META.child`). */
export interface ChildTaskInfo {
  readonly taskId: string;
  readonly contextId?: string;
  /** The agent the child went to: its route id at this gateway, or its card URL. */
  readonly agentId: string;
  readonly agentName: string;
  /** The task's first line, at most 200 characters. */
  readonly title: string;
  /** The child's A2A state in 1.0 words (`working`, `completed`, …). */
  readonly state: string;
  /** Baton's outcome once it ended (`completed`, `failed`, `canceled`, …). */
  readonly outcome?: string;
  /** Who started it: the parent's executor (agent id) through `baton mcp`. */
  readonly startedBy: string;
  /** Epoch ms. */
  readonly startedAt: number;
}

/** The artifact a coding agent returns. */
export const PATCH_ARTIFACT = { name: 'changes.patch', mediaType: 'text/x-diff' } as const;

/**
 * Agent index. A gateway's root card (`/.well-known/agent-card.json`) lists the agents it fronts as
 * the params of this extension in `capabilities.extensions` (params survive the SDK's card
 * round-trip; an unknown top-level field would not). Read by `readAgentIndex` in src/core/agentCard.ts.
 */
export const AGENT_INDEX_EXTENSION_URI = 'urn:baton:a2a:agent-index:v1';

/** One agent in a gateway's index. */
export interface AgentIndexEntry {
  /** The agent's route name: `/a2a/<id>`. */
  readonly id: string;
  readonly name: string;
  readonly description?: string;
  /** The agent's own card: absolute, or relative to the root card's URL (`/a2a/<id>/.well-known/agent-card.json`). */
  readonly cardUrl: string;
}

/** `params` of the agent-index extension entry. */
export interface AgentIndexParams {
  readonly agents: readonly AgentIndexEntry[];
}
