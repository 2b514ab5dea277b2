/**
 * `baton`: delegate to agents from a terminal or a script, on the same client code the extension uses
 * (src/node/a2a: the SDK client bound to the pinned endpoint, the delegation runner with reconnect and
 * `Last-Event-ID` replay, journals persisted with fsync).
 *
 *   baton agents [--gateway URL]
 *   baton delegate <agent|card-url> "<task>" [--file F]… [--repo DIR] [--write] [--json] [--out FILE]
 *   baton status|watch|cancel <request-id>
 *   baton reply <request-id> "<text>"
 *
 * Exit codes say how a delegation ended: 0 completed, 10 failed, 11 canceled, 12 rejected, 13 expired,
 * 14 unknown (contact lost: reconcile, do not blindly retry), 15 input or auth required (use `reply`),
 * 16 the result did not verify (nothing saved), 2 bad usage, 1 any other error.
 *
 * The result is checked as the extension checks it (src/node/resultCheck.ts); the patch saved is the
 * bytes that check approved. The key a gateway signs results with is pinned on first use per origin
 * (`result-keys.json` in the journal folder), so a gateway that later signs with another key fails.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { AgentCard } from '@a2a-js/sdk';
import type { VerifiedKey } from '../core/agentRegistry';
import { normalizeAgentCard, readAgentIndex } from '../core/agentCard';
import { DelegationJournal } from '../core/delegation';
import type { DelegationOutcome, DelegationRecord, DelegationRequest, JournalTimelineEntry } from '../core/delegation';
import type { RepositoryContext } from '../core/delegation/context';
import { buildDelegationRequest } from '../core/delegation/request';
import { READ_ONLY } from '../core/delegation/guards';
import { sameOrigin, tryNormalizeOrigin } from '../core/origin';
import { terminalBlock, terminalJson, terminalLine } from '../core/terminalText';
import { connectAgent, normalizeCard, scopedGetToken } from '../node/a2a/clientFactory';
import { DelegationManager } from '../node/a2a/delegationManager';
import { JournalStore } from '../node/journalStore';
import { delegationRepository } from '../node/patchDrift';
import { checkResult, finalTaskOf, resultKeys, signedResultsOf } from '../node/resultCheck';
import type { ResultCheck } from '../node/resultCheck';
import { defaultStateDir } from './cliPaths';
import { mcpEnv, runMcpServer } from './mcp/mcpServer';

export const EXIT: Readonly<Record<DelegationOutcome, number>> = {
  completed: 0,
  failed: 10,
  canceled: 11,
  rejected: 12,
  expired: 13,
  unknown: 14,
  'input-required': 15,
  'auth-required': 15,
};

/** The result did not verify: nothing was saved. */
export const EXIT_UNVERIFIED = 16;

const USAGE = `usage:
  baton agents [--gateway URL]
  baton delegate <agent|card-url> "<task>" [--file F]... [--repo DIR] [--write] [--json] [--out FILE] [--gateway URL]
                                 the agent may only propose a patch unless --write lets it edit its copy;
                                 the patch is saved to --out, else ~/.baton/cli/patches/<request-id>.patch
  baton status <request-id>      print where a delegation is
  baton watch <request-id>       follow it until it ends (asks again after lost contact or an authorization)
  baton cancel <request-id>
  baton reply <request-id> "<text>"
  baton mcp                      an MCP server on stdio (tools find_agents, delegate, get_task, cancel_task) for
                                 any MCP client; a coding CLI the gateway runs gets it bound to its task

The gateway is --gateway, else $BATON_GATEWAY, else the local one ($BATON_STATE_DIR or ~/.baton/gateway).
The token is $BATON_TOKEN, else the local gateway's token file (only when talking to the local gateway).
It is sent to the gateway's origin only: an agent card URL on another origin gets no token.
Exit codes: 0 completed, 10 failed, 11 canceled, 12 rejected, 13 expired, 14 unknown, 15 needs a reply or an authorization,
16 the result did not verify (nothing saved).
`;

class UsageError extends Error {}

interface Gateway {
  readonly url: string;
  /** The gateway's origin: the only origin its token is sent to. */
  readonly origin: string;
  readonly token: string | undefined;
}

/**
 * The gateway and its token. `$BATON_TOKEN` is the token for the gateway the command talks to; the
 * local gateway's token file only goes with the local gateway (the origin in its gateway.json), never
 * with another gateway named by --gateway or $BATON_GATEWAY.
 */
