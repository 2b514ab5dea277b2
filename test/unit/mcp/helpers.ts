/** Shared pieces for the `baton mcp` tests: a real MCP client on the CLI, and reading a stand-in's MCP results. */
import { resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { StreamResponse } from '@a2a-js/sdk';
import { META } from '../../../src/core/batonProfile';
import type { ChildTaskInfo } from '../../../src/core/batonProfile';

export const ROOT = resolve(__dirname, '../../..');
export const BATON_CLI = resolve(ROOT, 'src/gateway/batonCli.ts');
export const STANDIN = resolve(ROOT, 'test/fixtures/standin-cli');

/** `baton mcp` as a gateway starts it for a coding CLI: this runtime, tsx's loader by path, the CLI's source. */
export function mcpCommand(): string[] {
  return [process.execPath, '--import', require.resolve('tsx'), BATON_CLI, 'mcp'];
}

/** An MCP client (the SDK's own) on `baton mcp` started as a process with this environment. */
export async function mcpClient(env: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'baton-test', version: '1.0.0' });
  const [command, ...args] = mcpCommand();
  await client.connect(
    new StdioClientTransport({ command, args, env: { ...getDefaultEnvironment(), ...env }, cwd: ROOT, stderr: 'pipe' }),
  );
  return client;
}

export interface StandinMcpResult {
  readonly tool: string;
  readonly isError: boolean;
  readonly text: string;
  readonly structured?: Record<string, unknown>;
}

/** The MCP results a stand-in CLI reported in its final message (`@@mcp <base64 JSON>@@`), in order. */
export function standinResults(text: string): StandinMcpResult[] {
  return [...text.matchAll(/@@mcp ([A-Za-z0-9+/=]+)@@/g)].map(
    (m) => JSON.parse(Buffer.from(m[1], 'base64').toString('utf8')) as StandinMcpResult,
  );
}

/** The status text of a stream event, if it has one. */
export function statusText(ev: StreamResponse): string | undefined {
  if (ev.payload?.$case !== 'statusUpdate') return undefined;
  const c = ev.payload.value.status?.message?.parts[0]?.content;
  return c?.$case === 'text' ? c.value : undefined;
}

/** The children a parent's stream reported (`META.child`), every report in order. */
export function childReports(events: readonly StreamResponse[]): ChildTaskInfo[] {
  const out: ChildTaskInfo[] = [];
  for (const ev of events) {
    if (ev.payload?.$case !== 'statusUpdate') continue;
    const c = ev.payload.value.metadata?.[META.child];
    if (c && typeof c === 'object') out.push(c as ChildTaskInfo);
  }
  return out;
}
