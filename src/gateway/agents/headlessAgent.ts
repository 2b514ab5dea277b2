/**
 * A coding CLI as a LocalAgent: its harness builds the argv, the process runs (confined where
 * bubblewrap works) in a throwaway workspace, its machine-readable output becomes steps, and what
 * it left in the folder comes back as changes.patch.
 */
import { realpathSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, sep } from 'node:path';
import { intersectCapabilities } from '../../core/delegation/guards';
import { confineCommand } from '../confine';
import type { ConfineOptions } from '../confine';
import type { Host } from '../harness/host';
import { nodeHost } from '../harness/host';
import type { McpLaunch } from '../harness/harness';
import type { DetectedHarness } from '../harness/registry';
import type { Workspace, WorkspaceManager } from '../workspace/workspaceManager';
import { PRIVATE_DIR_NAME } from '../workspace/workspaceManager';
import { agentEnv, prepareAgentHome } from './agentHome';
import { planLaunch } from './launch';
import type { LaunchPlan } from './launch';
import type { Capabilities, LocalAgent, LocalRunEvent, LocalRunRequest, LocalRunResult } from './localAgent';
import { runProcess } from './processRun';
import { buildTaskPrompt } from './taskContext';
import { runInWorkspace } from './workspaceRun';

export interface HeadlessAgentOptions {
  readonly manager: WorkspaceManager;
  readonly confine?: ConfineOptions;
  /** stdout + stderr bytes after which the run is stopped (default 32 MiB). */
  readonly maxOutputBytes?: number;
  /** Most 'log' events one run emits (the rest are counted, not sent). */
  readonly maxLogEvents?: number;
  /** Environment to take passthrough variables from (default process.env). */
  readonly env?: NodeJS.ProcessEnv;
  /** The real HOME (hidden when confined; its login entries are bound in). */
  readonly realHome?: string;
  readonly killGraceMs?: number;
  /** Platform, environment and file checks (default: this machine, with `env`). */
  readonly host?: Host;
}

export function createHeadlessAgent(detected: DetectedHarness, opts: HeadlessAgentOptions): LocalAgent {
  const { spec } = detected;
  const maxCapabilities: Capabilities = { write: true, shell: true, network: true };
  return {
    id: spec.id,
    name: spec.name,
    description: spec.description,
    kind: 'headless',
    maxCapabilities,
    skills: [
      {
        id: 'code',
        name: 'Coding task',
        description: `${spec.name} works on the task in a throwaway copy of your repository and returns its edits as changes.patch for review. ${spec.mcpConfig}`,
        tags: ['code', 'patch', spec.id],
        examples: ['Fix the failing test in src/parser.ts', 'Explain how the cache is invalidated'],
      },
    ],
    workspaces: opts.manager,
    run: (request, emit) =>
      runHeadless(detected, opts, intersectCapabilities(request.capabilities, maxCapabilities), request, emit),
  };
}