function locateGateway(flag: string | undefined, env: NodeJS.ProcessEnv): Gateway {
  const stateDir = defaultStateDir(env);
  const infoFile = join(stateDir, 'gateway.json');
  const info = existsSync(infoFile)
    ? (JSON.parse(readFileSync(infoFile, 'utf8')) as { url?: string; tokenFile?: string })
    : undefined;
  const url = (flag ?? env.BATON_GATEWAY) || info?.url;
  if (!url)
    throw new UsageError(
      `no gateway: pass --gateway URL, set BATON_GATEWAY, or start one with baton-gateway (looked for ${infoFile})`,
    );
  const origin = tryNormalizeOrigin(url);
  if (!origin)
    throw new UsageError(
      `the gateway ${JSON.stringify(url)} is not an http(s) URL: pass --gateway http(s)://host:port`,
    );
  let token = env.BATON_TOKEN || undefined;
  if (!token && info?.url && sameOrigin(info.url, origin)) {
    const tokenFile = info.tokenFile && existsSync(info.tokenFile) ? info.tokenFile : join(stateDir, 'token');
    if (existsSync(tokenFile)) token = readFileSync(tokenFile, 'utf8').trim();
  }
  return { url: url.replace(/\/+$/, ''), origin, token };
}

async function fetchJson(url: string): Promise<unknown> {
  const res = await fetch(url, {
    headers: { 'A2A-Version': '1.0' },
    redirect: 'error',
    signal: AbortSignal.timeout(15_000),
  });
  if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`);
  return res.json();
}

/** The card's interface must be an http(s) URL without credentials on the card's own origin. */
function checkInterfaceUrl(url: string, cardUrl: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(
      `the card at ${cardUrl} names an interface that is not a URL (${url}); ask the agent's owner to fix the card`,
    );
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')
    throw new Error(`the card at ${cardUrl} names a ${parsed.protocol} interface (${url}); baton calls only http(s)`);
  if (parsed.username || parsed.password)
    throw new Error(
      `the card at ${cardUrl} names an interface with credentials in its URL; ask the agent's owner to fix the card`,
    );
  if (!sameOrigin(url, cardUrl))
    throw new Error(
      `the card at ${cardUrl} points requests to another origin (${url}); add it through the extension to review it`,
    );
}

function journalDir(env: NodeJS.ProcessEnv): string {
  return env.BATON_CLI_DIR || join(homedir(), '.baton', 'cli', 'journals');
}

async function openManager(
  gw: Gateway,
  env: NodeJS.ProcessEnv,
  cards: Map<string, AgentCard>,
): Promise<DelegationManager> {
  return DelegationManager.open({
    store: new JournalStore(journalDir(env)),
    connect: async (request) => {
      let card = cards.get(request.agent.endpoint);
      if (!card) {
        card = normalizeCard(await fetchJson(`${request.agent.endpoint}/.well-known/agent-card.json`));
        cards.set(request.agent.endpoint, card);
      }
      return connectAgent({
        card,
        endpoint: {
          url: request.agent.endpoint,
          protocolBinding: request.agent.protocolBinding,
          protocolVersion: request.agent.protocolVersion,
        },
        // The token is bound to the gateway's origin, whatever endpoint the card or the journal names:
        // a delegation to an agent elsewhere carries no token (the CLI stores none for other origins).
        getToken: scopedGetToken({ gatewayOrigin: gw.origin }, { gateway: () => gw.token }),
      });
    },
  });
}

/**
 * Every line the CLI prints. Agent- and card-controlled strings in it must already have gone through
 * `terminalLine`/`terminalBlock` (core/terminalText.ts), or be JSON from `terminalJson`.
 */
function line(out: NodeJS.WritableStream, text: string): void {
  out.write(`${text}\n`);
}

/** One line of agent text. */
const t = terminalLine;
/** Agent text that may span lines: its later lines are indented under the CLI's own. */
const block = (s: string): string => terminalBlock(s);

/** How one timeline entry is shown; every string in it may come from the agent. */
function timelineLine(e: JournalTimelineEntry): string {
  switch (e.kind) {
    case 'artifact':
      return `  artifact ${t(e.name)} (${e.size} bytes${e.complete ? '' : ', more coming'})`;
    case 'status':
      return `  [${t(e.state)}]${e.text ? ` ${block(e.text)}` : ''}`;
    case 'step':
      return `  · ${block(e.text)}`;
    case 'message':
      return `  ${e.role === 'agent' ? 'agent' : 'you'}: ${block(e.text)}`;
    case 'notice':
      return `  ${e.level}: ${block(e.text)}`;
  }
}

