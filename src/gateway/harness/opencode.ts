/**
 * OpenCode, headless: `opencode run --format json` with the prompt on stdin. OpenCode allows every
 * tool by default, so restriction means explicit deny rules: the run's permissions come in
 * OPENCODE_CONFIG_CONTENT (`edit`, `bash`, `webfetch` each allow or deny). OpenCode reads AGENTS.md
 * (and CLAUDE.md as a fallback) itself.
 */
import type { HarnessSpec, OutputParser, ParsedEvent } from './harness';
import { describeTool, jsonLine, MCP_SERVER_NAME, obj, oneLine, str } from './harness';

export const opencodeHarness: HarnessSpec = {
  id: 'opencode',
  name: 'OpenCode',
  description: 'OpenCode (opencode run), run headless in a throwaway copy of your repository.',
  binaries: ['opencode'],
  readsInstructions: ['AGENTS.md', 'CLAUDE.md'],
  canRefuseShell: true,
  envPassthrough: ['ANTHROPIC_API_KEY', 'OPENAI_API_KEY', 'GEMINI_API_KEY', 'OPENROUTER_API_KEY', 'OPENCODE_MODEL'],
  homeEntries: ['.local/share/opencode', '.config/opencode'],
  mcpConfig: 'It delegates through baton mcp, given as an MCP server in OPENCODE_CONFIG_CONTENT.',
  invocation({ prompt, capabilities, workspace, mcp }) {
    const rule = (ok: boolean) => (ok ? 'allow' : 'deny');
    const permission = {
      edit: rule(capabilities.write),
      bash: rule(capabilities.shell),
      webfetch: rule(capabilities.network),
      external_directory: 'deny',
    };
    return {
      args: ['run', '--format', 'json', '--dir', workspace],
      stdin: prompt,
      env: {
        OPENCODE_CONFIG_CONTENT: JSON.stringify({
          permission,
          ...(mcp
            ? {
                mcp: {
                  [MCP_SERVER_NAME]: {
                    type: 'local',
                    command: [mcp.command, ...mcp.args],
                    environment: mcp.env,
                    enabled: true,
                  },
                },
              }
            : {}),
        }),
      },
      caveats: [],
    };
  },
  createParser: () => new OpencodeJsonParser(),
};

/** --format json: step_start, text (part.text), tool_use (part.tool, part.state), step_finish, error. */
export class OpencodeJsonParser implements OutputParser {
  private text = '';
  private error?: string;

  push(line: string): ParsedEvent[] {
    const j = jsonLine(line);
    if (!j) return line.trim() ? [{ kind: 'log', text: line }] : [];
    const part = obj(j.part);
    switch (j.type) {
      case 'step_start':
        this.text = '';
        return [];
      case 'text':
        if (str(part?.text)) {
          this.text += str(part?.text);
          return [{ kind: 'message', text: oneLine(str(part?.text) ?? '', 500) }];
        }
        return [];
      case 'tool_use': {
        const state = obj(part?.state);
        const ev: ParsedEvent[] = [{ kind: 'step', text: describeTool(str(part?.tool) ?? 'tool', obj(state?.input)) }];
        if (state?.status === 'error') ev.push({ kind: 'log', text: oneLine(`tool error: ${str(state.error) ?? ''}`) });
        return ev;
      }
      case 'error': {
        const e = obj(j.error);
        this.error = oneLine(
          str(obj(e?.data)?.message) ?? str(e?.message) ?? str(e?.name) ?? 'OpenCode reported an error',
          500,
        );
        return [{ kind: 'error', text: this.error }];
      }
      default:
        return [];
    }
  }

  finish() {
    return { summary: this.text || undefined, error: this.error };
  }
}
