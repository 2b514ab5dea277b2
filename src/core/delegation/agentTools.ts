/**
 * The four tools chat agents delegate through (VS Code's language-model tools; `baton mcp` offers the
 * same four): their names, their input as the model sends it (untrusted, checked here with errors that
 * say what to send instead), the text shown before anything is sent, and the burst cap on
 * agent-started delegations. Pure: the extension (src/extension/lm/) does the I/O.
 */
import { isFinalOutcome } from '../delegation';
import { isRecord } from '../isRecord';
import type { DelegationRecord } from './record';
import type { Translate } from '../protocol/l10n';
import type { CapabilitySet } from '../protocol/delegationView';

/** Tool names, as contributed in package.json (`contributes.languageModelTools`). */
export const AGENT_TOOL_NAMES = {
  findAgents: 'baton_find_agents',
  delegate: 'baton_delegate',
  getTask: 'baton_get_task',
  cancelTask: 'baton_cancel_task',
} as const;

/** How long `delegate` waits for the task to settle before it answers with the running task's id. */
export const DELEGATE_WAIT_MS = 50_000;

/** The longest task text a tool call may send. */
export const MAX_TASK_CHARS = 20_000;
/** The most files one tool call may name as context. */
export const MAX_CONTEXT_FILES = 20;
export const MAX_DEADLINE_MINUTES = 24 * 60;

export type ToolInput<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: string };

export interface FindAgentsInput {
  /** Words to match against names, descriptions and skills; every agent when absent. */
  readonly query?: string;
}

export interface DelegateInput {
  /** An agent's id (its card URL) as find agents lists it. */
  readonly agent: string;
  readonly task: string;
  /** Workspace-relative paths (with `/`), checked: no absolute path, no `..`. */
  readonly files: readonly string[];
  /** Send the active editor's selection. */
  readonly selection: boolean;
  /** Only what was asked for: read-only when absent. */
  readonly capabilities: CapabilitySet;
  readonly deadlineMinutes?: number;
  /** The delegation this one is started from within, for the task tree. */
  readonly parentRequestId?: string;
}

export interface TaskInput {
  /** The delegation's id, as delegate answered it. */
  readonly id: string;
}

const DELEGATION_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

function unexpected(o: Record<string, unknown>, allowed: readonly string[], tool: string): string | undefined {
  const extra = Object.keys(o).filter((k) => !allowed.includes(k));
  if (!extra.length) return undefined;
  return `${tool}: unknown field(s) ${extra.map((k) => JSON.stringify(k.slice(0, 40))).join(', ')}; the fields are ${allowed.join(', ')}.`;
}

export function parseFindAgentsInput(raw: unknown): ToolInput<FindAgentsInput> {
  if (raw === undefined || raw === null) return { ok: true, value: {} };
  if (!isRecord(raw)) return { ok: false, error: `${AGENT_TOOL_NAMES.findAgents}: the input must be an object.` };
  const bad = unexpected(raw, ['query'], AGENT_TOOL_NAMES.findAgents);
  if (bad) return { ok: false, error: bad };
  if (raw.query !== undefined && typeof raw.query !== 'string')
    return {
      ok: false,
      error: `${AGENT_TOOL_NAMES.findAgents}: "query" must be a string, or left out to list every agent.`,
    };
  const query = typeof raw.query === 'string' ? raw.query.trim().slice(0, 200) : '';
  return { ok: true, value: query ? { query } : {} };
}

/**
 * A workspace-relative path as the model wrote it, normalised to `/`, or why it is refused: absolute
 * paths, drive letters, `..` and empty segments, NUL and other control characters never reach the file
 * system.
 */
export function workspacePath(p: string): { ok: true; path: string } | { ok: false; reason: string } {
  const path = p.trim().replace(/\\/g, '/').replace(/^\.\//, '');
  if (!path) return { ok: false, reason: 'an empty path' };
  if (path.length > 1000) return { ok: false, reason: 'a path longer than 1000 characters' };
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(path))
    return { ok: false, reason: `${JSON.stringify(path)} holds control characters` };
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path) || path.startsWith('~'))
    return { ok: false, reason: `${JSON.stringify(path)} is not relative to the workspace folder` };
  const segments = path.replace(/\/$/, '').split('/');
  if (segments.some((s) => s === '..' || s === '' || s === '.'))
    return { ok: false, reason: `${JSON.stringify(path)} leaves the workspace folder or has empty segments` };
  return { ok: true, path: segments.join('/') };
}