/** Prints timeline entries as they arrive; resolves with the final view once the delegation settles. */
function follow(
  manager: DelegationManager,
  requestId: string,
  out: NodeJS.WritableStream,
  json: boolean,
): Promise<DelegationRecord> {
  let printed = 0;
  return new Promise((resolveView) => {
    const show = (): void => {
      const view = manager.view(requestId);
      if (!view) return;
      const total = view.timelineOmitted + view.timeline.length;
      for (let i = Math.max(printed, view.timelineOmitted); i < total; i++) {
        const e = view.timeline[i - view.timelineOmitted];
        line(out, json ? terminalJson(e) : timelineLine(e));
      }
      printed = total;
      if (
        view.outcome &&
        !['queued', 'starting', 'submitted', 'working', 'reconnecting', 'canceling'].includes(view.state)
      ) {
        off();
        resolveView(view);
      }
    };
    const off = manager.onDidChange((id) => {
      if (id === requestId) show();
    });
    show();
  });
}

/**
 * Where a returned patch is saved when --out is not given: beside the CLI's journals, never in the
 * working directory — a patch saved inside the repository would be an untracked file there, and the next
 * delegation's copy of the repository would carry it to the agent.
 */
function patchDir(env: NodeJS.ProcessEnv): string {
  return resolve(journalDir(env), '..', 'patches');
}

const KEYS_FILE = 'result-keys.json';

/**
 * The keys results from `origin` must verify with: pinned on first use (the key the agent's card names
 * for signed results), kept per origin in the journal folder like ssh's known_hosts.
 */
async function pinnedResultKeys(
  env: NodeJS.ProcessEnv,
  origin: string,
  card: AgentCard | undefined,
): Promise<VerifiedKey[]> {
  const file = join(journalDir(env), KEYS_FILE);
  let known: Record<string, VerifiedKey[]> = {};
  if (existsSync(file)) {
    try {
      known = JSON.parse(readFileSync(file, 'utf8')) as Record<string, VerifiedKey[]>;
    } catch (e) {
      throw new Error(`${file} is not valid JSON (${(e as Error).message}); fix or remove it`);
    }
  }
  const pinned = known[origin];
  if (Array.isArray(pinned) && pinned.length > 0) return pinned;
  if (!card) return [];
  const declared = await resultKeys([], card);
  if (declared.length > 0) {
    mkdirSync(journalDir(env), { recursive: true, mode: 0o700 });
    writeFileSync(file, `${JSON.stringify({ ...known, [origin]: declared }, null, 2)}\n`, { mode: 0o600 });
  }
  return declared;
}

/** Checks a settled delegation's result with the same rules as the extension. */
async function resultCheck(
  env: NodeJS.ProcessEnv,
  requestId: string,
  cards: Map<string, AgentCard>,
): Promise<ResultCheck> {
  const loaded = await new JournalStore(journalDir(env)).load(requestId);
  const journal = DelegationJournal.fromEntries(loaded.entries);
  const endpoint = journal.request.agent.endpoint;
  let card = cards.get(endpoint);
  if (!card) {
    // Without the card (the agent is gone), the keys pinned for its origin still decide.
    card = await fetchJson(`${endpoint}/.well-known/agent-card.json`).then(normalizeCard, () => undefined);
    if (card) cards.set(endpoint, card);
  }
  const origin = new URL(endpoint).origin;
  const keys = await pinnedResultKeys(env, origin, card);
  const promised = (card !== undefined && signedResultsOf(card).promised) || keys.length > 0;
  return checkResult({
    journal,
    final: finalTaskOf(loaded.entries),
    keys,
    signaturesPromised: promised,
    signer: origin,
  });
}

function signatureLine(check: ResultCheck, env: NodeJS.ProcessEnv): string {
  switch (check.status) {
    case 'verified':
      return `signature: verified (${block(check.detail)})`;
    case 'unsigned':
      return `signature: none (${block(check.detail)})`;
    case 'invalid': {
      const hint =
        check.failure === 'unknown-key'
          ? `\nif the gateway's key was changed on purpose, remove its origin from ${join(journalDir(env), KEYS_FILE)}`
          : '';
      return `signature: INVALID — ${block(check.detail)}${hint}\nthe result did not verify: nothing was saved`;
    }
  }
}