async function runHeadless(
  detected: DetectedHarness,
  opts: HeadlessAgentOptions,
  caps: Capabilities,
  request: LocalRunRequest,
  emit: (e: LocalRunEvent) => void,
): Promise<LocalRunResult> {
  const { spec, binary } = detected;
  const sourceEnv = opts.env ?? process.env;
  const host = opts.host ?? nodeHost(sourceEnv);
  let launch: LaunchPlan | undefined;
  let confined: Awaited<ReturnType<typeof confineCommand>> | undefined;
  let caveats: readonly string[] = [];
  let prompt = '';
  let invocation: ReturnType<typeof spec.invocation> | undefined;

  let mcp: McpLaunch | undefined;
  const prepareCommand = async (ws: Workspace) => {
    prompt = await buildTaskPrompt(request, ws, spec, caps);
    mcp = mcpLaunch(request, ws.home);
    invocation = spec.invocation({
      prompt,
      capabilities: caps,
      workspace: ws.dir,
      isGitRepo: ws.kind === 'clone',
      ...(mcp ? { mcp } : {}),
    });
    caveats = invocation.caveats;
    confined = await confineCommand(
      {
        argv: [binary, ...invocation.args],
        workspace: ws.dir,
        home: ws.home,
        // The CLI needs its model API; "network" in the capabilities is about everything else.
        network: true,
        readOnly: [
          ws.repoCommonDir,
          ...toolDirs(binary, sourceEnv.PATH ?? '', opts.realHome ?? homedir()),
          ...(mcp ? mcpDirs(mcp) : []),
        ].filter((p): p is string => p !== undefined),
        hide: [join(opts.manager.root, PRIVATE_DIR_NAME)],
        homeEntries: spec.homeEntries,
        realHome: opts.realHome,
      },
      { ...opts.confine, platform: opts.confine?.platform ?? host.platform },
    );
    // bwrap itself is a program; only an unconfined run may start a Windows batch script.
    launch = confined.confined
      ? { ok: true, command: confined.command, args: confined.args }
      : planLaunch(confined.command, confined.args, host);
    return confined;
  };

  return runInWorkspace(request, emit, {
    manager: opts.manager,
    describe: async (ws) => {
      const c = await prepareCommand(ws);
      const via = launch?.ok && launch.via ? ` Started as ${launch.via}.` : '';
      const extra = `${via}${caveats.length ? ` ${caveats.join(' ')}` : ''}`;
      return { confined: c.confined, detail: `${spec.name} (${binary}). ${c.detail}${extra}` };
    },
    work: async (ws) => {
      if (!confined || !invocation || !launch) throw new Error('command not prepared');
      if (!launch.ok)
        return {
          outcome: 'failed',
          reason: `Could not start ${spec.name} (${binary}): ${launch.reason}.`,
          exitCode: null,
        };
      const parser = spec.createParser();
      let logs = 0;
      let dropped = 0;
      const maxLogs = opts.maxLogEvents ?? 500;
      const env = agentEnv(sourceEnv, ws, host);
      for (const k of spec.envPassthrough) if (sourceEnv[k] !== undefined) env[k] = sourceEnv[k];
      Object.assign(env, invocation.env);
      if (request.delegation && mcp) {
        // The token sits in a 0600 file of the run's own HOME: never in an argv or a config the CLI may print.
        await writeFile(mcp.env.BATON_TOKEN_FILE, `${request.delegation.token}\n`, { mode: 0o600 });
        emit({ kind: 'step', text: `${spec.name} can delegate through baton mcp (children of this task only).` });
      }
      for (const f of invocation.files ?? []) {
        await mkdir(dirname(f.path), { recursive: true });
        await writeFile(f.path, f.content, { mode: 0o600 });
      }
      if (!confined.confined) {
        // Unconfined, the CLI still gets a private HOME; its login state is linked (or copied) in.
        const notes = await prepareAgentHome(ws.home, opts.realHome ?? homedir(), spec.homeEntries, host);
        for (const text of notes) emit({ kind: 'step', text });
      }
      const res = await runProcess({
        command: launch.command,
        args: launch.args,
        windowsVerbatimArguments: launch.verbatim,
        platform: host.platform,
        cwd: ws.dir,
        env,
        stdin: invocation.stdin,
        deadline: request.deadline,
        signal: request.signal,
        maxOutputBytes: opts.maxOutputBytes,
        killGraceMs: opts.killGraceMs,
        onSpawn: (pid) => void opts.manager.recordWorker(ws, pid).catch(() => undefined),
        onStdoutLine: (line) => {
          for (const ev of parser.push(line)) {
            if (ev.kind === 'step' || ev.kind === 'message') emit({ kind: 'step', text: ev.text });
            else if (ev.kind === 'error') emit({ kind: 'log', stream: 'stdout', text: ev.text });
            else if (logs < maxLogs) {
              logs++;
              emit({ kind: 'log', stream: 'stdout', text: ev.text });
            } else dropped++;
          }
        },
      });
      const { summary, error } = parser.finish();
      if (dropped) emit({ kind: 'log', stream: 'stdout', text: `(${dropped} more output lines not shown)` });
      const tail = () => {
        if (res.stderrTail.trim()) emit({ kind: 'log', stream: 'stderr', text: res.stderrTail.trimEnd() });
      };
      switch (res.end) {
        case 'canceled':
          return {
            outcome: 'canceled',
            reason: `Canceled; ${spec.name} was stopped.`,
            exitCode: res.exitCode,
            summary,
          };
        case 'expired':
          return {
            outcome: 'expired',
            reason: `The deadline passed; ${spec.name} was stopped.`,
            exitCode: res.exitCode,
            summary,
          };
        case 'flooded':
          tail();
          return {
            outcome: 'failed',
            reason: `${spec.name} printed more than ${Math.round((opts.maxOutputBytes ?? 32 * 1024 * 1024) / 1024 / 1024)} MiB of output and was stopped.`,
            exitCode: res.exitCode,
            summary,
          };
        case 'spawn-failed':
          return {
            outcome: 'failed',
            reason: `Could not start ${spec.name} (${binary}): ${res.error ?? 'unknown error'}.`,
            exitCode: null,
          };
        default:
          break;
      }
      if (res.exitCode !== 0) {
        tail();
        const how =
          res.exitCode === null ? `was killed by ${res.signal ?? 'a signal'}` : `exited with code ${res.exitCode}`;
        return {
          outcome: 'failed',
          reason: `${spec.name} ${how}${error ? `: ${error}` : ''}.`,
          exitCode: res.exitCode,
          summary,
        };
      }
      if (error) {
        tail();
        return { outcome: 'failed', reason: `${spec.name} reported an error: ${error}`, exitCode: 0, summary };
      }
      return { outcome: 'completed', exitCode: 0, summary };
    },
  });
}

