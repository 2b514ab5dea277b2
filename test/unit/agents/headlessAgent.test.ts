import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { bwrapStatus } from '../../../src/gateway/confine';
import { createHeadlessAgent, toolDirs } from '../../../src/gateway/agents/headlessAgent';
import type { Capabilities, LocalRunEvent, LocalRunResult } from '../../../src/gateway/agents/localAgent';
import { detectHarnesses } from '../../../src/gateway/harness/registry';
import type { HarnessId } from '../../../src/gateway/harness/harness';
import { WorkspaceManager } from '../../../src/gateway/workspace/workspaceManager';
import { applyCheck, applyToCopy, fingerprint, makeRepo, sh, tempSpace, write } from '../workspace/repoFixtures';
import type { TempSpace } from '../workspace/repoFixtures';

const STANDIN = resolve(__dirname, '../../fixtures/standin-cli');
const WRITE: Capabilities = { write: true, shell: false, network: false };

describe('headless agents with the stand-in CLI', () => {
  let space: TempSpace;
  let manager: WorkspaceManager;
  let n = 0;
  before(() => {
    space = tempSpace('baton-headless-');
    manager = new WorkspaceManager({ root: space.root, userHome: space.home });
  });
  after(() => space.dispose());

  const agentFor = (id: HarnessId, confine: 'auto' | 'off' = 'off', extra: { maxOutputBytes?: number } = {}) => {
    const detected = detectHarnesses({ pathVar: STANDIN }).find((d) => d.spec.id === id);
    assert.ok(detected, `${id} stand-in found on PATH`);
    return createHeadlessAgent(detected, {
      manager,
      confine: { mode: confine },
      realHome: space.home,
      killGraceMs: 500,
      ...extra,
    });
  };

  async function run(
    id: HarnessId,
    repo: string | undefined,
    prompt: string,
    o: {
      caps?: Capabilities;
      deadlineMs?: number;
      confine?: 'auto' | 'off';
      files?: string[];
      unsaved?: string[];
      abortOn?: (e: LocalRunEvent) => boolean;
      maxOutputBytes?: number;
    } = {},
  ) {
    const events: LocalRunEvent[] = [];
    const ac = new AbortController();
    const agent = agentFor(id, o.confine ?? 'off', { maxOutputBytes: o.maxOutputBytes });
    const result: LocalRunResult = await agent.run(
      {
        taskId: `h-${++n}`,
        repoPath: repo,
        prompt,
        files: o.files ?? [],
        unsavedFiles: o.unsaved,
        capabilities: o.caps ?? WRITE,
        deadline: Date.now() + (o.deadlineMs ?? 30_000),
        signal: ac.signal,
      },
      (e) => {
        events.push(e);
        if (o.abortOn?.(e)) ac.abort();
      },
    );
    return { result, events };
  }

  for (const id of ['claude', 'codex', 'gemini', 'copilot', 'opencode'] as const) {
    it(`${id}: edits come back as a patch that applies, steps are parsed, the user repo is unchanged`, async () => {
      const repo = makeRepo(space.base, `flavor-${id}`, { 'src/a.js': 'const a = 1;\n', 'README.md': '# r\n' });
      write(repo, 'notes.txt', 'uncommitted\n');
      const before = fingerprint(repo);
      const { result, events } = await run(
        id,
        repo,
        'Change a\n@standin write src/a.js const a = 2;\\n\n@standin write "docs/new file.md" # new\\n\n@standin delete README.md\n',
      );
      assert.equal(result.outcome, 'completed', result.reason);
      assert.equal(result.exitCode, 0);
      assert.equal(events[0].kind, 'started');
      assert.ok(
        events.some((e) => e.kind === 'step' && /src\/a\.js/.test(e.text)),
        'a step names the edited file',
      );
      const artifact = events.find((e) => e.kind === 'artifact');
      assert.ok(artifact && artifact.kind === 'artifact' && artifact.text === result.patch);
      assert.ok(applyCheck(repo, result.patch).ok);
      const applied = applyToCopy(repo, result.patch, join(space.base, `flavor-${id}-applied`));
      assert.equal(readFileSync(join(applied, 'src/a.js'), 'utf8'), 'const a = 2;\n');
      assert.equal(readFileSync(join(applied, 'docs/new file.md'), 'utf8'), '# new\n');
      assert.equal(existsSync(join(applied, 'README.md')), false);
      assert.equal(readFileSync(join(applied, 'notes.txt'), 'utf8'), 'uncommitted\n');
      assert.equal(fingerprint(repo), before);
      assert.deepEqual(
        readdirSync(space.root).filter((d) => !d.startsWith('.')),
        [],
        'workspace removed',
      );
    });
  }

  it('commits, branches, stashes and pushes inside the clone touch nothing of the user repo; the patch is the folder', async () => {
    const repo = makeRepo(space.base, 'gitops', { 'a.txt': 'a\n' });
    sh(repo, 'stash', 'list');
    const before = fingerprint(repo);
    const refsBefore = sh(repo, 'for-each-ref');
    const { result } = await run(
      'claude',
      repo,
      [
        '@standin write a.txt committed\\n',
        '@standin git add -A',
        '@standin git commit -qm agent-commit',
        '@standin git branch agent-branch',
        '@standin git tag agent-tag',
        '@standin write b.txt stashed\\n',
        '@standin git stash push -u -m agent-stash',
        '@standin git push origin HEAD:refs/heads/pwned',
        '@standin git config user.name agent',
      ].join('\n'),
    );
    assert.equal(result.outcome, 'completed', result.reason);
    assert.match(result.summary ?? '', /git push origin HEAD:refs\/heads\/pwned: failed/);
    assert.match(result.patch, /\+committed/);
    assert.doesNotMatch(result.patch, /b\.txt/, 'stashed work is not in the folder, so not in the patch');
    assert.ok(applyCheck(repo, result.patch).ok);
    assert.equal(sh(repo, 'for-each-ref'), refsBefore);
    assert.equal(sh(repo, 'stash', 'list'), '');
    assert.equal(fingerprint(repo), before);
  });

  it('a CLI that hangs is stopped with its children at the deadline: expired', async () => {
    const repo = makeRepo(space.base, 'hang', { 'a.txt': 'a\n' });
    const { result, events } = await run('claude', repo, '@standin write a.txt partial\\n\n@standin hang', {
      deadlineMs: 2000,
    });
    assert.equal(result.outcome, 'expired');
    assert.match(result.reason ?? '', /deadline/);
    assert.equal(result.patch, '');
    const started = events[0];
    assert.ok(started.kind === 'started');
    assert.deepEqual(processesIn(started.workspace), [], 'no process left in the workspace');
  });

  it('cancel stops the CLI: canceled', async () => {
    const repo = makeRepo(space.base, 'cancel', { 'a.txt': 'a\n' });
    const { result } = await run('codex', repo, '@standin hang', {
      abortOn: (e) => e.kind === 'step' && /sleep forever/.test(e.text),
    });
    assert.equal(result.outcome, 'canceled');
    assert.equal(result.patch, '');
  });

  it('a CLI that floods stdout is stopped: failed with a clear reason', async () => {
    const repo = makeRepo(space.base, 'flood', { 'a.txt': 'a\n' });
    const { result } = await run('claude', repo, '@standin flood', { maxOutputBytes: 1024 * 1024 });
    assert.equal(result.outcome, 'failed');
    assert.match(result.reason ?? '', /more than 1 MiB of output/);
  });

  it('a CLI that exits non-zero fails with its exit code and stderr tail', async () => {
    const repo = makeRepo(space.base, 'exit', { 'a.txt': 'a\n' });
    const { result, events } = await run('gemini', repo, '@standin write a.txt x\\n\n@standin exit 3');
    assert.equal(result.outcome, 'failed');
    assert.equal(result.exitCode, 3);
    assert.match(result.reason ?? '', /exited with code 3/);
    assert.ok(
      events.some((e) => e.kind === 'log' && e.stream === 'stderr' && /failing on purpose with 3/.test(e.text)),
    );
    assert.equal(result.patch, '');
  });

  it('a CLI that deletes the whole tree fails and the user repo is untouched', async () => {
    const repo = makeRepo(space.base, 'rmtree', { 'a.txt': 'a\n', 'b/c.txt': 'c\n' });
    const before = fingerprint(repo);
    const { result } = await run('opencode', repo, '@standin rmtree');
    assert.equal(result.outcome, 'failed');
    assert.match(result.reason ?? '', /deleted its workspace/);
    assert.equal(result.patch, '');
    assert.equal(fingerprint(repo), before);
  });

  it('hands the CLI its task context: named files, unsaved files, capabilities, and AGENTS.md when it does not read it', async () => {
    const repo = makeRepo(space.base, 'context', { 'a.txt': 'a\n', 'AGENTS.md': 'Always use tabs.\n' });
    const { result, events } = await run('claude', repo, 'Fix a.txt\n@standin echo-prompt', {
      files: ['a.txt'],
      unsaved: ['a.txt'],
      caps: { write: false, shell: false, network: false },
    });
    assert.equal(result.outcome, 'completed', result.reason);
    const prompt = result.summary ?? '';
    assert.match(prompt, /^Fix a\.txt/);
    assert.match(prompt, /Files the user named: a\.txt/);
    assert.match(prompt, /unsaved editor changes to a\.txt/);
    assert.match(prompt, /may not edit files, may not run shell commands/);
    assert.match(prompt, /Project instructions from AGENTS\.md[\s\S]*Always use tabs\./);
    assert.ok(events.some((e) => e.kind === 'step' && /unsaved editor changes to a\.txt/.test(e.text)));
    const codex = await run('codex', repo, '@standin echo-prompt');
    assert.doesNotMatch(codex.result.summary ?? '', /Project instructions/, 'codex reads AGENTS.md itself');
  });

  it('planted hooks, fsmonitor and drivers in the clone never run when Baton records the patch', async () => {
    const repo = makeRepo(space.base, 'plant', { 'a.txt': 'a\n' });
    const marker = join(space.base, 'planted-marker');
    const { result } = await run('claude', repo, `@standin plant ${marker}\n@standin write a.txt changed\\n`);
    assert.equal(result.outcome, 'completed', result.reason);
    assert.match(result.patch, /\+changed/);
    assert.equal(existsSync(marker), false);
  });

  it('confined with bubblewrap: cannot write outside its workspace, nor push to the user repo; private HOME', async (t) => {
    const status = await bwrapStatus();
    if (!status.ok) {
      t.skip(`bubblewrap unavailable: ${status.reason}`);
      return;
    }
    const repo = makeRepo(space.base, 'confined', { 'a.txt': 'a\n' });
    const before = fingerprint(repo);
    // Under /tmp and HOME the sandbox has empty tmpfs mounts: writes there land nowhere. The user's
    // .git is bound read-only (the clone borrows its objects): writes there are refused.
    const outside = [
      join(repo, 'evil.txt'),
      join(space.home, 'evil.txt'),
      join(space.root, 'evil.txt'),
      join(space.base, 'evil.txt'),
      join(repo, '.git', 'evil.txt'),
      join(repo, '.git', 'refs', 'heads', 'evil'),
    ];
    const { result, events } = await run(
      'claude',
      repo,
      [
        ...outside.map((p) => `@standin escape ${p}`),
        '@standin write a.txt inside\\n',
        `@standin git push ${repo} HEAD:refs/heads/pwned`,
        '@standin env HOME',
      ].join('\n'),
      { confine: 'auto' },
    );
    const started = events[0];
    assert.ok(started.kind === 'started' && started.confined, 'the run says it is confined');
    assert.equal(result.outcome, 'completed', result.reason);
    for (const p of outside) assert.equal(existsSync(p), false, `${p} not written`);
    assert.match(result.summary ?? '', /escape [^;]*\.git\/evil\.txt: (EROFS|EACCES)/);
    assert.match(result.summary ?? '', /pwned: failed/);
    assert.match(result.summary ?? '', /HOME=.*\.baton-private\/h-\d+\/home/);
    assert.match(result.patch, /\+inside/);
    assert.equal(fingerprint(repo), before);
  });

  it('unconfined runs say so in the started event', async () => {
    const repo = makeRepo(space.base, 'unconfined', { 'a.txt': 'a\n' });
    const { events } = await run('copilot', repo, '@standin env HOME');
    const started = events[0];
    assert.ok(started.kind === 'started' && !started.confined);
    assert.match(started.detail ?? '', /Unconfined/);
  });

  it('a confined run has no network when confineCommand is asked for none', async (t) => {
    const status = await bwrapStatus();
    if (!status.ok) {
      t.skip(`bubblewrap unavailable: ${status.reason}`);
      return;
    }
    const { confineCommand } = await import('../../../src/gateway/confine');
    const { runProcess } = await import('../../../src/gateway/agents/processRun');
    const server = createServer((s) => s.end());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const ws = join(space.base, 'net-ws');
      const home = join(space.base, 'net-home');
      sh(space.base, 'init', '-q', ws);
      sh(space.base, 'init', '-q', home);
      const probe = (network: boolean) =>
        confineCommand({
          argv: [join(STANDIN, 'claude'), '-p'],
          workspace: ws,
          home,
          network,
          realHome: space.home,
          readOnly: [STANDIN],
        }).then(async (c) => {
          let out = '';
          await runProcess({
            command: c.command,
            args: c.args,
            cwd: ws,
            env: { PATH: process.env.PATH },
            stdin: `@standin connect ${port}`,
            deadline: Date.now() + 20_000,
            signal: new AbortController().signal,
            onStdoutLine: (l) => (out += l),
          });
          return out;
        });
      assert.match(await probe(false), /connect \d+: (ECONNREFUSED|ENETUNREACH|EHOSTUNREACH|timeout)/);
      assert.match(await probe(true), /connect \d+: connected/);
    } finally {
      server.close();
    }
  });
});

describe('toolDirs', () => {
  it('binds the folders under HOME that hold the CLI and PATH runtimes, never secrets folders', () => {
    assert.deepEqual(
      toolDirs('/home/u/.nvm/versions/node/v20/bin/claude', '/home/u/.local/bin:/usr/bin:/home/u/.ssh/bin', '/home/u'),
      ['/home/u/.nvm', '/home/u/.local'],
    );
    assert.deepEqual(toolDirs('/usr/local/bin/codex', '/usr/bin', '/home/u'), ['/usr/local/bin']);
  });
});

/** Pids whose cwd is `dir` or below. */
function processesIn(dir: string): number[] {
  const found: number[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const cwd = readlinkSync(`/proc/${p}/cwd`).replace(/ \(deleted\)$/, '');
      if (cwd === dir || cwd.startsWith(dir + '/')) found.push(Number(p));
    } catch {
      // gone or not ours
    }
  }
  return found;
}
