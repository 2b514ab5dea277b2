/**
 * A harness is how Baton drives one coding CLI headless: how to find it, the argv for one prompt,
 * how to restrict it, what it reads on its own, and how to turn its machine-readable output into
 * progress. Entries are built from each CLI's documented flags; none of them can run here (no model
 * access), so tests check argv and parse recorded output, and run the stand-in CLI end to end.
 */
import type { Capabilities } from '../agents/localAgent';

export type HarnessId = 'claude' | 'codex' | 'gemini' | 'copilot' | 'opencode';

export interface InvocationInput {
  readonly prompt: string;
  /** Effective capabilities for this run. */
  readonly capabilities: Capabilities;
  readonly workspace: string;
  /** False for a scratch folder (some CLIs refuse to run outside a repository unless told). */
  readonly isGitRepo: boolean;
  /** `baton mcp` bound to this task, to configure as the CLI's MCP server named `baton`; absent: none. */
  readonly mcp?: McpLaunch;
}

/** How the CLI starts `baton mcp`: an MCP server over stdio. */
export interface McpLaunch {
  readonly command: string;
  readonly args: readonly string[];
  /** Its environment (the gateway, the task token's file, the parent task): no secret in it. */
  readonly env: Readonly<Record<string, string>>;
  /** A private folder (the run's own HOME) where the harness may write a config file. */
  readonly configDir: string;
}

/** The MCP server's name in every CLI's config: its tools are `baton`'s (`mcp__baton__delegate` in Claude Code). */
export const MCP_SERVER_NAME = 'baton';

export interface Invocation {
  readonly args: readonly string[];
  /** Sent on stdin (preferred over argv: no length limit, not visible in `ps`). */
  readonly stdin?: string;
  readonly env?: Readonly<Record<string, string>>;
  /** What could not be restricted, in words (e.g. "Codex cannot refuse shell; its sandbox bounds it"). */
  readonly caveats: readonly string[];
  /** Files written (0600) before the CLI starts: its MCP config, where it reads that from a file. */
  readonly files?: ReadonlyArray<{ readonly path: string; readonly content: string }>;
}

/** What a parser makes of one line of output. */
export type ParsedEvent =
  | { readonly kind: 'step'; readonly text: string }
  | { readonly kind: 'log'; readonly text: string }
  | { readonly kind: 'message'; readonly text: string }
  | { readonly kind: 'error'; readonly text: string };

export interface OutputParser {
  push(line: string): ParsedEvent[];
  /** The final message and whether the CLI itself reported failure. */
  finish(): { readonly summary?: string; readonly error?: string };
}

export interface HarnessSpec {
  readonly id: HarnessId;
  readonly name: string;
  readonly description: string;
  /** Executable names looked up on PATH, in order. */
  readonly binaries: readonly string[];
  /** Instruction files the CLI reads from its working folder by itself; others get inlined. */
  readonly readsInstructions: readonly string[];
  /** Whether the CLI can be told not to run shell commands. */
  readonly canRefuseShell: boolean;
  /** Environment variables passed through to the CLI (its credentials and endpoints). */
  readonly envPassthrough: readonly string[];
  /** Entries under HOME that hold its login state (bound into the private HOME when confined). */
  readonly homeEntries: readonly string[];
  /** How the CLI is given `baton mcp` to delegate with, in words (shown on its card). */
  readonly mcpConfig: string;
  invocation(input: InvocationInput): Invocation;
  createParser(): OutputParser;
}

/** Shortens text for a one-line step. */
export function oneLine(text: string, max = 200): string {
  const t = text.replace(/\s+/g, ' ').trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

/** Parses a JSON line into an object, or undefined (for tolerant parsers: CLIs also print plain text). */
export function jsonLine(line: string): Record<string, unknown> | undefined {
  const t = line.trim();
  if (!t.startsWith('{')) return undefined;
  try {
    const v: unknown = JSON.parse(t);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

export function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

export function obj(v: unknown): Record<string, unknown> | undefined {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/** "Edit src/a.ts", "Run npm test": a tool call in words. */
export function describeTool(name: string, input: Record<string, unknown> | undefined): string {
  const target =
    str(input?.file_path) ??
    str(input?.filePath) ??
    str(input?.path) ??
    str(input?.absolute_path) ??
    str(input?.command) ??
    str(input?.pattern) ??
    str(input?.url) ??
    str(input?.query);
  return oneLine(target ? `${name} ${target}` : name);
}