const CAPABILITY_KEYS = ['write', 'shell', 'network'] as const;
const CAPABILITY_WORDS = { write: 'write', shell: 'shell', network: 'network' } as const;

export function parseDelegateInput(raw: unknown): ToolInput<DelegateInput> {
  const tool = AGENT_TOOL_NAMES.delegate;
  if (!isRecord(raw))
    return { ok: false, error: `${tool}: the input must be an object with at least "agent" and "task".` };
  const bad = unexpected(
    raw,
    ['agent', 'task', 'files', 'selection', 'capabilities', 'deadlineMinutes', 'parentRequestId'],
    tool,
  );
  if (bad) return { ok: false, error: bad };
  if (typeof raw.agent !== 'string' || !raw.agent.trim())
    return {
      ok: false,
      error: `${tool}: "agent" is required: the id of an agent from ${AGENT_TOOL_NAMES.findAgents} (its card URL).`,
    };
  if (raw.agent.length > 2048) return { ok: false, error: `${tool}: "agent" is longer than 2048 characters.` };
  if (typeof raw.task !== 'string' || !raw.task.trim())
    return { ok: false, error: `${tool}: "task" is required: say what the agent should do, in plain words.` };
  if (raw.task.length > MAX_TASK_CHARS)
    return {
      ok: false,
      error: `${tool}: "task" is ${raw.task.length} characters; at most ${MAX_TASK_CHARS}. Name files in "files" instead of pasting them.`,
    };
  const files: string[] = [];
  if (raw.files !== undefined) {
    if (!Array.isArray(raw.files) || raw.files.some((f) => typeof f !== 'string'))
      return { ok: false, error: `${tool}: "files" must be a list of workspace-relative paths, like ["src/app.ts"].` };
    if (raw.files.length > MAX_CONTEXT_FILES)
      return {
        ok: false,
        error: `${tool}: "files" names ${raw.files.length} files; at most ${MAX_CONTEXT_FILES}. Name a folder, or describe the files in the task: a local agent can read the whole repository.`,
      };
    for (const f of raw.files as string[]) {
      const p = workspacePath(f);
      if (!p.ok)
        return {
          ok: false,
          error: `${tool}: "files" holds ${p.reason}. Give paths relative to the workspace folder, like "src/app.ts".`,
        };
      if (!files.includes(p.path)) files.push(p.path);
    }
  }
  if (raw.selection !== undefined && typeof raw.selection !== 'boolean')
    return { ok: false, error: `${tool}: "selection" must be true (send the active editor's selection) or false.` };
  let capabilities: CapabilitySet = { write: false, shell: false, network: false };
  if (raw.capabilities !== undefined) {
    const c = raw.capabilities;
    if (!isRecord(c))
      return {
        ok: false,
        error: `${tool}: "capabilities" must be an object like {"write": true}; leave it out for read-only.`,
      };
    const extra = unexpected(c, CAPABILITY_KEYS, `${tool} "capabilities"`);
    if (extra) return { ok: false, error: extra };
    for (const k of CAPABILITY_KEYS)
      if (c[k] !== undefined && typeof c[k] !== 'boolean')
        return { ok: false, error: `${tool}: "capabilities.${k}" must be true or false.` };
    capabilities = { write: c.write === true, shell: c.shell === true, network: c.network === true };
  }
  let deadlineMinutes: number | undefined;
  if (raw.deadlineMinutes !== undefined) {
    const d = raw.deadlineMinutes;
    if (typeof d !== 'number' || !Number.isInteger(d) || d < 1 || d > MAX_DEADLINE_MINUTES)
      return {
        ok: false,
        error: `${tool}: "deadlineMinutes" must be a whole number of minutes from 1 to ${MAX_DEADLINE_MINUTES}.`,
      };
    deadlineMinutes = d;
  }
  let parentRequestId: string | undefined;
  if (raw.parentRequestId !== undefined) {
    if (typeof raw.parentRequestId !== 'string' || !DELEGATION_ID.test(raw.parentRequestId))
      return {
        ok: false,
        error: `${tool}: "parentRequestId" must be the id of a delegation, as ${tool} or ${AGENT_TOOL_NAMES.getTask} gave it.`,
      };
    parentRequestId = raw.parentRequestId;
  }
  return {
    ok: true,
    value: {
      agent: raw.agent.trim(),
      task: raw.task.trim(),
      files,
      selection: raw.selection === true,
      capabilities,
      ...(deadlineMinutes !== undefined ? { deadlineMinutes } : {}),
      ...(parentRequestId ? { parentRequestId } : {}),
    },
  };
}

