// The task tree: children from the client's own journals (parentRequestId) and children a gateway
// reports on the parent's stream (status events with baton/child), folded the same way live and after a
// reload; who started each delegation, recorded in the request and its audit line, and older journals
// without it still load.
import * as assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { TaskState } from '@a2a-js/sdk';
import { META, type ChildTaskInfo } from '../../../src/core/batonProfile';
import { DelegationJournal, type DelegationRequest } from '../../../src/core/delegation';
import {
  buildDelegationTree,
  childTaskOf,
  childViews,
  MAX_REPORTED_CHILDREN,
  reportedChildId,
  treeDelegationOf,
  type TreeDelegation,
  type TreeNode,
} from '../../../src/core/delegation/tree';
import { connectAgent } from '../../../src/node/a2a/clientFactory';
import { DelegationManager } from '../../../src/node/a2a/delegationManager';
import { encodeEntry, JournalStore } from '../../../src/node/journalStore';
import { startAgentServer, type AgentServer } from './agentServers';
import { FAST_RECONNECT, makeRequest, tempDir, within } from './harness';

function child(taskId: string, state: string, extra: Partial<ChildTaskInfo> = {}): ChildTaskInfo {
  return {
    taskId,
    agentId: 'formatter',
    agentName: 'Formatter',
    title: `format ${taskId}`,
    state,
    startedBy: 'claude-code',
    startedAt: 1000,
    ...extra,
  };
}

function d(requestId: string, createdAt: number, extra: Partial<TreeDelegation> = {}): TreeDelegation {
  return { requestId, title: requestId, agentName: 'A', state: 'working', createdAt, ...extra };
}

function shape(nodes: readonly TreeNode[]): unknown[] {
  return nodes.map((n) => (n.children.length ? { [n.id]: shape(n.children) } : n.id));
}

describe('folding the task tree', () => {
  it('puts children under their parent, newest first, and orphans at the top', () => {
    const t = buildDelegationTree([
      d('root', 1),
      d('kid-old', 2, { parentRequestId: 'root' }),
      d('kid-new', 3, { parentRequestId: 'root' }),
      d('grandkid', 4, { parentRequestId: 'kid-old' }),
      d('orphan', 5, { parentRequestId: 'gone' }),
    ]);
    assert.deepEqual(shape(t.roots), ['orphan', { root: ['kid-new', { 'kid-old': ['grandkid'] }] }]);
    assert.equal(t.parentOf.get('grandkid'), 'kid-old');
  });

  it('adds the children a gateway reported, and shows a reported child that is a delegation here once', () => {
    const t = buildDelegationTree([
      d('parent', 1, {
        taskId: 'T-parent',
        reportedChildren: [child('T-a', 'working', { startedAt: 10 }), child('T-mine', 'completed', { startedAt: 20 })],
      }),
      // The same task as a reported child: e.g. a delegation `baton mcp` started through this window.
      d('mine', 15, { taskId: 'T-mine' }),
    ]);
    assert.deepEqual(shape(t.roots), [{ parent: ['mine', reportedChildId('parent', 'T-a')] }]);
    const reported = t.byId.get(reportedChildId('parent', 'T-a'));
    assert.equal(reported?.kind, 'reported');
    const views = childViews(t.byId.get('parent'));
    assert.deepEqual(
      views.map((v) => [v.id, v.local, v.startedBy, v.state]),
      [
        ['mine', true, 'user', 'working'],
        [reportedChildId('parent', 'T-a'), false, 'agent', 'working'],
      ],
    );
  });

  it('cuts parent links that form a loop instead of losing the delegations', () => {
    const t = buildDelegationTree([
      d('a', 1, { parentRequestId: 'b' }),
      d('b', 2, { parentRequestId: 'a' }),
      d('self', 3, { parentRequestId: 'self' }),
    ]);
    const all = [...t.byId.keys()].sort();
    assert.deepEqual(all, ['a', 'b', 'self']);
    // Every node is reachable from a root.
    const reach = new Set<string>();
    const walk = (ns: readonly TreeNode[]) => ns.forEach((n) => (reach.add(n.id), walk(n.children)));
    walk(t.roots);
    assert.deepEqual([...reach].sort(), all);
  });

  it('reads reported children as untrusted: malformed ones are skipped, fields bounded', () => {
    assert.equal(childTaskOf(undefined), undefined);
    assert.equal(childTaskOf({ [META.child]: 'x' }), undefined);
    assert.equal(childTaskOf({ [META.child]: { state: 'working' } }), undefined);
    const c = childTaskOf({
      [META.child]: { taskId: 't', state: 'working', title: 'x'.repeat(10_000), startedAt: 'now' },
    });
    assert.equal(c?.title.length, 200);
    assert.equal(c?.startedAt, 0);
  });
});

