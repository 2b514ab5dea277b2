/**
 * The refactoring agent through the real gateway with the SDK's own A2A client, on a copy of the demo
 * repository: the steps stream, an ambiguous name puts the task in input-required, the reply (same
 * taskId and contextId, as the panel and `baton reply` send it) continues it to a patch that applies
 * with `git apply --check`; and a paced run is canceled while it streams.
 */
import { cpSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState } from '@a2a-js/sdk';
import type { Message, StreamResponse, Task } from '@a2a-js/sdk';
import { META } from '../../../src/core/batonProfile';
import { buildReplyMessage } from '../../../src/core/delegation/context';
import { discoverLocalAgents } from '../../../src/gateway/agents/discover';
import { batonMain } from '../../../src/gateway/batonCli';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { WorkspaceManager } from '../../../src/gateway/workspace/workspaceManager';
import { bounded, clientFor, sendRequest, tempDir, userMessage } from '../gateway/helpers';
import { applyCheck, sh, tempSpace } from '../workspace/repoFixtures';
import type { TempSpace } from '../workspace/repoFixtures';

const SAMPLE = resolve(__dirname, '../../../samples/demo-repo');

function capture(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  let buf = '';
  stream.on('data', (d: Buffer) => (buf += d.toString()));
  return { stream, text: () => buf };
}

function status(ev: StreamResponse): { state?: TaskState; text: string } | undefined {
  if (ev.payload?.$case !== 'statusUpdate') return undefined;
  const c = ev.payload.value.status?.message?.parts[0]?.content;
  return { state: ev.payload.value.status?.state, text: c?.$case === 'text' ? c.value : '' };
}

function asTask(r: Task | Message): Task {
  assert.ok('id' in r, 'a task, not a message');
  return r;
}

