/**
 * `baton`: delegate to agents from a terminal or a script, on the same client code the extension uses
 * (src/node/a2a: the SDK client bound to the pinned endpoint, the delegation runner with reconnect and
 * `Last-Event-ID` replay, journals persisted with fsync).
 *
 *   baton agents [--gateway URL]
 *   baton delegate <agent|card-url> "<task>" [--file F]… [--repo DIR] [--write] [--json] [--out FILE]
 *   baton status|watch|cancel <request-id>
 *   baton reply <request-id> "<text>"
 *   baton approve|deny <request-id> [<call-id>]   answer a tool call the agent asks about
 *   baton done <request-id>                        accept what an agent waiting for you did
 *
 * A delegation keeps the card URL it was started with and the card itself (pinned, with its digest):
 * `status`, `watch`, `cancel` and `reply` connect with that card, from any later process. Only one
 * process runs a delegation (its journal's lease, src/node/journalStore.ts): `status` only reads, and
 * `cancel` of a delegation another `baton` process is following is handed to that process.
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
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { extname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { AgentCard } from '@a2a-js/sdk';
import type { VerifiedKey } from '../core/agentRegistry';
import { agentCardDigest, normalizeAgentCard, readAgentIndex } from '../core/agentCard';
import { PATCH_ARTIFACT } from '../core/batonProfile';
import { isRecord } from '../core/isRecord';
import { DelegationJournal, isFinalOutcome } from '../core/delegation';
import { recordedPatches } from '../core/delegation/record';
import { dataSummaryLine, type DataPartView } from '../core/protocol/dataView';
import type {
  AgentRef,
  DelegationOutcome,
  DelegationRecord,
  DelegationRequest,
  JournalTimelineEntry,
} from '../core/delegation';
import type { RepositoryContext } from '../core/delegation/context';
import { buildDelegationRequest, DEFAULT_DEADLINE_MINUTES, MAX_DEADLINE_MINUTES } from '../core/delegation/request';
import { READ_ONLY } from '../core/delegation/guards';
import { sameOrigin, tryNormalizeOrigin } from '../core/origin';
import { terminalBlock, terminalJson, terminalLine } from '../core/terminalText';
import { connectAgent, normalizeCard, scopedGetToken } from '../node/a2a/clientFactory';
import { DelegationManager } from '../node/a2a/delegationManager';
import type { DelegationManagerOptions } from '../node/a2a/delegationManager';
import { JournalStore } from '../node/journalStore';
import { delegationRepository } from '../node/patchDrift';
import { checkResult, finalTaskOf, resultKeys, signedResultsOf } from '../node/resultCheck';
import type { ResultCheck, ReviewPatch } from '../node/resultCheck';
import { defaultStateDir } from './cliPaths';
import { pendingToolCalls, shortDiff, toolCallLine } from '../core/devTool';
import { TOOL_CALL_APPROVE, TOOL_CALL_DENY } from '../core/protocol/toolCalls';
import type { ToolCallView } from '../core/protocol/toolCalls';
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

/** The deadline `baton delegate` gives a delegation unless `--deadline` says otherwise (the editor's default). */
export const DEFAULT_DEADLINE_MS = DEFAULT_DEADLINE_MINUTES * 60_000;
/** The longest `--deadline`, as the extension allows. */
const MAX_DEADLINE_MS = MAX_DEADLINE_MINUTES * 60_000;

/** `--deadline`: `45s`, `30m`, `2h`, or a number of minutes. */
export function parseDeadline(value: string | undefined): number {
  if (value === undefined) return DEFAULT_DEADLINE_MS;
  const m = /^(\d+(?:\.\d+)?)\s*(s|m|h)?$/i.exec(value.trim());
  const unit = { s: 1_000, m: 60_000, h: 3_600_000 }[(m?.[2] ?? 'm').toLowerCase()] ?? 60_000;
  const ms = m ? Math.round(Number(m[1]) * unit) : NaN;
  if (!(ms >= 1_000 && ms <= MAX_DEADLINE_MS))
    throw new UsageError(
      `--deadline ${JSON.stringify(value)} is not a duration from 1s to 24h: write it as 45s, 30m or 2h (a bare number is minutes)`,
    );
  return ms;
}

/** How long `cancel` waits for another process that runs the delegation to journal the answer. */
const CANCEL_HANDOVER_WAIT_MS = 45_000;

/** The result did not verify: nothing was saved. */
export const EXIT_UNVERIFIED = 16;

