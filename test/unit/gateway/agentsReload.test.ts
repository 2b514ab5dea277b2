// A config read again while the gateway runs (what baton-gateway does on SIGHUP). Remote agents
// (`setRemoteAgents`): an agent added is served at once, one removed takes no new tasks while its tasks
// go on, one back as it was takes tasks again, and new credentials for a remote are carried from the
// next request on. Per-task limits (`setTaskLimits`): tasks started after them get them. The remotes
// are the SDK's own server; the clients the SDK's own. (Delegation guards: test/unit/mcp/childDelegation.test.ts.)
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { TaskState } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import type { RemoteAgentConfig } from '../../../src/gateway/config';
import { META } from '../../../src/core/batonProfile';
import { bounded, clientFor, collect, scriptedAgent, sendRequest, suiteGateway, userMessage } from './helpers';
import { startRemote } from './remoteAgent';

type Remote = Awaited<ReturnType<typeof startRemote>>;

const A_TOKEN = 'remote-a-token-0123456789';
const B_TOKEN = 'remote-b-token-0123456789';

function remoteCfg(id: string, url: string, token: string, name = `Remote ${id}`): RemoteAgentConfig {
  return {
    id,
    name,
    description: 'proxied',
    url,
    protocolBinding: 'JSONRPC',
    protocolVersion: '1.0',
    auth: { kind: 'bearer', token },
    skills: [],
  };
}

