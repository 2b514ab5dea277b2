// What `baton` writes to a terminal when an agent's card and events carry terminal control sequences:
// a real SDK agent on 127.0.0.1, the real CLI in a child process, and the exact bytes it writes.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { TaskState } from '@a2a-js/sdk';
import { AGENT_INDEX_EXTENSION_URI } from '../../../src/core/batonProfile';
import { startAgentServer, type AgentServer, type Turn } from '../delegation/agentServers';
import { tempDir } from './helpers';

const CLI = resolve(__dirname, '../../../src/gateway/batonCli.ts');

/** Strings a hostile agent puts wherever it can. */
const EVIL = {
  clear: 'x\x1b[2J\x1b[H',
  title: '\x1b]0;pwned\x07',
  osc8: '\x1b]8;;https://evil.example/\x1b\\click me\x1b]8;;\x1b\\',
  osc52: '\x1b]52;c;cm0gLXJmIH4K\x07',
  dcs: '\x1bP+q544e\x1b\\',
  c1: '\u009b2J\u009d0;t\u009c',
  cr: 'failed\rcompleted',
  backspace: 'failed\b\b\b\b\b\bcompleted',
  del: 'a\x7fb',
  bidi: 'report\u202eexe.txt \u2066x\u2069 \u2067y\u2068',
  lines: 'ok\ncompleted\n  [completed] all good\r\nbaton: done',
} as const;

/** Bytes a terminal would act on: C0 except LF, DEL, C1, bidi controls. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function cli(args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', CLI, ...args],
      { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, encoding: 'utf8', timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error && typeof error.code === 'number' ? error.code : error ? null : 0;
        done({ code, stdout, stderr });
      },
    );
  });
}

function assertInert(text: string, what: string): void {
  const m = CONTROL.exec(text);
  assert.equal(
    m,
    null,
    `${what} wrote U+${m?.[0].charCodeAt(0).toString(16).padStart(4, '0')} at ${m?.index}:\n${JSON.stringify(text)}`,
  );
}

/** Every line is one the CLI writes itself, or an indented continuation of agent text. */
function assertOwnLines(text: string, own: readonly RegExp[]): void {
  for (const l of text.split('\n').filter(Boolean)) {
    assert.ok(
      own.some((re) => re.test(l)) || l.startsWith('    '),
      `a line the CLI does not write: ${JSON.stringify(l)}`,
    );
  }
}

const hostile = async (t: Turn): Promise<void> => {
  if (t.continuing) return;
  t.task(TaskState.TASK_STATE_WORKING);
  t.status(TaskState.TASK_STATE_WORKING, `${EVIL.osc52}${EVIL.lines}`);
  t.artifact('a1', `notes${EVIL.cr}${EVIL.title}`, 'text', { lastChunk: true });
  t.artifact('a2', 'answer.md', `${EVIL.osc52}${EVIL.lines}`, { lastChunk: true, mediaType: 'text/markdown' });
  t.status(TaskState.TASK_STATE_WORKING, `${EVIL.dcs}${EVIL.c1}${EVIL.del}`);
  t.status(TaskState.TASK_STATE_FAILED, `${EVIL.backspace} ${EVIL.bidi}${EVIL.osc8}\n${EVIL.cr}`);
};

