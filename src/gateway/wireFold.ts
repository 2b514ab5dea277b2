/**
 * How events fold into a task snapshot, in the A2A wire JSON both are kept in: what a task's writer
 * does with each event it stores, and what the store does when it reads a task whose snapshot is
 * older than its last events (the writer does not store the snapshot with every batch). Nothing here
 * needs the SDK, so the store's thread can fold too.
 */
import { META } from '../core/batonProfile';
import { isRecord } from '../core/isRecord';

/** A JSON object as it travels on the wire. */
export type Json = Record<string, unknown>;

/** One `StreamResponse` in its A2A wire JSON form: exactly one of these keys. */
export type WireKind = 'task' | 'message' | 'statusUpdate' | 'artifactUpdate';
export type WireEvent = Json;

const WIRE_KINDS: readonly WireKind[] = ['task', 'message', 'statusUpdate', 'artifactUpdate'];

/** The event's kind when it has exactly one, else undefined. */
export function wireKind(ev: WireEvent): WireKind | undefined {
  let found: WireKind | undefined;
  for (const k of WIRE_KINDS) {
    if (ev[k] === undefined) continue;
    if (found || !isRecord(ev[k])) return undefined;
    found = k;
  }
  return found;
}

function withoutSeq(md: Json): Json {
  if (!(META.seq in md)) return md;
  const { [META.seq]: _seq, ...rest } = md;
  void _seq;
  return rest;
}

/** Applies one event to a task snapshot (both wire JSON) the way a client would see it (A2A §3.7: GetTask is the truth). */
export function foldWire(task: Json, ev: WireEvent, k: WireKind | undefined = wireKind(ev)): void {
  if (!k) return;
  const v = ev[k] as Json;
  switch (k) {
    case 'task':
      task.status = v.status;
      task.artifacts = v.artifacts;
      task.history = v.history;
      task.metadata = {
        ...(isRecord(task.metadata) ? task.metadata : {}),
        ...(isRecord(v.metadata) ? v.metadata : {}),
      };
      break;
    case 'statusUpdate':
      // Progress messages stay in the event log (replayable); the snapshot keeps the latest status
      // only, so it does not grow with every step an agent reports.
      if (v.status !== undefined) task.status = v.status;
      if (isRecord(v.metadata))
        task.metadata = { ...(isRecord(task.metadata) ? task.metadata : {}), ...withoutSeq(v.metadata) };
      break;
    case 'artifactUpdate': {
      const a = v.artifact as Json;
      const arts = Array.isArray(task.artifacts) ? [...(task.artifacts as Json[])] : [];
      const i = arts.findIndex((x) => isRecord(x) && x.artifactId === a.artifactId);
      if (i < 0) arts.push(a);
      else if (v.append === true)
        arts[i] = {
          ...arts[i],
          parts: [
            ...(Array.isArray(arts[i].parts) ? (arts[i].parts as unknown[]) : []),
            ...(Array.isArray(a.parts) ? a.parts : []),
          ],
        };
      else arts[i] = a;
      task.artifacts = arts;
      break;
    }
    case 'message':
      task.history = [...(Array.isArray(task.history) ? task.history : []), v];
      break;
  }
}

/**
 * A stored snapshot (see `TaskWriter.snapshotJson`) brought up to date with the events stored after
 * it, in seq order: the snapshot the writer had when it stored the last of them, `baton/seq` included.
 * An event whose body does not parse is passed over (the writer stored only JSON it had folded).
 */
export function foldStoredSnapshot(snapshot: string, bodies: readonly string[], lastSeq: number): string {
  const task = JSON.parse(snapshot) as Json;
  for (const b of bodies) {
    let ev: unknown;
    try {
      ev = JSON.parse(b);
    } catch {
      continue;
    }
    if (isRecord(ev)) foldWire(task, ev);
  }
  task.metadata = { ...(isRecord(task.metadata) ? task.metadata : {}), [META.seq]: lastSeq };
  return JSON.stringify(task);
}
