/**
 * The task tree: parent → children across every kind of delegation. Children come from two places:
 *
 * - the client's own journals: a delegation whose request names a `parentRequestId` (a chat agent that
 *   delegated from within a delegation it follows, or `baton mcp` for a CLI-started one);
 * - children a gateway started for a task (a coding CLI delegating through `baton mcp` at the gateway),
 *   reported on the parent's stream as status events whose metadata carries `META.child`
 *   (`ChildTaskInfo`); the journal keeps the latest report per child task id (`foldChildTask`).
 *
 * Pure: the Delegations view and the panel both fold the same inputs with `buildDelegationTree`.
 */
import { META, type ChildTaskInfo } from '../batonProfile';
import type { DelegationJournal } from '../delegation';
import { isRecord } from '../isRecord';
import type { DelegationChildView } from '../protocol/delegationView';

/** Who started a delegation. Journals written before this was recorded have none: a person did. */
export type StartedBy =
  | { readonly kind: 'user' }
  /** A chat agent: `via` is how it reached Baton (`vscode-lm`: VS Code's language-model tools; `mcp`: `baton mcp`). */
  | { readonly kind: 'agent'; readonly via: string; readonly agent?: string };

/** The most children one parent's journal keeps from gateway reports; later new ones are dropped. */
export const MAX_REPORTED_CHILDREN = 200;

const FIELD_CHARS = 500;

function text(v: unknown, max = FIELD_CHARS): string | undefined {
  return typeof v === 'string' && v.length > 0 ? v.slice(0, max) : undefined;
}

/** Reads `StartedBy` from a stored request: anything malformed reads as not recorded. */
export function readStartedBy(v: unknown): StartedBy | undefined {
  if (!isRecord(v)) return undefined;
  if (v.kind === 'user') return { kind: 'user' };
  if (v.kind !== 'agent') return undefined;
  const via = text(v.via, 40) ?? 'unknown';
  const agent = text(v.agent, 200);
  return agent ? { kind: 'agent', via, agent } : { kind: 'agent', via };
}

/**
 * The child a status event reports (`META.child` in its metadata), checked and bounded: it comes from
 * the gateway, so every field is untrusted. Undefined when the event reports none or the report is
 * malformed (no task id, no state).
 */
export function childTaskOf(metadata: Readonly<Record<string, unknown>> | undefined): ChildTaskInfo | undefined {
  const v = metadata?.[META.child];
  if (!isRecord(v)) return undefined;
  const taskId = text(v.taskId, 200);
  const state = text(v.state, 40);
  if (!taskId || !state) return undefined;
  const contextId = text(v.contextId, 200);
  const outcome = text(v.outcome, 40);
  const startedAt = typeof v.startedAt === 'number' && Number.isFinite(v.startedAt) ? v.startedAt : 0;
  return {
    taskId,
    ...(contextId ? { contextId } : {}),
    agentId: text(v.agentId) ?? '',
    agentName: text(v.agentName, 200) ?? text(v.agentId, 200) ?? '',
    title: text(v.title, 200) ?? '',
    state,
    ...(outcome ? { outcome } : {}),
    startedBy: text(v.startedBy, 200) ?? '',
    startedAt,
  };
}

/** The reports seen so far, per child task id, with the seq of the event that brought each. */
export type ReportedChildren = Map<string, { readonly info: ChildTaskInfo; readonly seq: number | undefined }>;

/**
 * Folds one report into `children`: the latest per child task id wins, where "latest" is the higher
 * seq when both events are sequenced (a replay after a reconnect can bring an older one again), else
 * the one applied last. At most `MAX_REPORTED_CHILDREN` children are kept.
 */
export function foldChildTask(children: ReportedChildren, info: ChildTaskInfo, seq: number | undefined): void {
  const prev = children.get(info.taskId);
  if (!prev && children.size >= MAX_REPORTED_CHILDREN) return;
  if (prev && prev.seq !== undefined && seq !== undefined && seq < prev.seq) return;
  children.set(info.taskId, { info, seq });
}

/** One delegation of this window, as the tree needs it. */
export interface TreeDelegation {
  readonly requestId: string;
  readonly parentRequestId?: string;
  readonly taskId?: string;
  readonly title: string;
  readonly agentName: string;
  readonly state: string;
  readonly outcome?: string;
  readonly startedBy?: StartedBy;
  /** Epoch ms. */
  readonly createdAt: number;
  /** Children the gateway reported on this delegation's stream. */
  readonly reportedChildren?: readonly ChildTaskInfo[];
}

/** A journal as the tree needs it: its request's lineage and who started it, its state, its reported children. */
export function treeDelegationOf(j: DelegationJournal): TreeDelegation {
  const r = j.request;
  const decided = j.decide() ?? j.recordedOutcome;
  const reported = j.childTasks();
  const startedBy = readStartedBy(r.startedBy);
  return {
    requestId: r.requestId,
    ...(r.parentRequestId ? { parentRequestId: r.parentRequestId } : {}),
    ...(j.taskId ? { taskId: j.taskId } : {}),
    title: r.title,
    agentName: r.agent.name,
    state: j.state(),
    ...(decided ? { outcome: decided.outcome } : {}),
    ...(startedBy ? { startedBy } : {}),
    createdAt: r.createdAt,
    ...(reported.length ? { reportedChildren: reported } : {}),
  };
}