/** A parent task at a scripted A2A server that reports children on its stream, as a Baton gateway does. */
async function parentServer(): Promise<AgentServer> {
  return startAgentServer({
    replay: true,
    script: async (turn) => {
      turn.task(TaskState.TASK_STATE_WORKING);
      if (turn.text.startsWith('child')) {
        turn.status(TaskState.TASK_STATE_COMPLETED, 'done');
        return;
      }
      const report = (c: ChildTaskInfo) =>
        turn.status(TaskState.TASK_STATE_WORKING, undefined, { [META.child]: c as unknown as Record<string, unknown> });
      report(child('T-lint', 'working', { startedAt: 100 }));
      report(child('T-fmt', 'submitted', { startedAt: 200 }));
      report(child('T-lint', 'completed', { outcome: 'completed', startedAt: 100 }));
      report(child('T-fmt', 'failed', { outcome: 'failed', startedAt: 200 }));
      turn.status(TaskState.TASK_STATE_COMPLETED, 'parent done');
    },
  });
}

describe('the tree from real journals, live and after a reload', () => {
  const tmp = tempDir();
  after(() => tmp.cleanup());

  it('keeps the latest report per child and the parentRequestId children, and survives reopening', async () => {
    const server = await parentServer();
    try {
      const store = new JournalStore(tmp.dir);
      const open = () =>
        DelegationManager.open({
          store,
          connect: async () => connectAgent({ card: server.card, endpoint: server.jsonRpc }),
          runnerOptions: { reconnect: FAST_RECONNECT, pollIntervalMs: 20, cancelWaitMs: 1000, drainTimeoutMs: 1000 },
        });
      const m = await open();
      const parent = makeRequest(server.jsonRpc, 'parent task');
      await m.start(parent);
      const kid = makeRequest(server.jsonRpc, 'child task', {
        parentRequestId: parent.requestId,
        startedBy: { kind: 'agent', via: 'vscode-lm' },
      });
      await m.start(kid);
      const settled = (id: string) =>
        within(
          (async () => {
            while (m.get(id)?.state() !== 'completed') await new Promise((r) => setTimeout(r, 20));
            await m.idle(id);
          })(),
          10_000,
          `delegation ${id} to complete`,
        );
      await settled(parent.requestId);
      await settled(kid.requestId);
      const live = m.list().map((s) => treeDelegationOf(m.get(s.requestId) as DelegationJournal));
      m.dispose();

      // A reload: every journal read back from disk.
      const reopened = await open();
      const reloaded = reopened.list().map((s) => treeDelegationOf(reopened.get(s.requestId) as DelegationJournal));
      reopened.dispose();
      // The audit line of the agent-started one says who started it; the person's says nothing.
      const audit = await store.readAudit();
      assert.deepEqual(audit.find((r) => r.requestId === kid.requestId)?.startedBy, {
        kind: 'agent',
        via: 'vscode-lm',
      });
      assert.equal(audit.find((r) => r.requestId === parent.requestId)?.startedBy, undefined);
      await store.close();

      for (const list of [live, reloaded]) {
        const t = buildDelegationTree(list);
        const p = t.byId.get(parent.requestId);
        assert.ok(p, 'the parent is in the tree');
        const views = childViews(p);
        assert.deepEqual(
          views.map((v) => [v.title, v.state, v.local, v.startedBy]),
          [
            ['child task', 'completed', true, 'agent'],
            ['format T-fmt', 'failed', false, 'agent'],
            ['format T-lint', 'completed', false, 'agent'],
          ],
        );
        const k = list.find((x) => x.requestId === kid.requestId);
        assert.deepEqual(k?.startedBy, { kind: 'agent', via: 'vscode-lm' });
      }
    } finally {
      await server.close();
    }
  });

  it('keeps at most MAX_REPORTED_CHILDREN children per parent', () => {
    const j = new DelegationJournal(
      makeRequest({ url: 'http://127.0.0.1:1/a2a/x', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }, 't'),
    );
    for (let i = 0; i < MAX_REPORTED_CHILDREN + 50; i++)
      j.apply({
        kind: 'event',
        at: i,
        taskId: 'p',
        seq: i + 1,
        sequenced: true,
        event: {
          payload: {
            $case: 'statusUpdate',
            value: {
              taskId: 'p',
              contextId: 'c',
              status: { state: TaskState.TASK_STATE_WORKING, timestamp: undefined, message: undefined },
              metadata: { [META.child]: child(`T-${i}`, 'working') as unknown as Record<string, unknown> },
            },
          },
        },
      });
    assert.equal(j.childTasks().length, MAX_REPORTED_CHILDREN);
  });

  it('loads a journal written before requests recorded who started them', async () => {
    const store = new JournalStore(tmp.dir);
    const old = makeRequest(
      { url: 'http://127.0.0.1:1/a2a/x', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      'old',
    );
    const { startedBy: _none, ...legacy } = old as DelegationRequest & { startedBy?: unknown };
    const line = JSON.stringify(encodeEntry({ kind: 'request', at: old.createdAt, request: legacy }));
    writeFileSync(join(tmp.dir, `${old.requestId}.jsonl`), `${line}\n`);
    const loaded = await store.load(old.requestId);
    const j = DelegationJournal.fromEntries(loaded.entries);
    assert.equal(j.view(0).startedBy, undefined);
    assert.equal(treeDelegationOf(j).startedBy, undefined);
    assert.equal(childViews(buildDelegationTree([treeDelegationOf(j)]).byId.get(old.requestId)).length, 0);
    await store.close();
  });
});