const USAGE = `usage:
  baton agents [--gateway URL]
  baton delegate <agent|card-url> "<task>" [--file F]... [--repo DIR] [--write] [--json] [--out FILE] [--gateway URL]
                 [--deadline D]  the agent may only propose a patch unless --write lets it edit its copy;
                                 the deadline (default 30m; 45s, 30m, 2h, at most 24h) cancels it at the agent
                                 and ends it as expired, also when the agent never answers;
                                 the patch is saved to --out, else ~/.baton/cli/patches/<request-id>.patch
                                 (several patches: the others beside it as <request-id>-2.patch, …)
  baton status <request-id>      print where a delegation is
  baton watch <request-id>       follow it until it ends (asks again after lost contact or an authorization)
  baton cancel <request-id>
  baton reply <request-id> "<text>"
  baton approve <request-id> [<call-id>]   let the agent run the tool call it asks about
  baton deny <request-id> [<call-id>]      refuse it (no call id: the only one waiting)
  baton done <request-id>        the agent waits for you: accept what it did and end the delegation as completed
  baton mcp                      an MCP server on stdio (tools find_agents, delegate, get_task, cancel_task) for
                                 any MCP client; a coding CLI the gateway runs gets it bound to its task

The gateway is --gateway, else $BATON_GATEWAY, else the local one ($BATON_STATE_DIR or ~/.baton/gateway);
a delegation to an agent card URL needs none.
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
 * The gateway and its token, or undefined when none is configured (a delegation by card URL needs
 * none). `$BATON_TOKEN` is the token for the gateway the command talks to; the local gateway's token
 * file only goes with the local gateway (the origin in its gateway.json), never with another gateway
 * named by --gateway or $BATON_GATEWAY.
 */
function findGateway(flag: string | undefined, env: NodeJS.ProcessEnv): Gateway | undefined {
  const stateDir = defaultStateDir(env);
  const infoFile = join(stateDir, 'gateway.json');
  const info = existsSync(infoFile)
    ? (JSON.parse(readFileSync(infoFile, 'utf8')) as { url?: string; tokenFile?: string })
    : undefined;
  const url = (flag ?? env.BATON_GATEWAY) || info?.url;
  if (!url) return undefined;
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

/** The gateway, for what only a gateway answers (its agents, an agent named by id). */
function requireGateway(gw: Gateway | undefined, env: NodeJS.ProcessEnv, what: string): Gateway {
  if (gw) return gw;
  throw new UsageError(
    `no gateway to ${what}: pass --gateway URL, set BATON_GATEWAY, or start one with baton-gateway (looked for ${join(defaultStateDir(env), 'gateway.json')}); a delegation to an agent card URL needs none`,
  );
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

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

function isLoopbackHost(u: URL): boolean {
  return LOOPBACK_HOSTS.has(u.hostname.toLowerCase());
}

/**
 * The card's interface must be an http(s) URL without credentials on the card's own origin. Returns
 * the URL requests go to: the interface's, or — when the card names its own machine by another
 * loopback name (a card that says `localhost` read from `127.0.0.1`, or the reverse) — the same URL
 * on the host the user gave. Loopback names count as one host only when both are loopback.
 */
export function checkInterfaceUrl(url: string, cardUrl: string): string {
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
  if (sameOrigin(url, cardUrl)) return url;
  const card = new URL(cardUrl);
  if (
    isLoopbackHost(parsed) &&
    isLoopbackHost(card) &&
    parsed.protocol === card.protocol &&
    parsed.port === card.port
  ) {
    parsed.hostname = card.hostname;
    return parsed.toString();
  }
  const loopback =
    isLoopbackHost(parsed) || isLoopbackHost(card)
      ? ' (localhost, 127.0.0.1 and ::1 count as the same host only when both the card URL and the interface name one of them, with the same scheme and port)'
      : '';
  throw new Error(
    `the card at ${cardUrl} points requests to another origin (${url})${loopback}; add it through the extension to review it`,
  );
}

function journalDir(env: NodeJS.ProcessEnv): string {
  return env.BATON_CLI_DIR || join(homedir(), '.baton', 'cli', 'journals');
}

/** Where a delegation's card is: the URL it was read from, or (journals older than that) beside its endpoint. */
function cardUrlOf(agent: AgentRef): string {
  return agent.cardUrl ?? `${agent.endpoint.replace(/\/+$/, '')}/.well-known/agent-card.json`;
}

/** The card a delegation was pinned with (kept in its request), else the one at its card URL now. */
async function cardOf(agent: AgentRef, cards: Map<string, AgentCard>): Promise<AgentCard> {
  let card = cards.get(agent.endpoint);
  if (!card) {
    card = normalizeCard(agent.card ?? (await fetchJson(cardUrlOf(agent))));
    cards.set(agent.endpoint, card);
  }
  return card;
}

async function openManager(
  gw: Gateway | undefined,
  store: JournalStore,
  cards: Map<string, AgentCard>,
  mode: { readonly readOnly?: boolean; readonly resume: readonly string[] },
  tuning: CliTuning = {},
): Promise<DelegationManager> {
  return DelegationManager.open({
    store,
    readOnly: mode.readOnly,
    resume: mode.resume,
    runnerOptions: tuning.runner,
    connect: async (request) =>
      connectAgent({
        card: await cardOf(request.agent, cards),
        endpoint: {
          url: request.agent.endpoint,
          protocolBinding: request.agent.protocolBinding,
          protocolVersion: request.agent.protocolVersion,
        },
        // The token is bound to the gateway's origin, whatever endpoint the card or the journal names:
        // a delegation to an agent elsewhere carries no token (the CLI stores none for other origins).
        getToken: scopedGetToken({ gatewayOrigin: gw?.origin }, { gateway: () => gw?.token }),
      }),
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

/** An entry's data parts, one summary line each (`--json` prints the entry with the values). */
function dataLines(e: { readonly data?: readonly DataPartView[] }): string {
  return (e.data ?? []).map((d) => `\n    data: ${t(dataSummaryLine(d))}`).join('');
}

/** A progress step: its text, and its data parts below it (the first in its place when there is no text). */
function stepLine(e: Extract<JournalTimelineEntry, { kind: 'step' }>): string {
  const data = e.data ?? [];
  if (e.text || !data.length) return `  · ${block(e.text)}${dataLines(e)}`;
  return `  · data: ${t(dataSummaryLine(data[0]))}${dataLines({ data: data.slice(1) })}`;
}

/** How one timeline entry is shown; every string in it may come from the agent. */
function timelineLine(e: JournalTimelineEntry): string {
  switch (e.kind) {
    case 'artifact':
      return `  artifact ${t(e.name)} (${e.size} bytes${e.complete ? '' : ', more coming'})`;
    case 'status':
      return `  [${t(e.state)}]${e.text ? ` ${block(e.text)}` : ''}${dataLines(e)}`;
    case 'step':
      return stepLine(e);
    case 'message':
      return `  ${e.role === 'agent' ? 'agent' : 'you'}: ${block(e.text)}${dataLines(e)}`;
    case 'notice':
      return `  ${e.level}: ${block(e.text)}`;
  }
}

class FollowTimeout extends Error {}

/**
 * What `baton` adds below the runner's notice that the agent has not answered yet: how to stop waiting,
 * where to look, and when the deadline ends it.
 */
function noFirstEventHint(view: DelegationRecord): string {
  const id = view.requestId;
  const until = view.deadline ? ` The deadline (--deadline) ends it at ${view.deadline}.` : '';
  return (
    `  ${t(view.agent.name)} has not answered yet. Keep waiting, or press Ctrl-C to stop waiting here: the agent may still ` +
    `be working on it; baton status ${id} shows what is known and baton cancel ${id} ends the delegation.${until}`
  );
}

const IN_FLIGHT = new Set(['queued', 'starting', 'waiting', 'submitted', 'working', 'reconnecting', 'canceling']);

/**
 * Prints timeline entries as they arrive; once the delegation settles, waits until its runner is idle
 * (the final artifacts, events fetched after a broken stream) and prints the rest: every entry the
 * journal has is printed. Resolves with the view as it is then.
 */
async function follow(
  manager: DelegationManager,
  requestId: string,
  out: NodeJS.WritableStream,
  json: boolean,
  until: (view: DelegationRecord) => boolean = (view) => view.outcome !== undefined && !IN_FLIGHT.has(view.state),
  timeoutMs?: number,
): Promise<DelegationRecord> {
  let printed = 0;
  const show = (): DelegationRecord | undefined => {
    const view = manager.view(requestId);
    if (!view) return undefined;
    const total = view.timelineOmitted + view.timeline.length;
    for (let i = Math.max(printed, view.timelineOmitted); i < total; i++) {
      const e = view.timeline[i - view.timelineOmitted];
      line(out, json ? terminalJson(e) : timelineLine(e));
      if (!json && e.kind === 'notice' && e.code === 'stream.noFirstEvent') line(out, noFirstEventHint(view));
    }
    printed = total;
    return view;
  };
  // The manager's timers do not keep the process alive; this wait does, until the delegation settles.
  const alive = setInterval(() => undefined, 60_000);
  let timer: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((settled, late) => {
      if (timeoutMs !== undefined)
        timer = setTimeout(() => {
          off();
          late(new FollowTimeout());
        }, timeoutMs);
      const check = (): void => {
        const view = show();
        if (view && until(view)) {
          off();
          settled();
        }
      };
      const off = manager.onDidChange((id) => {
        if (id === requestId) check();
      });
      check();
    });
    await manager.idle(requestId);
  } finally {
    clearInterval(alive);
    clearTimeout(timer);
  }
  const view = show();
  if (!view) throw new Error(`delegation ${requestId} is gone from the journal folder`);
  return view;
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

/** Checks a settled delegation's result with the same rules as the extension; the journal it checked too. */
async function resultCheck(
  env: NodeJS.ProcessEnv,
  requestId: string,
  cards: Map<string, AgentCard>,
): Promise<{ readonly check: ResultCheck; readonly journal: DelegationJournal }> {
  const loaded = await new JournalStore(journalDir(env)).load(requestId);
  const journal = DelegationJournal.fromEntries(loaded.entries);
  const endpoint = journal.request.agent.endpoint;
  // Without the card (the agent is gone, no card was kept), the keys pinned for its origin still decide.
  const card = await cardOf(journal.request.agent, cards).catch(() => undefined);
  const origin = new URL(endpoint).origin;
  const keys = await pinnedResultKeys(env, origin, card);
  const promised = (card !== undefined && signedResultsOf(card).promised) || keys.length > 0;
  const check = await checkResult({
    journal,
    final: finalTaskOf(loaded.entries),
    keys,
    signaturesPromised: promised,
    signer: origin,
  });
  return { check, journal };
}

/** How much of one text artifact `baton` prints (and puts in `--json`); a longer one is cut, and says so. */
export const ANSWER_MAX_CHARS = 16_000;
/** How many text artifacts are printed; the others are only named. */
const ANSWER_MAX_ARTIFACTS = 8;
/** Artifacts whose text is the agent's answer: plain text and markdown (or no media type: a text part). */
const ANSWER_MEDIA = /^(|text\/plain|text\/markdown|text\/x-markdown)(\s*;.*)?$/i;

/** An agent's answer given as a text artifact (Mastra's server answers with `response.txt`). */
export interface TextAnswer {
  readonly artifactId: string;
  readonly name: string;
  readonly mediaType: string;
  /** At most `ANSWER_MAX_CHARS` of it. */
  readonly text: string;
  /** Characters in the whole artifact's text. */
  readonly chars: number;
  readonly cut: boolean;
}

/**
 * The text artifacts of a delegation, as the final task has them (else as streamed): the text parts of
 * the artifacts in plain text or markdown that are not patches (those are saved as files). Parts that
 * are not text (files, data) are never printed.
 */
function textAnswers(journal: DelegationJournal, patchIds: ReadonlySet<string>): TextAnswer[] {
  const patchLike = new Set(
    journal
      .view(Date.now())
      .artifacts.filter((a) => a.isPatch)
      .map((a) => a.artifactId),
  );
  return journal
    .artifacts()
    .filter(
      (a) =>
        a.text.length > 0 &&
        !patchIds.has(a.artifactId) &&
        !patchLike.has(a.artifactId) &&
        ANSWER_MEDIA.test(a.mediaType),
    )
    .map((a) => ({
      artifactId: a.artifactId,
      name: a.name || a.filename || a.artifactId,
      mediaType: a.mediaType,
      text: a.text.slice(0, ANSWER_MAX_CHARS),
      chars: a.text.length,
      cut: a.text.length > ANSWER_MAX_CHARS,
    }));
}

/** The answers as the CLI prints them, after the outcome; every string in them may come from the agent. */
function answerLines(answers: readonly TextAnswer[], taskId: string | undefined): string[] {
  const lines = answers
    .slice(0, ANSWER_MAX_ARTIFACTS)
    .map(
      (a) =>
        `answer (${t(a.name)}): ${block(a.text)}${a.cut ? `\n(cut: the first ${a.text.length} of ${a.chars} characters are shown; the rest is in the agent's task${taskId ? ` ${t(taskId)}` : ''})` : ''}`,
    );
  const more = answers.slice(ANSWER_MAX_ARTIFACTS);
  if (more.length)
    lines.push(`${more.length} more text artifacts are not shown: ${more.map((a) => t(a.name)).join(', ')}`);
  return lines;
}

/** The answers of a delegation as `--json` carries them: bounded like the printed ones. */
function answersJson(answers: readonly TextAnswer[]): { answers?: readonly TextAnswer[] } {
  return answers.length ? { answers: answers.slice(0, ANSWER_MAX_ARTIFACTS) } : {};
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
  const { check, journal } = await resultCheck(env, view.requestId, cards);
  // What the agent answered in text artifacts; not shown from a result that did not verify.
  const answers =
    check.status === 'invalid' ? [] : textAnswers(journal, new Set((check.patches ?? []).map((p) => p.artifactId)));
  // Only the bytes the check approved are saved: for a verified result, the signed artifacts.
  const saved = check.status === 'invalid' ? [] : savePatches(check.patches ?? [], view.requestId, patchOut, env);
  const links = check.status === 'invalid' ? [] : (check.links ?? []);
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
        patch: saved[0]?.file,
        ...(saved.length > 1
          ? {
              patches: saved.map((p) => ({
                file: p.file,
                name: p.patch.name,
                source: p.patch.source,
                signature: p.patch.signature,
              })),
            }
          : {}),
        ...(links.length ? { patchLinks: links } : {}),
        ...answersJson(answers),
        signature,
      }),
    );
  else {
    // A question is printed once, below, as what the agent asks.
    const asked = outcome === 'input-required' && view.prompt !== undefined && view.outcomeReason === view.prompt;
    line(out, `${outcome}${view.outcomeReason && !asked ? `: ${block(view.outcomeReason)}` : ''}`);
    if (check.status !== 'unsigned' || view.outcome === 'completed') line(out, signatureLine(check, env));
    for (const l of answerLines(answers, view.taskId)) line(out, l);
    for (const l of links)
      line(
        out,
        `the agent returned the patch ${t(l.name)} as a link (${t(l.url)}), which Baton does not download; fetch it yourself if you trust it, and review it before applying it`,
      );
    if (saved.length === 1 && saved[0].patch.name === PATCH_ARTIFACT.name && saved[0].patch.source === 'artifact')
      line(
        out,
        `changes.patch saved to ${t(saved[0].file)}\nreview it, then apply it from the repository's top folder with: git apply ${t(saved[0].file)}`,
      );
    else if (saved.length) {
      if (saved.length > 1) line(out, `the agent returned ${saved.length} patches; review each on its own:`);
      for (const p of saved) line(out, `${patchWords(p.patch)} saved to ${t(p.file)}`);
      line(
        out,
        `review ${saved.length > 1 ? 'them' : 'it'}, then apply from the repository's top folder with: git apply ${saved.length > 1 ? '<file>' : t(saved[0].file)}`,
      );
    }
    if (outcome === 'input-required') {
      const id = view.requestId;
      if (view.waiting === 'approval') line(out, toolCallsWaiting(view.toolCalls ?? [], id));
      else
        line(
          out,
          `${view.prompt ? `the agent asks: ${block(view.prompt)}` : `${t(view.agent.name)} finished its turn and is waiting for you`}\n` +
            `${view.prompt ? 'answer with' : 'go on with'}: baton reply ${id} "<text>"\n` +
            `accept what it did and end the delegation as completed: baton done ${id}\n` +
            `or stop it: baton cancel ${id}`,
        );
    }
    if (outcome === 'auth-required') {
      line(
        out,
        `the agent needs authorization${view.prompt ? `: ${block(view.prompt)}` : ''}\nauthorize as it asks, then follow the task again with: baton watch ${view.requestId}`,
      );
    }
    if (outcome === 'unknown') line(out, `contact was lost; check again with: baton watch ${view.requestId}`);
    if (view.tokenRefused)
      line(
        out,
        outcome === 'failed'
          ? 'the agent refused the token: set $BATON_TOKEN to the token its gateway issued you, then run the same command again (nothing was started)'
          : `the agent refused the token: set $BATON_TOKEN to the token its gateway issued you, then follow the task again with: baton watch ${view.requestId}`,
      );
  }
  return check.status === 'invalid' ? EXIT_UNVERIFIED : EXIT[outcome];
}

