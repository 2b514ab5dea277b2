/**
 * `baton mcp` against a real gateway, through the MCP SDK's own client spawning the CLI: its four
 * tools, a delegation to the formatter followed to its end with get_task (and seen by `baton status`),
 * and a slow refactor canceled with cancel_task.
 */
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { discoverLocalAgents } from '../../../src/gateway/agents/discover';
import { batonMain } from '../../../src/gateway/batonCli';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { WorkspaceManager } from '../../../src/gateway/workspace/workspaceManager';
import { makeRepo, tempSpace } from '../workspace/repoFixtures';
import type { TempSpace } from '../workspace/repoFixtures';
import { mcpClient } from './helpers';

interface ToolResult {
  readonly isError?: boolean;
  readonly content: Array<{ type: string; text?: string }>;
  readonly structuredContent?: Record<string, unknown>;
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<ToolResult> {
  return (await client.callTool({ name, arguments: args }, undefined, { timeout: 90_000 })) as ToolResult;
}

describe('baton mcp', () => {
  let space: TempSpace;
  let gw: RunningGateway;
  let client: Client;
  let repo: string;
  let env: Record<string, string>;

  before(async () => {
    space = tempSpace('baton-mcp-');
    repo = makeRepo(space.base, 'repo', {
      'a.ts': 'export const   a = {b:1}\n',
      'b.ts': 'export const unusedImportUser = 1;\n',
    });
    const manager = new WorkspaceManager({ root: space.root, userHome: space.home });
    gw = await startGateway({
      stateDir: join(space.base, 'state'),
      roots: [space.base],
      localAgents: await discoverLocalAgents({ manager, clis: false, agentPaceMs: 1500 }),
      log: () => undefined,
    });
    env = {
      BATON_GATEWAY: gw.url,
      BATON_TOKEN: gw.token,
      BATON_CLI_DIR: join(space.base, 'cli', 'journals'),
      BATON_STATE_DIR: join(space.base, 'no-local-gateway'),
    };
    client = await mcpClient(env);
  });
  after(async () => {
    await client?.close();
    await gw?.close();
    space?.dispose();
  });

  it('lists its four tools, each with a description and an input schema', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ['cancel_task', 'delegate', 'find_agents', 'get_task']);
    for (const t of tools) {
      assert.ok((t.description ?? '').length > 40, `${t.name} is described for a model`);
      assert.equal(t.inputSchema.type, 'object');
    }
    const delegate = tools.find((t) => t.name === 'delegate');
    assert.deepEqual(delegate?.inputSchema.required?.slice().sort(), ['agent', 'task']);
  });

  it('find_agents lists the gateway’s agents', async () => {
    const r = await call(client, 'find_agents', {});
    assert.ok(!r.isError, r.content[0]?.text);
    const agents = (r.structuredContent?.agents ?? []) as Array<{ id: string }>;
    assert.deepEqual(agents.map((a) => a.id).sort(), ['formatter', 'lint-fix', 'refactor']);
    assert.match(r.content[0]?.text ?? '', /formatter: /);
  });

  it('delegates to the formatter, follows it with get_task to completion, and baton status sees it', async () => {
    const started = await call(client, 'delegate', {
      agent: 'formatter',
      task: 'Format a.ts',
      files: ['a.ts'],
      write: true,
      repository: repo,
      wait_seconds: 0,
    });
    assert.ok(!started.isError, started.content[0]?.text);
    // No deadline asked for: the one the editor and `baton delegate` give (30 minutes), so an agent that
    // never answers does not keep the delegation in flight forever.
    const deadline = Date.parse(String(started.structuredContent?.deadline));
    assert.ok(Math.abs(deadline - (Date.now() + 30 * 60_000)) < 60_000, String(started.structuredContent?.deadline));
    const requestId = String(started.structuredContent?.request_id);
    let view = started.structuredContent ?? {};
    for (let i = 0; i < 10 && view.finished !== true; i++) {
      const r = await call(client, 'get_task', { request_id: requestId, wait_seconds: 10 });
      assert.ok(!r.isError, r.content[0]?.text);
      view = r.structuredContent ?? {};
    }
    assert.equal(view.outcome, 'completed', JSON.stringify(view));
    assert.match(String(view.patch_preview), /\+export const a = \{ b: 1 \};/);
    const text: string[] = [];
    const out = new Writable({
      write(chunk: Buffer, _enc, done) {
        text.push(chunk.toString());
        done();
      },
    });
    const code = await batonMain(['status', requestId], out, { ...process.env, ...env });
    assert.equal(code, 0);
    assert.match(text.join(''), new RegExp(`^${requestId} Formatter.*: completed`, 'm'));
  });

  it('cancel_task stops a slow refactor: canceled', async () => {
    const started = await call(client, 'delegate', {
      agent: 'refactor',
      task: 'organise imports',
      repository: repo,
      write: true,
      wait_seconds: 2,
      deadline_minutes: 5,
    });
    assert.ok(!started.isError, started.content[0]?.text);
    const deadline = Date.parse(String(started.structuredContent?.deadline));
    assert.ok(Math.abs(deadline - (Date.now() + 5 * 60_000)) < 60_000, String(started.structuredContent?.deadline));
    assert.equal(started.structuredContent?.finished, false, 'still running after 2 s (paced)');
    const requestId = String(started.structuredContent?.request_id);
    const r = await call(client, 'cancel_task', { request_id: requestId });
    assert.ok(!r.isError, r.content[0]?.text);
    assert.equal(r.structuredContent?.outcome, 'canceled', JSON.stringify(r.structuredContent));
  });

  it('get_task of an unknown request is a tool error that says what to pass', async () => {
    const r = await call(client, 'get_task', { request_id: 'no-such-request' });
    assert.equal(r.isError, true);
    assert.match(r.content[0]?.text ?? '', /No delegation no-such-request.*request_id delegate answered with/);
  });
});
