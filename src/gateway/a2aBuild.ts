/** Small constructors for the SDK's in-memory A2A objects (ts-proto style: every field present). */
import { randomUUID } from 'node:crypto';
import { Role } from '@a2a-js/sdk';
import type { Artifact, Message, Part, StreamResponse, TaskState } from '@a2a-js/sdk';
import { META } from '../core/batonProfile';

export function textPart(text: string, mediaType = '', filename = ''): Part {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename, mediaType };
}

export function agentMessage(
  taskId: string,
  contextId: string,
  text: string,
  metadata?: Record<string, unknown>,
): Message {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [textPart(text)],
    metadata,
    extensions: [],
    referenceTaskIds: [],
  };
}

export function statusEvent(
  taskId: string,
  contextId: string,
  state: TaskState,
  text?: string,
  metadata?: Record<string, unknown>,
  /** The status message's own metadata (kept in the task's snapshot too, unlike the event's). */
  messageMetadata?: Record<string, unknown>,
): StreamResponse {
  return {
    payload: {
      $case: 'statusUpdate',
      value: {
        taskId,
        contextId,
        status: {
          state,
          message: text === undefined ? undefined : agentMessage(taskId, contextId, text, messageMetadata),
          timestamp: new Date().toISOString(),
        },
        metadata,
      },
    },
  };
}

export function artifactEvent(
  taskId: string,
  contextId: string,
  artifact: Artifact,
  append: boolean,
  lastChunk: boolean,
): StreamResponse {
  return {
    payload: {
      $case: 'artifactUpdate',
      value: { taskId, contextId, artifact, append, lastChunk, metadata: undefined },
    },
  };
}

/** Splits text into pieces of at most `max` UTF-16 units without cutting a surrogate pair. */
export function chunkText(text: string, max: number): string[] {
  if (text.length <= max) return [text];
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    let end = Math.min(i + max, text.length);
    const c = text.charCodeAt(end - 1);
    if (end < text.length && c >= 0xd800 && c <= 0xdbff) end--;
    out.push(text.slice(i, end));
    i = end;
  }
  return out;
}

/** The text a request carries, for agents that take a prompt: text parts as they are, data as JSON. */
export function promptOf(parts: readonly Part[]): string {
  const out: string[] = [];
  for (const p of parts) {
    const c = p.content;
    if (!c) continue;
    if (c.$case === 'text') out.push(c.value);
    else if (c.$case === 'data') out.push(JSON.stringify(c.value, null, 2));
    else if (c.$case === 'url') out.push(`(${p.filename || 'file'}: ${c.value})`);
    else out.push(`(${p.filename || 'attachment'}, ${c.value.length} bytes, ${p.mediaType || 'binary'})`);
  }
  return out.join('\n\n');
}

/** The task text alone: the text parts that are not context (a selection's or a file's text names paths of its own). */
export function taskTextOf(parts: readonly Part[]): string {
  const out: string[] = [];
  for (const p of parts) {
    if (p.content?.$case === 'text' && p.metadata?.[META.context] === undefined) out.push(p.content.value);
  }
  return out.join('\n\n');
}

/** The paths the context parts (Baton's profile) are about: selections, files, and the files of diagnostics. */
export function contextPathsOf(parts: readonly Part[]): string[] {
  const out: string[] = [];
  for (const p of parts) {
    const kind: unknown = p.metadata?.[META.context];
    if ((kind === 'selection' || kind === 'file') && p.filename) out.push(p.filename);
    if (kind === 'diagnostics' && p.content?.$case === 'data' && Array.isArray(p.content.value)) {
      for (const d of p.content.value as unknown[]) {
        const path: unknown = d && typeof d === 'object' ? (d as { path?: unknown }).path : undefined;
        if (typeof path === 'string' && path) out.push(path);
      }
    }
  }
  return [...new Set(out)];
}
