import * as vscode from 'vscode';
import { showError, showWarning } from '../notify';

/** What the user chose before anything is sent. */
export interface StartChoice {
  readonly agentId: string;
  readonly task: string;
  readonly capabilities: { readonly write: boolean; readonly shell: boolean; readonly network: boolean };
  readonly deadlineMinutes: number;
}

export interface AgentChoice {
  readonly id: string;
  readonly name: string;
  readonly description?: string;
  readonly skills: readonly string[];
  readonly endpoint: string;
  /** The most this agent declares it can do; options outside it are not offered. */
  readonly maxCapabilities?: { readonly write: boolean; readonly shell: boolean; readonly network: boolean };
  /**
   * The agent runs on this machine's gateway, which works on a throwaway copy of the repository: it can
   * read every file there, not only the context sent. Other agents see only what the message carries.
   */
  readonly seesRepository?: boolean;
}

/** What travels with the task and what the agent can see, in one line (shown before anything is sent). */
export function whatTravels(agent: Pick<AgentChoice, 'seesRepository'>, contextSummary: string): string {
  if (agent.seesRepository) {
    return contextSummary
      ? vscode.l10n.t(
          'Sent: this text and {0}. The agent works on a throwaway copy of your repository (files as saved) and can read all of it; only a patch comes back.',
          contextSummary,
        )
      : vscode.l10n.t(
          'Sent: this text. The agent works on a throwaway copy of your repository (files as saved) and can read all of it; only a patch comes back.',
        );
  }
  return contextSummary
    ? vscode.l10n.t(
        'Sent: this text and {0}, with the repository’s path and commit id. The agent sees nothing else of your files.',
        contextSummary,
      )
    : vscode.l10n.t(
        'Sent: only this text, with the repository’s path and commit id. The agent sees nothing else of your files.',
      );
}

/** Arguments a caller (a test, a keybinding, another extension) may pass to skip the prompts. */
export interface DelegateArgs {
  readonly agentId?: string;
  readonly task?: string;
  readonly capabilities?: Partial<StartChoice['capabilities']>;
  readonly deadlineMinutes?: number;
  /** Start without the confirmation step (only when every other field is given). */
  readonly confirm?: false;
}

export const DEADLINE_CHOICES = [5, 15, 30, 60, 120] as const;

export function isDelegateArgs(v: unknown): v is DelegateArgs {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const o = v as Record<string, unknown>;
  const optString = (k: string) => o[k] === undefined || typeof o[k] === 'string';
  const caps = o.capabilities;
  return (
    optString('agentId') &&
    optString('task') &&
    (o.deadlineMinutes === undefined ||
      (typeof o.deadlineMinutes === 'number' && o.deadlineMinutes > 0 && o.deadlineMinutes <= 24 * 60)) &&
    (o.confirm === undefined || o.confirm === false) &&
    (caps === undefined ||
      (typeof caps === 'object' && caps !== null && Object.values(caps).every((x) => typeof x === 'boolean')))
  );
}

function describeCaps(c: StartChoice['capabilities']): string {
  const on = [
    c.write && vscode.l10n.t('write'),
    c.shell && vscode.l10n.t('shell'),
    c.network && vscode.l10n.t('network'),
  ].filter(Boolean);
  return on.length ? on.join(', ') : vscode.l10n.t('read-only (may only propose a patch)');
}

async function pickAgent(agents: readonly AgentChoice[]): Promise<AgentChoice | undefined> {
  if (agents.length === 0) {
    const add = vscode.l10n.t('Add Agent…');
    const pick = await showWarning(
      vscode.l10n.t(
        'No approved agent to delegate to. Add an agent and approve it first, or start the local gateway for its built-in agents.',
      ),
      add,
    );
    if (pick === add) await vscode.commands.executeCommand('baton.addAgent');
    return undefined;
  }
  const item = await vscode.window.showQuickPick(
    agents.map((a) => ({
      label: a.name,
      description: a.skills.join(' · '),
      detail: a.description ? `${a.description} — ${a.endpoint}` : a.endpoint,
      agent: a,
    })),
    {
      title: vscode.l10n.t('Delegate to which agent?'),
      placeHolder: vscode.l10n.t('Approved agents'),
      matchOnDescription: true,
      matchOnDetail: true,
      ignoreFocusOut: true,
    },
  );
  return item?.agent;
}

async function pickCapabilities(
  agent: AgentChoice,
  current: StartChoice['capabilities'],
): Promise<StartChoice['capabilities'] | undefined> {
  const max = agent.maxCapabilities ?? { write: true, shell: true, network: true };
  const options = [
    {
      key: 'write' as const,
      label: vscode.l10n.t('Write files'),
      detail: vscode.l10n.t('Edit files in its throwaway copy. Edits come back only as a patch for you to review.'),
    },
    {
      key: 'shell' as const,
      label: vscode.l10n.t('Run shell commands'),
      detail: vscode.l10n.t('A throwaway copy is not a sandbox: a shell can reach anything you can.'),
    },
    {
      key: 'network' as const,
      label: vscode.l10n.t('Use the network'),
      detail: vscode.l10n.t('Beyond the agent’s own model API.'),
    },
  ].filter((o) => max[o.key]);
  if (options.length === 0) return { write: false, shell: false, network: false };
  const picked = await vscode.window.showQuickPick(
    options.map((o) => ({ ...o, picked: current[o.key] })),
    {
      title: vscode.l10n.t('Capabilities for {0} (none checked = read-only)', agent.name),
      canPickMany: true,
      ignoreFocusOut: true,
    },
  );
  if (!picked) return undefined;
  const has = (k: 'write' | 'shell' | 'network') => picked.some((p) => p.key === k);
  return { write: has('write'), shell: has('shell'), network: has('network') };
}