/** What a saved patch is, for the line that says where it went. */
function patchWords(p: ReviewPatch): string {
  const from =
    p.source === 'message'
      ? "the diff in the agent's message"
      : p.source === 'tool-calls'
        ? "the patch built from the agent's edits"
        : `the patch ${t(p.name)}`;
  return `${from} (${p.signature})`;
}

/**
 * Writes each approved patch: the first (or only) to `--out` or `<request-id>.patch`, the n-th of
 * several beside it as `<name>-<n><ext>` (`<request-id>-2.patch`, …).
 */
function savePatches(
  patches: readonly ReviewPatch[],
  requestId: string,
  patchOut: string | undefined,
  env: NodeJS.ProcessEnv,
): { readonly file: string; readonly patch: ReviewPatch }[] {
  const kept = patches.filter((p) => p.bytes.length > 0);
  if (!kept.length) return [];
  let first: string;
  if (patchOut) first = resolve(patchOut);
  else {
    mkdirSync(patchDir(env), { recursive: true, mode: 0o700 });
    first = join(patchDir(env), `${requestId}.patch`);
  }
  const ext = extname(first);
  const stem = ext ? first.slice(0, -ext.length) : first;
  return kept.map((patch, i) => {
    const file = i === 0 ? first : `${stem}-${i + 1}${ext}`;
    writeFileSync(file, patch.bytes);
    return { file, patch };
  });
}