/** `baton mcp` for this run, bound to its task, when the gateway gave it a way to delegate. */
function mcpLaunch(request: LocalRunRequest, home: string): McpLaunch | undefined {
  const d = request.delegation;
  const [command, ...args] = d?.command ?? [];
  if (!d || !command) return undefined;
  return {
    command,
    args,
    env: {
      BATON_GATEWAY: d.gatewayUrl,
      BATON_TOKEN_FILE: join(home, '.baton-task-token'),
      BATON_PARENT_TASK: d.parentTaskId,
      BATON_CLI_DIR: join(home, '.baton', 'cli', 'journals'),
      // No gateway.json of the user's is read: this server talks to the gateway above, with the task's token.
      BATON_STATE_DIR: join(home, '.baton', 'gateway'),
    },
    configDir: home,
  };
}

/** What a confined CLI must see to start `baton mcp`: the runtime's folder and the script's. */
function mcpDirs(mcp: McpLaunch): string[] {
  return [mcp.command, ...mcp.args].filter((a) => isAbsolute(a)).map((a) => dirname(a));
}

/** Never made visible to a confined CLI, even when its tools live beside them. */
const SECRET_HOME_DIRS = new Set([
  '.ssh',
  '.gnupg',
  '.aws',
  '.azure',
  '.kube',
  '.docker',
  '.password-store',
  '.config',
  '.netrc',
]);

/**
 * The real HOME is hidden from a confined CLI, but CLIs are often installed under it (~/.local/bin,
 * ~/.nvm, ~/.bun…) and need their runtime from PATH: the top-level folders under HOME that hold the
 * binary (and its real path) or a PATH entry are bound read-only, secrets folders never.
 */
export function toolDirs(binary: string, pathVar: string, realHome: string): string[] {
  const out = new Set<string>();
  const add = (p: string) => {
    if (!p.startsWith(realHome + sep)) {
      out.add(dirname(p));
      return;
    }
    const top = p.slice(realHome.length + 1).split(sep)[0];
    if (top && !SECRET_HOME_DIRS.has(top)) out.add(join(realHome, top));
  };
  add(binary);
  try {
    add(realpathSync(binary));
  } catch {
    // a missing binary fails later with a clear message
  }
  for (const dir of pathVar.split(delimiter)) if (dir.startsWith(realHome + sep)) add(join(dir, 'x'));
  return [...out];
}
