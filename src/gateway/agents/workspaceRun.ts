/**
 * The one flow every local agent runs through: set up the workspace, say how it runs ('started'),
 * let the agent work, record what it changed as changes.patch ('artifact'), remove the workspace.
 * One place decides the outcome, so built-in agents and CLIs end the same way.
 */
import type { Workspace, WorkspaceManager } from '../workspace/workspaceManager';
import { WorkspaceError } from '../workspace/workspaceManager';
import type { LocalRunEvent, LocalRunOutcome, LocalRunRequest, LocalRunResult } from './localAgent';

export interface AgentWork {
  readonly outcome: LocalRunOutcome;
  readonly reason?: string;
  readonly exitCode?: number | null;
  readonly summary?: string;
}

export interface WorkspaceRunOptions {
  readonly manager: WorkspaceManager;
  /** Keep the folder after the run (debugging); default false. */
  readonly keepWorkspace?: boolean;
  /** How the agent will run, for the 'started' event. */
  describe(ws: Workspace): Promise<{ confined: boolean; detail: string }>;
  /** The agent's work in the prepared folder. */
  work(ws: Workspace): Promise<AgentWork>;
}

export async function runInWorkspace(
  request: LocalRunRequest,
  emit: (e: LocalRunEvent) => void,
  opts: WorkspaceRunOptions,
): Promise<LocalRunResult> {
  if (request.signal.aborted) return { outcome: 'canceled', reason: 'Canceled before it started.', patch: '' };
  if (Date.now() >= request.deadline)
    return { outcome: 'expired', reason: 'The deadline passed before the run started.', patch: '' };
  let ws: Workspace;
  try {
    ws = await opts.manager.prepare({
      taskId: request.taskId,
      repoPath: request.repoPath,
      unsavedFiles: request.unsavedFiles,
    });
  } catch (e) {
    const reason = e instanceof WorkspaceError ? e.message : `Could not set up the workspace: ${(e as Error).message}`;
    return { outcome: 'failed', reason, patch: '' };
  }
  try {
    const how = await opts.describe(ws);
    emit({ kind: 'started', workspace: ws.dir, confined: how.confined, detail: how.detail });
    for (const note of ws.notes) emit({ kind: 'step', text: note });
    if (request.signal.aborted) return { outcome: 'canceled', reason: 'Canceled.', patch: '' };
    if (Date.now() >= request.deadline)
      return { outcome: 'expired', reason: 'The deadline passed while the workspace was set up.', patch: '' };

    const work = await opts.work(ws);
    if (work.outcome === 'canceled' || work.outcome === 'expired') {
      return { outcome: work.outcome, reason: work.reason, exitCode: work.exitCode, patch: '', summary: work.summary };
    }
    let changes;
    try {
      changes = await opts.manager.changes(ws);
    } catch (e) {
      const reason = e instanceof WorkspaceError ? e.message : `Could not record the changes: ${(e as Error).message}`;
      return { outcome: 'failed', reason, exitCode: work.exitCode, patch: '', summary: work.summary };
    }
    if (changes.destroyed)
      return {
        outcome: 'failed',
        reason: changes.destroyed,
        exitCode: work.exitCode,
        patch: '',
        summary: work.summary,
      };
    if (work.outcome === 'failed')
      return { outcome: 'failed', reason: work.reason, exitCode: work.exitCode, patch: '', summary: work.summary };
    if (changes.patch) emit({ kind: 'artifact', name: 'changes.patch', mediaType: 'text/x-diff', text: changes.patch });
    return {
      outcome: 'completed',
      exitCode: work.exitCode,
      patch: changes.patch,
      summary: work.summary ?? (changes.patch ? undefined : 'No changes.'),
    };
  } catch (e) {
    return { outcome: 'failed', reason: `The run failed: ${(e as Error).message}`, patch: '' };
  } finally {
    if (!opts.keepWorkspace) await opts.manager.remove(ws).catch(() => undefined);
  }
}
