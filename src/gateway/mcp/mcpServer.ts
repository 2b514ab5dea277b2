/**
 * `baton mcp`: an MCP server over stdio, so any MCP client (Claude Code, Codex, Gemini CLI, Copilot
 * CLI, OpenCode, VS Code) can delegate through a Baton gateway. Four tools: `find_agents`,
 * `delegate`, `get_task`, `cancel_task`. Delegations run on the CLI's own client code (the
 * DelegationManager, journals in the CLI's journal folder, so `baton status` sees them); none of the
 * tools can apply a patch: a result's patch is only described (and previewed) for the caller to read.
 *
 * Bound to a task (a coding CLI the gateway runs: `BATON_PARENT_TASK` and the task's own token in
 * `BATON_TOKEN_FILE`), every delegation is a child of that task; the gateway enforces the guards
 * (docs/gateway.md "Agents that delegate") and this server adds its own burst cap.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { resolve } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type { AgentCard } from '@a2a-js/sdk';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { normalizeAgentCard, readAgentIndex } from '../../core/agentCard';
import { META } from '../../core/batonProfile';
import type { ChildTaskInfo } from '../../core/batonProfile';
import type { DelegationRecord, JournalEntry } from '../../core/delegation';
import { READ_ONLY } from '../../core/delegation/guards';
import { buildDelegationRequest, DEFAULT_DEADLINE_MINUTES, MAX_DEADLINE_MINUTES } from '../../core/delegation/request';
import { isRecord } from '../../core/isRecord';
import { normalizeCard } from '../../node/a2a/clientFactory';
import type { DelegationManager } from '../../node/a2a/delegationManager';
import { JournalStore } from '../../node/journalStore';
import { delegationRepository } from '../../node/patchDrift';
import { GATEWAY_VERSION } from '../cards';

/** The longest `delegate` and `get_task` wait before they answer with the state as it is. */
export const MAX_WAIT_SECONDS = 50;
const DEFAULT_WAIT_SECONDS = 45;
/** Characters of a patch shown in a result (the whole patch stays in the journal). */
const PATCH_PREVIEW = 4_000;
const IN_FLIGHT = new Set(['queued', 'starting', 'submitted', 'working', 'reconnecting', 'canceling']);

/** What `baton mcp` is given by the CLI around it: the gateway and the CLI's own helpers. */
export interface McpServerDeps {
  readonly gatewayUrl: string;
  readonly env: NodeJS.ProcessEnv;
  /** The CLI's journal folder. */
  readonly journalDir: string;
  /** The CLI's manager (journals in `journalDir`, the token bound to the gateway's origin). */
  openManager(): Promise<DelegationManager>;
  fetchJson(url: string): Promise<unknown>;
  /** Throws when a card's interface URL may not be called (another origin, credentials, not http). */
  checkInterfaceUrl(url: string, cardUrl: string): void;
  /** Cards by endpoint, shared with the manager's connect. */
  readonly cards: Map<string, AgentCard>;
  readonly stdin?: Readable;
  readonly stdout?: Writable;
}

/**
 * The environment `baton mcp` runs with: `BATON_TOKEN_FILE` (how the gateway hands a coding CLI its
 * task's token, so the token is in no argv or config) read into `BATON_TOKEN`.
 */
export function mcpEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const file = env.BATON_TOKEN_FILE;
  if (!file || env.BATON_TOKEN) return env;
  let token: string;
  try {
    token = readFileSync(file, 'utf8').trim();
  } catch (e) {
    throw new Error(`cannot read BATON_TOKEN_FILE ${file} (${(e as Error).message}); set BATON_TOKEN or fix the path`);
  }
  if (!token) throw new Error(`BATON_TOKEN_FILE ${file} is empty; set BATON_TOKEN or fix the file`);
  return { ...env, BATON_TOKEN: token };
}

