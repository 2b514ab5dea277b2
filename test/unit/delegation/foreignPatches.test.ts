// Patches as agents written elsewhere return them, and structured content (data parts) as such agents
// stream it: real @a2a-js/sdk servers on 127.0.0.1, over A2A 1.0 and over 0.3 (the SDK's legacy
// wire format, where inline file bytes travel base64 in `file.bytes`), followed by the real runner and
// SDK client. For each, what the result check offers for review, what the panel's view model lists,
// and what `baton delegate` saves and prints.
import * as assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { TaskState } from '@a2a-js/sdk';
import type { Part } from '@a2a-js/sdk';
import express from 'express';
import type * as v03 from 'a2a-sdk-v03';
import * as v03server from 'a2a-sdk-v03/server';
import * as v03express from 'a2a-sdk-v03/server/express';
import { DelegationJournal } from '../../../src/core/delegation';
import type { JournalEntry, JournalTimelineEntry } from '../../../src/core/delegation';
import { delegationPanelView } from '../../../src/core/delegation/panelView';
import type { DataPartView } from '../../../src/core/protocol/dataView';
import type { DelegationView, PatchChoice } from '../../../src/core/protocol/delegationView';
import { batonMain } from '../../../src/gateway/batonCli';
import { patchStats } from '../../../src/node/approvedPatches';
import { normalizeCard } from '../../../src/node/a2a/clientFactory';
import { JournalStore } from '../../../src/node/journalStore';
import { checkResult, finalTaskOf, type ResultCheck } from '../../../src/node/resultCheck';
import { listenOnLoopback, startAgentServer, type AgentServer, type Turn } from './agentServers';
import { newRun, tempDir, within } from './harness';

const GIT_DIFF =
  'diff --git a/src/a.ts b/src/a.ts\n--- a/src/a.ts\n+++ b/src/a.ts\n@@ -1 +1 @@\n-export const a = 1;\n+export const a = 2;\n';
const UNIFIED_TWO_FILES =
  '--- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n x\n-y\n+z\n--- a/c.txt\n+++ b/c.txt\n@@ -1 +1 @@\n-c\n+C\n';
/** Prose that shows diff headers without being a diff. */
const README =
  '--- a/config\n+++ b/config\n\nThe two lines above are how a diff starts; this tool writes them for you.\n\n' +
  'A diff header looks like `--- a/file` and `+++ b/file`.\n';
const FENCED = `I fixed it:\n\n\`\`\`diff\n${GIT_DIFF}\`\`\`\n\nApply it from the top folder.`;
const LINK = 'https://patches.example/fix.diff';

function text(value: string, mediaType = 'text/plain', filename = ''): Part {
  return { content: { $case: 'text', value }, mediaType, filename, metadata: undefined };
}
function raw(bytes: Buffer, mediaType: string, filename = ''): Part {
  return { content: { $case: 'raw', value: bytes }, mediaType, filename, metadata: undefined };
}
function url(value: string, mediaType: string, filename = ''): Part {
  return { content: { $case: 'url', value }, mediaType, filename, metadata: undefined };
}
function data(value: unknown): Part {
  return { content: { $case: 'data', value }, mediaType: 'application/json', filename: '', metadata: undefined };
}

/** A tool call the size of the Gemini server's (several KB, with the diff inside a string). */
export function toolCall(bytes: number): Record<string, unknown> {
  const diff = `${GIT_DIFF}${'+// padding line with "quotes" and a \\ backslash\n'.repeat(Math.ceil(bytes / 48))}`;
  return {
    request: { callId: 'call-1', name: 'replace', args: { file_path: 'src/a.ts', new_string: diff.slice(0, bytes) } },
    status: 'awaiting_approval',
    confirmationDetails: { type: 'edit', title: 'Confirm Edit', fileDiff: diff.slice(0, bytes), isModifying: false },
    tool: { name: 'replace', displayName: 'Edit', kind: 'edit' },
  };
}
const TOOL_CALL = toolCall(10_000);

