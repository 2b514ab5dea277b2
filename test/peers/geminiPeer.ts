/**
 * Gemini CLI's A2A server (`@google/gemini-cli-a2a-server`, installed by `bash test/peers/setup.sh`) as a
 * real peer for tests, talking to a stand-in of the Gemini model API that each test scripts: a queue of
 * model turns, each a text or one or more function calls. The stand-in records every request it gets,
 * so a test can see what the model was told (a tool's result, a cancellation).
 */
import { spawn, execFileSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

type Json = Record<string, unknown>;

/** One function call the model makes (`args` as the tool takes them, e.g. `replace`'s `file_path`). */
export interface ModelFunctionCall {
  readonly name: string;
  readonly args: Json;
}

/** One model turn: plain text, or function calls (the server runs the tools and asks the model again). */
export type ModelTurn = { readonly text: string } | { readonly functionCalls: readonly ModelFunctionCall[] };

/** A request the server made to the model API. */
export interface ModelRequest {
  readonly path: string;
  readonly body: Json;
}

export interface StandInModel {
  readonly url: string;
  /** Adds turns to the end of the queue; a generate request with an empty queue is answered "(no more turns)". */
  push(...turns: ModelTurn[]): void;
  /** The model turns asked for (streamGenerateContent), in order. */
  readonly requests: ModelRequest[];
  /**
   * The server's side requests (generateContent: its edit corrector, its next-speaker check): answered
   * with `{}` as text, never from the turn queue, so a failed edit's correction cannot eat a scripted turn.
   */
  readonly helperRequests: ModelRequest[];
  /** The parts of the last content of the last turn asked for (a functionResponse after a tool ran). */
  lastParts(): Json[];
  close(): Promise<void>;
}

export interface GeminiPeer {
  /** The card at `/.well-known/agent-card.json`, reached at 127.0.0.1. */
  readonly cardUrl: string;
  readonly baseUrl: string;
  /** The git repository the server works in (CODER_AGENT_WORKSPACE_PATH). */
  readonly workspace: string;
  readonly model: StandInModel;
  /** What the server printed so far (stdout and stderr). */
  log(): string;
  stop(): Promise<void>;
}

export interface GeminiPeerOptions {
  /** Files written into the workspace and committed before the server starts (path relative to it). */
  readonly files?: Readonly<Record<string, string>>;
  /** Model turns queued before the server starts. */
  readonly turns?: readonly ModelTurn[];
  /** How long to wait for the card (ms); the server takes about 7 s to start. */
  readonly startTimeoutMs?: number;
}

const REPO = resolve(__dirname, '..', '..');

/** Where test/peers/setup.sh installs the peers (BATON_TEST_ENV, as the integration setup uses). */
export function peersRoot(): string {
  // Bundled into the integration suite, this file no longer sits in test/peers: the driver names the repository.
  return join(process.env.BATON_TEST_ENV ?? join(process.env.BATON_REPO ?? REPO, '.vscode-test'), 'peers');
}

export function geminiServerEntry(): string {
  return join(peersRoot(), 'gemini-cli', 'node_modules', '@google', 'gemini-cli-a2a-server', 'dist', 'a2a-server.mjs');
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((ok, fail) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => ok(body));
    req.on('error', fail);
  });
}

function modelResponse(turn: ModelTurn | undefined): Json {
  const parts =
    turn === undefined
      ? [{ text: '(no more turns)' }]
      : 'text' in turn
        ? [{ text: turn.text }]
        : turn.functionCalls.map((c) => ({ functionCall: { name: c.name, args: c.args } }));
  return {
    candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 5, totalTokenCount: 10 },
  };
}

