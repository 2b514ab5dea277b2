/** Shared setup for the delegation tests: a request for a test agent, a runner on a temp journal folder. */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DelegationRequest, JournalEntry } from '../../../src/core/delegation';
import { DelegationJournal } from '../../../src/core/delegation';
import { buildDelegationMessage } from '../../../src/core/delegation/context';
import { READ_ONLY } from '../../../src/core/delegation/guards';
import type { AgentConnection, PinnedEndpoint } from '../../../src/node/a2a/clientFactory';
import { connectAgent } from '../../../src/node/a2a/clientFactory';
import type { DelegationRunnerOptions } from '../../../src/node/a2a/delegationRunner';
import { DelegationRunner } from '../../../src/node/a2a/delegationRunner';
import type { JournalStore } from '../../../src/node/journalStore';
import { sha256Hex } from '../../../src/node/journalStore';
import type { AgentServer } from './agentServers';

export const FAST_RECONNECT = { initialDelayMs: 5, maxDelayMs: 50, maxAttempts: 6 };

export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'baton-deleg-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function makeRequest(
  endpoint: PinnedEndpoint,
  task: string,
  extra: Partial<DelegationRequest> = {},
  requestId: string = randomUUID(),
): DelegationRequest {
  const { message, contextDigests } = buildDelegationMessage(
    { requestId, task, capabilities: READ_ONLY, chain: ['test-agent'] },
    sha256Hex,
  );
  return {
    requestId,
    title: task,
    who: 'tester',
    agent: {
      id: 'test-agent',
      name: 'Test agent',
      endpoint: endpoint.url,
      protocolBinding: endpoint.protocolBinding,
      protocolVersion: endpoint.protocolVersion,
    },
    message,
    createdAt: Date.now(),
    capabilities: { requested: READ_ONLY, effective: READ_ONLY },
    contextDigests,
    chain: ['test-agent'],
    ...extra,
  };
}

export interface Run {
  readonly runner: DelegationRunner;
  readonly journal: DelegationJournal;
  readonly store: JournalStore;
  readonly connection: AgentConnection;
  readonly request: DelegationRequest;
  /** The journal as persisted. */
  entries(): Promise<JournalEntry[]>;
}

export async function newRun(
  /** The agent: a test server, or any card and JSON-RPC endpoint (a gateway's). */
  server: Pick<AgentServer, 'card' | 'jsonRpc'>,
  store: JournalStore,
  task: string,
  opts: {
    endpoint?: PinnedEndpoint;
    request?: Partial<DelegationRequest>;
    runner?: Partial<DelegationRunnerOptions>;
    connection?: AgentConnection;
    requestId?: string;
  } = {},
): Promise<Run> {
  const endpoint = opts.endpoint ?? server.jsonRpc;
  const connection = opts.connection ?? (await connectAgent({ card: server.card, endpoint }));
  const request = makeRequest(endpoint, task, opts.request, opts.requestId);
  await store.create(request);
  const journal = new DelegationJournal(request);
  const runner = new DelegationRunner({
    connection,
    journal,
    sink: store,
    reconnect: FAST_RECONNECT,
    cancelWaitMs: 2000,
    drainTimeoutMs: 2000,
    pollIntervalMs: 20,
    ...opts.runner,
  });
  return {
    runner,
    journal,
    store,
    connection,
    request,
    entries: async () => {
      await runner.idle();
      return (await store.load(request.requestId)).entries;
    },
  };
}

/** Sequenced event seqs in a persisted journal, in order. */
export function eventSeqs(entries: readonly JournalEntry[]): number[] {
  return entries
    .filter((e): e is Extract<JournalEntry, { kind: 'event' }> => e.kind === 'event' && e.sequenced)
    .map((e) => e.seq);
}

/** Rejects if `p` takes longer than `ms` (every wait in a test is bounded). */
export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => (t = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms))),
  ]).finally(() => clearTimeout(t));
}