/** One tool call as the CLI prints it: its line, then the diff it would make or the command it would run. */
function toolCallText(c: ToolCallView): string {
  const lines = [`  tool call ${t(c.callId)}: ${t(toolCallLine(c))}`];
  const diff = c.confirmation?.fileDiff;
  if (diff)
    lines.push(
      ...shortDiff(diff)
        .split('\n')
        .map((l) => `    ${t(l)}`),
    );
  else if (c.confirmation?.command) lines.push(`    $ ${t(c.confirmation.command)}`);
  return lines.join('\n');
}

function toolCallsWaiting(calls: readonly ToolCallView[], id: string): string {
  const pending = pendingToolCalls(calls);
  const which = pending.length > 1 ? ' <call-id>' : '';
  return [
    `the agent asks to run ${pending.length === 1 ? 'a tool call' : `${pending.length} tool calls`}:`,
    ...pending.map(toolCallText),
    `approve with: baton approve ${id}${which}`,
    `deny with: baton deny ${id}${which}`,
  ].join('\n');
}

/**
 * While a tool call waits for the user, the `baton` process that follows the delegation stays attached:
 * Gemini CLI's server aborts a task whose connection closes, so the answer has to be sent by the process
 * holding it. `baton approve|deny|done|cancel` in another terminal hand the answer to it through a file
 * beside the journal (`<id>.answers`, one JSON object a line); `<id>.holder` names the holding process.
 */