describe('baton command line: agent text reaches the terminal neutralised', () => {
  const state = tempDir();
  const journals = tempDir('baton-cli-journals-');
  let agent: AgentServer;
  let env: NodeJS.ProcessEnv;
  let cardUrl: string;
  before(async () => {
    agent = await startAgentServer({
      script: hostile,
      wireCard: true,
      cardFields: {
        name: `Evil${EVIL.clear}${EVIL.title}`,
        description: EVIL.osc8,
        capabilities: {
          streaming: true,
          extensions: [
            {
              uri: AGENT_INDEX_EXTENSION_URI,
              required: false,
              params: {
                agents: [
                  {
                    id: `evil${EVIL.dcs}`,
                    name: `${EVIL.c1}Name${EVIL.cr}`,
                    description: `${EVIL.bidi}${EVIL.del}\n${EVIL.lines}`,
                    cardUrl: '/a2a/jsonrpc/.well-known/agent-card.json',
                  },
                ],
              },
            },
          ],
        },
      },
    });
    cardUrl = `${agent.base}/.well-known/agent-card.json`;
    env = { BATON_GATEWAY: agent.base, BATON_CLI_DIR: journals.path, BATON_STATE_DIR: state.path };
  });
  after(async () => {
    await agent.close();
    for (const d of [state, journals]) d[Symbol.dispose]();
  });

  it('delegate: card name, steps, artifact names and the failure reason are printed as visible escapes', async () => {
    const r = await cli(['delegate', cardUrl, 'hello', '--out', join(state.path, 'x.patch')], env);
    assert.equal(r.code, 10, `${r.stdout}\n${r.stderr}`);
    assertInert(r.stdout, 'stdout');
    assertInert(r.stderr, 'stderr');
    assertOwnLines(r.stdout, [
      /^delegating to /,
      /^ {2}\[[a-z-]+\]/,
      /^ {2}· /,
      /^ {2}artifact /,
      /^ {2}(agent|you): /,
      /^ {2}(info|warning|error): /,
      /^failed: /,
      /^answer \(/,
    ]);
    // The failed run is not redrawn as completed: its outcome line says failed, and no line starts like a CLI line it did not write.
    assert.match(r.stdout, /^failed: /m);
    assert.doesNotMatch(r.stdout, /^completed/m);
    assert.doesNotMatch(r.stdout, /^ {2}\[completed\]/m);
    assert.doesNotMatch(r.stdout, /^baton: /m);
    // What the agent sent is still there to read.
    assert.ok(r.stdout.includes('delegating to Evilx\\x1b[2J\\x1b[H\\x1b]0;pwned\\x07 ('), r.stdout);
    assert.ok(
      r.stdout.includes('\\x1b]52;c;cm0gLXJmIH4K\\x07ok\n    completed\n      [completed] all good\n    baton: done'),
      r.stdout,
    );
    assert.ok(r.stdout.includes('  artifact notesfailed\\x0dcompleted\\x1b]0;pwned\\x07 (4 bytes)'), r.stdout);
    assert.ok(r.stdout.includes('\\x9b2J\\x9d0;t\\x9c'), r.stdout);
    // The text the agent answered in, printed at the end, is neutralised like the rest.
    assert.ok(
      r.stdout.includes(
        'answer (answer.md): \\x1b]52;c;cm0gLXJmIH4K\\x07ok\n    completed\n      [completed] all good\n    baton: done',
      ),
      r.stdout,
    );
    assert.ok(
      r.stdout.includes('failed\\x08\\x08\\x08\\x08\\x08\\x08completed report\\u202eexe.txt \\u2066x\\u2069'),
      r.stdout,
    );
  });

  it('status: the agent name, reason and task id from the journal are neutralised too', async () => {
    const first = await cli(['delegate', cardUrl, 'again', '--out', join(state.path, 'y.patch')], env);
    const id = /as ([0-9a-f-]{36})$/m.exec(first.stdout)?.[1] ?? '';
    assert.ok(id, first.stdout);
    const r = await cli(['status', id], env);
    assert.equal(r.code, 10, `${r.stdout}\n${r.stderr}`);
    assertInert(r.stdout, 'stdout');
    assert.match(r.stdout, new RegExp(`^${id} Evilx\\\\x1b\\[2J`));
    assertOwnLines(r.stdout, [new RegExp(`^${id} `), /^answer \(/]);
  });

  it('agents: index entries (id, name, description) are neutralised, one line each', async () => {
    const r = await cli(['agents'], env);
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assertInert(r.stdout, 'stdout');
    assert.equal(r.stdout.split('\n').filter(Boolean).length, 1, r.stdout);
    assert.ok(r.stdout.startsWith('evil\\x1bP+q544e\\x1b\\ \\x9b2J\\x9d0;t\\x9cName'), r.stdout);
    assert.ok(r.stdout.includes('report\\u202eexe.txt'), r.stdout);
  });

  it('--json stays exact JSON: control characters escaped, values unchanged', async () => {
    for (const args of [
      ['agents', '--json'],
      ['delegate', cardUrl, 'json please', '--json', '--out', join(state.path, 'z.patch')],
    ]) {
      const r = await cli(args, env);
      assertInert(r.stdout, `${args[0]} --json`);
      const values = r.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as unknown);
      const all = JSON.stringify(values);
      if (args[0] === 'agents') {
        const [list] = values as { id: string; name: string; description: string }[][];
        assert.equal(list[0].id, `evil${EVIL.dcs}`);
        assert.equal(list[0].name, `${EVIL.c1}Name${EVIL.cr}`);
        assert.equal(list[0].description, `${EVIL.bidi}${EVIL.del}\n${EVIL.lines}`);
      } else {
        assert.ok(all.includes(JSON.stringify(`${EVIL.osc52}${EVIL.lines}`).slice(1, -1)), all);
        assert.ok(all.includes(JSON.stringify(`${EVIL.dcs}${EVIL.c1}${EVIL.del}`).slice(1, -1)), all);
        const final = values.at(-1) as { outcome: string; reason: string };
        assert.equal(final.outcome, 'failed');
        assert.ok(final.reason.includes(`${EVIL.backspace} ${EVIL.bidi}${EVIL.osc8}`), final.reason);
      }
    }
  });

  it('errors that quote the card go to stderr neutralised', async () => {
    for (const url of [
      `\x1b]0;pwned\x07${agent.base}/a2a`,
      `https://elsewhere.example/${EVIL.clear}${EVIL.bidi}`,
      `ftp${EVIL.osc52}://x/`,
    ]) {
      const bad = await startAgentServer({
        script: hostile,
        wireCard: true,
        cardFields: { supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }] },
      });
      try {
        const r = await cli(['delegate', `${bad.base}/.well-known/agent-card.json`, 'x'], env);
        assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
        assert.match(r.stderr, /^baton: the card at /);
        assertInert(r.stderr, `stderr for ${JSON.stringify(url)}`);
        assert.equal(r.stderr.split('\n').filter(Boolean).length, 1, r.stderr);
      } finally {
        await bad.close();
      }
    }
  });
});
