/**
 * The contract between the gateway's A2A layer and the agents that run on this machine (built-in
 * agents and headless coding CLIs, each in a throwaway workspace). The A2A executor adapts a
 * `LocalAgent` to the SDK's event bus; the agent knows nothing of A2A.
 */
import type { CapabilitySet } from '../../core/delegation';
import type { SkillInfo } from '../cards';
import type { WorkspaceManager } from '../workspace/workspaceManager';

/**
 * What an agent may do, read-only by default (`READ_ONLY` in core/delegation/guards.ts): the agent may
 * only propose a patch. `write`: edit files in its workspace (the edits only ever come back as
 * changes.patch); `shell`: run shell commands (refused where the harness can refuse it); `network`:
 * reach the network beyond what the harness needs for its own model API.
 */
export type Capabilities = CapabilitySet;

export interface LocalRunRequest {
  /** The A2A task id; also names the workspace folder. */
  readonly taskId: string;
  /** The caller's repository (absolute path, already checked against the gateway's allowed roots), or none. */
  readonly repoPath?: string;
  /** The task as the user wrote it, plus any context parts rendered as text. */
  readonly prompt: string;
  /**
   * The task as the user wrote it, without the context parts (whose text may name any path): what
   * built-in agents read the scope from. Defaults to `prompt`.
   */
  readonly task?: string;
  /**
   * Repository-relative files the request names as context (its `baton/files` metadata and its
   * selection and file parts); a folder ends with `/`.
   */
  readonly files: readonly string[];
  /**
   * Repository-relative files open in the caller's editor with unsaved edits. The copy has them as
   * last saved; the run says so in the task context and in a step.
   */
  readonly unsavedFiles?: readonly string[];
  readonly capabilities: Capabilities;
  /** Absolute epoch milliseconds; past it the run is stopped and its outcome is `expired`. */
  readonly deadline: number;
  /** Aborted when the caller cancels. */
  readonly signal: AbortSignal;
  /**
   * Asks the user a question and waits for the answer. The task goes to `input-required` with the
   * question as its status message; the reply (a follow-up message on the same task, from the panel or
   * `baton reply`) resolves this with its text and the task is working again. The deadline and cancel
   * keep applying while it waits: then `signal` is aborted and this rejects. Absent where nobody can
   * answer (a run outside the gateway); an agent then says what it would have asked, and fails.
   */
  readonly ask?: (question: string) => Promise<string>;
  /**
   * How this run may delegate (coding CLIs only): `baton mcp` bound to this task, which the harness
   * configures as the CLI's MCP server. Absent: the run cannot delegate.
   */
  readonly delegation?: DelegationBinding;
}

/** `baton mcp` bound to one task: how to start it, the gateway it talks to, and the task's own token. */
export interface DelegationBinding {
  /** argv of `baton mcp`. */
  readonly command: readonly string[];
  /** The gateway's address on this machine. */
  readonly gatewayUrl: string;
  /** The task's capability token (starts children of this task only; revoked when it ends). */
  readonly token: string;
  readonly parentTaskId: string;
}

export type LocalRunEvent =
  | { readonly kind: 'started'; readonly workspace: string; readonly confined: boolean; readonly detail?: string }
  | { readonly kind: 'step'; readonly text: string }
  | { readonly kind: 'log'; readonly stream: 'stdout' | 'stderr'; readonly text: string }
  | {
      readonly kind: 'artifact';
      readonly name: 'changes.patch';
      readonly mediaType: 'text/x-diff';
      readonly text: string;
    };

export type LocalRunOutcome = 'completed' | 'failed' | 'canceled' | 'expired';

export interface LocalRunResult {
  readonly outcome: LocalRunOutcome;
  /** Why it failed / was canceled / expired, in words a user can act on. */
  readonly reason?: string;
  readonly exitCode?: number | null;
  /** The patch the run produced ('' when it changed nothing). */
  readonly patch: string;
  /** The agent's final message to the caller, if any. */
  readonly summary?: string;
}

export interface LocalAgent {
  /** URL-safe id: the gateway serves it at /a2a/<id>. */
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly kind: 'builtin' | 'headless';
  readonly skills: readonly SkillInfo[];
  /** The most this agent can ever do; the effective capabilities are the intersection with the request. */
  readonly maxCapabilities: Capabilities;
  /** Where its throwaway workspaces live, so the gateway can sweep those a dead process left behind. */
  readonly workspaces?: WorkspaceManager;
  run(request: LocalRunRequest, emit: (event: LocalRunEvent) => void): Promise<LocalRunResult>;
}