async function finish(
  manager: DelegationManager,
  view: DelegationRecord,
  out: NodeJS.WritableStream,
  json: boolean,
  patchOut: string | undefined,
  env: NodeJS.ProcessEnv,
  cards: Map<string, AgentCard>,
): Promise<number> {
  const outcome = view.outcome ?? 'unknown';
  await manager.idle(view.requestId);
  const check = await resultCheck(env, view.requestId, cards);
  let saved: string | undefined;
  // Only the bytes the check approved are saved: for a verified result, the signed artifact.
  if (check.status !== 'invalid' && check.patch && check.patch.bytes.length > 0) {
    if (patchOut) saved = resolve(patchOut);
    else {
      mkdirSync(patchDir(env), { recursive: true, mode: 0o700 });
      saved = join(patchDir(env), `${view.requestId}.patch`);
    }
    writeFileSync(saved, check.patch.bytes);
  }
  const signature = {
    status: check.status,
    detail: check.detail,
    ...(check.status === 'invalid' ? { failure: check.failure } : {}),
  };
  if (json)
    line(
      out,
      terminalJson({
        requestId: view.requestId,
        taskId: view.taskId,
        outcome,
        reason: view.outcomeReason,
        patch: saved,
        signature,
      }),
    );
  else {
    // A question is printed once, below, as what the agent asks.
    const asked = outcome === 'input-required' && view.prompt !== undefined && view.outcomeReason === view.prompt;
    line(out, `${outcome}${view.outcomeReason && !asked ? `: ${block(view.outcomeReason)}` : ''}`);
    if (check.status !== 'unsigned' || view.outcome === 'completed') line(out, signatureLine(check, env));
    if (saved)
      line(
        out,
        `changes.patch saved to ${t(saved)}\nreview it, then apply it from the repository's top folder with: git apply ${t(saved)}`,
      );
    if (outcome === 'input-required')
      line(
        out,
        `the agent asks: ${view.prompt ? block(view.prompt) : '(no question)'}\nanswer with: baton reply ${view.requestId} "<text>"`,
      );
    if (outcome === 'auth-required') {
      line(
        out,
        `the agent needs authorization${view.prompt ? `: ${block(view.prompt)}` : ''}\nauthorize as it asks, then follow the task again with: baton watch ${view.requestId}`,
      );
    }
    if (outcome === 'unknown') line(out, `contact was lost; check again with: baton watch ${view.requestId}`);
  }
  return check.status === 'invalid' ? EXIT_UNVERIFIED : EXIT[outcome];
}

export interface CliRequestInput {
  readonly requestId: string;
  readonly createdAt: number;
  readonly who: string;
  readonly agent: DelegationRequest['agent'];
  readonly task: string;
  /** `--file`: paths the agent reads from its copy of the repository (their text does not travel). */
  readonly files: readonly string[];
  /** `--repo`, as `delegationRepository` describes it. */
  readonly repository: RepositoryContext | undefined;
  /** `--write`: the agent may edit its copy (read-only otherwise, as in the extension). */
  readonly write: boolean;
}

/** The request `baton delegate` sends: the extension's builder, with the extension's defaults. */
export function cliDelegationRequest(input: CliRequestInput): DelegationRequest {
  return buildDelegationRequest({
    requestId: input.requestId,
    task: input.task,
    paths: input.files,
    repository: input.repository,
    capabilities: input.write ? { ...READ_ONLY, write: true } : READ_ONLY,
    agent: input.agent,
    who: input.who,
    createdAt: input.createdAt,
  });
}

/** An error as the one line `baton` prints for it on stderr. */
function errorLine(e: unknown): string {
  return block(e instanceof Error ? e.message : String(e));
}

