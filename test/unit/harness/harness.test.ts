import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Capabilities } from '../../../src/gateway/agents/localAgent';
import { claudeHarness } from '../../../src/gateway/harness/claude';
import { codexHarness } from '../../../src/gateway/harness/codex';
import { copilotHarness } from '../../../src/gateway/harness/copilot';
import { geminiHarness } from '../../../src/gateway/harness/gemini';
import type { HarnessSpec, McpLaunch, ParsedEvent } from '../../../src/gateway/harness/harness';
import { opencodeHarness } from '../../../src/gateway/harness/opencode';
import { detectHarnesses, HARNESSES } from '../../../src/gateway/harness/registry';

const RO: Capabilities = { write: false, shell: false, network: false };
const WRITE: Capabilities = { write: true, shell: false, network: false };
const ALL: Capabilities = { write: true, shell: true, network: true };
const inv = (h: HarnessSpec, capabilities: Capabilities, isGitRepo = true) =>
  h.invocation({ prompt: 'Fix the bug', capabilities, workspace: '/ws/t1', isGitRepo });
const after = (args: readonly string[], flag: string) => args[args.indexOf(flag) + 1];

function parse(h: HarnessSpec, lines: string[]): { events: ParsedEvent[]; summary?: string; error?: string } {
  const p = h.createParser();
  const events = lines.flatMap((l) => p.push(l));
  return { events, ...p.finish() };
}

