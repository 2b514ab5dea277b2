/**
 * Tool calls an agent of the development-tool extension (Gemini CLI's A2A server) reports, as the
 * journal keeps them and the panel and the CLI show them: only what is shown (no tool schema, no long
 * description). Plain JSON, so the webview may import it. Parsed from the agent's data parts by
 * src/core/devTool.ts.
 */

/** Where a tool call is; `unknown` for a status this version does not know. */
export type ToolCallStatus =
  'validating' | 'scheduled' | 'awaiting_approval' | 'executing' | 'success' | 'error' | 'cancelled' | 'unknown';

/** What the agent asks the user to confirm (its `confirmationDetails`, bounded). */
export interface ToolCallConfirmation {
  /** `edit`, `exec`, `mcp`, `info`, or another type the agent names. */
  readonly type: string;
  readonly title?: string;
  readonly fileName?: string;
  readonly filePath?: string;
  /** The unified diff the edit would make, as the agent rendered it. */
  readonly fileDiff?: string;
  /** The command an `exec` tool call would run. */
  readonly command?: string;
  readonly rootCommand?: string;
  readonly serverName?: string;
  readonly toolName?: string;
  readonly prompt?: string;
}

/** One file change a tool call made or would make: the whole file before and after. */
export interface ToolCallEdit {
  /** Absolute, as the agent names it. */
  readonly filePath: string;
  /** Absent for a file the call creates. */
  readonly originalContent?: string;
  readonly newContent: string;
}

export interface ToolCallView {
  readonly callId: string;
  readonly name: string;
  readonly displayName?: string;
  /** The tool's kind (`edit`, `execute`, `read`, …) as the agent names it. */
  readonly kind?: string;
  readonly status: ToolCallStatus;
  /** The call's arguments, with long strings shortened. */
  readonly args: Readonly<Record<string, unknown>>;
  readonly confirmation?: ToolCallConfirmation;
  /** The outcomes the user may answer with while it awaits approval (`proceed_once`, `cancel`, …). */
  readonly options: readonly string[];
  /** What the tool showed or said when it ran (shortened). */
  readonly output?: string;
  readonly error?: string;
  /** The file change, kept whole for the patch (absent for calls that change no file). */
  readonly edit?: ToolCallEdit;
  /** Baton answered it because the user turned automatic approval on for this agent. */
  readonly autoApproved?: boolean;
  /** The answer Baton sent (`proceed_once`, `cancel`, …), once it sent one. */
  readonly answered?: string;
}

/** Approve and deny as the agent's outcomes. */
export const TOOL_CALL_APPROVE = 'proceed_once';
export const TOOL_CALL_DENY = 'cancel';
