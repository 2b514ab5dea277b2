/**
 * The signed result envelope every terminal task carries (metadata `baton/resultEnvelope`), built from
 * exactly what a client will see (wire JSON of the request message, the folded artifacts GetTask
 * returns, the terminal status), so `verifyResultEnvelope` in src/node/signing.ts can check it.
 */
import { Artifact, SendMessageRequest, TaskStatus } from '@a2a-js/sdk';
import type { StreamResponse, Task } from '@a2a-js/sdk';
import { createHash, webcrypto } from 'node:crypto';
import { META } from '../core/batonProfile';
import { isRecord } from '../core/isRecord';
import { canonicalize } from '../core/jcs';
import { requestDigest, resultDigest } from '../node/signing';
import type { ResultEnvelope } from '../node/signing';
import type { GatewayContext } from './gatewayContext';

/**
 * Above this many characters of canonical JSON an artifact is hashed on libuv's thread pool (WebCrypto's
 * digest), not on the event loop: a patch of several MiB takes milliseconds to hash, and a gateway
 * ending many tasks at once would hold up every stream it relays meanwhile. Below it the hand-off costs
 * more than the hash: for a 64 KiB patch, node:crypto's SHA-256 takes about 45 µs of the event loop, the
 * hand-off (the UTF-8 copy, the job, its promise) about 180 µs of CPU (measured on the bench machine),
 * so a burst of ending tasks was slower with it.
 */
export const HASH_OFF_LOOP_CHARS = 1024 * 1024;

/**
 * `artifactDigest` of src/node/signing.ts (`sha256:` of the RFC 8785 form of {artifactId, name, parts}),
 * hashed with node:crypto (core's pure SHA-256 takes ~40 ms for a 1 MiB patch on the event loop), a
 * large artifact off the event loop (`HASH_OFF_LOOP_CHARS`). The unit tests check both give the same digest.
 */
export async function artifactDigestOffLoop(a: {
  artifactId: string;
  name?: string;
  parts: readonly unknown[];
}): Promise<string> {
  const jcs = artifactJcs(a);
  if (jcs.length < HASH_OFF_LOOP_CHARS) return `sha256:${createHash('sha256').update(jcs, 'utf8').digest('hex')}`;
  const digest = await webcrypto.subtle.digest('SHA-256', Buffer.from(jcs, 'utf8'));
  return `sha256:${Buffer.from(digest).toString('hex')}`;
}

function artifactJcs(a: { artifactId: string; name?: string; parts: readonly unknown[] }): string {
  return canonicalize({ artifactId: a.artifactId, name: a.name ?? '', parts: a.parts });
}

export type EnvelopeBody = Omit<ResultEnvelope, 'issuedAt'>;

/** The digest the caller can recompute from what it sent (`SendMessageRequest.toJSON`, tenant left out). */
export function sentRequestDigest(params: SendMessageRequest): string {
  return requestDigest(SendMessageRequest.toJSON(params) as Record<string, unknown>);
}

/** What the envelope signs of `task` as it ends with `status`; large artifacts are hashed off the event loop. */
export async function envelopeBody(
  task: Task,
  status: TaskStatus,
  requestDigestValue: string | null,
  executor: Readonly<Record<string, unknown>>,
  capabilities: Readonly<Record<string, boolean>> | null,
): Promise<EnvelopeBody> {
  const statusWire = TaskStatus.toJSON(status) as Record<string, unknown>;
  return {
    taskId: task.id,
    contextId: task.contextId,
    state: String(statusWire.state),
    requestDigest: requestDigestValue,
    artifacts: await Promise.all(
      task.artifacts.map(async (a) => {
        const wire = Artifact.toJSON(a) as { artifactId: string; name?: string; parts?: unknown[] };
        return {
          artifactId: a.artifactId,
          name: a.name,
          digest: await artifactDigestOffLoop({
            artifactId: wire.artifactId,
            name: wire.name ?? '',
            parts: wire.parts ?? [],
          }),
        };
      }),
    ),
    resultDigest: resultDigest(statusWire),
    executor,
    capabilities,
  };
}

/**
 * The request digest recorded on a task when the gateway created it (`META.requestDigest`); null for a
 * task recorded before tasks kept it.
 */
export function recordedRequestDigest(task: Task): string | null {
  const d = task.metadata?.[META.requestDigest];
  return typeof d === 'string' && d ? d : null;
}

/** The effective capabilities recorded on a local task when it was created (`META.capabilities`). */
export function recordedCapabilities(task: Task): Record<string, boolean> | null {
  const c: unknown = task.metadata?.[META.capabilities];
  if (!isRecord(c)) return null;
  return Object.fromEntries(Object.entries(c).filter((e): e is [string, boolean] => typeof e[1] === 'boolean'));
}

/**
 * Puts the gateway's signed envelope (`META.envelope`) on a final status event, over `task` as it will be
 * with that status. Every terminal state is signed, the ones the gateway decides itself too (an unknown
 * outcome after it lost a remote, a cancel nobody confirmed, a run that ended with an earlier process):
 * a client then verifies "the gateway says the outcome is unknown" like any other result, and a status
 * without an envelope can only mean one was stripped. Signing that fails is logged, and the event goes
 * unsigned (a client then says so, rather than trusting it).
 */
export async function signStatusEvent(
  ctx: Pick<GatewayContext, 'signEnvelope' | 'log'>,
  event: StreamResponse,
  task: Task,
  requestDigestValue: string | null,
  executor: Readonly<Record<string, unknown>>,
  capabilities: Readonly<Record<string, boolean>> | null,
): Promise<StreamResponse> {
  const p = event.payload;
  if (!ctx.signEnvelope || p?.$case !== 'statusUpdate' || !p.value.status) return event;
  try {
    const envelope = await ctx.signEnvelope(
      await envelopeBody(task, p.value.status, requestDigestValue, executor, capabilities),
    );
    p.value.metadata = { ...(p.value.metadata ?? {}), [META.envelope]: envelope };
  } catch (e) {
    ctx.log(`task ${task.id}: signing the result failed: ${(e as Error).message}`);
  }
  return event;
}
