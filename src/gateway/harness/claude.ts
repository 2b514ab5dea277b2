/**
 * Claude Code, headless: `claude -p` with the prompt on stdin and `--output-format stream-json`
 * (which needs `--verbose` in print mode). Restriction: `--tools` names the only built-in tools that
 * exist for the run and `--disallowedTools` denies the rest by name (`--allowedTools` alone only
 * pre-approves; it restricts nothing). `--strict-mcp-config` keeps MCP servers from the user's or the
 * repository's config out. Claude reads CLAUDE.md itself, not AGENTS.md.
 */
import { join } from 'node:path';
import type { HarnessSpec, OutputParser, ParsedEvent } from './harness';
import { describeTool, jsonLine, MCP_SERVER_NAME, obj, oneLine, str } from './harness';

const READ = ['Read', 'Glob', 'Grep', 'LS'];
const EDIT = ['Edit', 'MultiEdit', 'Write', 'NotebookEdit'];
const SHELL = ['Bash', 'BashOutput', 'KillShell'];
const WEB = ['WebFetch', 'WebSearch'];

export const claudeHarness: HarnessSpec = {
  id: 'claude',
  name: 'Claude Code',
  description: "Anthropic's Claude Code CLI, run headless in a throwaway copy of your repository.",
  binaries: ['claude'],
  readsInstructions: ['CLAUDE.md'],
  canRefuseShell: true,
  envPassthrough: [
    'ANTHROPIC_API_KEY',
    'ANTHROPIC_AUTH_TOKEN',
    'ANTHROPIC_BASE_URL',
    'ANTHROPIC_MODEL',
    'CLAUDE_CODE_USE_BEDROCK',
    'CLAUDE_CODE_USE_VERTEX',
    'AWS_REGION',
    'AWS_PROFILE',
    'CLOUD_ML_REGION',
    'ANTHROPIC_VERTEX_PROJECT_ID',
  ],
  homeEntries: ['.claude', '.claude.json'],
  mcpConfig:
    'It delegates through baton mcp, given with --mcp-config (and --strict-mcp-config keeps every other MCP server out).',
  invocation({ prompt, capabilities, mcp }) {
    const tools = [
      ...READ,
      ...(capabilities.write ? EDIT : []),
      ...(capabilities.shell ? SHELL : []),
      ...(capabilities.network ? WEB : []),
    ];
    const denied = [
      ...(capabilities.write ? [] : EDIT),
      ...(capabilities.shell ? [] : SHELL),
      ...(capabilities.network ? [] : WEB),
    ];
    const args = [
      '-p',
      '--output-format',
      'stream-json',
      '--verbose',
      '--strict-mcp-config',
      '--tools',
      tools.join(','),
    ];
    if (denied.length) args.push('--disallowedTools', denied.join(','));
    // Print mode cannot ask for approval: say up front what is approved.
    args.push('--permission-mode', capabilities.write ? 'acceptEdits' : 'default');
    const allowed = [...(capabilities.shell ? SHELL : []), ...(mcp ? [`mcp__${MCP_SERVER_NAME}`] : [])];
    if (allowed.length) args.push('--allowedTools', allowed.join(','));
    if (!mcp) return { args, stdin: prompt, caveats: [] };
    const file = join(mcp.configDir, 'baton-mcp.json');
    args.push('--mcp-config', file);
    const config = { mcpServers: { [MCP_SERVER_NAME]: { command: mcp.command, args: mcp.args, env: mcp.env } } };
    return { args, stdin: prompt, caveats: [], files: [{ path: file, content: JSON.stringify(config, null, 2) }] };
  },
  createParser: () => new ClaudeStreamParser(),
};

/** stream-json: system/init, assistant (text, tool_use), user (tool_result), result. */
export class ClaudeStreamParser implements OutputParser {
  private summary?: string;
  private error?: string;
  private lastText?: string;

  push(line: string): ParsedEvent[] {
    const j = jsonLine(line);
    if (!j) return line.trim() ? [{ kind: 'log', text: line }] : [];
    const out: ParsedEvent[] = [];
    switch (j.type) {
      case 'system':
        if (j.subtype === 'init')
          out.push({ kind: 'step', text: `Claude Code started${str(j.model) ? ` (${str(j.model)})` : ''}` });
        break;
      case 'assistant': {
        const content = obj(j.message)?.content;
        for (const c of Array.isArray(content) ? content : []) {
          const part = obj(c);
          if (part?.type === 'text' && str(part.text)?.trim()) {
            this.lastText = str(part.text);
            out.push({ kind: 'message', text: oneLine(str(part.text) ?? '', 500) });
          } else if (part?.type === 'tool_use')
            out.push({ kind: 'step', text: describeTool(str(part.name) ?? 'tool', obj(part.input)) });
        }
        break;
      }
      case 'user': {
        const content = obj(j.message)?.content;
        for (const c of Array.isArray(content) ? content : []) {
          const part = obj(c);
          if (part?.type === 'tool_result' && part.is_error === true)
            out.push({
              kind: 'log',
              text: `tool error: ${oneLine(typeof part.content === 'string' ? part.content : JSON.stringify(part.content ?? ''))}`,
            });
        }
        break;
      }
      case 'result':
        if (j.is_error === true || (str(j.subtype) && j.subtype !== 'success')) {
          this.error = oneLine(
            str(j.result) ?? str(j.error) ?? `Claude Code ended with ${str(j.subtype) ?? 'an error'}`,
            500,
          );
          out.push({ kind: 'error', text: this.error });
        } else this.summary = str(j.result);
        break;
      default:
        break;
    }
    return out;
  }

  finish() {
    return { summary: this.summary ?? this.lastText, error: this.error };
  }
}