export type TreeNode =
  | {
      readonly kind: 'delegation';
      readonly id: string;
      readonly delegation: TreeDelegation;
      readonly children: readonly TreeNode[];
    }
  /** A child the gateway reported that is not a delegation of this window. */
  | {
      readonly kind: 'reported';
      readonly id: string;
      readonly parentId: string;
      readonly info: ChildTaskInfo;
      readonly children: readonly TreeNode[];
    };

export interface DelegationTree {
  /** Newest first. */
  readonly roots: readonly TreeNode[];
  readonly byId: ReadonlyMap<string, TreeNode>;
  /** The node each node is shown under. */
  readonly parentOf: ReadonlyMap<string, string>;
}

/** The tree id of a child the gateway reported for `parentId`. */
export function reportedChildId(parentId: string, taskId: string): string {
  return `child:${parentId}:${taskId}`;
}

/**
 * Folds this window's delegations and the children their gateways reported into one tree. A delegation
 * is shown under its `parentRequestId` when that delegation is listed; under the delegation whose
 * gateway reported its task id otherwise; else at the top. A reported child that is itself one of this
 * window's delegations (same task id) is shown once, as the delegation. Parent links that would form a
 * loop (journals edited by hand, or a hostile report) are cut: the node is shown at the top instead.
 * Children are newest first.
 */
export function buildDelegationTree(delegations: readonly TreeDelegation[]): DelegationTree {
  const byRequest = new Map(delegations.map((d) => [d.requestId, d]));
  const byTask = new Map<string, TreeDelegation>();
  for (const d of delegations) if (d.taskId && !byTask.has(d.taskId)) byTask.set(d.taskId, d);

  const parent = new Map<string, string>();
  for (const d of delegations) {
    if (d.parentRequestId && d.parentRequestId !== d.requestId && byRequest.has(d.parentRequestId))
      parent.set(d.requestId, d.parentRequestId);
  }
  const reported: { id: string; parentId: string; info: ChildTaskInfo }[] = [];
  for (const d of delegations) {
    for (const info of d.reportedChildren ?? []) {
      const local = byTask.get(info.taskId);
      if (local) {
        if (local.requestId !== d.requestId && !parent.has(local.requestId)) parent.set(local.requestId, d.requestId);
        continue;
      }
      const id = reportedChildId(d.requestId, info.taskId);
      reported.push({ id, parentId: d.requestId, info });
      parent.set(id, d.requestId);
    }
  }
  // Cut loops: walking up from a node must reach a root.
  for (const start of [...parent.keys()]) {
    const seen = new Set<string>([start]);
    for (let at = parent.get(start); at !== undefined; at = parent.get(at)) {
      if (seen.has(at)) {
        parent.delete(start);
        break;
      }
      seen.add(at);
    }
  }

  const kids = new Map<string, { node: () => TreeNode; at: number }[]>();
  const byId = new Map<string, TreeNode>();
  const make = (id: string): TreeNode => {
    const existing = byId.get(id);
    if (existing) return existing;
    const children = (kids.get(id) ?? []).sort((a, b) => b.at - a.at).map((k) => k.node());
    const d = byRequest.get(id);
    let node: TreeNode;
    if (d) node = { kind: 'delegation', id, delegation: d, children };
    else {
      const r = reported.find((x) => x.id === id) as (typeof reported)[number];
      node = { kind: 'reported', id, parentId: r.parentId, info: r.info, children };
    }
    byId.set(id, node);
    return node;
  };
  const roots: { node: () => TreeNode; at: number }[] = [];
  const place = (id: string, at: number) => {
    const entry = { node: () => make(id), at };
    const p = parent.get(id);
    if (p === undefined) roots.push(entry);
    else {
      const list = kids.get(p);
      if (list) list.push(entry);
      else kids.set(p, [entry]);
    }
  };
  for (const d of delegations) place(d.requestId, d.createdAt);
  for (const r of reported) place(r.id, r.info.startedAt);
  const rootNodes = roots.sort((a, b) => b.at - a.at).map((r) => r.node());
  return { roots: rootNodes, byId, parentOf: parent };
}

/** What a child is, in the state words the tree and the panel use: its outcome once it has one. */
export function childState(info: Pick<ChildTaskInfo, 'state' | 'outcome'>): string {
  return info.outcome ?? info.state;
}

/** A node's children as the panel lists them. */
export function childViews(node: TreeNode | undefined): DelegationChildView[] {
  return (node?.children ?? []).map((c) =>
    c.kind === 'delegation'
      ? {
          id: c.id,
          title: c.delegation.title,
          agentName: c.delegation.agentName,
          state: c.delegation.state,
          local: true,
          startedBy: c.delegation.startedBy?.kind === 'agent' ? 'agent' : 'user',
          children: c.children.length,
        }
      : {
          id: c.id,
          title: c.info.title,
          agentName: c.info.agentName,
          state: childState(c.info),
          local: false,
          startedBy: 'agent',
          taskId: c.info.taskId,
          children: c.children.length,
        },
  );
}