describe('gateway: remote agents read again while it runs', () => {
  let a: Remote;
  let b: Remote;
  // Remote cards are read every 150 ms here, so a retired agent's reads are seen to stop.
  const gw = suiteGateway({ remoteAgents: [], limits: { cancelGraceMs: 2000 }, remoteCardRefreshMs: 150 });
  before(async () => {
    a = await startRemote(3, A_TOKEN, false);
    b = await startRemote(3, B_TOKEN, false);
    assert.deepEqual(gw.setRemoteAgents([remoteCfg('a', a.url, A_TOKEN)]).added, ['a']);
  });
  after(async () => {
    await a?.close();
    await b?.close();
  });

  /** The ids the index card lists (its agent-index extension), read as a client reads it, ETag and all. */
  const indexIds = async (): Promise<{ ids: string[]; etag: string | null }> => {
    const res = await fetch(`${gw.url}/.well-known/agent-card.json`);
    const card = (await res.json()) as {
      capabilities?: { extensions?: Array<{ params?: { agents?: Array<{ id?: string }> } }> };
    };
    const ids = (card.capabilities?.extensions ?? []).flatMap((x) => (x.params?.agents ?? []).map((g) => g.id ?? ''));
    return { ids, etag: res.headers.get('etag') };
  };
  const client = (id: string): Promise<Client> =>
    clientFor(`${gw.url}/a2a/${id}/.well-known/agent-card.json`, gw.token);
  const run = async (c: Client, text: string): Promise<TaskState | undefined> => {
    const events = await bounded(collect(c.sendMessageStream(sendRequest(userMessage(text)))), `the "${text}" stream`);
    const last = events.at(-1)?.payload;
    return last?.$case === 'statusUpdate' ? last.value.status?.state : undefined;
  };

  it('serves an agent added, retires one removed (its tasks go on), restores it, and takes new credentials', async () => {
    const before = await indexIds();
    assert.deepEqual(before.ids, ['echo', 'a']);
    const toA = await client('a');
    assert.equal(await run(toA, 'go'), TaskState.TASK_STATE_COMPLETED);
    // Two tasks of `a` in flight: one asks a question, one works until canceled.
    const asked = await toA.sendMessage(sendRequest(userMessage('ask'), false));
    const askedTask = 'status' in asked ? asked : undefined;
    assert.equal(askedTask?.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    const waitRequest = sendRequest(userMessage('wait'), true);
    const waiting = await toA.sendMessage(waitRequest);
    const waitingId = 'status' in waiting ? waiting.id : '';
    assert.ok(waitingId);

    // `a` removed, `b` added.
    const change = gw.setRemoteAgents([remoteCfg('b', b.url, B_TOKEN)]);
    assert.deepEqual(
      { added: change.added, retired: change.retired, restored: change.restored, changed: change.changed },
      { added: ['b'], retired: ['a'], restored: [], changed: [] },
    );
    assert.deepEqual(
      gw.agents.map((x) => x.id),
      ['echo', 'b'],
    );
    const index = await indexIds();
    assert.deepEqual(index.ids, ['echo', 'b']);
    assert.notEqual(index.etag, before.etag, 'the index card has a new ETag');
    assert.equal(await run(await client('b'), 'go'), TaskState.TASK_STATE_COMPLETED);
    assert.deepEqual(b.seenAuth.at(-1), `Bearer ${B_TOKEN}`);

    // A new task for `a` is refused, and says why and where to look.
    await assert.rejects(toA.sendMessage(sendRequest(userMessage('go'))), (e: Error) => {
      assert.match(e.message, /the agent "a" was removed from this gateway's configuration: it takes no new tasks/);
      assert.match(e.message, /\/\.well-known\/agent-card\.json/);
      return true;
    });
    // A first message it took before, sent again (a retry), still finds its task.
    const retried = await toA.sendMessage(waitRequest);
    assert.equal('status' in retried ? retried.id : '', waitingId);
    // Unknown to the index's readers: the 404 for a mistyped agent lists `echo` and `b` only.
    const unknown = await fetch(`${gw.url}/a2a/nobody`, { method: 'GET' });
    assert.match(((await unknown.json()) as { error: { message: string } }).error.message, /serves: echo, b$/);
    // Its tasks go on: the question is answered and the task completes; the other is canceled.
    const answered = await bounded(
      collect(
        toA.sendMessageStream(
          sendRequest({
            ...userMessage('src/a.ts'),
            taskId: askedTask?.id ?? '',
            contextId: askedTask?.contextId ?? '',
          }),
        ),
      ),
      'the answer',
    );
    const end = answered.at(-1)?.payload;
    assert.equal(end?.$case === 'statusUpdate' ? end.value.status?.state : undefined, TaskState.TASK_STATE_COMPLETED);
    const canceled = await toA.cancelTask({ tenant: '', id: waitingId, metadata: undefined });
    assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
    const got = await toA.getTask({ tenant: '', id: askedTask?.id ?? '', historyLength: undefined });
    assert.equal(got.status?.state, TaskState.TASK_STATE_COMPLETED);

    // Nobody new uses its card: the gateway stops reading it from the remote (one read may be in flight).
    const readsRetired = a.cardReads();
    await new Promise((r) => setTimeout(r, 600));
    assert.ok(a.cardReads() <= readsRetired + 1, `${a.cardReads() - readsRetired} card reads while retired`);

    // `a` back as it was: restored, with new credentials (the remote now wants them).
    a.executor.finishStubborn = true;
    const rotated = 'remote-a-rotated-0123456789';
    const back = gw.setRemoteAgents([remoteCfg('b', b.url, B_TOKEN), remoteCfg('a', a.url, rotated)]);
    assert.deepEqual(
      { added: back.added, retired: back.retired, restored: back.restored, credentials: back.credentials },
      { added: [], retired: [], restored: ['a'], credentials: ['a'] },
    );
    assert.deepEqual(
      gw.agents.map((x) => x.id),
      ['echo', 'a', 'b'],
    );
    assert.deepEqual((await indexIds()).ids, ['echo', 'a', 'b']);
    // Its card is read from the remote again.
    const readsBack = a.cardReads();
    await bounded(
      (async () => {
        while (a.cardReads() < readsBack + 2) await new Promise((r) => setTimeout(r, 50));
      })(),
      'its card read again',
    );
    const seen = a.seenAuth.length;
    // The remote still wants the old token: the send fails with the remote's refusal, carrying the new one.
    await assert.rejects(toA.sendMessage(sendRequest(userMessage('go'))));
    assert.ok(
      a.seenAuth.slice(seen).includes(`Bearer ${rotated}`),
      `the new credentials reached the remote: ${a.seenAuth.slice(seen).join(', ')}`,
    );
    // Put back as the remote wants them: tasks run again.
    assert.deepEqual(gw.setRemoteAgents([remoteCfg('b', b.url, B_TOKEN), remoteCfg('a', a.url, A_TOKEN)]).credentials, [
      'a',
    ]);
    assert.equal(await run(toA, 'go'), TaskState.TASK_STATE_COMPLETED);
  });

  it('leaves other changes of an agent for the next start, refuses a local agent’s id, and changes nothing when nothing changed', async () => {
    const same = [remoteCfg('b', b.url, B_TOKEN), remoteCfg('a', a.url, A_TOKEN)];
    const none = gw.setRemoteAgents(same);
    assert.deepEqual(Object.values(none).flat(), []);
    const renamed = gw.setRemoteAgents([remoteCfg('b', b.url, B_TOKEN, 'Another name'), same[1]]);
    assert.deepEqual(renamed.changed, ['b']);
    assert.equal(gw.agents.find((x) => x.id === 'b')?.name, 'Remote b', 'the running agent stays as it was');
    const clash = gw.setRemoteAgents([...same, remoteCfg('echo', b.url, B_TOKEN)]);
    assert.deepEqual(clash.refused, ['echo (a local agent has this id)']);
    assert.deepEqual(clash.added, []);
    // A removed agent back with other settings stays retired, and the change waits for the next start.
    assert.deepEqual(gw.setRemoteAgents([same[1]]).retired, ['b']);
    const backChanged = gw.setRemoteAgents([remoteCfg('b', a.url, A_TOKEN), same[1]]);
    assert.deepEqual([backChanged.restored, backChanged.changed], [[], ['b']]);
    assert.deepEqual(
      gw.agents.map((x) => x.id),
      ['echo', 'a'],
    );
  });
});

describe('gateway: per-task limits read again while it runs', () => {
  const echo = scriptedAgent({ id: 'echo' });
  const gw = suiteGateway({ localAgents: [echo] });
  const ALL = { write: true, shell: true, network: true };

  /** A task of the echo agent that asks for every capability: what it was granted and its deadline's length. */
  const granted = async (): Promise<{ capabilities: unknown; deadlineMs: number }> => {
    const client = await clientFor(`${gw.url}/a2a/echo/.well-known/agent-card.json`, gw.token);
    const sent = Date.now();
    const done = await client.sendMessage(sendRequest(userMessage('go', { [META.capabilities]: ALL })));
    assert.ok('id' in done);
    const task = await client.getTask({ tenant: '', id: done.id, historyLength: undefined });
    return {
      capabilities: task.metadata?.[META.capabilities],
      deadlineMs: Date.parse(String(task.metadata?.[META.deadline])) - sent,
    };
  };

  it('tasks started after new limits get them; what a config leaves out goes back to the default', async () => {
    const before = await granted();
    assert.deepEqual(before.capabilities, { write: true, shell: false, network: false });
    assert.ok(Math.abs(before.deadlineMs - 30 * 60_000) < 60_000, String(before.deadlineMs));
    gw.setTaskLimits({ capabilities: { write: false, shell: false, network: false }, defaultDeadlineMs: 120_000 });
    const tightened = await granted();
    assert.deepEqual(tightened.capabilities, { write: false, shell: false, network: false });
    assert.ok(Math.abs(tightened.deadlineMs - 120_000) < 60_000, String(tightened.deadlineMs));
    assert.deepEqual(echo.requests.at(-1)?.capabilities, { write: false, shell: false, network: false });
    gw.setTaskLimits({});
    assert.deepEqual((await granted()).capabilities, { write: true, shell: false, network: false });
  });

  it('requests from then on are held to new request limits: a body too large, headers too slow', async () => {
    /** The status of a JSON-RPC ListTasks whose body carries `pad` characters more. */
    const post = async (pad: number): Promise<number> => {
      const res = await fetch(`${gw.url}/a2a/echo`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${gw.token}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: { pad: 'x'.repeat(pad) } }),
      });
      await res.arrayBuffer();
      return res.status;
    };
    /** What the gateway answers a request whose headers never end. */
    const slowHeaders = (): Promise<string> =>
      new Promise((resolve, reject) => {
        const socket = connect(gw.port, '127.0.0.1', () => socket.write('POST /a2a/echo HTTP/1.1\r\nHost: x\r\n'));
        let got = '';
        socket.on('data', (d: Buffer) => (got += d.toString('utf8')));
        socket.on('close', () => resolve(got));
        socket.on('error', reject);
      });
    assert.equal(await post(4096), 200);
    gw.setRequestLimits({ maxBytes: 2048, headersTimeoutMs: 1000 });
    try {
      assert.equal(await post(4096), 413);
      assert.equal(await post(10), 200);
      // Answered after about a second, where the default would wait 30 s.
      const answer = await bounded(slowHeaders(), 'the 408 for slow headers', 8000);
      assert.match(answer, /^HTTP\/1\.1 408/);
      assert.match(answer, /its headers must arrive within 1 s/);
    } finally {
      gw.setRequestLimits({});
    }
    assert.equal(await post(4096), 200, 'what a config leaves out goes back to the default');
  });
});
