/**
 * The MCP server VS Code's agent sessions use to delegate through Baton: `baton mcp` (the same four
 * tools as the language-model tools), run on VS Code's own runtime as the terminal's `baton` launcher
 * runs it (src/node/cliShim.ts): `ELECTRON_RUN_AS_NODE=1 <runtime> <dist/baton.js> mcp`, against the
 * local gateway this window uses (found through `BATON_STATE_DIR`, or `BATON_GATEWAY` when the user
 * set one). Offered only in a trusted workspace.
 *
 * `vscode.lm.registerMcpServerDefinitionProvider` and `McpStdioServerDefinition` are newer than the
 * `@types/vscode` Baton builds against: the minimal shape used here is declared below and checked at
 * run time, so an older VS Code activates Baton without it.
 */
import * as vscode from 'vscode';
import { mcpServerCommand } from '../../node/cliShim';

/** The provider id, as contributed in package.json (`contributes.mcpServerDefinitionProviders`). */
export const MCP_PROVIDER_ID = 'baton.mcp';

/** `vscode.McpStdioServerDefinition`, as far as Baton uses it. */
interface McpStdioServerDefinitionLike {
  readonly label: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Record<string, string | number | null>;
  readonly version?: string;
}

type McpStdioServerDefinitionCtor = new (
  label: string,
  command: string,
  args?: string[],
  env?: Record<string, string | number | null>,
  version?: string,
) => McpStdioServerDefinitionLike;

interface McpServerDefinitionProviderLike {
  readonly onDidChangeMcpServerDefinitions?: vscode.Event<void>;
  provideMcpServerDefinitions(token: vscode.CancellationToken): vscode.ProviderResult<McpStdioServerDefinitionLike[]>;
}

type RegisterMcpProvider = (id: string, provider: McpServerDefinitionProviderLike) => vscode.Disposable;

/** Registers the provider where VS Code has the API; nothing (and a log line) where it has not. */
export function registerMcpServerDefinition(
  context: vscode.ExtensionContext,
  gatewayStateDir: string,
  log: vscode.LogOutputChannel,
): vscode.Disposable[] {
  const api = vscode as unknown as {
    readonly lm?: { readonly registerMcpServerDefinitionProvider?: RegisterMcpProvider };
    readonly McpStdioServerDefinition?: McpStdioServerDefinitionCtor;
  };
  const register = api.lm?.registerMcpServerDefinitionProvider;
  const Definition = api.McpStdioServerDefinition;
  if (typeof register !== 'function' || typeof Definition !== 'function') {
    log.info('mcp: this VS Code cannot register MCP server definitions; baton mcp is not offered to agent sessions');
    return [];
  }
  const changed = new vscode.EventEmitter<void>();
  const version = String((context.extension.packageJSON as { version?: unknown }).version ?? '0');
  const provider: McpServerDefinitionProviderLike = {
    onDidChangeMcpServerDefinitions: changed.event,
    provideMcpServerDefinitions: () => {
      if (!vscode.workspace.isTrusted) return [];
      const c = mcpServerCommand(
        process.execPath,
        vscode.Uri.joinPath(context.extensionUri, 'dist', 'baton.js').fsPath,
        gatewayStateDir,
      );
      return [new Definition('Baton', c.command, c.args, c.env, version)];
    },
  };
  try {
    return [
      changed,
      register.call(api.lm, MCP_PROVIDER_ID, provider),
      vscode.workspace.onDidGrantWorkspaceTrust(() => changed.fire()),
    ];
  } catch (e) {
    changed.dispose();
    log.warn(`mcp: could not register the server definition: ${e instanceof Error ? e.message : String(e)}`);
    return [];
  }
}
