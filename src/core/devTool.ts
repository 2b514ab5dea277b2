/**
 * The development-tool extension of A2A as Gemini CLI's A2A server speaks it (0.25.x): every event is
 * a status update whose `metadata.coderAgent.kind` says what it carries (`state-change`,
 * `tool-call-update`, `tool-call-confirmation`, `text-content`, `thought`); a tool call is a status
 * update whose message holds one data part `{request:{callId,name,args}, status, confirmationDetails?,
 * response?, tool:{name, displayName, kind, description, parameterSchema}}`. The user answers a tool
 * call awaiting approval with a new message on the task whose parts hold `{callId, outcome}`.
 *
 * Pure and tolerant: a field missing or of the wrong type is left out, never an error. Only what is
 * shown is kept (the tool's schema and long description are dropped before anything is journaled).
 */
import type { Part, StreamResponse } from '@a2a-js/sdk';
import { createTwoFilesPatch } from 'diff';
import { isRecord } from './isRecord';
import type { ToolCallConfirmation, ToolCallEdit, ToolCallStatus, ToolCallView } from './protocol/toolCalls';

/** The extension's URI (its spec in the Gemini CLI repository), declared with `A2A-Extensions`. */
export const DEV_TOOL_EXTENSION_URI =
  'https://github.com/google-gemini/gemini-cli/blob/main/docs/a2a/developer-profile/v0/spec.md';

const STATUSES: ReadonlySet<string> = new Set([
  'validating',
  'scheduled',
  'awaiting_approval',
  'executing',
  'success',
  'error',
  'cancelled',
]);