/** What each scenario's agent does, chosen by a `«name»` in the task. */
const SCRIPTS: Record<string, (t: Turn) => void> = {
  'fix-diff': (t) => t.artifactParts('a1', 'fix.diff', [text(GIT_DIFF)]),
  'x-patch': (t) => t.artifactParts('a1', '', [raw(Buffer.from(UNIFIED_TWO_FILES), 'text/x-patch')]),
  charset: (t) => t.artifactParts('a1', 'output', [text(GIT_DIFF, 'text/x-diff; charset=utf-8')]),
  'result-text': (t) => t.artifactParts('a1', 'result', [text(GIT_DIFF)]),
  fenced: () => undefined,
  two: (t) => {
    t.artifactParts('a1', 'fix.diff', [text(GIT_DIFF)]);
    t.artifactParts('a2', 'tests.patch', [text(UNIFIED_TWO_FILES)]);
  },
  readme: (t) => t.artifactParts('a1', 'README.md', [text(README, 'text/markdown')]),
  url: (t) => t.artifactParts('a1', 'patch', [url(LINK, 'text/x-diff')]),
  data: (t) =>
    t.statusParts(TaskState.TASK_STATE_WORKING, [text('Waiting for approval of a tool call'), data(TOOL_CALL)]),
};

async function script(t: Turn): Promise<void> {
  const name = /«([^»]+)»/.exec(t.text)?.[1] ?? '';
  t.task(TaskState.TASK_STATE_SUBMITTED);
  t.status(TaskState.TASK_STATE_WORKING);
  SCRIPTS[name]?.(t);
  if (name === 'fenced') t.statusParts(TaskState.TASK_STATE_COMPLETED, [text(FENCED)]);
  else t.status(TaskState.TASK_STATE_COMPLETED, 'done');
}

/** The panel's view as the extension makes it: the record, with each approved patch's statistics. */
function panelOf(journal: DelegationJournal, check: ResultCheck): DelegationView {
  const record = journal.view(Date.now());
  const withCheck = {
    ...record,
    resultCheck: {
      signature: { status: check.status, detail: check.detail },
      ...(check.status !== 'invalid' && check.patch
        ? {
            patch: { artifactId: check.patch.artifactId, sha256: check.patch.sha256 },
            patches: (check.patches ?? []).map((p) => ({ ...p, bytes: undefined })),
          }
        : {}),
      ...(check.status !== 'invalid' && check.links ? { links: check.links } : {}),
    },
  };
  const patches: PatchChoice[] =
    check.status === 'invalid'
      ? []
      : (check.patches ?? []).map((p, index) => {
          const stats = patchStats(p.bytes);
          return { index, name: p.name, source: p.source, signature: p.signature, ...(stats ? { stats } : {}) };
        });
  return delegationPanelView(withCheck, { patch: patches[0]?.stats, patches });
}

function capture(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  let buf = '';
  stream.on('data', (d: Buffer) => (buf += d.toString()));
  return { stream, text: () => buf };
}