function patchOf(t: Task): string {
  const a = t.artifacts.find((x) => x.name === 'changes.patch');
  return (a?.parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
}

describe('refactor agent through the gateway (SDK client)', () => {
  let space: TempSpace;
  const state = tempDir();
  let gw: RunningGateway;
  let paced: RunningGateway;
  let repo: string;
  before(async () => {
    space = tempSpace('baton-refactor-gw-');
    repo = join(space.base, 'shop');
    cpSync(SAMPLE, repo, { recursive: true });
    sh(repo, 'init', '-q', '-b', 'main');
    sh(repo, 'add', '-A');
    sh(repo, 'commit', '-q', '-m', 'demo');
    const manager = new WorkspaceManager({ root: space.root, userHome: space.home });
    const agents = async (agentPaceMs: number) =>
      (await discoverLocalAgents({ manager, clis: false, agentPaceMs })).filter((a) => a.id === 'refactor');
    gw = await startGateway({
      stateDir: join(state.path, 'a'),
      roots: [space.base],
      localAgents: await agents(0),
      log: () => undefined,
    });
    paced = await startGateway({
      stateDir: join(state.path, 'b'),
      roots: [space.base],
      localAgents: await agents(1_000),
      limits: { cancelGraceMs: 2_000 },
      log: () => undefined,
    });
  });
  after(async () => {
    await gw.close();
    await paced.close();
    state[Symbol.dispose]();
    space.dispose();
  });

  it('streams the steps, asks which lineTotal, takes the reply on the same task and returns a patch that applies', async () => {
    const client = await clientFor(`${gw.url}/a2a/refactor/.well-known/agent-card.json`, gw.token);
    const card = await client.getAgentCard();
    assert.equal(card.name, 'Refactor (TypeScript)');
    assert.deepEqual(
      card.skills.map((s) => s.id),
      ['rename', 'organize-imports', 'fix-all'],
    );

    const first: StreamResponse[] = [];
    for await (const ev of client.sendMessageStream(
      sendRequest(userMessage('rename lineTotal to itemTotal', { [META.repository]: repo })),
    ))
      first.push(ev);
    const task = first[0].payload?.$case === 'task' ? first[0].payload.value : undefined;
    assert.ok(task);
    const steps = first.map(status).filter((s) => s !== undefined);
    const texts = steps.map((s) => s.text);
    assert.ok(
      texts.includes(
        'Rename "lineTotal" to "itemTotal". Scope: the whole repository (no files were sent and the task names none): 4 files.',
      ),
      texts.join('\n'),
    );
    assert.ok(
      texts.includes('Loading the project: 4 JavaScript/TypeScript file(s) found, 4 in scope.'),
      texts.join('\n'),
    );
    const asked = steps[steps.length - 1];
    assert.equal(asked.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    assert.match(
      asked.text,
      /"lineTotal" is declared in 2 places[\s\S]*1\. src\/cart\.js:4 \(function\)\n {2}2\. src\/invoice\.ts:12 \(function\)/,
    );

    const second: StreamResponse[] = [];
    for await (const ev of client.sendMessageStream(
      sendRequest(buildReplyMessage('reply-invoice', task.id, task.contextId, '2')),
    ))
      second.push(ev);
    const later = second.map(status).filter((s) => s !== undefined);
    assert.ok(
      later.some((s) => s.text === 'Reply "2": src/invoice.ts:12 (function).'),
      later.map((s) => s.text).join('\n'),
    );
    assert.ok(later.some((s) => s.text === 'Renamed in src/invoice.ts (2 places).'));
    assert.equal(later[later.length - 1].state, TaskState.TASK_STATE_COMPLETED);

    const done = await client.getTask({ tenant: '', id: task.id });
    const patch = patchOf(done);
    assert.deepEqual(
      [...patch.matchAll(/^diff --git a\/(\S+)/gm)].map((m) => m[1]),
      ['src/invoice.ts'],
    );
    assert.match(patch, /\+export function itemTotal\(line: InvoiceLine\)/);
    const check = applyCheck(repo, patch);
    assert.ok(check.ok, check.message);
  });

  it('a rename through an import and export needs no question; organise imports and fix all tidy src/invoice.ts', async () => {
    const client = await clientFor(`${gw.url}/a2a/refactor/.well-known/agent-card.json`, gw.token);
    const renamed = asTask(
      await client.sendMessage(
        sendRequest(userMessage('rename formatMoney to formatAmount', { [META.repository]: repo })),
      ),
    );
    assert.equal(renamed.status?.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(renamed.status));
    const patch = patchOf(renamed);
    assert.deepEqual(
      [...patch.matchAll(/^diff --git a\/(\S+)/gm)].map((m) => m[1]),
      ['src/format.ts', 'src/invoice.ts'],
    );
    assert.ok(applyCheck(repo, patch).ok);
    const tidied = asTask(
      await client.sendMessage(
        sendRequest(userMessage('fix all and organise imports in src/invoice.ts', { [META.repository]: repo })),
      ),
    );
    assert.equal(tidied.status?.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(tidied.status));
    const tidy = patchOf(tidied);
    assert.match(tidy, /-import \{ formatMoney, sum \} from '\.\/format';/);
    assert.doesNotMatch(tidy, /^\+.*\bsum\b/m);
    assert.ok(applyCheck(repo, tidy).ok);
  });

  it('through `baton delegate` and `baton reply` (the client the panel uses): the question, then the reply by file, then the patch', async () => {
    using journals = tempDir('baton-refactor-cli-');
    const env = {
      BATON_GATEWAY: gw.url,
      BATON_TOKEN: gw.token,
      BATON_CLI_DIR: journals.path,
      BATON_STATE_DIR: join(state.path, 'a'),
    };
    const asked = capture();
    assert.equal(
      await batonMain(['delegate', 'refactor', 'rename lineTotal to itemTotal', '--repo', repo], asked.stream, env),
      15,
      asked.text(),
    );
    assert.match(asked.text(), /the agent asks: "lineTotal" is declared in 2 places/);
    const id = /answer with: baton reply (\S+) /.exec(asked.text())?.[1] ?? '';
    assert.ok(id, asked.text());
    const patchFile = join(journals.path, 'changes.patch');
    const replied = capture();
    assert.equal(
      await batonMain(['reply', id, 'the one in src/cart.js', '--out', patchFile], replied.stream, env),
      0,
      replied.text(),
    );
    assert.match(replied.text(), /^completed/m);
    const patch = readFileSync(patchFile, 'utf8');
    assert.deepEqual(
      [...patch.matchAll(/^diff --git a\/(\S+)/gm)].map((m) => m[1]),
      ['src/cart.js'],
    );
    assert.match(patch, /^\+function itemTotal\(item\)\{$/m);
    assert.ok(applyCheck(repo, patch).ok);
  });

  it('cancel while a paced run streams: canceled, no patch', async () => {
    const client = await clientFor(`${paced.url}/a2a/refactor/.well-known/agent-card.json`, paced.token);
    const seen: string[] = [];
    let taskId = '';
    let last: { state?: TaskState; text: string } | undefined;
    await bounded(
      (async () => {
        for await (const ev of client.sendMessageStream(
          sendRequest(userMessage('fix all', { [META.repository]: repo })),
        )) {
          if (ev.payload?.$case === 'task') taskId = ev.payload.value.id;
          const s = status(ev);
          if (!s) continue;
          seen.push(s.text);
          last = s;
          if (s.text.startsWith('Loading the project'))
            await client.cancelTask({ tenant: '', id: taskId, metadata: undefined });
        }
      })(),
      'the paced run to stream and cancel',
      60_000,
    );
    assert.match(seen.find((t) => t.startsWith('Fix all')) ?? '', /Pacing is on: 1000 ms between steps/);
    assert.equal(last?.state, TaskState.TASK_STATE_CANCELED, seen.join('\n'));
    const t = await client.getTask({ tenant: '', id: taskId });
    assert.equal(t.metadata?.['baton/outcome'], 'canceled');
    assert.equal(patchOf(t), '');
    assert.ok(!seen.some((x) => x.startsWith('src/')), 'no fix was applied after the cancel');
  });
});
