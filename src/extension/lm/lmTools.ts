/**
 * Chat agents in VS Code delegate too: Baton's four language-model tools (`vscode.lm.registerTool`,
 * contributed in package.json's `languageModelTools`) and the MCP server definition that runs
 * `baton mcp` for VS Code's agent sessions (`vscode.lm.registerMcpServerDefinitionProvider`). Both APIs
 * are feature-checked: a VS Code without them activates Baton without these.
 */
import * as vscode from 'vscode';
import { AGENT_TOOL_NAMES } from '../../core/delegation/agentTools';
import { errorMessage } from '../errors';
import type { BatonAgentTools, PreparedCall } from './agentTools';

type ToolName = (typeof AGENT_TOOL_NAMES)[keyof typeof AGENT_TOOL_NAMES];

/** What each tool does, by name: its call and, for delegate and cancel, what is shown before it runs. */
function toolTable(tools: BatonAgentTools): Record<
  ToolName,
  {
    run: (input: unknown, token: vscode.CancellationToken) => Promise<string>;
    prepare: (input: unknown) => PreparedCall;
  }
> {
  return {
    [AGENT_TOOL_NAMES.findAgents]: {
      run: (input) => tools.findAgents(input),
      prepare: () => ({ invocationMessage: vscode.l10n.t('Looking up Baton’s approved agents…') }),
    },
    [AGENT_TOOL_NAMES.delegate]: {
      run: (input, token) => tools.delegate(input, token),
      prepare: (input) => tools.prepareDelegate(input),
    },
    [AGENT_TOOL_NAMES.getTask]: {
      run: (input) => tools.getTask(input),
      prepare: () => ({ invocationMessage: vscode.l10n.t('Reading the delegation…') }),
    },
    [AGENT_TOOL_NAMES.cancelTask]: {
      run: (input) => tools.cancelTask(input),
      prepare: (input) => tools.prepareCancel(input),
    },
  };
}

/** The registered tool object for `name`, as VS Code calls it (exported for tests through the API). */
export function languageModelTool(tools: BatonAgentTools, name: ToolName): vscode.LanguageModelTool<unknown> {
  const entry = toolTable(tools)[name];
  return {
    prepareInvocation: (options) => {
      const p = entry.prepare(options.input);
      const c = p.confirmationMessages;
      // The agent's name and the task come from a card and a model: shown as text, never as markdown.
      return c
        ? {
            invocationMessage: p.invocationMessage,
            confirmationMessages: { title: c.title, message: new vscode.MarkdownString().appendText(c.message) },
          }
        : p;
    },
    invoke: async (options, token) => {
      const text = await entry.run(options.input, token);
      return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(text)]);
    },
  };
}

/** Registers the four tools where VS Code has language-model tools; nothing (and a log line) where it has not. */
export function registerLanguageModelTools(tools: BatonAgentTools, log: vscode.LogOutputChannel): vscode.Disposable[] {
  const lm = (vscode as { readonly lm?: Partial<typeof vscode.lm> }).lm;
  if (typeof lm?.registerTool !== 'function') {
    log.info('language-model tools: this VS Code has no vscode.lm.registerTool; chat agents cannot delegate here');
    return [];
  }
  const out: vscode.Disposable[] = [];
  for (const name of Object.values(AGENT_TOOL_NAMES)) {
    try {
      out.push(lm.registerTool(name, languageModelTool(tools, name)));
    } catch (e) {
      log.warn(`language-model tools: could not register ${name}: ${errorMessage(e)}`);
    }
  }
  return out;
}