async function pickDeadline(current: number): Promise<number | undefined> {
  const item = await vscode.window.showQuickPick(
    DEADLINE_CHOICES.map((m) => ({
      label: m < 60 ? vscode.l10n.t('{0} minutes', m) : vscode.l10n.t('{0} hour(s)', m / 60),
      minutes: m,
      picked: m === current,
    })),
    { title: vscode.l10n.t('Deadline: the task is canceled at the agent when it passes'), ignoreFocusOut: true },
  );
  return item?.minutes;
}

async function editTask(agent: AgentChoice, task: string, contextSummary: string): Promise<string | undefined> {
  const text = await vscode.window.showInputBox({
    title: vscode.l10n.t('Task for {0}', agent.name),
    prompt: whatTravels(agent, contextSummary),
    value: task,
    ignoreFocusOut: true,
    validateInput: (v) => (v.trim() ? undefined : vscode.l10n.t('Describe the task.')),
  });
  return text?.trim() ? text.trim() : undefined;
}

/**
 * Asks for what is missing (agent, task), then shows the effective capabilities (read-only by default)
 * and the deadline, which the user may change, before anything is sent. Returns undefined when the user
 * backs out at any step.
 */
export async function runStartFlow(
  agents: readonly AgentChoice[],
  args: DelegateArgs,
  contextSummary: string,
  defaultDeadline: number,
): Promise<StartChoice | undefined> {
  const agent = args.agentId ? agents.find((a) => a.id === args.agentId) : await pickAgent(agents);
  if (!agent) {
    if (args.agentId)
      void showError(vscode.l10n.t('No approved agent "{0}". Approve it in the Agents view first.', args.agentId));
    return undefined;
  }
  let task =
    args.task ??
    (await vscode.window.showInputBox({
      title: vscode.l10n.t('Task for {0}', agent.name),
      prompt: whatTravels(agent, contextSummary),
      placeHolder: vscode.l10n.t('e.g. Format the files under src/'),
      ignoreFocusOut: true,
      validateInput: (v) => (v.trim() ? undefined : vscode.l10n.t('Describe the task.')),
    }));
  if (!task?.trim()) return undefined;
  const max = agent.maxCapabilities ?? { write: true, shell: true, network: true };
  let capabilities = {
    write: !!args.capabilities?.write && max.write,
    shell: !!args.capabilities?.shell && max.shell,
    network: !!args.capabilities?.network && max.network,
  };
  let deadlineMinutes = args.deadlineMinutes ?? defaultDeadline;
  if (args.confirm === false) return { agentId: agent.id, task: task.trim(), capabilities, deadlineMinutes };

  for (;;) {
    const start = {
      label: `$(rocket) ${vscode.l10n.t('Delegate')}`,
      detail: vscode.l10n.t('Send the task to {0}', agent.endpoint),
      action: 'start' as const,
    };
    const edit = {
      label: `$(edit) ${vscode.l10n.t('Task: {0}', task.trim().split('\n')[0].slice(0, 80))}`,
      detail: vscode.l10n.t('Change the task before it is sent'),
      action: 'task' as const,
    };
    const caps = {
      label: `$(shield) ${vscode.l10n.t('Capabilities: {0}', describeCaps(capabilities))}`,
      detail: vscode.l10n.t('Change what the agent may do'),
      action: 'caps' as const,
    };
    const deadline = {
      label: `$(watch) ${vscode.l10n.t('Deadline: {0} minutes', deadlineMinutes)}`,
      detail: vscode.l10n.t('Change when the task is canceled'),
      action: 'deadline' as const,
    };
    const choice = await vscode.window.showQuickPick([start, edit, caps, deadline], {
      title: vscode.l10n.t('Delegate “{0}” to {1}', task.trim().split('\n')[0].slice(0, 60), agent.name),
      placeHolder: whatTravels(agent, contextSummary),
      ignoreFocusOut: true,
    });
    if (!choice) return undefined;
    if (choice.action === 'start') return { agentId: agent.id, task: task.trim(), capabilities, deadlineMinutes };
    if (choice.action === 'task') task = (await editTask(agent, task, contextSummary)) ?? task;
    else if (choice.action === 'caps') capabilities = (await pickCapabilities(agent, capabilities)) ?? capabilities;
    else deadlineMinutes = (await pickDeadline(deadlineMinutes)) ?? deadlineMinutes;
  }
}
