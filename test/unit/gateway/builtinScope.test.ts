import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { randomUUID } from 'node:crypto';
import { TaskState } from '@a2a-js/sdk';
import type { Message, StreamResponse } from '@a2a-js/sdk';
import { META } from '../../../src/core/batonProfile';
import { buildDelegationMessage } from '../../../src/core/delegation/context';
import { discoverLocalAgents } from '../../../src/gateway/agents/discover';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { sh } from '../workspace/repoFixtures';
import { clientFor, collect, sendRequest, tempDir, userMessage } from './helpers';

const SAMPLE = resolve(__dirname, '../../../samples/demo-repo');
const READ_ONLY = { write: false, shell: false, network: false };

function texts(events: StreamResponse[]): string[] {
  return events.flatMap((e) => {
    const v = e.payload?.$case === 'statusUpdate' ? e.payload.value.status?.message?.parts[0]?.content : undefined;
    return v?.$case === 'text' ? [v.value] : [];
  });
}

describe('gateway: the built-in agents honour the scope of the request, through the SDK client', () => {
  const state = tempDir();
  const roots = tempDir('baton-scope-roots-');
  const repo = join(roots.path, 'shop');
  let gw: RunningGateway;
  before(async () => {
    cpSync(SAMPLE, repo, { recursive: true });
    sh(repo, 'init', '-q', '-b', 'main');
    sh(repo, 'add', '-A');
    sh(repo, 'commit', '-q', '-m', 'demo');
    const localAgents = await discoverLocalAgents({ workspaceRoot: join(state.path, 'ws'), clis: false });
    gw = await startGateway({ stateDir: state.path, roots: [roots.path], localAgents, log: () => undefined });
  });
  after(async () => {
    await gw.close();
    state[Symbol.dispose]();
    roots[Symbol.dispose]();
  });

  /** Sends the message, follows the stream to the end, and returns the steps and the final task's patch. */
  async function delegate(agent: string, message: Message) {
    const client = await clientFor(`${gw.url}/a2a/${agent}/.well-known/agent-card.json`, gw.token);
    const events = await collect(client.sendMessageStream(sendRequest(message)));
    const taskId = events[0]?.payload?.$case === 'task' ? events[0].payload.value.id : '';
    const task = await client.getTask({ tenant: '', id: taskId });
    const patch = String(task.artifacts.find((a) => a.name === 'changes.patch')?.parts[0]?.content?.value ?? '');
    const touched = [...patch.matchAll(/^diff --git a\/(\S+)/gm)].map((m) => m[1]).sort();
    const statusText = task.status?.message?.parts[0]?.content;
    return {
      steps: texts(events),
      touched,
      state: task.status?.state,
      final: statusText?.$case === 'text' ? statusText.value : '',
    };
  }

  it('"Format the files under src/" to the formatter: a patch of src/ only; the first step of the agent says the scope', async () => {
    const r = await delegate('formatter', userMessage('Format the files under src/', { [META.repository]: repo }));
    assert.equal(r.state, TaskState.TASK_STATE_COMPLETED, r.final);
    assert.deepEqual(r.touched, ['src/cart.js', 'src/format.ts', 'src/pricing.js', 'src/styles.css']);
    // accepted, then the agent's 'started' detail, then its first step.
    assert.equal(r.steps[2], 'Scope: src/ (named in the task): 5 files');
  });

  it("a folder and a selection sent as context by the extension's own message builder decide the scope; their text names nothing", async () => {
    const { message } = buildDelegationMessage({
      requestId: randomUUID(),
      task: 'Format these',
      selection: {
        path: 'README.md',
        range: { startLine: 0, startCharacter: 0, endLine: 1, endCharacter: 0 },
        text: 'Demo shop (see package.json and src/cart.js)\n',
      },
      files: [{ path: 'config/', text: '' }],
      repository: { root: repo, baseCommit: '', uncommittedDigest: '' },
      capabilities: READ_ONLY,
      chain: [],
    });
    const r = await delegate('formatter', message);
    assert.equal(r.state, TaskState.TASK_STATE_COMPLETED, r.final);
    assert.deepEqual(r.touched, ['README.md', 'config/settings.json']);
    assert.equal(r.steps[2], 'Scope: the 2 files and folders sent as context (README.md and config/): 2 files');
    // Only the task text is read for names, not the selected text.
    assert.ok(!r.steps.some((s) => /also names/.test(s)), r.steps.join('\n'));
  });

  it('context parts without the baton/files list still scope the run (a diagnostic on src/cart.js for the lint fixer)', async () => {
    const { message } = buildDelegationMessage({
      requestId: randomUUID(),
      task: 'Fix the lint problems',
      diagnostics: [
        {
          path: 'src/cart.js',
          range: { startLine: 1, startCharacter: 0, endLine: 1, endCharacter: 3 },
          severity: 'warning',
          message: 'Unexpected var, use let or const instead.',
          source: 'eslint',
          code: 'no-var',
        },
      ],
      repository: { root: repo, baseCommit: '', uncommittedDigest: '' },
      capabilities: READ_ONLY,
      chain: [],
    });
    assert.equal(message.metadata?.[META.files], undefined);
    const r = await delegate('lint-fix', message);
    assert.equal(r.state, TaskState.TASK_STATE_COMPLETED, r.final);
    assert.deepEqual(r.touched, ['src/cart.js']);
    assert.equal(r.steps[2], 'Scope: the file sent as context (src/cart.js): 1 file');
  });

  it('a task whose paths all match nothing fails with a reason that lists them and what exists', async () => {
    const r = await delegate(
      'lint-fix',
      userMessage('Fix the lint problems in lib/cart.js', { [META.repository]: repo }),
    );
    assert.equal(r.state, TaskState.TASK_STATE_FAILED);
    assert.deepEqual(r.touched, []);
    assert.match(
      r.final,
      /Nothing in the repository matches lib\/cart\.js, the path the task names\. The repository has: .*src\//,
    );
  });

  it('the cards say how scope works', async () => {
    for (const id of ['formatter', 'lint-fix']) {
      const card = (await (
        await fetch(`${gw.url}/a2a/${id}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })
      ).json()) as { skills: Array<{ description: string; examples: string[] }> };
      assert.match(
        card.skills[0].description,
        /Scope: the files and folders sent as context; else the paths and globs the task names .*; else /,
      );
      assert.ok(card.skills[0].examples.some((e) => /src\//.test(e)));
    }
  });
});