describe('harness registry: argv and restriction', () => {
  it('Claude Code: print mode, stream-json, prompt on stdin; --tools limits what exists and --disallowedTools denies the rest', () => {
    const ro = inv(claudeHarness, RO);
    assert.deepEqual(ro.args.slice(0, 5), ['-p', '--output-format', 'stream-json', '--verbose', '--strict-mcp-config']);
    assert.equal(ro.stdin, 'Fix the bug');
    assert.ok(!ro.args.includes('Fix the bug'), 'the prompt is not in argv');
    assert.equal(after(ro.args, '--tools'), 'Read,Glob,Grep,LS');
    for (const t of ['Edit', 'Write', 'Bash', 'WebFetch'])
      assert.ok(after(ro.args, '--disallowedTools').split(',').includes(t), t);
    assert.equal(after(ro.args, '--permission-mode'), 'default');
    assert.ok(!ro.args.includes('--allowedTools'));
    const w = inv(claudeHarness, WRITE);
    assert.ok(after(w.args, '--tools').split(',').includes('Edit'));
    assert.ok(!after(w.args, '--disallowedTools').split(',').includes('Edit'));
    assert.ok(after(w.args, '--disallowedTools').split(',').includes('Bash'));
    assert.equal(after(w.args, '--permission-mode'), 'acceptEdits');
    const all = inv(claudeHarness, ALL);
    assert.ok(!all.args.includes('--disallowedTools'));
    assert.ok(after(all.args, '--tools').split(',').includes('Bash'));
    assert.match(after(all.args, '--allowedTools'), /^Bash/);
  });

  it('Codex: exec --json with its sandbox, approvals never, stdin prompt; cannot refuse shell (caveat)', () => {
    const ro = inv(codexHarness, RO);
    assert.deepEqual(ro.args.slice(0, 4), ['exec', '--json', '--sandbox', 'read-only']);
    assert.equal(ro.args.at(-1), '-');
    assert.equal(ro.stdin, 'Fix the bug');
    assert.equal(after(ro.args, '-C'), '/ws/t1');
    assert.ok(ro.args.includes('approval_policy="never"'));
    assert.equal(ro.caveats.length, 1);
    assert.ok(!ro.args.includes('--skip-git-repo-check'));
    const w = inv(codexHarness, WRITE, false);
    assert.equal(after(w.args, '--sandbox'), 'workspace-write');
    assert.ok(w.args.includes('sandbox_workspace_write.network_access=false'));
    assert.ok(w.args.includes('--skip-git-repo-check'));
    assert.equal(inv(codexHarness, ALL).caveats.length, 0);
    assert.equal(codexHarness.canRefuseShell, false);
  });

  it('Gemini CLI: stream-json, plan mode when read-only, auto_edit when writing, shell only when granted', () => {
    const ro = inv(geminiHarness, RO);
    assert.equal(after(ro.args, '--output-format'), 'stream-json');
    assert.equal(after(ro.args, '--approval-mode'), 'plan');
    assert.ok(!ro.args.includes('--allowed-tools'));
    assert.equal(ro.stdin, 'Fix the bug');
    assert.equal(after(inv(geminiHarness, WRITE).args, '--approval-mode'), 'auto_edit');
    assert.equal(after(inv(geminiHarness, ALL).args, '--allowed-tools'), 'run_shell_command');
    assert.ok(!ro.args.includes('--yolo'));
  });

  it('Copilot CLI: -p prompt, JSON output, denied tools denied by name, granted ones pre-approved, never --allow-all', () => {
    const ro = inv(copilotHarness, RO);
    assert.equal(after(ro.args, '-p'), 'Fix the bug');
    assert.equal(after(ro.args, '--output-format'), 'json');
    assert.ok(ro.args.includes('--no-ask-user'));
    for (const t of ['write', 'shell', 'url']) assert.ok(ro.args.includes(`--deny-tool=${t}`), t);
    assert.ok(!ro.args.some((a) => a.startsWith('--allow-tool')));
    const w = inv(copilotHarness, WRITE);
    assert.ok(w.args.includes('--allow-tool=write') && w.args.includes('--deny-tool=shell'));
    for (const c of [RO, WRITE, ALL])
      assert.ok(!inv(copilotHarness, c).args.some((a) => /^--(allow-all|yolo)/.test(a)));
  });

  it('OpenCode: run --format json, stdin prompt, explicit permissions in OPENCODE_CONFIG_CONTENT', () => {
    const ro = inv(opencodeHarness, RO);
    assert.deepEqual(ro.args.slice(0, 3), ['run', '--format', 'json']);
    assert.equal(after(ro.args, '--dir'), '/ws/t1');
    assert.equal(ro.stdin, 'Fix the bug');
    const cfg = JSON.parse(ro.env?.OPENCODE_CONFIG_CONTENT ?? '{}') as { permission: Record<string, string> };
    assert.deepEqual(cfg.permission, { edit: 'deny', bash: 'deny', webfetch: 'deny', external_directory: 'deny' });
    const all = JSON.parse(inv(opencodeHarness, ALL).env?.OPENCODE_CONFIG_CONTENT ?? '{}') as {
      permission: Record<string, string>;
    };
    assert.equal(all.permission.edit, 'allow');
    assert.equal(all.permission.bash, 'allow');
  });

  it('says which instruction files each CLI reads by itself', () => {
    assert.deepEqual(claudeHarness.readsInstructions, ['CLAUDE.md']);
    assert.ok(codexHarness.readsInstructions.includes('AGENTS.md'));
    assert.deepEqual(geminiHarness.readsInstructions, ['GEMINI.md']);
    assert.ok(copilotHarness.readsInstructions.includes('AGENTS.md'));
    assert.ok(opencodeHarness.readsInstructions.includes('AGENTS.md'));
    assert.deepEqual(
      HARNESSES.map((h) => h.id),
      ['claude', 'codex', 'gemini', 'copilot', 'opencode'],
    );
  });
});

const MCP: McpLaunch = {
  command: '/opt/node/bin/node',
  args: ['/opt/baton/dist/baton.js', 'mcp'],
  env: {
    BATON_GATEWAY: 'http://127.0.0.1:4000',
    BATON_TOKEN_FILE: '/home/run/.baton-task-token',
    BATON_PARENT_TASK: 't1',
  },
  configDir: '/home/run',
};
const withMcp = (h: HarnessSpec) =>
  h.invocation({ prompt: 'Fix the bug', capabilities: RO, workspace: '/ws/t1', isGitRepo: true, mcp: MCP });
const fileOf = (i: ReturnType<HarnessSpec['invocation']>, path: string) =>
  JSON.parse(i.files?.find((f) => f.path === path)?.content ?? 'null') as Record<
    string,
    Record<string, unknown>
  > | null;
const server = { command: MCP.command, args: MCP.args, env: MCP.env };

