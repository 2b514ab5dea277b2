/**
 * Coding CLIs that delegate: the gateway runs a stand-in CLI with `baton mcp` bound to its task (in
 * the MCP config of that CLI's own kind), the stand-in calls the `delegate` tool through it, and the
 * gateway's guards decide: children run and reach the parent's stream as `META.child`, a grandchild
 * is refused at the default depth, a fourth child by breadth, a cycle, a burst over its cap, a child
 * the user did not approve; a child's capabilities are at most its parent's; canceling the parent
 * cancels its child. Every refusal is in the gateway's audit log with the parent.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState } from '@a2a-js/sdk';
import type { StreamResponse, Task } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { META } from '../../../src/core/batonProfile';
import { discoverLocalAgents } from '../../../src/gateway/agents/discover';
import type { HarnessId } from '../../../src/gateway/harness/harness';
import { startGateway } from '../../../src/gateway/server';
import type { GatewayOptions, RunningGateway } from '../../../src/gateway/server';
import { WorkspaceManager } from '../../../src/gateway/workspace/workspaceManager';
import { clientFor, sendRequest, userMessage } from '../gateway/helpers';
import { makeRepo, tempSpace } from '../workspace/repoFixtures';
import type { TempSpace } from '../workspace/repoFixtures';
import { childReports, mcpClient, mcpCommand, STANDIN, standinResults, statusText } from './helpers';
import type { StandinMcpResult } from './helpers';

const ALLOW_ALL = {
  formatter: 'allow',
  'lint-fix': 'allow',
  refactor: 'allow',
  codex: 'allow',
  claude: 'allow',
} as const;

interface Fixture {
  readonly space: TempSpace;
  readonly gw: RunningGateway;
  readonly repo: string;
  readonly stateDir: string;
}

async function fixture(prefix: string, delegation: GatewayOptions['delegation']): Promise<Fixture> {
  const space = tempSpace(prefix);
  const repo = makeRepo(space.base, 'repo', { 'a.ts': 'export const   a = {b:1}\n', 'b.ts': 'export const b=2\n' });
  const manager = new WorkspaceManager({ root: space.root, userHome: space.home });
  const stateDir = join(space.base, 'state');
  const gw = await startGateway({
    stateDir,
    roots: [space.base],
    localAgents: await discoverLocalAgents({
      manager,
      pathVar: STANDIN,
      confine: { mode: 'off' },
      realHome: space.home,
      agentPaceMs: 1500,
    }),
    mcpCommand: mcpCommand(),
    delegation,
    log: () => undefined,
  });
  return { space, gw, repo, stateDir };
}

const line = (tool: string, args: Record<string, unknown>): string => `@standin mcp ${tool} ${JSON.stringify(args)}`;

/** Runs a parent task on a stand-in CLI and collects its stream; `onEvent` may act on each event. */
async function runParent(
  f: Fixture,
  harness: HarnessId,
  lines: readonly string[],
  onEvent?: (ev: StreamResponse, client: Client) => void | Promise<void>,
): Promise<{ events: StreamResponse[]; final: Task; results: StandinMcpResult[] }> {
  const client = await clientFor(`${f.gw.url}/a2a/${harness}/.well-known/agent-card.json`, f.gw.token);
  const events: StreamResponse[] = [];
  let taskId = '';
  for await (const ev of client.sendMessageStream(
    sendRequest(userMessage(['Work with other agents', ...lines].join('\n'), { [META.repository]: f.repo })),
  )) {
    events.push(ev);
    if (ev.payload?.$case === 'task') taskId = ev.payload.value.id;
    await onEvent?.(ev, client);
  }
  const final = await client.getTask({ tenant: '', id: taskId, historyLength: 0 });
  const text = final.status?.message?.parts[0]?.content;
  return { events, final, results: standinResults(text?.$case === 'text' ? text.value : '') };
}

