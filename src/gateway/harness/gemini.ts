/**
 * Gemini CLI, headless: the prompt on stdin (a non-TTY run is headless) with
 * `--output-format stream-json`. Restriction is the approval mode: `plan` is read-only, `auto_edit`
 * approves file edits only; in headless mode anything not approved (shell) is refused unless
 * `--allowed-tools run_shell_command` says otherwise. `--skip-trust` because an untrusted folder
 * forces the default mode. Gemini reads GEMINI.md itself.
 */
import { join } from 'node:path';
import type { HarnessSpec, OutputParser, ParsedEvent } from './harness';
import { describeTool, jsonLine, MCP_SERVER_NAME, obj, oneLine, str } from './harness';

export const geminiHarness: HarnessSpec = {
  id: 'gemini',
  name: 'Gemini CLI',
  description: "Google's Gemini CLI, run headless in a throwaway copy of your repository.",
  binaries: ['gemini'],
  readsInstructions: ['GEMINI.md'],
  canRefuseShell: true,
  envPassthrough: [
    'GEMINI_API_KEY',
    'GOOGLE_API_KEY',
    'GOOGLE_CLOUD_PROJECT',
    'GOOGLE_CLOUD_LOCATION',
    'GOOGLE_GENAI_USE_VERTEXAI',
    'GOOGLE_APPLICATION_CREDENTIALS',
    'GEMINI_MODEL',
  ],
  homeEntries: ['.gemini'],
  mcpConfig:
    "It delegates through baton mcp, given in a settings file of the run's own (GEMINI_CLI_SYSTEM_SETTINGS_PATH; ~/.gemini is the user's, linked in, and is never written).",
  invocation({ prompt, capabilities, mcp }) {
    const args = [
      '--output-format',
      'stream-json',
      '--approval-mode',
      capabilities.write ? 'auto_edit' : 'plan',
      '--skip-trust',
    ];
    if (capabilities.shell) args.push('--allowed-tools', 'run_shell_command');
    if (!mcp) return { args, stdin: prompt, caveats: [] };
    // System settings win over the user's; only this server is allowed, and it is trusted (nobody can confirm a call).
    const file = join(mcp.configDir, 'baton-gemini-settings.json');
    args.push('--allowed-mcp-server-names', MCP_SERVER_NAME);
    const settings = {
      mcpServers: { [MCP_SERVER_NAME]: { command: mcp.command, args: mcp.args, env: mcp.env, trust: true } },
    };
    return {
      args,
      stdin: prompt,
      env: { GEMINI_CLI_SYSTEM_SETTINGS_PATH: file },
      caveats: [],
      files: [{ path: file, content: JSON.stringify(settings, null, 2) }],
    };
  },
  createParser: () => new GeminiStreamParser(),
};

/** stream-json: init, message (role, content, delta), tool_use, tool_result, error, result. */
export class GeminiStreamParser implements OutputParser {
  private text = '';
  private error?: string;

  push(line: string): ParsedEvent[] {
    const j = jsonLine(line);
    if (!j) return line.trim() ? [{ kind: 'log', text: line }] : [];
    switch (j.type) {
      case 'init':
        return [{ kind: 'step', text: `Gemini CLI started${str(j.model) ? ` (${str(j.model)})` : ''}` }];
      case 'message':
        if (j.role === 'assistant' && str(j.content)) {
          this.text = j.delta === true ? this.text + str(j.content) : (str(j.content) ?? '');
        }
        return [];
      case 'tool_use':
        return [{ kind: 'step', text: describeTool(str(j.tool_name) ?? 'tool', obj(j.parameters)) }];
      case 'tool_result':
        return j.status === 'error'
          ? [{ kind: 'log', text: oneLine(`tool error: ${str(obj(j.error)?.message) ?? str(j.output) ?? ''}`) }]
          : [];
      case 'error':
        return [{ kind: 'log', text: oneLine(str(j.message) ?? 'error') }];
      case 'result':
        if (j.status && j.status !== 'success') {
          this.error = oneLine(str(obj(j.error)?.message) ?? `Gemini CLI ended with ${String(j.status)}`, 500);
          return [{ kind: 'error', text: this.error }];
        }
        return this.text ? [{ kind: 'message', text: oneLine(this.text, 500) }] : [];
      default:
        return [];
    }
  }

  finish() {
    return { summary: this.text || undefined, error: this.error };
  }
}