/** Input of get task and cancel task: the delegation's id. */
export function parseTaskInput(raw: unknown, tool: string): ToolInput<TaskInput> {
  if (!isRecord(raw)) return { ok: false, error: `${tool}: the input must be an object like {"id": "…"}.` };
  const bad = unexpected(raw, ['id'], tool);
  if (bad) return { ok: false, error: bad };
  if (typeof raw.id !== 'string' || !DELEGATION_ID.test(raw.id))
    return {
      ok: false,
      error: `${tool}: "id" must be a delegation's id, as ${AGENT_TOOL_NAMES.delegate} answered it.`,
    };
  return { ok: true, value: { id: raw.id } };
}

/** Capabilities in words (the same words the start flow uses). */
export function capabilitiesText(c: CapabilitySet, t: Translate): string {
  const on = CAPABILITY_KEYS.filter((k) => c[k]).map((k) => t(CAPABILITY_WORDS[k]));
  return on.length ? on.join(', ') : t('read-only (may only propose a patch)');
}

/** What the user is shown before a chat agent's delegation is sent. */
export interface DelegateConfirmationFacts {
  readonly agentName: string;
  readonly endpoint: string;
  readonly task: string;
  /** What travels besides the task, in one sentence (the start flow's `whatTravels`). */
  readonly context: string;
  readonly capabilities: CapabilitySet;
  readonly deadlineMinutes: number;
  /** The title of the delegation it is started from within, if any. */
  readonly parentTitle?: string;
}

const TASK_SHOWN_CHARS = 1_000;

/**
 * The confirmation VS Code shows before a chat agent delegates: who gets the task, the task, what
 * travels with it, what the agent may do and until when. Plain text: the agent's name and the task
 * come from a card and a model, so nothing of them is rendered as markdown.
 */
export function delegateConfirmation(
  f: DelegateConfirmationFacts,
  t: Translate,
): { readonly title: string; readonly message: string } {
  const task = f.task.length > TASK_SHOWN_CHARS ? `${f.task.slice(0, TASK_SHOWN_CHARS)}…` : f.task;
  const lines = [
    t('Agent: {0} ({1})', f.agentName, f.endpoint),
    t('Task: {0}', task),
    t('Context: {0}', f.context),
    t('Capabilities: {0}', capabilitiesText(f.capabilities, t)),
    t('Deadline: {0} minutes', f.deadlineMinutes),
    ...(f.parentTitle ? [t('Started from within: {0}', f.parentTitle)] : []),
    t(
      'A chat agent asks to start this delegation. It shows in the Delegations view like any other; a patch it returns waits for your review and is never applied by the agent.',
    ),
  ];
  return { title: t('Delegate to {0}?', f.agentName), message: lines.join('\n\n') };
}

/** The confirmation before a chat agent cancels a delegation. */
export function cancelConfirmation(
  f: { readonly title: string; readonly agentName: string; readonly state: string },
  t: Translate,
): { readonly title: string; readonly message: string } {
  return {
    title: t('Cancel the delegation to {0}?', f.agentName),
    message: [
      t('Task: {0}', f.title),
      t('State: {0}', f.state),
      t('A chat agent asks to cancel it; the agent is asked to stop.'),
    ].join('\n\n'),
  };
}

/**
 * At most `max` agent-started delegations in any `windowMs`: a model in a loop cannot flood agents.
 * Times are passed in; a refused call takes no slot.
 */
export class BurstCap {
  private readonly starts: number[] = [];

  constructor(
    readonly max = 5,
    readonly windowMs = 60_000,
  ) {}

  /** Takes a slot at `now`, or says how long until one is free. */
  take(now: number): { readonly ok: true } | { readonly ok: false; readonly retryAfterMs: number } {
    while (this.starts.length && now - this.starts[0] >= this.windowMs) this.starts.shift();
    if (this.starts.length >= this.max) return { ok: false, retryAfterMs: this.starts[0] + this.windowMs - now };
    this.starts.push(now);
    return { ok: true };
  }
}