function auditLines(f: Fixture): Array<Record<string, unknown>> {
  return readFileSync(join(f.stateDir, 'audit.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('coding CLIs that delegate through baton mcp', () => {
  let f: Fixture;
  before(async () => {
    f = await fixture('baton-children-', { consent: ALLOW_ALL });
  });
  after(async () => {
    await f?.gw.close();
    f?.space.dispose();
  });

  it('children run and reach the parent; a grandchild (depth), a fourth child (breadth) and a cycle are refused', async () => {
    const grandchild = line('delegate', { agent: 'formatter', task: 'Format deeper' });
    const { events, final, results } = await runParent(f, 'claude', [
      line('find_agents', {}),
      line('delegate', { agent: 'formatter', task: 'Format a.ts', files: ['a.ts'], write: true, wait_seconds: 50 }),
      line('delegate', { agent: 'claude', task: 'Delegate back to me' }),
      line('delegate', { agent: 'codex', task: `Go one level deeper\n${grandchild}`, wait_seconds: 50 }),
      line('delegate', { agent: 'formatter', task: 'Format b.ts', files: ['b.ts'], wait_seconds: 50 }),
      line('delegate', { agent: 'lint-fix', task: 'A fourth child' }),
    ]);
    assert.equal(final.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(results.length, 6, JSON.stringify(results));
    const [agents, first, cycle, deeper, third, fourth] = results;

    assert.ok(!agents.isError, agents.text);
    assert.match(agents.text, /formatter: /);

    assert.ok(!first.isError, first.text);
    assert.equal(first.structured?.outcome, 'completed', first.text);

    assert.equal(cycle.isError, true);
    assert.match(cycle.text, /Refused \(cycle\): claude is already in this delegation chain \(claude → claude\)/);

    assert.ok(!deeper.isError, deeper.text);
    assert.equal(deeper.structured?.outcome, 'completed', deeper.text);
    const [inner] = standinResults(String(deeper.structured?.summary ?? ''));
    assert.ok(inner, `the codex child reported its own delegate call: ${deeper.text}`);
    assert.equal(inner.isError, true, JSON.stringify(inner));
    assert.match(inner.text, /Refused \(depth\): .*claude → codex → formatter.*2 deep.*1 deep \(maxDepth\)/);

    assert.ok(!third.isError, third.text);
    assert.equal(third.structured?.outcome, 'completed', third.text);

    assert.equal(fourth.isError, true);
    assert.match(
      fourth.text,
      /Refused \(breadth\): task .* already started 3 delegation\(s\); the limit is 3 per task/,
    );

    // Each child reached the parent's stream, and its outcome too.
    const reports = childReports(events);
    const parentId = final.id;
    const ended = new Map(reports.filter((r) => r.outcome).map((r) => [r.taskId, r]));
    assert.equal(ended.size, 3, JSON.stringify(reports));
    for (const r of ended.values()) {
      assert.equal(r.outcome, 'completed');
      assert.equal(r.startedBy, 'claude');
    }
    assert.deepEqual([...ended.values()].map((r) => r.agentId).sort(), ['codex', 'formatter', 'formatter']);

    // The parent was read-only, so a child that asked for write got none; its first message names the parent.
    const firstChild = [...ended.values()].find((r) => r.title === 'Format a.ts');
    assert.ok(firstChild);
    const row = await f.gw.store.getTask('formatter', firstChild.taskId);
    assert.ok(row);
    const snapshot = JSON.parse(row.snapshot) as {
      metadata: Record<string, unknown>;
      history: Array<{ metadata: Record<string, unknown> }>;
    };
    assert.deepEqual(snapshot.metadata[META.capabilities], { write: false, shell: false, network: false });
    assert.deepEqual(snapshot.history[0].metadata[META.parent], { taskId: parentId, agentId: 'claude' });
    assert.deepEqual(snapshot.history[0].metadata[META.chain], ['claude', 'formatter']);
    const parentDeadline = Date.parse(String(final.metadata?.[META.deadline]));
    assert.ok(Date.parse(String(snapshot.metadata[META.deadline])) <= parentDeadline, 'deadline capped by the parent');

    // The audit log names the parent of each delegation and of each refusal.
    const audit = auditLines(f);
    const admitted = audit.filter((a) => a.event === 'delegation');
    assert.equal(admitted.length, 3);
    for (const a of admitted) assert.deepEqual(a.parent, { agentId: 'claude', taskId: parentId });
    const refused = audit.filter((a) => a.event === 'refused');
    assert.deepEqual(refused.map((a) => a.code).sort(), ['breadth', 'cycle', 'depth']);
    const depth = refused.find((a) => a.code === 'depth');
    assert.equal((depth?.parent as { agentId: string }).agentId, 'codex');
    assert.equal(depth?.limit, 1);
    assert.equal(refused.find((a) => a.code === 'breadth')?.limit, 3);
  });

  it('guards read again while the gateway runs hold for the next delegation; guards out of bounds change nothing', async () => {
    assert.throws(() => f.gw.setDelegationPolicy({ maxDepth: 4 }), /maxDepth must be a whole number from 0 to 3/);
    f.gw.setDelegationPolicy({ maxDepth: 0, consent: ALLOW_ALL });
    try {
      const { results } = await runParent(f, 'claude', [line('delegate', { agent: 'formatter', task: 'Format a.ts' })]);
      assert.equal(results.length, 1, JSON.stringify(results));
      assert.equal(results[0].isError, true);
      assert.match(results[0].text, /Refused \(depth\): .*0 deep \(maxDepth\)/);
    } finally {
      f.gw.setDelegationPolicy({ consent: ALLOW_ALL });
    }
    const { results } = await runParent(f, 'claude', [
      line('delegate', { agent: 'formatter', task: 'Format a.ts', wait_seconds: 50 }),
    ]);
    assert.ok(!results[0]?.isError, results[0]?.text);
    assert.equal(results[0].structured?.outcome, 'completed', results[0].text);
  });

  for (const harness of ['claude', 'codex', 'gemini', 'copilot', 'opencode'] as const) {
    it(`${harness}: finds baton mcp in the MCP config of its own kind`, async () => {
      const { results } = await runParent(f, harness, [line('find_agents', {})]);
      assert.equal(results.length, 1);
      assert.ok(!results[0].isError, results[0].text);
      assert.match(results[0].text, /^formatter: Formatter/m);
    });
  }

  it('get_task of a parent delegated through baton mcp lists the children it started', async () => {
    const client = await mcpClient({
      BATON_GATEWAY: f.gw.url,
      BATON_TOKEN: f.gw.token,
      BATON_CLI_DIR: join(f.space.base, 'cli', 'journals'),
      BATON_STATE_DIR: join(f.space.base, 'no-local-gateway'),
    });
    try {
      const task = [
        'Delegate the formatting',
        line('delegate', { agent: 'formatter', task: 'Format a.ts', wait_seconds: 50 }),
      ];
      const r = (await client.callTool(
        {
          name: 'delegate',
          arguments: { agent: 'claude', task: task.join('\n'), repository: f.repo, wait_seconds: 50 },
        },
        undefined,
        { timeout: 90_000 },
      )) as { isError?: boolean; content: Array<{ text?: string }>; structuredContent?: Record<string, unknown> };
      assert.ok(!r.isError, r.content[0]?.text);
      let view = r.structuredContent ?? {};
      for (let i = 0; i < 5 && view.finished !== true; i++) {
        const next = (await client.callTool(
          { name: 'get_task', arguments: { request_id: view.request_id, wait_seconds: 20 } },
          undefined,
          { timeout: 90_000 },
        )) as { structuredContent?: Record<string, unknown> };
        view = next.structuredContent ?? {};
      }
      assert.equal(view.outcome, 'completed', JSON.stringify(view));
      const children = view.children as Array<{ agent: string; title: string; outcome?: string }>;
      assert.deepEqual(
        children.map((c) => [c.agent, c.title, c.outcome]),
        [['formatter', 'Format a.ts', 'completed']],
      );
    } finally {
      await client.close();
    }
  });

  it('canceling the parent cancels its child', async () => {
    let childId = '';
    let canceled = false;
    let safety: NodeJS.Timeout | undefined;
    const { events, final } = await runParent(
      f,
      'gemini',
      [line('delegate', { agent: 'refactor', task: 'organise imports', wait_seconds: 0 }), '@standin hang'],
      async (ev, client) => {
        // Never a hang: a parent whose child never shows is canceled anyway, and the asserts below fail.
        if (ev.payload?.$case === 'task' && !safety) {
          const id = ev.payload.value.id;
          safety = setTimeout(() => void client.cancelTask({ tenant: '', id, metadata: undefined }), 120_000);
        }
        const child = childReports([ev])[0];
        if (child && !canceled && child.state === 'working') {
          canceled = true;
          childId = child.taskId;
          const parentId = ev.payload?.$case === 'statusUpdate' ? ev.payload.value.taskId : '';
          await client.cancelTask({ tenant: '', id: parentId, metadata: undefined });
        }
      },
    );
    clearTimeout(safety);
    assert.ok(canceled, `the child was reported working: ${JSON.stringify(childReports(events))}`);
    assert.equal(final.status?.state, TaskState.TASK_STATE_CANCELED);
    const row = await f.gw.store.getTask('refactor', childId);
    assert.equal(row?.state, TaskState.TASK_STATE_CANCELED);
    const last = childReports(events)
      .filter((r) => r.taskId === childId)
      .pop();
    assert.equal(last?.outcome, 'canceled');
    assert.ok(
      events.some((e) => /child Refactor.*ended: canceled/i.test(statusText(e) ?? '')),
      'the parent says so in words too',
    );
  });
});

describe('consent and the burst cap for agent-started delegations', () => {
  let f: Fixture;
  before(async () => {
    f = await fixture('baton-consent-', {
      consent: { 'lint-fix': 'deny' },
      consentTimeoutMs: 2_000,
      burst: { max: 2, windowMs: 60_000 },
    });
  });
  after(async () => {
    await f?.gw.close();
    f?.space.dispose();
  });

  it('asks the user on the parent’s stream; allowed runs, unanswered and denied are refused; the burst cap holds', async () => {
    const post = (id: string, body: unknown, token = f.gw.token) =>
      fetch(`${f.gw.url}/baton/consent/${encodeURIComponent(id)}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const asked: Array<{ id: string; title: string }> = [];
    const { results } = await runParent(
      f,
      'opencode',
      [
        line('delegate', { agent: 'formatter', task: 'one', wait_seconds: 50 }),
        line('delegate', { agent: 'formatter', task: 'two', wait_seconds: 50 }),
        line('delegate', { agent: 'lint-fix', task: 'three' }),
        line('delegate', { agent: 'formatter', task: 'four', wait_seconds: 50 }),
        line('delegate', { agent: 'formatter', task: 'five', wait_seconds: 50 }),
      ],
      async (ev) => {
        if (ev.payload?.$case !== 'statusUpdate') return;
        const q = ev.payload.value.metadata?.[META.consent] as
          { id: string; title?: string; agentId?: string } | undefined;
        if (!q?.title) return;
        asked.push({ id: q.id, title: q.title });
        assert.equal(q.agentId, 'formatter');
        if (q.title === 'one' || q.title === 'four') {
          const bad = await post(q.id, { decision: 'maybe' });
          assert.equal(bad.status, 400);
          assert.match(((await bad.json()) as { error: { message: string } }).error.message, /"decision": "allow"/);
          const res = await post(q.id, { decision: 'allow' });
          assert.equal(res.status, 200, await res.clone().text());
        }
      },
    );
    assert.deepEqual(
      asked.map((a) => a.title),
      ['one', 'two', 'four'],
      'asked for each formatter child; lint-fix is denied by policy and five by the burst cap, unasked',
    );
    const [one, two, three, four, five] = results;
    assert.equal(one.structured?.outcome, 'completed', one.text);
    assert.equal(two.isError, true);
    assert.match(
      two.text,
      /Refused \(consent\): the user did not approve the delegation to Formatter \(Prettier\) within 2 s/,
    );
    assert.equal(three.isError, true);
    assert.match(three.text, /Refused \(consent\): the gateway's consent policy denies delegations to lint-fix/);
    assert.equal(four.structured?.outcome, 'completed', four.text);
    assert.equal(five.isError, true);
    assert.match(five.text, /Refused \(burst\): agents started 2 delegations in the last 60 s; the gateway allows 2/);

    const gone = await post(asked[1].id, { decision: 'allow' });
    assert.equal(gone.status, 404, 'an expired question cannot be answered any more');
    const audit = auditLines(f);
    assert.deepEqual(
      audit.filter((a) => a.event === 'consent').map((a) => a.decision),
      ['allowed', 'expired', 'allowed'],
    );
    assert.deepEqual(
      audit.filter((a) => a.event === 'refused').map((a) => a.code),
      ['consent', 'consent', 'burst'],
    );
  });
});