/** Longest argument string kept for display; file contents travel in `edit`, not in `args`. */
const ARG_CHARS = 2000;
const OUTPUT_CHARS = 4000;
const DESCRIPTION_CHARS = 200;
/** Longest file content kept for the patch (a larger edit is shown, not offered as a patch). */
const CONTENT_CHARS = 2_000_000;

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function shorten(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max)}…` : s;
}

/** `metadata.coderAgent.kind` of an event, when the agent speaks the development-tool dialect. */
export function coderAgentKind(metadata: unknown): string | undefined {
  if (!isRecord(metadata)) return undefined;
  const c = metadata.coderAgent;
  return isRecord(c) ? str(c.kind) : undefined;
}

/** A data part that is a tool call (it names a request with a call id). */
export function isToolCallData(data: unknown): data is Record<string, unknown> {
  return isRecord(data) && isRecord(data.request) && typeof data.request.callId === 'string';
}

/** The tool-call data with what is never shown dropped: the tool's schema, its long description. */
export function slimToolCallData(data: Record<string, unknown>): Record<string, unknown> {
  const tool = data.tool;
  if (!isRecord(tool)) return data;
  const slim: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(tool)) {
    if (k === 'parameterSchema' || k === 'schema') continue;
    slim[k] = k === 'description' && typeof v === 'string' ? shorten(v, DESCRIPTION_CHARS) : v;
  }
  return { ...data, tool: slim };
}

/** The outcomes an agent accepts for a confirmation of this type (the extension's `ToolConfirmationOutcome`). */
export function toolCallOptions(type: string | undefined): string[] {
  if (type === 'mcp') return ['proceed_once', 'proceed_always_tool', 'proceed_always_server', 'cancel'];
  return ['proceed_once', 'proceed_always', 'cancel'];
}

function boundedArgs(args: unknown): Record<string, unknown> {
  if (!isRecord(args)) return {};
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(args)) {
    if (typeof v === 'string') out[k] = shorten(v, ARG_CHARS);
    else if (typeof v === 'number' || typeof v === 'boolean' || v === null) out[k] = v;
    else {
      const json = JSON.stringify(v) ?? '';
      out[k] = json.length > ARG_CHARS ? shorten(json, ARG_CHARS) : v;
    }
  }
  return out;
}

function confirmationOf(d: unknown): ToolCallConfirmation | undefined {
  if (!isRecord(d)) return undefined;
  const type = str(d.type);
  if (!type) return undefined;
  const c: Record<string, string> = { type };
  for (const k of ['title', 'fileName', 'filePath', 'command', 'rootCommand', 'serverName', 'toolName', 'prompt']) {
    const v = str(d[k]);
    if (v !== undefined) c[k] = shorten(v, ARG_CHARS);
  }
  const diff = str(d.fileDiff);
  if (diff !== undefined) c.fileDiff = shorten(diff, CONTENT_CHARS);
  return c as unknown as ToolCallConfirmation;
}

function editOf(d: unknown): ToolCallEdit | undefined {
  if (!isRecord(d)) return undefined;
  const filePath = str(d.filePath);
  const newContent = str(d.newContent);
  if (!filePath || newContent === undefined || newContent.length > CONTENT_CHARS) return undefined;
  const original = str(d.originalContent);
  if (original !== undefined && original.length > CONTENT_CHARS) return undefined;
  return original === undefined ? { filePath, newContent } : { filePath, originalContent: original, newContent };
}

function outputOf(response: unknown): { output?: string; error?: string } {
  if (!isRecord(response)) return {};
  const out: { output?: string; error?: string } = {};
  const display = response.resultDisplay;
  if (typeof display === 'string') out.output = shorten(display, OUTPUT_CHARS);
  else if (isRecord(display) && typeof display.fileDiff === 'string')
    out.output = shorten(display.fileDiff, OUTPUT_CHARS);
  const error = response.error;
  if (typeof error === 'string') out.error = shorten(error, OUTPUT_CHARS);
  else if (isRecord(error) && typeof error.message === 'string') out.error = shorten(error.message, OUTPUT_CHARS);
  return out;
}

/** A tool call as shown, from one tool-call data part; undefined when it is not one. */
export function toolCallFromData(data: unknown): ToolCallView | undefined {
  if (!isToolCallData(data)) return undefined;
  const request = data.request as Record<string, unknown>;
  const tool = isRecord(data.tool) ? data.tool : {};
  const status = str(data.status);
  const confirmation = confirmationOf(data.confirmationDetails);
  const response = isRecord(data.response) ? data.response : undefined;
  const edit =
    editOf(data.confirmationDetails) ?? editOf(response?.resultDisplay) ?? editOfWrite(request.name, request.args);
  const { output, error } = outputOf(response);
  const name = str(request.name) ?? str(tool.name) ?? '(unnamed tool)';
  return {
    callId: request.callId as string,
    name,
    ...(str(tool.displayName) ? { displayName: str(tool.displayName) } : {}),
    ...(str(tool.kind) ? { kind: str(tool.kind) } : {}),
    status: status && STATUSES.has(status) ? (status as ToolCallStatus) : 'unknown',
    args: boundedArgs(request.args),
    ...(confirmation ? { confirmation } : {}),
    options: status === 'awaiting_approval' ? toolCallOptions(confirmation?.type) : [],
    ...(output !== undefined ? { output } : {}),
    ...(error !== undefined ? { error } : {}),
    ...(edit ? { edit } : {}),
  };
}

/** `write_file` names the whole new content in its arguments (the file's earlier content is not known). */
function editOfWrite(name: unknown, args: unknown): ToolCallEdit | undefined {
  if (name !== 'write_file' || !isRecord(args)) return undefined;
  const filePath = str(args.file_path);
  const content = str(args.content);
  return filePath && content !== undefined && content.length <= CONTENT_CHARS
    ? { filePath, newContent: content }
    : undefined;
}

/**
 * The latest state of a tool call from an update: what a later update leaves out (the confirmation, the
 * edit's contents, the options it offered) is kept from the earlier one.
 */
export function mergeToolCall(prev: ToolCallView | undefined, next: ToolCallView): ToolCallView {
  if (!prev) return next;
  const merged: ToolCallView = {
    ...prev,
    ...next,
    args: Object.keys(next.args).length > 0 ? next.args : prev.args,
    ...((next.confirmation ?? prev.confirmation) ? { confirmation: next.confirmation ?? prev.confirmation } : {}),
    ...((next.edit ?? prev.edit) ? { edit: mergeEdit(prev.edit, next.edit) } : {}),
    ...(prev.autoApproved ? { autoApproved: true } : {}),
    ...(prev.answered ? { answered: prev.answered } : {}),
  };
  return merged;
}

function mergeEdit(prev: ToolCallEdit | undefined, next: ToolCallEdit | undefined): ToolCallEdit | undefined {
  if (!prev || !next) return next ?? prev;
  // A later report without the earlier content (write_file's arguments) keeps the content seen first.
  if (next.originalContent === undefined && prev.originalContent !== undefined && prev.filePath === next.filePath)
    return { ...next, originalContent: prev.originalContent };
  return next;
}

/** One line for a tool call: its name, the file or command, its status. */
export function toolCallLine(c: ToolCallView): string {
  const label = c.displayName && c.displayName !== c.name ? `${c.displayName} (${c.name})` : c.name;
  const what =
    c.confirmation?.command ??
    c.confirmation?.fileName ??
    c.edit?.filePath ??
    str(c.args.file_path) ??
    str(c.args.command) ??
    '';
  return `${label}${what ? ` ${what}` : ''}: ${c.status.replace(/_/g, ' ')}`;
}

/** The first `maxLines` lines of a diff, with a count of the rest. */
export function shortDiff(diff: string, maxLines = 20): string {
  const lines = diff.replace(/\n$/, '').split('\n');
  if (lines.length <= maxLines) return lines.join('\n');
  return `${lines.slice(0, maxLines).join('\n')}\n… ${lines.length - maxLines} more lines`;
}

/** Tool calls awaiting the user's answer (the ones the agent reported last as `awaiting_approval`). */
export function pendingToolCalls(calls: readonly ToolCallView[]): ToolCallView[] {
  return calls.filter((c) => c.status === 'awaiting_approval' && c.answered === undefined);
}

function normalizeDir(p: string): string {
  return p.replace(/\\/g, '/').replace(/\/+$/, '');
}

/**
 * The workspace root the agent works in, from what it reported: a tool call's confirmation title names
 * the file relative to the root ("Confirm Edit: src/a.ts") beside its absolute `filePath`.
 */
export function workspaceRootOf(calls: readonly ToolCallView[]): string | undefined {
  for (const c of calls) {
    const title = c.confirmation?.title;
    const filePath = c.confirmation?.filePath ?? c.edit?.filePath;
    if (!title || !filePath) continue;
    const rel = /:\s*(.+)$/.exec(title)?.[1]?.trim();
    if (!rel || rel.includes('...') || rel.startsWith('/')) continue;
    const abs = filePath.replace(/\\/g, '/');
    const suffix = `/${rel.replace(/\\/g, '/')}`;
    if (abs.endsWith(suffix) && abs.length > suffix.length) return abs.slice(0, abs.length - suffix.length);
  }
  return undefined;
}

export type ToolCallPatch =
  | { readonly kind: 'patch'; readonly text: string; readonly files: readonly string[] }
  /** Files outside the workspace root (or no root reported for them): no patch is offered. */
  | { readonly kind: 'outside'; readonly root: string | undefined; readonly paths: readonly string[] };

function relativeTo(root: string, filePath: string): string | undefined {
  const r = normalizeDir(root);
  const p = filePath.replace(/\\/g, '/');
  if (!p.startsWith(`${r}/`)) return undefined;
  const rel = p.slice(r.length + 1);
  const parts = rel.split('/');
  if (parts.some((s) => s === '..' || s === '.' || s === '')) return undefined;
  return rel;
}

/**
 * The git-style unified diff of what the succeeded edit tool calls did, relative to `root`: one diff per
 * file, from the content before its first edit to the content after its last, files in the order they
 * were first edited. Undefined when no edit succeeded.
 */
export function toolCallsPatch(calls: readonly ToolCallView[], root: string | undefined): ToolCallPatch | undefined {
  const edits = calls.filter((c) => c.status === 'success' && c.edit).map((c) => c.edit as ToolCallEdit);
  if (edits.length === 0) return undefined;
  const outside = [...new Set(edits.map((e) => e.filePath).filter((p) => !root || !relativeTo(root, p)))];
  if (outside.length > 0 || !root) return { kind: 'outside', root, paths: outside };
  const files = new Map<string, { before: string | undefined; after: string }>();
  for (const e of edits) {
    const rel = relativeTo(root, e.filePath) as string;
    const seen = files.get(rel);
    if (seen) seen.after = e.newContent;
    else files.set(rel, { before: e.originalContent, after: e.newContent });
  }
  const out: string[] = [];
  for (const [rel, { before, after }] of files) {
    if (before === after) continue;
    const created = before === undefined;
    const body = createTwoFilesPatch(created ? '/dev/null' : `a/${rel}`, `b/${rel}`, before ?? '', after, '', '', {
      context: 3,
    });
    // createTwoFilesPatch starts with a rule (and an "Index:" line when given a name); git's header replaces them.
    const hunks = body.slice(body.indexOf('--- '));
    out.push(`diff --git a/${rel} b/${rel}\n${created ? 'new file mode 100644\n' : ''}${hunks}`);
  }
  if (out.length === 0) return undefined;
  return { kind: 'patch', text: out.join(''), files: [...files.keys()] };
}

/** The answers to tool calls a message carries (its `{callId, outcome}` data parts). */
export function toolAnswersOf(parts: readonly Part[] | undefined): { callId: string; outcome: string }[] {
  const out: { callId: string; outcome: string }[] = [];
  for (const p of parts ?? []) {
    if (p.content?.$case !== 'data') continue;
    const v: unknown = p.content.value;
    if (isRecord(v) && typeof v.callId === 'string' && typeof v.outcome === 'string' && !isRecord(v.request))
      out.push({ callId: v.callId, outcome: v.outcome });
  }
  return out;
}

/** The parts of the message that answers a tool call: the data part the agent reads. */
export function toolAnswerParts(callId: string, outcome: string): Part[] {
  return [{ content: { $case: 'data', value: { callId, outcome } }, metadata: undefined, filename: '', mediaType: '' }];
}

/** The event with its tool-call data parts slimmed (`slimToolCallData`), for the journal. */
export function slimDevToolEvent(ev: StreamResponse): StreamResponse {
  const p = ev.payload;
  if (p?.$case !== 'statusUpdate' || coderAgentKind(p.value.metadata) === undefined) return ev;
  const message = p.value.status?.message;
  if (!message || !message.parts.some((x) => x.content?.$case === 'data' && isToolCallData(x.content.value))) return ev;
  const parts = message.parts.map((x) =>
    x.content?.$case === 'data' && isToolCallData(x.content.value)
      ? { ...x, content: { $case: 'data' as const, value: slimToolCallData(x.content.value) } }
      : x,
  );
  const status = { ...(p.value.status as NonNullable<typeof p.value.status>), message: { ...message, parts } };
  return { ...ev, payload: { $case: 'statusUpdate', value: { ...p.value, status } } };
}