type HeldAnswer =
  | { readonly action: 'answer'; readonly callId?: string; readonly outcome: string }
  | { readonly action: 'done' }
  | { readonly action: 'cancel' };

function holderFile(env: NodeJS.ProcessEnv, id: string): string {
  return join(journalDir(env), `${id}.holder`);
}

function answersFile(env: NodeJS.ProcessEnv, id: string): string {
  return join(journalDir(env), `${id}.answers`);
}

/** The pid of the live process holding the delegation, if any. */
function liveHolder(env: NodeJS.ProcessEnv, id: string): number | undefined {
  const file = holderFile(env, id);
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}

function takeAnswers(env: NodeJS.ProcessEnv, id: string): HeldAnswer[] {
  const file = answersFile(env, id);
  if (!existsSync(file)) return [];
  const text = readFileSync(file, 'utf8');
  rmSync(file, { force: true });
  return text
    .split('\n')
    .filter((l) => l.trim())
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as HeldAnswer];
      } catch {
        return [];
      }
    });
}

/** Hands an answer to the holding process and waits (bounded) until it has taken it. */
async function handToHolder(env: NodeJS.ProcessEnv, id: string, answer: HeldAnswer): Promise<boolean> {
  const file = answersFile(env, id);
  appendFileSync(file, `${JSON.stringify(answer)}\n`, { mode: 0o600 });
  for (let i = 0; i < 100; i++) {
    await new Promise((ok) => setTimeout(ok, 100));
    if (!existsSync(file)) return true;
  }
  return false;
}