/** The stand-in model API on a free port of 127.0.0.1. */
export async function startStandInModel(turns: readonly ModelTurn[] = []): Promise<StandInModel> {
  const queue: ModelTurn[] = [...turns];
  const requests: ModelRequest[] = [];
  const helperRequests: ModelRequest[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      const raw = await readBody(req);
      const path = req.url ?? '';
      let body: Json = {};
      try {
        body = raw ? (JSON.parse(raw) as Json) : {};
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"bad json"}}');
        return;
      }
      if (path.includes(':countTokens')) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ totalTokens: 10 }));
        return;
      }
      if (!path.includes(':streamGenerateContent') && !path.includes(':generateContent')) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
        return;
      }
      if (!path.includes(':streamGenerateContent')) {
        helperRequests.push({ path, body });
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(modelResponse({ text: '{}' })));
        return;
      }
      requests.push({ path, body });
      const reply = modelResponse(queue.shift());
      if (path.includes('alt=sse')) {
        res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`data: ${JSON.stringify(reply)}\n\n`);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
    })();
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    push: (...more) => void queue.push(...more),
    requests,
    helperRequests,
    lastParts() {
      const last = requests.at(-1);
      const contents = (last?.body.contents ?? []) as Json[];
      return ((contents.at(-1)?.parts ?? []) as Json[]).slice();
    },
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.on('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => ok(port));
    });
  });
}

const GIT_IDENTITY = {
  GIT_AUTHOR_NAME: 'Baton Test',
  GIT_AUTHOR_EMAIL: 'test@baton.invalid',
  GIT_COMMITTER_NAME: 'Baton Test',
  GIT_COMMITTER_EMAIL: 'test@baton.invalid',
};

/** Starts the stand-in model and the real server; throws (saying how to install it) when the peer is missing. */
export async function startGeminiPeer(options: GeminiPeerOptions = {}): Promise<GeminiPeer> {
  const entry = geminiServerEntry();
  if (!existsSync(entry)) {
    throw new Error(
      `Gemini CLI's A2A server is not installed (${entry} is missing): run \`bash test/peers/setup.sh\` ` +
        '(scripts/test.sh does it before the unit tests).',
    );
  }
  const root = mkdtempSync(join(tmpdir(), 'baton-gemini-peer-'));
  const home = join(root, 'home');
  const workspace = join(root, 'workspace');
  mkdirSync(home);
  mkdirSync(workspace);
  const gitEnv = { ...process.env, ...GIT_IDENTITY, HOME: home };
  const git = (...args: string[]): void =>
    void execFileSync('git', args, { cwd: workspace, env: gitEnv, stdio: 'pipe' });
  git('init', '-q', '-b', 'main');
  for (const [path, text] of Object.entries(options.files ?? { 'README.md': '# workspace\n' })) {
    const file = join(workspace, path);
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, text);
  }
  git('add', '-A');
  git('commit', '-q', '-m', 'start');

  const model = await startStandInModel(options.turns ?? []);
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: home,
    ...GIT_IDENTITY,
    CODER_AGENT_PORT: String(port),
    CODER_AGENT_WORKSPACE_PATH: workspace,
    GEMINI_API_KEY: 'stand-in-key',
    GOOGLE_GEMINI_BASE_URL: model.url,
    NO_COLOR: '1',
  };
  const child: ChildProcess = spawn(process.execPath, [entry], {
    cwd: workspace,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.setEncoding('utf8').on('data', (c: string) => (output += c));
  child.stderr?.setEncoding('utf8').on('data', (c: string) => (output += c));
  let exited = false;
  const exit = new Promise<void>((ok) => child.once('exit', () => ((exited = true), ok())));

  const baseUrl = `http://127.0.0.1:${port}`;
  const cardUrl = `${baseUrl}/.well-known/agent-card.json`;
  const stop = async (): Promise<void> => {
    if (!exited) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exit;
      clearTimeout(timer);
    }
    await model.close();
    rmSync(root, { recursive: true, force: true });
  };

  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  for (;;) {
    if (exited) {
      await stop();
      throw new Error(`Gemini CLI's A2A server exited before serving its card:\n${output.slice(-4000)}`);
    }
    try {
      const res = await fetch(cardUrl);
      if (res.ok) {
        await res.json();
        break;
      }
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`Gemini CLI's A2A server did not serve ${cardUrl} in time:\n${output.slice(-4000)}`);
    }
    await new Promise((ok) => setTimeout(ok, 250));
  }
  return { cardUrl, baseUrl, workspace, model, log: () => output, stop };
}