/** The burst cap of this server (`BATON_MCP_MAX_PER_MINUTE`, default 10), on top of the gateway's. */
function burstLimit(env: NodeJS.ProcessEnv): number {
  const raw = env.BATON_MCP_MAX_PER_MINUTE;
  const n = raw ? Number(raw) : 10;
  if (!Number.isInteger(n) || n < 1 || n > 1000)
    throw new Error(`BATON_MCP_MAX_PER_MINUTE must be a whole number from 1 to 1000, got ${JSON.stringify(raw)}`);
  return n;
}

/** Runs the server until its client closes stdin; resolves with the exit code. */
export async function runMcpServer(deps: McpServerDeps): Promise<number> {
  const { server, dispose } = createMcpServer(deps);
  const transport = new StdioServerTransport(deps.stdin, deps.stdout);
  const closed = new Promise<void>((done) => {
    transport.onclose = () => done();
    (deps.stdin ?? process.stdin).once('end', () => done());
  });
  await server.connect(transport);
  await closed;
  await server.close().catch(() => undefined);
  // Delegations still running stay journaled: `baton watch <request_id>` follows them on.
  await dispose();
  return 0;
}

/** The MCP server with its four tools (connected by the caller), and how to let go of its delegations. */
export function createMcpServer(deps: McpServerDeps): { server: McpServer; dispose(): Promise<void> } {
  const parentTask = deps.env.BATON_PARENT_TASK || undefined;
  const maxPerMinute = burstLimit(deps.env);
  const started: number[] = [];
  let manager: Promise<DelegationManager> | undefined;
  const managed = (): Promise<DelegationManager> => (manager ??= deps.openManager());

  const server = new McpServer(
    { name: 'baton', version: GATEWAY_VERSION },
    {
      instructions:
        'Baton delegates tasks to other coding agents through a Baton gateway. Call find_agents to see who is there, ' +
        'delegate to hand one a task (it answers within 50 s with the state), get_task to follow it until it ends, ' +
        'cancel_task to stop it. Agents work in throwaway copies and return patches; nothing is applied to any repository.',
    },
  );

  server.registerTool(
    'find_agents',
    {
      title: 'Find agents',
      description:
        'Lists the agents the Baton gateway offers (id, name, what they do). Use an id with delegate. Read-only.',
      inputSchema: {},
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async () => {
      const rootUrl = `${deps.gatewayUrl}/.well-known/agent-card.json`;
      try {
        const agents = readAgentIndex(normalizeAgentCard(await deps.fetchJson(rootUrl)), rootUrl).map((a) => ({
          id: a.id,
          name: a.name,
          ...(a.description ? { description: a.description } : {}),
        }));
        const text = agents.length
          ? agents.map((a) => `${a.id}: ${a.name}${a.description ? ` — ${a.description}` : ''}`).join('\n')
          : 'The gateway offers no agents.';
        return result(text, { agents });
      } catch (e) {
        return failure(`Could not list the gateway's agents at ${rootUrl}: ${message(e)}`);
      }
    },
  );

  server.registerTool(
    'delegate',
    {
      title: 'Delegate a task',
      description:
        'Hands a task to another agent. It works in a throwaway copy of the repository and returns its edits as a ' +
        'patch that is never applied by this tool. Answers within wait_seconds (at most 50) with the state; when it ' +
        'is still running, follow it with get_task(request_id). Read-only unless write is true. ' +
        (parentTask
          ? 'This delegation is a child of your own task: the gateway limits how many children you may start, how deep ' +
            'they may delegate, refuses cycles, gives them at most your capabilities and deadline, and may ask the user first.'
          : 'The gateway and its guards decide whether it runs.'),
      inputSchema: {
        agent: z
          .string()
          .min(1)
          .describe(
            'The agent: an id from find_agents (for example "formatter"), or an agent card URL on the gateway.',
          ),
        task: z.string().min(1).describe('What the agent should do, in plain words, as you would tell a colleague.'),
        files: z
          .array(z.string())
          .optional()
          .describe('Repository-relative paths the agent should look at (their text is not sent; it reads its copy).'),
        write: z
          .boolean()
          .optional()
          .describe('Let the agent edit its copy of the repository (default false: it may only propose a patch).'),
        repository: z
          .string()
          .optional()
          .describe(
            parentTask
              ? 'Ignored here: your children work on the repository of your own task.'
              : 'Absolute path of the repository the task is about (default: the folder this server runs in).',
          ),
        wait_seconds: z
          .number()
          .int()
          .min(0)
          .max(MAX_WAIT_SECONDS)
          .optional()
          .describe(
            `How long to wait for the outcome before answering with the state (default ${DEFAULT_WAIT_SECONDS}).`,
          ),
        deadline_minutes: z
          .number()
          .int()
          .min(1)
          .max(MAX_DEADLINE_MINUTES)
          .optional()
          .describe(
            `When the task is canceled at the agent if it has not ended, in minutes from now (default ${DEFAULT_DEADLINE_MINUTES}).`,
          ),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: true },
    },
    async (args) => {
      const now = Date.now();
      while (started.length && started[0] <= now - 60_000) started.shift();
      if (started.length >= maxPerMinute)
        return failure(
          `Refused (burst): this server started ${started.length} delegations in the last minute; the limit is ${maxPerMinute} (BATON_MCP_MAX_PER_MINUTE). Wait, or follow the ones running with get_task.`,
        );
      let requestId: string;
      try {
        const request = await buildRequest(deps, args, parentTask);
        started.push(now);
        const m = await managed();
        await m.start(request);
        requestId = request.requestId;
      } catch (e) {
        return failure(`Could not delegate to ${args.agent}: ${message(e)}`);
      }
      const m = await managed();
      // Whatever the wait, the answer comes once the agent has the task (or refused it): a client that
      // closes this server right after `delegate` must not lose a delegation that was never sent.
      const t0 = Date.now();
      await waitFor(m, requestId, MAX_WAIT_SECONDS, (v) => v.taskId !== undefined || isSettled(v));
      const left = Math.max(0, (args.wait_seconds ?? DEFAULT_WAIT_SECONDS) - (Date.now() - t0) / 1000);
      const view = await settled(m, requestId, Math.min(left, MAX_WAIT_SECONDS - (Date.now() - t0) / 1000));
      return describe(deps, view, true);
    },
  );

  server.registerTool(
    'get_task',
    {
      title: 'Get a delegated task',
      description:
        'Where a delegation is: its state, outcome and reason, the patch it returned (described, not applied), and the ' +
        'children it started. Waits up to wait_seconds (at most 50; default 0) for it to end.',
      inputSchema: {
        request_id: z.string().min(1).describe('The request_id delegate answered with.'),
        wait_seconds: z
          .number()
          .int()
          .min(0)
          .max(MAX_WAIT_SECONDS)
          .optional()
          .describe('How long to wait for the outcome before answering (default 0: answer now).'),
      },
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    async (args) => {
      const m = await managed();
      if (!m.view(args.request_id))
        return failure(`No delegation ${args.request_id} here; use the request_id delegate answered with.`);
      return describe(deps, await settled(m, args.request_id, args.wait_seconds ?? 0), false);
    },
  );

  server.registerTool(
    'cancel_task',
    {
      title: 'Cancel a delegated task',
      description: 'Stops a delegation (and the children it started). Answers with its state once the agent stopped.',
      inputSchema: { request_id: z.string().min(1).describe('The request_id delegate answered with.') },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
    },
    async (args) => {
      const m = await managed();
      const view = m.view(args.request_id);
      if (!view) return failure(`No delegation ${args.request_id} here; use the request_id delegate answered with.`);
      if (!view.outcome || IN_FLIGHT.has(view.state)) {
        try {
          await m.cancel(args.request_id);
        } catch (e) {
          return failure(`Could not cancel ${args.request_id}: ${message(e)}`);
        }
      }
      return describe(deps, await settled(m, args.request_id, 15), false);
    },
  );
  return {
    server,
    async dispose() {
      if (manager) (await manager.catch(() => undefined))?.dispose();
    },
  };
}

interface DelegateArgs {
  readonly agent: string;
  readonly task: string;
  readonly files?: readonly string[];
  readonly write?: boolean;
  readonly repository?: string;
  readonly deadline_minutes?: number;
}

/** The request, built as `baton delegate` builds it; bound to a task, it names that task as its parent. */
async function buildRequest(deps: McpServerDeps, args: DelegateArgs, parentTask: string | undefined) {
  const cardUrl = /^https?:\/\//i.test(args.agent)
    ? args.agent
    : `${deps.gatewayUrl}/a2a/${encodeURIComponent(args.agent)}/.well-known/agent-card.json`;
  let raw: unknown;
  try {
    raw = await deps.fetchJson(cardUrl);
  } catch (e) {
    throw new Error(`no agent card at ${cardUrl} (${message(e)}); call find_agents for the ids this gateway serves`);
  }
  const card = normalizeCard(raw);
  const iface =
    card.supportedInterfaces.find((i) => i.protocolBinding === 'JSONRPC' && i.protocolVersion === '1.0') ??
    card.supportedInterfaces[0];
  if (!iface) throw new Error(`the card at ${cardUrl} lists no interface to call`);
  deps.checkInterfaceUrl(iface.url, cardUrl);
  deps.cards.set(iface.url, card);
  const id = /\/a2a\/([^/]+)\//.exec(new URL(cardUrl).pathname)?.[1] ?? args.agent;
  const repository = parentTask
    ? undefined
    : (await delegationRepository(resolve(args.repository ?? process.cwd()))).repository;
  const createdAt = Date.now();
  const request = buildDelegationRequest({
    requestId: randomUUID(),
    task: args.task,
    paths: args.files ?? [],
    repository,
    capabilities: args.write ? { ...READ_ONLY, write: true } : READ_ONLY,
    agent: {
      id,
      name: card.name,
      endpoint: iface.url,
      protocolBinding: iface.protocolBinding,
      protocolVersion: iface.protocolVersion,
    },
    who: parentTask ? `task ${parentTask}` : userInfo().username,
    createdAt,
    deadline: createdAt + (args.deadline_minutes ?? DEFAULT_DEADLINE_MINUTES) * 60_000,
  });
  if (!parentTask) return request;
  // The gateway sets the parent from the task's token; this says which one the caller means.
  return {
    ...request,
    message: {
      ...request.message,
      metadata: { ...(request.message.metadata ?? {}), [META.parent]: { taskId: parentTask } },
    },
  };
}

function isSettled(v: DelegationRecord): boolean {
  return v.outcome !== undefined && !IN_FLIGHT.has(v.state);
}

/** The delegation once it settles, or as it is after `waitSeconds`. */
function settled(m: DelegationManager, requestId: string, waitSeconds: number): Promise<DelegationRecord> {
  return waitFor(m, requestId, waitSeconds, isSettled);
}

/** The delegation once `done` holds for it, or as it is after `waitSeconds` (at most 50). */
function waitFor(
  m: DelegationManager,
  requestId: string,
  waitSeconds: number,
  done: (v: DelegationRecord) => boolean,
): Promise<DelegationRecord> {
  return new Promise((resolveView, reject) => {
    const now = m.view(requestId);
    if (!now) return reject(new Error(`no delegation ${requestId}`));
    if (done(now) || waitSeconds <= 0) return resolveView(now);
    const finish = (): void => {
      clearTimeout(timer);
      off();
      resolveView(m.view(requestId) ?? now);
    };
    const timer = setTimeout(finish, Math.min(waitSeconds, MAX_WAIT_SECONDS) * 1000);
    const off = m.onDidChange((id) => {
      const v = id === requestId ? m.view(requestId) : undefined;
      if (v && done(v)) finish();
    });
  });
}

/** The children a task reported on its stream (`META.child`), latest state of each. */
async function childrenOf(journalDir: string, requestId: string): Promise<ChildTaskInfo[]> {
  let entries: readonly JournalEntry[];
  try {
    entries = (await new JournalStore(journalDir).load(requestId)).entries;
  } catch {
    return [];
  }
  const byId = new Map<string, ChildTaskInfo>();
  for (const e of entries) {
    if (e.kind !== 'event' || e.event.payload?.$case !== 'statusUpdate') continue;
    const child: unknown = e.event.payload.value.metadata?.[META.child];
    if (isRecord(child) && typeof child.taskId === 'string') byId.set(child.taskId, child as unknown as ChildTaskInfo);
  }
  return [...byId.values()];
}

async function describe(deps: McpServerDeps, v: DelegationRecord, fromDelegate: boolean): Promise<CallToolResult> {
  const finished = v.outcome !== undefined && !IN_FLIGHT.has(v.state);
  const children = await childrenOf(deps.journalDir, v.requestId);
  const patches = v.artifacts.filter((a) => a.isPatch);
  // The agent's last word: its final status text (a completed task's summary).
  const said = [...v.timeline].reverse().find((e) => e.kind === 'status' && e.text);
  const summary = said?.kind === 'status' ? said.text : undefined;
  const structured = {
    request_id: v.requestId,
    ...(v.taskId ? { task_id: v.taskId } : {}),
    agent: v.agent.id,
    state: v.state,
    finished,
    ...(v.outcome ? { outcome: v.outcome } : {}),
    ...(v.outcomeReason ? { reason: v.outcomeReason } : {}),
    ...(v.prompt ? { question: v.prompt } : {}),
    ...(summary ? { summary } : {}),
    capabilities: v.capabilities.effective,
    ...(v.deadline !== undefined ? { deadline: new Date(v.deadline).toISOString() } : {}),
    artifacts: v.artifacts.map((a) => ({ name: a.name, size: a.size, is_patch: a.isPatch })),
    ...(patches[0] ? { patch_preview: patches[0].preview.slice(0, PATCH_PREVIEW) } : {}),
    children: children.map((c) => ({
      task_id: c.taskId,
      agent: c.agentId,
      title: c.title,
      state: c.state,
      ...(c.outcome ? { outcome: c.outcome } : {}),
    })),
  };
  const lines = [
    `${v.agent.name} (${v.agent.id}), request ${v.requestId}${v.taskId ? `, task ${v.taskId}` : ''}: ${v.state}${v.outcome ? ` (${v.outcome})` : ''}`,
  ];
  if (v.outcomeReason) lines.push(`Reason: ${v.outcomeReason}`);
  if (summary && summary !== v.outcomeReason) lines.push(`The agent says: ${summary}`);
  if (v.prompt) lines.push(`The agent asks: ${v.prompt}`);
  for (const a of patches)
    lines.push(
      `It returned ${a.name} (${a.size} characters); it is not applied. Preview:\n${a.preview.slice(0, PATCH_PREVIEW)}`,
    );
  for (const c of children)
    lines.push(`Child ${c.agentName} (${c.taskId}): ${c.state}${c.outcome ? ` (${c.outcome})` : ''} — ${c.title}`);
  if (!finished) lines.push(`Still running: call get_task with request_id "${v.requestId}" to follow it.`);
  // Nothing reached the agent: the gateway (or the transport) refused the delegation.
  const refused = finished && !v.taskId && v.outcome !== 'completed';
  if (refused && fromDelegate)
    return {
      ...failure(`The delegation was refused: ${v.outcomeReason ?? v.outcome ?? 'no reason given'}`),
      structuredContent: structured,
    };
  return result(lines.join('\n'), structured);
}

function result(text: string, structuredContent: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent };
}

function failure(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