/**
 * Follows a delegation to where it waits for the user, staying attached (and answering what other
 * `baton` processes hand over) while a tool call waits for approval. Resolves with the view it settled in.
 */
async function followHolding(
  manager: DelegationManager,
  requestId: string,
  out: NodeJS.WritableStream,
  json: boolean,
  env: NodeJS.ProcessEnv,
): Promise<DelegationRecord> {
  let view = await follow(manager, requestId, out, json);
  let announced = '';
  while (view.outcome === 'input-required' && view.waiting === 'approval') {
    const waiting = pendingToolCalls(view.toolCalls ?? [])
      .map((c) => c.callId)
      .join(',');
    if (waiting !== announced) {
      announced = waiting;
      mkdirSync(journalDir(env), { recursive: true, mode: 0o700 });
      writeFileSync(holderFile(env, requestId), `${process.pid}\n`, { mode: 0o600 });
      if (!json)
        line(
          out,
          `${toolCallsWaiting(view.toolCalls ?? [], requestId)}\n(this process keeps the agent's connection open until you answer)`,
        );
    }
    const answers = takeAnswers(env, requestId);
    if (answers.length === 0) {
      await new Promise((ok) => setTimeout(ok, 200));
      view = manager.view(requestId) ?? view;
      continue;
    }
    for (const a of answers) {
      try {
        if (a.action === 'answer') await manager.answerToolCall(requestId, a.callId, a.outcome);
        else if (a.action === 'done') await manager.finish(requestId);
        else await manager.cancel(requestId);
      } catch (e) {
        line(out, `  error: ${errorLine(e)}`);
      }
    }
    view = await follow(manager, requestId, out, json);
  }
  rmSync(holderFile(env, requestId), { force: true });
  return view;
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
  /** Epoch ms: `--deadline`, else `DEFAULT_DEADLINE_MS` from now. */
  readonly deadline?: number;
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
    ...(input.deadline !== undefined ? { deadline: input.deadline } : {}),
  });
}

/** An error as the one line `baton` prints for it on stderr. */
function errorLine(e: unknown): string {
  return block(e instanceof Error ? e.message : String(e));
}

/** Limits a test may shorten (the CLI's own defaults are the runner's). */
export interface CliTuning {
  readonly runner?: DelegationManagerOptions['runnerOptions'];
}