export async function batonMain(
  argv: string[],
  out: NodeJS.WritableStream = process.stdout,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      gateway: { type: 'string' },
      file: { type: 'string', multiple: true },
      repo: { type: 'string' },
      json: { type: 'boolean' },
      out: { type: 'string' },
      write: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
    strict: true,
  });
  const [cmd, ...args] = positionals;
  if (values.help || !cmd) {
    out.write(USAGE);
    return values.help ? 0 : 2;
  }
  const json = values.json === true;
  const cards = new Map<string, AgentCard>();
  if (cmd === 'mcp') {
    // stdout carries the MCP protocol: nothing else is printed there.
    const menv = mcpEnv(env);
    const mgw = locateGateway(values.gateway, menv);
    return runMcpServer({
      gatewayUrl: mgw.url,
      env: menv,
      journalDir: journalDir(menv),
      openManager: () => openManager(mgw, menv, cards),
      fetchJson,
      checkInterfaceUrl,
      cards,
    });
  }
  const gw = locateGateway(values.gateway, env);

  if (cmd === 'agents') {
    const rootUrl = `${gw.url}/.well-known/agent-card.json`;
    const root = normalizeAgentCard(await fetchJson(rootUrl));
    const agents = readAgentIndex(root, rootUrl);
    if (json) line(out, terminalJson(agents));
    else
      for (const a of agents)
        line(out, `${t(a.id).padEnd(16)} ${t(a.name)}${a.description ? ` — ${t(a.description)}` : ''}`);
    return 0;
  }

  if (cmd === 'delegate') {
    const [target, task] = args;
    if (!target || !task) throw new UsageError('delegate needs an agent (id or card URL) and a task in quotes');
    const cardUrl = /^https?:\/\//i.test(target)
      ? target
      : `${gw.url}/a2a/${encodeURIComponent(target)}/.well-known/agent-card.json`;
    const raw = await fetchJson(cardUrl);
    const card = normalizeCard(raw);
    const iface =
      card.supportedInterfaces.find((i) => i.protocolBinding === 'JSONRPC' && i.protocolVersion === '1.0') ??
      card.supportedInterfaces[0];
    if (!iface) throw new Error(`the card at ${cardUrl} lists no interface to call`);
    checkInterfaceUrl(iface.url, cardUrl);
    cards.set(iface.url, card);
    const id = /\/a2a\/([^/]+)\//.exec(new URL(cardUrl).pathname)?.[1] ?? target;
    const request = cliDelegationRequest({
      requestId: randomUUID(),
      createdAt: Date.now(),
      who: userInfo().username,
      agent: {
        id,
        name: card.name,
        endpoint: iface.url,
        protocolBinding: iface.protocolBinding,
        protocolVersion: iface.protocolVersion,
      },
      task,
      files: (values.file as string[] | undefined) ?? [],
      repository: (await delegationRepository(values.repo ? resolve(values.repo) : undefined)).repository,
      write: values.write === true,
    });
    const requestId = request.requestId;
    const manager = await openManager(gw, env, cards);
    try {
      if (!json) line(out, `delegating to ${t(card.name)} (${t(iface.url)}) as ${requestId}`);
      const following = follow(manager, requestId, out, json);
      await manager.start(request);
      const view = await following;
      return await finish(manager, view, out, json, values.out, env, cards);
    } finally {
      manager.dispose();
    }
  }

  if (cmd === 'status' || cmd === 'watch' || cmd === 'cancel' || cmd === 'reply') {
    const [requestId, text] = args;
    if (!requestId) throw new UsageError(`${cmd} needs a request id (printed by baton delegate)`);
    const manager = await openManager(gw, env, cards);
    try {
      const view = manager.view(requestId);
      if (!view) throw new UsageError(`no delegation ${requestId} in ${journalDir(env)}`);
      if (cmd === 'status') {
        if (json) line(out, terminalJson(view));
        else
          line(
            out,
            `${t(view.requestId)} ${t(view.agent.name)}: ${view.state}${view.outcomeReason ? ` (${block(view.outcomeReason)})` : ''}${view.taskId ? ` task ${t(view.taskId)}` : ''}`,
          );
        return view.outcome ? EXIT[view.outcome] : 0;
      }
      // A delegation that lost contact, or that waited for an out-of-band authorization, is asked
      // about again (GetTask, then followed from where it is; never sent again).
      if (cmd === 'watch' && (view.outcome === 'unknown' || view.outcome === 'auth-required')) {
        await manager.checkAgain(requestId);
        await manager.idle(requestId);
      }
      if (cmd === 'cancel') await manager.cancel(requestId);
      if (cmd === 'reply') {
        if (!text) throw new UsageError('reply needs the text to send');
        await manager.reply(requestId, text);
      }
      return await finish(manager, await follow(manager, requestId, out, json), out, json, values.out, env, cards);
    } finally {
      manager.dispose();
    }
  }
  throw new UsageError(`unknown command ${cmd}`);
}

if (require.main === module) {
  // `baton … | head` closes the pipe early: that ends the output, it is not an error worth a stack trace.
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw e;
  });
  batonMain(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (e: unknown) => {
      // Errors quote cards and agents (URLs, JSON-RPC error messages): neutralised like all agent text.
      process.stderr.write(`baton: ${errorLine(e)}\n${e instanceof UsageError ? USAGE : ''}`);
      process.exitCode = e instanceof UsageError ? 2 : 1;
    },
  );
}