describe('harness registry: baton mcp for the CLI, each its own way', () => {
  it('without a binding no CLI gets an MCP server, and every card says how it would', () => {
    for (const h of HARNESSES) {
      const i = inv(h, RO);
      assert.equal(i.files, undefined, h.id);
      assert.doesNotMatch(JSON.stringify(i), /baton\.js|mcp_servers|--mcp-config|mcpServers|additional-mcp/, h.id);
      assert.match(h.mcpConfig, /baton mcp/, h.id);
    }
  });

  it('Claude Code: --mcp-config names a file with the server, its tools pre-approved, no other server', () => {
    const i = withMcp(claudeHarness);
    assert.equal(after(i.args, '--mcp-config'), '/home/run/baton-mcp.json');
    assert.ok(i.args.includes('--strict-mcp-config'));
    assert.equal(after(i.args, '--allowedTools'), 'mcp__baton');
    assert.deepEqual(fileOf(i, '/home/run/baton-mcp.json')?.mcpServers.baton, server);
  });

  it('Codex: -c mcp_servers.baton.command, .args and .env as TOML values', () => {
    const i = withMcp(codexHarness);
    assert.ok(i.args.includes('mcp_servers.baton.command="/opt/node/bin/node"'));
    assert.ok(i.args.includes('mcp_servers.baton.args=["/opt/baton/dist/baton.js","mcp"]'));
    assert.ok(
      i.args.includes(
        'mcp_servers.baton.env={ BATON_GATEWAY = "http://127.0.0.1:4000", BATON_TOKEN_FILE = "/home/run/.baton-task-token", BATON_PARENT_TASK = "t1" }',
      ),
    );
    assert.equal(i.args.at(-1), '-', 'the prompt still comes on stdin');
  });

  it('Gemini CLI: a settings file of the run’s own (never ~/.gemini), only this server, trusted', () => {
    const i = withMcp(geminiHarness);
    assert.equal(i.env?.GEMINI_CLI_SYSTEM_SETTINGS_PATH, '/home/run/baton-gemini-settings.json');
    assert.equal(after(i.args, '--allowed-mcp-server-names'), 'baton');
    assert.ok(!i.files?.some((f) => f.path.includes('.gemini')));
    assert.deepEqual(fileOf(i, '/home/run/baton-gemini-settings.json')?.mcpServers.baton, { ...server, trust: true });
  });

  it('Copilot CLI: --additional-mcp-config @file, the server’s tools allowed', () => {
    const i = withMcp(copilotHarness);
    assert.equal(after(i.args, '--additional-mcp-config'), '@/home/run/baton-copilot-mcp.json');
    assert.ok(i.args.includes('--allow-tool=baton'));
    assert.deepEqual(fileOf(i, '/home/run/baton-copilot-mcp.json')?.mcpServers.baton, {
      type: 'local',
      ...server,
      tools: ['*'],
    });
  });

  it('OpenCode: the server in OPENCODE_CONFIG_CONTENT beside the permissions', () => {
    const i = withMcp(opencodeHarness);
    const config = JSON.parse(i.env?.OPENCODE_CONFIG_CONTENT ?? '{}') as Record<string, Record<string, unknown>>;
    assert.equal(config.permission.edit, 'deny');
    assert.deepEqual(config.mcp.baton, {
      type: 'local',
      command: [MCP.command, ...MCP.args],
      environment: MCP.env,
      enabled: true,
    });
  });
});

