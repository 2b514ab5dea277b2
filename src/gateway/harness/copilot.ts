/**
 * GitHub Copilot CLI, programmatic mode: `copilot -p <prompt>` (the prompt is an argument) with
 * `--output-format json` (JSON lines of session events). Restriction: `--deny-tool` wins over any
 * allow rule, so denied kinds are denied by name (`write`, `shell`, `url`); what is granted is
 * pre-approved with `--allow-tool` because nobody can answer a prompt; `--no-ask-user` keeps it from
 * waiting. Copilot reads AGENTS.md, CLAUDE.md, GEMINI.md and .github/copilot-instructions.md itself.
 */
import { join } from 'node:path';
import type { HarnessSpec, OutputParser, ParsedEvent } from './harness';
import { describeTool, jsonLine, MCP_SERVER_NAME, obj, oneLine, str } from './harness';

export const copilotHarness: HarnessSpec = {
  id: 'copilot',
  name: 'GitHub Copilot CLI',
  description: 'GitHub Copilot CLI in programmatic mode, run in a throwaway copy of your repository.',
  binaries: ['copilot'],
  readsInstructions: ['AGENTS.md', 'CLAUDE.md', 'GEMINI.md', '.github/copilot-instructions.md'],
  canRefuseShell: true,
  envPassthrough: ['COPILOT_GITHUB_TOKEN', 'GH_TOKEN', 'GITHUB_TOKEN', 'COPILOT_MODEL'],
  homeEntries: ['.copilot'],
  mcpConfig: 'It delegates through baton mcp, given with --additional-mcp-config @<file>.',
  invocation({ prompt, capabilities, mcp }) {
    const args = ['-p', prompt, '--output-format', 'json', '--no-ask-user', '--no-color'];
    const allow = [
      ...(capabilities.write ? ['write'] : []),
      ...(capabilities.shell ? ['shell'] : []),
      ...(capabilities.network ? ['url'] : []),
    ];
    const deny = [
      ...(capabilities.write ? [] : ['write']),
      ...(capabilities.shell ? [] : ['shell']),
      ...(capabilities.network ? [] : ['url']),
    ];
    for (const t of allow) args.push(`--allow-tool=${t}`);
    for (const t of deny) args.push(`--deny-tool=${t}`);
    if (!mcp) return { args, caveats: [] };
    const file = join(mcp.configDir, 'baton-copilot-mcp.json');
    args.push('--additional-mcp-config', `@${file}`, `--allow-tool=${MCP_SERVER_NAME}`);
    const config = {
      mcpServers: {
        [MCP_SERVER_NAME]: { type: 'local', command: mcp.command, args: mcp.args, env: mcp.env, tools: ['*'] },
      },
    };
    return { args, caveats: [], files: [{ path: file, content: JSON.stringify(config, null, 2) }] };
  },
  createParser: () => new CopilotJsonParser(),
};

/**
 * JSON lines of session events: assistant.message (content, toolRequests), assistant.message_delta,
 * tool.execution_start / tool.execution_complete, session.error. Unknown events are ignored and
 * plain text lines (older versions without JSON output) become the summary.
 */
export class CopilotJsonParser implements OutputParser {
  private summary?: string;
  private plain: string[] = [];
  private error?: string;

  push(line: string): ParsedEvent[] {
    const j = jsonLine(line);
    if (!j) {
      if (line.trim()) this.plain.push(line);
      return line.trim() ? [{ kind: 'log', text: line }] : [];
    }
    const data = obj(j.data) ?? j;
    switch (j.type) {
      case 'assistant.message': {
        const content = str(data.content);
        if (content?.trim()) {
          this.summary = content;
          return [{ kind: 'message', text: oneLine(content, 500) }];
        }
        return [];
      }
      case 'tool.execution_start':
        return [
          { kind: 'step', text: describeTool(str(data.toolName) ?? str(data.name) ?? 'tool', obj(data.arguments)) },
        ];
      case 'tool.execution_complete':
        return data.success === false
          ? [
              {
                kind: 'log',
                text: oneLine(`tool failed: ${str(obj(data.error)?.message) ?? str(data.toolName) ?? ''}`),
              },
            ]
          : [];
      case 'session.error':
      case 'error':
        this.error = oneLine(str(data.message) ?? 'Copilot reported an error', 500);
        return [{ kind: 'error', text: this.error }];
      default:
        return [];
    }
  }

  finish() {
    return { summary: this.summary ?? (this.plain.length ? this.plain.join('\n') : undefined), error: this.error };
  }
}
