/**
 * OpenAI Codex CLI, headless: `codex exec --json` reading the prompt from stdin (`-`). Restriction is
 * Codex's own sandbox: `--sandbox read-only` or `workspace-write` (network off inside it unless
 * allowed), approvals `never` since nobody can answer. Codex cannot refuse shell commands — running
 * them is how it works — so that is reported as a caveat. Codex reads AGENTS.md itself.
 */
import type { HarnessSpec, OutputParser, ParsedEvent } from './harness';
import { jsonLine, MCP_SERVER_NAME, obj, oneLine, str } from './harness';

export const codexHarness: HarnessSpec = {
  id: 'codex',
  name: 'Codex CLI',
  description: "OpenAI's Codex CLI (codex exec), run headless in a throwaway copy of your repository.",
  binaries: ['codex'],
  readsInstructions: ['AGENTS.md'],
  canRefuseShell: false,
  envPassthrough: ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'CODEX_HOME', 'AZURE_OPENAI_API_KEY'],
  homeEntries: ['.codex'],
  mcpConfig: 'It delegates through baton mcp, given with -c mcp_servers.baton.command/args/env.',
  invocation({ prompt, capabilities, workspace, isGitRepo, mcp }) {
    const args = [
      'exec',
      '--json',
      '--sandbox',
      capabilities.write ? 'workspace-write' : 'read-only',
      '-c',
      'approval_policy="never"',
      '-C',
      workspace,
    ];
    if (capabilities.write)
      args.push('-c', `sandbox_workspace_write.network_access=${capabilities.network ? 'true' : 'false'}`);
    if (!isGitRepo) args.push('--skip-git-repo-check');
    if (mcp) {
      // TOML values: a JSON string is a TOML basic string, a list of them a TOML array.
      const key = `mcp_servers.${MCP_SERVER_NAME}`;
      const env = Object.entries(mcp.env)
        .map(([k, v]) => `${k} = ${JSON.stringify(v)}`)
        .join(', ');
      args.push('-c', `${key}.command=${JSON.stringify(mcp.command)}`);
      args.push('-c', `${key}.args=${JSON.stringify(mcp.args)}`);
      args.push('-c', `${key}.env={ ${env} }`);
    }
    args.push('-');
    const caveats = capabilities.shell
      ? []
      : ['Codex cannot refuse shell commands; they run inside its sandbox (read-only unless write is granted).'];
    return { args, stdin: prompt, caveats };
  },
  createParser: () => new CodexJsonParser(),
};

/** exec --json: thread.started, turn.started, item.started/updated/completed, turn.completed/failed, error. */
export class CodexJsonParser implements OutputParser {
  private summary?: string;
  private error?: string;

  push(line: string): ParsedEvent[] {
    const j = jsonLine(line);
    if (!j) return line.trim() ? [{ kind: 'log', text: line }] : [];
    const item = obj(j.item);
    switch (j.type) {
      case 'thread.started':
        return [{ kind: 'step', text: 'Codex started' }];
      case 'item.started':
        if (item?.type === 'command_execution')
          return [{ kind: 'step', text: oneLine(`Run ${str(item.command) ?? ''}`) }];
        return [];
      case 'item.completed': {
        switch (item?.type) {
          case 'agent_message':
            this.summary = str(item.text);
            return [{ kind: 'message', text: oneLine(str(item.text) ?? '', 500) }];
          case 'reasoning':
            return [{ kind: 'log', text: oneLine(str(item.text) ?? '') }];
          case 'file_change': {
            const changes = Array.isArray(item.changes) ? item.changes.map((c) => obj(c)).filter((c) => c) : [];
            return changes.map((c) => ({
              kind: 'step' as const,
              text: oneLine(`${str(c?.kind) ?? 'update'} ${str(c?.path) ?? ''}`),
            }));
          }
          case 'command_execution':
            return typeof item.exit_code === 'number' && item.exit_code !== 0
              ? [{ kind: 'log', text: oneLine(`command exited ${item.exit_code}: ${str(item.command) ?? ''}`) }]
              : [];
          case 'mcp_tool_call':
            return [{ kind: 'step', text: oneLine(`${str(item.server) ?? 'mcp'}.${str(item.tool) ?? 'tool'}`) }];
          case 'web_search':
            return [{ kind: 'step', text: oneLine(`Search ${str(item.query) ?? ''}`) }];
          case 'error':
            return [{ kind: 'log', text: oneLine(str(item.message) ?? 'error') }];
          default:
            return [];
        }
      }
      case 'turn.failed':
        this.error = oneLine(str(obj(j.error)?.message) ?? 'Codex turn failed', 500);
        return [{ kind: 'error', text: this.error }];
      case 'error':
        return [{ kind: 'log', text: oneLine(str(j.message) ?? 'error') }];
      default:
        return [];
    }
  }

  finish() {
    return { summary: this.summary, error: this.error };
  }
}