describe('harness registry: output parsers on recorded output', () => {
  it('Claude stream-json: init, tool uses, text, result; an error result fails', () => {
    const ok = parse(claudeHarness, [
      '{"type":"system","subtype":"init","cwd":"/ws/t1","session_id":"5f0c","tools":["Read","Edit"],"model":"claude-sonnet-4-5","permissionMode":"acceptEdits"}',
      '{"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"I will fix the off-by-one."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"/ws/t1/src/a.ts"}}]},"session_id":"5f0c"}',
      '{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"1\\tconst a = 1"}]},"session_id":"5f0c"}',
      '{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_2","name":"Edit","input":{"file_path":"/ws/t1/src/a.ts","old_string":"1","new_string":"2"}}]}}',
      '{"type":"user","message":{"content":[{"tool_use_id":"toolu_2","type":"tool_result","content":"File not found","is_error":true}]}}',
      '{"type":"result","subtype":"success","is_error":false,"duration_ms":5123,"num_turns":3,"result":"Fixed the off-by-one in src/a.ts.","session_id":"5f0c","total_cost_usd":0.012}',
    ]);
    assert.deepEqual(
      ok.events.filter((e) => e.kind === 'step').map((e) => e.text),
      ['Claude Code started (claude-sonnet-4-5)', 'Read /ws/t1/src/a.ts', 'Edit /ws/t1/src/a.ts'],
    );
    assert.ok(ok.events.some((e) => e.kind === 'log' && /tool error: File not found/.test(e.text)));
    assert.equal(ok.summary, 'Fixed the off-by-one in src/a.ts.');
    assert.equal(ok.error, undefined);
    const bad = parse(claudeHarness, [
      '{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":10}',
      'not json at all',
    ]);
    assert.match(bad.error ?? '', /error_max_turns/);
    assert.ok(bad.events.some((e) => e.kind === 'log' && e.text === 'not json at all'));
  });

  it('Codex exec --json: commands, file changes, agent message; turn.failed fails', () => {
    const ok = parse(codexHarness, [
      '{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}',
      '{"type":"turn.started"}',
      '{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Looking at the parser**"}}',
      '{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}',
      '{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"src\\n","exit_code":0,"status":"completed"}}',
      '{"type":"item.completed","item":{"id":"item_2","type":"file_change","changes":[{"path":"src/a.ts","kind":"update"},{"path":"src/b.ts","kind":"add"}],"status":"completed"}}',
      '{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"Updated src/a.ts and added src/b.ts."}}',
      '{"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,"output_tokens":122}}',
    ]);
    assert.deepEqual(
      ok.events.filter((e) => e.kind === 'step').map((e) => e.text),
      ['Codex started', 'Run bash -lc ls', 'update src/a.ts', 'add src/b.ts'],
    );
    assert.equal(ok.summary, 'Updated src/a.ts and added src/b.ts.');
    const bad = parse(codexHarness, [
      '{"type":"error","message":"You\'ve hit your usage limit."}',
      '{"type":"turn.failed","error":{"message":"You\'ve hit your usage limit."}}',
    ]);
    assert.match(bad.error ?? '', /usage limit/);
  });

  it('Gemini stream-json: tool uses, assistant deltas joined, result; a failed result fails', () => {
    const ok = parse(geminiHarness, [
      '{"type":"init","timestamp":"2025-10-10T12:00:00.000Z","session_id":"abc123","model":"gemini-2.5-pro"}',
      '{"type":"message","role":"user","content":"Fix the bug","timestamp":"2025-10-10T12:00:01.000Z"}',
      '{"type":"tool_use","tool_name":"read_file","tool_id":"read-123","parameters":{"file_path":"src/a.ts"},"timestamp":"2025-10-10T12:00:02.000Z"}',
      '{"type":"tool_result","tool_id":"read-123","status":"success","output":"const a = 1","timestamp":"2025-10-10T12:00:03.000Z"}',
      '{"type":"message","role":"assistant","content":"Fixed ","delta":true,"timestamp":"2025-10-10T12:00:04.000Z"}',
      '{"type":"message","role":"assistant","content":"the bug.","delta":true,"timestamp":"2025-10-10T12:00:04.100Z"}',
      '{"type":"result","status":"success","stats":{"total_tokens":250,"input_tokens":50,"output_tokens":200,"duration_ms":3000,"tool_calls":1},"timestamp":"2025-10-10T12:00:05.000Z"}',
    ]);
    assert.deepEqual(
      ok.events.filter((e) => e.kind === 'step').map((e) => e.text),
      ['Gemini CLI started (gemini-2.5-pro)', 'read_file src/a.ts'],
    );
    assert.equal(ok.summary, 'Fixed the bug.');
    const bad = parse(geminiHarness, [
      '{"type":"result","status":"error","error":{"type":"FatalTurnLimitedError","message":"Reached max turns"}}',
    ]);
    assert.match(bad.error ?? '', /Reached max turns/);
  });

  it('Copilot JSON lines: tool executions and the assistant message; plain text still gives a summary', () => {
    const ok = parse(copilotHarness, [
      '{"type":"session.start","data":{"sessionId":"s-1","selectedModel":"claude-sonnet-4.5"}}',
      '{"type":"assistant.message_delta","data":{"messageId":"m1","deltaContent":"Looking"}}',
      '{"type":"tool.execution_start","data":{"toolCallId":"c1","toolName":"view","arguments":{"path":"src/a.ts"}}}',
      '{"type":"tool.execution_complete","data":{"toolCallId":"c1","success":true}}',
      '{"type":"tool.execution_start","data":{"toolCallId":"c2","toolName":"edit","arguments":{"path":"src/a.ts"}}}',
      '{"type":"tool.execution_complete","data":{"toolCallId":"c2","success":false,"error":{"message":"Permission denied"}}}',
      '{"type":"assistant.message","data":{"messageId":"m1","content":"I could not edit src/a.ts.","toolRequests":[]}}',
    ]);
    assert.deepEqual(
      ok.events.filter((e) => e.kind === 'step').map((e) => e.text),
      ['view src/a.ts', 'edit src/a.ts'],
    );
    assert.ok(ok.events.some((e) => e.kind === 'log' && /Permission denied/.test(e.text)));
    assert.equal(ok.summary, 'I could not edit src/a.ts.');
    const plain = parse(copilotHarness, ['Fixed the bug in src/a.ts.', '', 'Total usage est: 1 Premium request']);
    assert.match(plain.summary ?? '', /^Fixed the bug/);
  });

  it('OpenCode --format json: tool uses, text, step boundaries; error events fail', () => {
    const ok = parse(opencodeHarness, [
      '{"type":"step_start","timestamp":1778479990756,"sessionID":"ses_1","part":{"id":"prt_1","messageID":"msg_1","sessionID":"ses_1","type":"step-start"}}',
      '{"type":"tool_use","timestamp":1778479991000,"sessionID":"ses_1","part":{"type":"tool","callID":"c1","tool":"read","state":{"status":"completed","input":{"filePath":"/ws/t1/src/a.ts"},"output":"..."}}}',
      '{"type":"tool_use","timestamp":1778479992000,"sessionID":"ses_1","part":{"type":"tool","callID":"c2","tool":"edit","state":{"status":"error","input":{"filePath":"/ws/t1/src/a.ts"},"error":"permission denied"}}}',
      '{"type":"step_finish","timestamp":1778479993000,"sessionID":"ses_1","part":{"type":"step-finish","reason":"tool-calls","tokens":{"input":10,"output":5}}}',
      '{"type":"step_start","timestamp":1778479994000,"sessionID":"ses_1","part":{"type":"step-start"}}',
      '{"type":"text","timestamp":1778479995000,"sessionID":"ses_1","part":{"type":"text","text":"Edits were denied; here is the fix instead."}}',
      '{"type":"step_finish","timestamp":1778479996000,"sessionID":"ses_1","part":{"type":"step-finish","reason":"stop"}}',
    ]);
    assert.deepEqual(
      ok.events.filter((e) => e.kind === 'step').map((e) => e.text),
      ['read /ws/t1/src/a.ts', 'edit /ws/t1/src/a.ts'],
    );
    assert.ok(ok.events.some((e) => e.kind === 'log' && /permission denied/.test(e.text)));
    assert.equal(ok.summary, 'Edits were denied; here is the fix instead.');
    const bad = parse(opencodeHarness, [
      '{"type":"error","timestamp":1,"sessionID":"ses_1","error":{"name":"ProviderAuthError","data":{"message":"No API key"}}}',
    ]);
    assert.match(bad.error ?? '', /No API key/);
  });
});

describe('harness detection', () => {
  it('finds CLIs on PATH, prefers a configured path, ignores what is not an executable file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-detect-'));
    try {
      const bin = join(dir, 'bin');
      mkdirSync(bin);
      writeFileSync(join(bin, 'claude'), '#!/bin/sh\n', { mode: 0o755 });
      writeFileSync(join(bin, 'codex'), 'not executable\n', { mode: 0o644 });
      mkdirSync(join(bin, 'gemini'));
      const custom = join(dir, 'my-copilot');
      writeFileSync(custom, '#!/bin/sh\n');
      chmodSync(custom, 0o755);
      const found = detectHarnesses({
        pathVar: `${bin}:relative/dir`,
        paths: { copilot: custom, opencode: join(dir, 'missing') },
      });
      assert.deepEqual(
        found.map((f) => [f.spec.id, f.binary, f.source]),
        [
          ['claude', join(bin, 'claude'), 'path'],
          ['copilot', custom, 'configured'],
        ],
      );
      const standin = detectHarnesses({ pathVar: resolve(__dirname, '../../fixtures/standin-cli') });
      assert.equal(standin.length, 5);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