for (const legacy of [false, true]) {
  const version = legacy ? 'A2A 0.3' : 'A2A 1.0';
  describe(`patches under any name, and data parts, from an SDK agent over ${version}`, () => {
    let server: AgentServer;
    let tmp: ReturnType<typeof tempDir>;
    let store: JournalStore;
    before(async () => {
      server = await startAgentServer({ script, legacy, wireCard: !legacy });
      tmp = tempDir();
      store = new JournalStore(join(tmp.dir, 'journals'));
    });
    after(async () => {
      await store.close();
      await server.close();
      tmp.cleanup();
    });

    async function delegate(
      name: string,
    ): Promise<{ check: ResultCheck; journal: DelegationJournal; entries: JournalEntry[] }> {
      const run = await newRun(server, store, `fix it «${name}»`);
      await within(run.runner.start(), 15_000, name);
      const entries = await run.entries();
      const journal = DelegationJournal.fromEntries(entries);
      const check = await checkResult({
        journal,
        final: finalTaskOf(entries),
        keys: [],
        signaturesPromised: false,
        signer: server.base,
      });
      assert.equal(journal.decide()?.outcome, 'completed', journal.decide()?.reason);
      assert.equal(check.status, 'unsigned', check.detail);
      return { check, journal, entries };
    }

    const bytesOf = (c: ResultCheck): string[] =>
      c.status === 'invalid' ? [] : (c.patches ?? []).map((p) => p.bytes.toString('utf8'));

    it('an artifact named fix.diff is the patch, listed in the panel with its file count', async () => {
      const { check, journal } = await delegate('fix-diff');
      assert.deepEqual(bytesOf(check), [GIT_DIFF]);
      const view = panelOf(journal, check);
      assert.deepEqual(view.patch, { files: 1, additions: 1, deletions: 1 });
      assert.equal(view.patches, undefined, 'one patch needs no choice');
      assert.deepEqual(
        view.artifacts.map((a) => [a.name, a.isPatch]),
        [['fix.diff', true]],
      );
    });

    it('a file part typed text/x-patch with no name: its inline bytes are the patch', async () => {
      const { check, journal } = await delegate('x-patch');
      assert.deepEqual(bytesOf(check), [UNIFIED_TWO_FILES]);
      assert.deepEqual(panelOf(journal, check).patch, { files: 2, additions: 2, deletions: 2 });
    });

    it('text/x-diff with a charset parameter, on an artifact named "output"', async () => {
      const { check } = await delegate('charset');
      assert.deepEqual(bytesOf(check), [GIT_DIFF]);
    });

    it('a text artifact named "result" whose content is a git diff', async () => {
      const { check, journal } = await delegate('result-text');
      assert.deepEqual(bytesOf(check), [GIT_DIFF]);
      assert.equal(check.status !== 'invalid' && check.patch?.name, 'result');
      assert.equal(journal.view(Date.now()).artifacts[0]?.isPatch, true);
    });

    it('a fenced diff in the final agent message: offered, unsigned, named as the message', async () => {
      const { check, journal } = await delegate('fenced');
      assert.deepEqual(bytesOf(check), [GIT_DIFF]);
      assert.ok(check.status !== 'invalid' && check.patch);
      assert.equal(check.patch.source, 'message');
      assert.equal(check.patch.signature, 'unsigned');
      assert.deepEqual(panelOf(journal, check).patch, { files: 1, additions: 1, deletions: 1 });
    });

    it('two patch artifacts: both offered, each listed with its name and file count', async () => {
      const { check, journal } = await delegate('two');
      assert.deepEqual(bytesOf(check), [GIT_DIFF, UNIFIED_TWO_FILES]);
      const view = panelOf(journal, check);
      assert.deepEqual(
        view.patches?.map((p) => [p.index, p.name, p.stats?.files, p.signature]),
        [
          [0, 'fix.diff', 1, 'unsigned'],
          [1, 'tests.patch', 2, 'unsigned'],
        ],
      );
    });

    it('a README that shows diff headers is not a patch', async () => {
      const { check, journal } = await delegate('readme');
      assert.deepEqual(bytesOf(check), []);
      assert.equal(check.status !== 'invalid' && check.patch, undefined);
      const view = panelOf(journal, check);
      assert.equal(view.patch, undefined);
      assert.deepEqual(
        view.artifacts.map((a) => [a.name, a.isPatch]),
        [['README.md', false]],
      );
      assert.equal(journal.view(Date.now()).actions.reviewChanges, false);
    });

    it('a patch given as a URL is named, never fetched', async () => {
      const before = server.requests.length;
      const { check, journal } = await delegate('url');
      assert.deepEqual(bytesOf(check), []);
      assert.deepEqual(check.status !== 'invalid' && check.links, [{ name: 'patch', url: LINK }]);
      assert.deepEqual(panelOf(journal, check).patchLinks, [{ name: 'patch', url: LINK }]);
      assert.ok(server.requests.slice(before).every((r) => !r.path.includes('fix.diff')));
    });

    it('a 10 KB data part in a status message: the journal and the panel hold it as structure, whole', async () => {
      const { journal, entries } = await delegate('data');
      const step = journal
        .view(Date.now())
        .timeline.find((e): e is Extract<JournalTimelineEntry, { kind: 'step' }> => e.kind === 'step' && !!e.data);
      assert.ok(step, 'the status message with the data part is a step in the timeline');
      assert.equal(step.text, 'Waiting for approval of a tool call');
      assert.doesNotMatch(step.text, /```json|confirmationDetails/, 'the data is not in the text');
      const [d] = step.data ?? [];
      assert.ok(d && 'value' in d);
      assert.deepEqual(d.value, TOOL_CALL);
      assert.ok(d.bytes > 10_000);
      // It survives the journal on disk: the same entries read back give the same value.
      const reloaded = DelegationJournal.fromEntries((await store.load(journal.requestId)).entries);
      assert.deepEqual(
        reloaded.view(Date.now()).timeline.find((e) => e.kind === 'step' && e.data),
        step,
      );
      assert.ok(entries.length > 0);
      const shown = panelOf(journal, { status: 'unsigned', detail: '', text: { code: 'no-task' } }).timeline.flatMap(
        (e) => e.data ?? [],
      );
      assert.deepEqual(shown, [d] satisfies DataPartView[]);
    });

    describe('baton delegate', () => {
      const outDir = tempDir();
      let env: NodeJS.ProcessEnv;
      before(() => {
        env = {
          BATON_GATEWAY: server.base,
          BATON_TOKEN: 'unused',
          BATON_CLI_DIR: join(outDir.dir, 'journals'),
          BATON_STATE_DIR: join(outDir.dir, 'state'),
        };
      });
      after(() => outDir.cleanup());

      async function cli(name: string, extra: string[] = []): Promise<{ code: number; out: string; id: string }> {
        const out = capture();
        const code = await batonMain(
          ['delegate', `${server.base}/.well-known/agent-card.json`, `fix it «${name}»`, ...extra],
          out.stream,
          env,
        );
        const id = /as ([0-9a-f-]{36})/.exec(out.text())?.[1] ?? '';
        return { code, out: out.text(), id };
      }
      const saved = (id: string, n?: number): string =>
        join(outDir.dir, 'patches', n ? `${id}-${n}.patch` : `${id}.patch`);

      it('saves a patch named fix.diff as <request-id>.patch and says what it saved', async () => {
        const r = await cli('fix-diff');
        assert.equal(r.code, 0, r.out);
        assert.equal(readFileSync(saved(r.id), 'utf8'), GIT_DIFF);
        assert.match(r.out, /^the patch fix\.diff \(unsigned\) saved to .*\.patch$/m);
      });

      it('saves the inline bytes of a text/x-patch file part', async () => {
        const r = await cli('x-patch');
        assert.equal(r.code, 0, r.out);
        assert.equal(readFileSync(saved(r.id), 'utf8'), UNIFIED_TWO_FILES);
      });

      it('saves a fenced diff from the final message, saying where it came from', async () => {
        const r = await cli('fenced');
        assert.equal(r.code, 0, r.out);
        assert.equal(readFileSync(saved(r.id), 'utf8'), GIT_DIFF);
        assert.match(r.out, /^the diff in the agent's message \(unsigned\) saved to /m);
      });

      it('two patches: <request-id>.patch and <request-id>-2.patch, both printed; --json lists both', async () => {
        const r = await cli('two');
        assert.equal(r.code, 0, r.out);
        assert.equal(readFileSync(saved(r.id), 'utf8'), GIT_DIFF);
        assert.equal(readFileSync(saved(r.id, 2), 'utf8'), UNIFIED_TWO_FILES);
        assert.match(r.out, /^the agent returned 2 patches; review each on its own:$/m);
        assert.match(r.out, /^the patch fix\.diff \(unsigned\) saved to .*[0-9a-f]\.patch$/m);
        assert.match(r.out, /^the patch tests\.patch \(unsigned\) saved to .*-2\.patch$/m);
        const j = await cli('two', ['--json', '--out', join(outDir.dir, 'both.diff')]);
        const last = JSON.parse(j.out.trim().split('\n').at(-1) ?? '{}') as {
          patch?: string;
          patches?: { file: string; name: string }[];
        };
        assert.equal(last.patch, join(outDir.dir, 'both.diff'));
        assert.deepEqual(
          last.patches?.map((p) => [p.file, p.name]),
          [
            [join(outDir.dir, 'both.diff'), 'fix.diff'],
            [join(outDir.dir, 'both-2.diff'), 'tests.patch'],
          ],
        );
        assert.equal(readFileSync(join(outDir.dir, 'both-2.diff'), 'utf8'), UNIFIED_TWO_FILES);
      });

      it('a README is not saved as a patch', async () => {
        const r = await cli('readme');
        assert.equal(r.code, 0, r.out);
        assert.equal(existsSync(saved(r.id)), false);
        assert.doesNotMatch(r.out, /saved to/);
      });

      it('a patch given as a link: says so, downloads nothing', async () => {
        const r = await cli('url');
        assert.equal(r.code, 0, r.out);
        assert.equal(existsSync(saved(r.id)), false);
        assert.match(
          r.out,
          /^the agent returned the patch patch as a link \(https:\/\/patches\.example\/fix\.diff\), which Baton does not download/m,
        );
      });

      it('a data part: one summary line, and --json prints the whole object', async () => {
        const r = await cli('data');
        assert.equal(r.code, 0, r.out);
        assert.match(r.out, /^ {4}data: \{request, status, confirmationDetails, tool\} \(4 keys, \d+\.\d KB\)$/m);
        assert.doesNotMatch(r.out, /fileDiff/);
        const j = await cli('data', ['--json']);
        const lines = j.out
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as { kind?: string; data?: DataPartView[] });
        const step = lines.find((l) => l.kind === 'step' && l.data);
        assert.ok(step?.data?.[0] && 'value' in step.data[0]);
        assert.deepEqual(step.data[0].value, TOOL_CALL);
      });
    });
  });
}

// The same through an agent built on the 0.3-era SDK itself (@a2a-js/sdk 0.3.14), as agents written
// elsewhere run it: its own part shapes (`kind: 'file'` with base64 `file.bytes` or `file.uri`,
// `kind: 'data'`) on its own JSON-RPC server.
describe('patches and data parts from an agent on the 0.3 SDK', () => {
  let base = '';
  let close: () => Promise<void> = () => Promise.resolve();
  let card: AgentServer['card'];
  let tmp: ReturnType<typeof tempDir>;
  let store: JournalStore;

  type V03Part = v03.Part;
  /** Per scenario: the artifact's parts and name, the working status's message, the final status's message. */
  const PARTS: Record<string, { artifact?: V03Part[]; name?: string; working?: V03Part[]; final?: V03Part[] }> = {
    'file-bytes': {
      artifact: [
        { kind: 'file', file: { bytes: Buffer.from(UNIFIED_TWO_FILES).toString('base64'), mimeType: 'text/x-patch' } },
      ],
    },
    'file-uri': { name: 'fix', artifact: [{ kind: 'file', file: { uri: LINK, mimeType: 'text/x-diff' } }] },
    'fix-diff': { name: 'fix.diff', artifact: [{ kind: 'text', text: GIT_DIFF }] },
    readme: { name: 'README.md', artifact: [{ kind: 'text', text: README }] },
    fenced: { final: [{ kind: 'text', text: FENCED }] },
    data: {
      working: [
        { kind: 'text', text: 'Waiting for approval of a tool call' },
        { kind: 'data', data: TOOL_CALL },
      ],
    },
  };

  class Executor implements v03server.AgentExecutor {
    execute = async (ctx: v03server.RequestContext, bus: v03server.ExecutionEventBus): Promise<void> => {
      const { taskId, contextId } = ctx;
      const said = ctx.userMessage.parts.map((p) => (p.kind === 'text' ? p.text : '')).join('');
      const s = PARTS[/«([^»]+)»/.exec(said)?.[1] ?? ''] ?? {};
      const status = (state: v03.TaskState, final: boolean, parts?: V03Part[]): v03.TaskStatusUpdateEvent => ({
        kind: 'status-update',
        taskId,
        contextId,
        final,
        status: {
          state,
          timestamp: new Date().toISOString(),
          ...(parts
            ? { message: { kind: 'message', role: 'agent', messageId: randomUUID(), taskId, contextId, parts } }
            : {}),
        },
      });
      bus.publish({ kind: 'task', id: taskId, contextId, status: { state: 'submitted' }, history: [ctx.userMessage] });
      bus.publish(status('working', false, s.working));
      if (s.artifact)
        bus.publish({
          kind: 'artifact-update',
          taskId,
          contextId,
          lastChunk: true,
          artifact: { artifactId: 'a1', ...(s.name ? { name: s.name } : {}), parts: s.artifact },
        });
      bus.publish(status('completed', true, s.final ?? [{ kind: 'text', text: 'done' }]));
      bus.finished();
    };
    cancelTask = async (): Promise<void> => undefined;
  }

  before(async () => {
    const cardJson: v03.AgentCard = {
      name: 'Agent on the 0.3 SDK',
      description: 'A scripted 0.3 agent',
      protocolVersion: '0.3.0',
      version: '1.0.0',
      url: '',
      preferredTransport: 'JSONRPC',
      capabilities: { streaming: true },
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain'],
      skills: [{ id: 'fix', name: 'Fix', description: 'fix', tags: ['fix'] }],
    };
    const handler = new v03server.DefaultRequestHandler(cardJson, new v03server.InMemoryTaskStore(), new Executor());
    const app = express();
    app.use('/.well-known/agent-card.json', v03express.agentCardHandler({ agentCardProvider: handler }));
    app.use(
      '/a2a/jsonrpc',
      v03express.jsonRpcHandler({ requestHandler: handler, userBuilder: v03express.UserBuilder.noAuthentication }),
    );
    const listening = await listenOnLoopback(app);
    close = listening.close;
    base = `http://127.0.0.1:${listening.port}`;
    cardJson.url = `${base}/a2a/jsonrpc`;
    card = normalizeCard(cardJson);
    tmp = tempDir();
    store = new JournalStore(join(tmp.dir, 'journals'));
  });
  after(async () => {
    await store.close();
    await close();
    tmp.cleanup();
  });

  async function delegate(name: string): Promise<{ check: ResultCheck; journal: DelegationJournal }> {
    const server = {
      card,
      jsonRpc: { url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '0.3.0' },
    } as unknown as AgentServer;
    const run = await newRun(server, store, `fix it «${name}»`);
    await within(run.runner.start(), 15_000, name);
    const entries = await run.entries();
    const journal = DelegationJournal.fromEntries(entries);
    const check = await checkResult({
      journal,
      final: finalTaskOf(entries),
      keys: [],
      signaturesPromised: false,
      signer: base,
    });
    assert.equal(journal.decide()?.outcome, 'completed', journal.decide()?.reason);
    return { check, journal };
  }
  const bytesOf = (c: ResultCheck): string[] =>
    c.status === 'invalid' ? [] : (c.patches ?? []).map((p) => p.bytes.toString('utf8'));

  it('a file part with base64 bytes typed text/x-patch is the patch', async () => {
    const { check, journal } = await delegate('file-bytes');
    assert.deepEqual(bytesOf(check), [UNIFIED_TWO_FILES]);
    assert.deepEqual(panelOf(journal, check).patch, { files: 2, additions: 2, deletions: 2 });
  });

  it('a file part by URI is named as a link, not fetched', async () => {
    const { check } = await delegate('file-uri');
    assert.deepEqual(bytesOf(check), []);
    assert.deepEqual(check.status !== 'invalid' && check.links, [{ name: 'fix', url: LINK }]);
  });

  it('fix.diff, a fenced diff in the final message, and a README that is not a patch', async () => {
    assert.deepEqual(bytesOf((await delegate('fix-diff')).check), [GIT_DIFF]);
    const fenced = (await delegate('fenced')).check;
    assert.deepEqual(bytesOf(fenced), [GIT_DIFF]);
    assert.equal(fenced.status !== 'invalid' && fenced.patch?.source, 'message');
    assert.deepEqual(bytesOf((await delegate('readme')).check), []);
  });

  it('a 10 KB data part in a status message is kept as its value in the journal and the panel', async () => {
    const { journal } = await delegate('data');
    // The working status came with the message: the entry is the state change, with its text and data.
    const entry = journal.view(Date.now()).timeline.find((e) => e.kind === 'status' && e.state === 'working');
    assert.ok(entry?.kind === 'status', 'the working status is in the timeline');
    assert.equal(entry.text, 'Waiting for approval of a tool call');
    assert.deepEqual(entry.data, [{ value: TOOL_CALL, bytes: JSON.stringify(TOOL_CALL).length }]);
    const shown = panelOf(journal, { status: 'unsigned', detail: '', text: { code: 'no-task' } }).timeline.flatMap(
      (e) => e.data ?? [],
    );
    assert.deepEqual(shown, entry.data);
  });
});