/** The refusal a model reads when the burst cap is reached. */
export function burstCapError(cap: BurstCap, retryAfterMs: number): string {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return `${AGENT_TOOL_NAMES.delegate}: refused: chat agents may start at most ${cap.max} delegations per ${Math.round(cap.windowMs / 1000)} seconds, and that many were started. Follow the running ones with ${AGENT_TOOL_NAMES.getTask}, or try again in ${seconds} seconds.`;
}

/** The returned patch, in numbers per file, as get task reports it. */
export interface PatchSummary {
  readonly files: readonly { readonly path: string; readonly added: number; readonly removed: number }[];
  readonly additions: number;
  readonly deletions: number;
}

/** The command that opens a delegation's patch for the user's review; the tools never apply anything. */
export const REVIEW_COMMAND = 'baton.reviewChanges';

const RESULT_CHARS = 8_000;
const STEP_CHARS = 500;

function clip(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max)}… (${s.length - max} more characters)` : s;
}

/**
 * What get task (and delegate, when the task settled within its wait) tells the model: where the
 * delegation is, its last steps, the agent's question, its result and the patch's summary with how
 * the user opens its review. English, like the CLI's output: it is read by a model. The agent's own
 * words are marked as such, so the model can tell them from Baton's.
 */
export function taskReport(
  r: DelegationRecord,
  extras: { readonly patch?: PatchSummary; readonly steps?: number; readonly children?: readonly string[] } = {},
): string {
  const out: string[] = [
    `Delegation ${r.requestId}: "${r.title}" to ${r.agent.name}.`,
    `State: ${r.state}${r.outcome && r.outcome !== r.state ? ` (outcome ${r.outcome})` : ''}.`,
  ];
  if (r.parentRequestId) out.push(`Started from within delegation ${r.parentRequestId}.`);
  if (r.outcomeReason && r.outcome && r.outcome !== 'completed') out.push(`Reason: ${clip(r.outcomeReason, 2000)}`);
  const steps = r.timeline.filter((e) => e.kind === 'step' || e.kind === 'status').slice(-(extras.steps ?? 5));
  if (steps.length) {
    out.push('Last steps (the agent’s words):');
    for (const e of steps)
      out.push(`- ${e.kind === 'status' ? `[${e.state}] ` : ''}${clip(e.text ?? '', STEP_CHARS).replace(/\n/g, ' ')}`);
  }
  if (r.state === 'input-required' && r.prompt)
    out.push(
      `The agent asks (its words): ${clip(r.prompt, 4000)}`,
      'The user answers it in the delegation’s panel (Baton: Open Delegation); tell the user what it asks.',
    );
  if (r.state === 'auth-required')
    out.push('The agent needs authorization: the user sets a token or signs in from the delegation’s panel.');
  const answer = [...r.timeline].reverse().find((e) => e.kind === 'message' && e.role === 'agent');
  const resultText =
    r.outcome === 'completed' ? (answer?.kind === 'message' ? answer.text : r.outcomeReason) : undefined;
  if (resultText) out.push(`Result (the agent’s words):\n${clip(resultText, RESULT_CHARS)}`);
  const p = extras.patch;
  if (p) {
    out.push(
      `Patch: ${p.files.length} file(s), +${p.additions} −${p.deletions}, waiting for the user's review (nothing is applied):`,
      ...p.files.slice(0, 50).map((f) => `- ${f.path} (+${f.added} −${f.removed})`),
      ...(p.files.length > 50 ? [`- … and ${p.files.length - 50} more`] : []),
      `The user opens the review with the command ${REVIEW_COMMAND} and the argument "${r.requestId}" (or Review Changes in its panel). Only the user can apply it.`,
    );
  } else if (r.resultCheck?.signature.status === 'invalid')
    out.push(`The result did not verify, so Baton will not offer it for review: ${r.resultCheck.signature.detail}`);
  if (extras.children?.length) out.push(`Children: ${extras.children.join('; ')}`);
  if (!isFinalOutcome(r.outcome) && r.state !== 'unknown')
    out.push(`Still running: follow it with ${AGENT_TOOL_NAMES.getTask} {"id": "${r.requestId}"}.`);
  if (r.state === 'unknown')
    out.push('Baton lost contact and cannot tell how it ended; the user can press Check Again in its panel.');
  return out.join('\n');
}