export async function batonMain(
  argv: string[],
  out: NodeJS.WritableStream = process.stdout,
  env: NodeJS.ProcessEnv = process.env,
  tuning: CliTuning = {},
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
      deadline: { type: 'string' },
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
  const gateway = findGateway(values.gateway, env);
  const cards = new Map<string, AgentCard>();
  if (cmd === 'mcp') {
    // stdout carries the MCP protocol: nothing else is printed there.
    const menv = mcpEnv(env);
    const mgw = requireGateway(findGateway(values.gateway, menv), menv, 'serve baton mcp from');
    // One manager for the server's life: it runs the delegations it starts, and only reads others'.
    const store = new JournalStore(journalDir(menv));
    try {
      return await runMcpServer({
        gatewayUrl: mgw.url,
        env: menv,
        journalDir: journalDir(menv),
        openManager: () => openManager(mgw, store, cards, { resume: [] }),
        fetchJson,
        checkInterfaceUrl,
        cards,
      });
    } finally {
      await store.close();
    }
  }

  if (cmd === 'agents') {
    const gw = requireGateway(gateway, env, 'list agents from');
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
    const deadlineMs = parseDeadline(values.deadline);
    const cardUrl = /^https?:\/\//i.test(target)
      ? target
      : `${requireGateway(gateway, env, `find the agent ${JSON.stringify(target)} on`).url}/a2a/${encodeURIComponent(target)}/.well-known/agent-card.json`;
    const raw = await fetchJson(cardUrl);
    if (!isRecord(raw)) throw new Error(`the card at ${cardUrl} is not a JSON object; ask the agent's owner to fix it`);
    const card = normalizeCard(raw);
    const iface =
      card.supportedInterfaces.find((i) => i.protocolBinding === 'JSONRPC' && i.protocolVersion === '1.0') ??
      card.supportedInterfaces[0];
    if (!iface) throw new Error(`the card at ${cardUrl} lists no interface to call`);
    const endpoint = checkInterfaceUrl(iface.url, cardUrl);
    cards.set(endpoint, card);
    const id = /\/a2a\/([^/]+)\//.exec(new URL(cardUrl).pathname)?.[1] ?? target;
    const createdAt = Date.now();
    const request = cliDelegationRequest({
      requestId: randomUUID(),
      createdAt,
      deadline: createdAt + deadlineMs,
      who: userInfo().username,
      agent: {
        id,
        name: card.name,
        endpoint,
        protocolBinding: iface.protocolBinding,
        protocolVersion: iface.protocolVersion,
        // Follow-ups (status, watch, cancel, reply) connect with this card, pinned here, not one read later.
        cardDigest: agentCardDigest(raw),
        cardUrl,
        card: raw,
      },
      task,
      files: (values.file as string[] | undefined) ?? [],
      repository: (await delegationRepository(values.repo ? resolve(values.repo) : undefined)).repository,
      write: values.write === true,
    });
    const requestId = request.requestId;
    const store = new JournalStore(journalDir(env));
    const manager = await openManager(gateway, store, cards, { resume: [] }, tuning);
    try {
      if (!json) line(out, `delegating to ${t(card.name)} (${t(endpoint)}) as ${requestId}`);
      const following = followHolding(manager, requestId, out, json, env);
      await manager.start(request);
      const view = await following;
      return await finish(manager, view, out, json, values.out, env, cards);
    } finally {
      manager.dispose();
      await store.close();
    }
  }

  if (cmd === 'approve' || cmd === 'deny' || cmd === 'done') {
    const [requestId, callId] = args;
    if (!requestId) throw new UsageError(`${cmd} needs a request id (printed by baton delegate)`);
    if (cmd === 'done' && callId) throw new UsageError('done takes only the request id');
    const answer: HeldAnswer =
      cmd === 'done'
        ? { action: 'done' }
        : {
            action: 'answer',
            ...(callId ? { callId } : {}),
            outcome: cmd === 'approve' ? TOOL_CALL_APPROVE : TOOL_CALL_DENY,
          };
    const store = new JournalStore(journalDir(env));
    const manager = await openManager(gateway, store, cards, { resume: [requestId] }, tuning);
    try {
      const view = manager.view(requestId);
      if (!view) throw new UsageError(`no delegation ${requestId} in ${journalDir(env)}`);
      if (view.outcome !== 'input-required')
        throw new UsageError(`${requestId} is ${view.state}, not waiting for you: nothing to ${cmd}`);
      if (cmd !== 'done') {
        const pending = pendingToolCalls(view.toolCalls ?? []);
        if (pending.length === 0) throw new UsageError(`no tool call of ${requestId} is waiting for approval`);
        if (!callId && pending.length > 1)
          throw new UsageError(
            `${pending.length} tool calls are waiting; name one: ${pending.map((c) => `baton ${cmd} ${requestId} ${c.callId}`).join(' · ')}`,
          );
        if (callId && !pending.some((c) => c.callId === callId))
          throw new UsageError(
            `tool call ${callId} is not waiting for approval; waiting: ${pending.map((c) => c.callId).join(', ')}`,
          );
      }
      const holder = liveHolder(env, requestId);
      if (holder !== undefined) {
        // Another baton process holds the agent's connection: it sends the answer and follows what comes of it.
        if (!(await handToHolder(env, requestId, answer)))
          throw new Error(
            `the baton process ${holder} following ${requestId} did not take the answer; is it still running?`,
          );
        line(
          out,
          `${cmd === 'done' ? 'done' : cmd === 'approve' ? 'approved' : 'denied'}: handed to the baton process following ${requestId} (pid ${holder})`,
        );
        return 0;
      }
      if (answer.action === 'answer') await manager.answerToolCall(requestId, answer.callId, answer.outcome);
      else await manager.finish(requestId);
      const settled = await followHolding(manager, requestId, out, json, env);
      return await finish(manager, settled, out, json, values.out, env, cards);
    } finally {
      manager.dispose();
      await store.close();
    }
  }

  if (cmd === 'status' || cmd === 'watch' || cmd === 'cancel' || cmd === 'reply') {
    const [requestId, text] = args;
    if (!requestId) throw new UsageError(`${cmd} needs a request id (printed by baton delegate)`);
    // `status` only reads: no lease is taken, no runner started, nothing written. The others run the
    // delegation they name (when no other live process does) and only that one.
    const store = new JournalStore(journalDir(env));
    const manager = await openManager(
      gateway,
      store,
      cards,
      { readOnly: cmd === 'status', resume: [requestId] },
      tuning,
    );
    try {
      const view = manager.view(requestId);
      if (!view) throw new UsageError(`no delegation ${requestId} in ${journalDir(env)}`);
      if (cmd === 'status') {
        const owner = manager.ownedElsewhere(requestId);
        // The agent's text answer once it has one to give (not from a result a check found invalid).
        const answers =
          view.outcome && view.resultCheck?.signature.status !== 'invalid'
            ? textAnswers(
                DelegationJournal.fromEntries((await store.load(requestId)).entries),
                new Set(recordedPatches(view.resultCheck).map((p) => p.artifactId)),
              )
            : [];
        if (json) line(out, terminalJson({ ...view, ...answersJson(answers) }));
        else {
          line(
            out,
            `${t(view.requestId)} ${t(view.agent.name)}: ${view.state}${view.outcomeReason ? ` (${block(view.outcomeReason)})` : ''}${view.taskId ? ` task ${t(view.taskId)}` : ''}${owner ? ` — run by process ${owner.pid}` : ''}`,
          );
          for (const l of answerLines(answers, view.taskId)) line(out, l);
        }
        return view.outcome ? EXIT[view.outcome] : 0;
      }
      // A delegation that lost contact, or that waited for an out-of-band authorization, is asked
      // about again (GetTask, then followed from where it is; never sent again).
      if (
        cmd === 'watch' &&
        (view.outcome === 'unknown' || view.outcome === 'auth-required') &&
        !manager.ownedElsewhere(requestId)
      ) {
        await manager.checkAgain(requestId);
        await manager.idle(requestId);
      }
      if (cmd === 'cancel') {
        // A `baton` process that holds the agent's connection for a waiting tool call takes the cancel.
        const holder = liveHolder(env, requestId);
        if (holder !== undefined && (await handToHolder(env, requestId, { action: 'cancel' }))) {
          line(out, `cancel: handed to the baton process following ${requestId} (pid ${holder})`);
          return 0;
        }
        if ((await manager.cancel(requestId)) === undefined && manager.ownedElsewhere(requestId)) {
          // Another process runs it: the cancel was handed to it, and its journal shows the answer.
          if (!json) line(out, `the delegation is run by another baton process; it was asked to cancel it`);
          let ended: DelegationRecord;
          try {
            ended = await follow(
              manager,
              requestId,
              out,
              json,
              (v) => isFinalOutcome(v.outcome),
              CANCEL_HANDOVER_WAIT_MS,
            );
          } catch (e) {
            if (!(e instanceof FollowTimeout)) throw e;
            line(out, `the process running it has not answered the cancel yet; check with: baton status ${requestId}`);
            return EXIT.unknown;
          }
          return await finish(manager, ended, out, json, values.out, env, cards);
        }
      }
      if (cmd === 'reply') {
        if (!text) throw new UsageError('reply needs the text to send');
        await manager.reply(requestId, text);
      }
      return await finish(
        manager,
        await followHolding(manager, requestId, out, json, env),
        out,
        json,
        values.out,
        env,
        cards,
      );
    } finally {
      manager.dispose();
      await store.close();
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
