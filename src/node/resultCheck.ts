/**
 * What Baton says about a settled delegation's result, shared by the extension and the `baton` CLI,
 * and the one place the patch a user reviews is taken from.
 *
 * "Verified" means: the envelope on the final task verifies with the key Baton holds for the agent, and
 * it binds exactly what the user was shown — the task and context the user's stream was about, the
 * request the user sent, the state and status message, every artifact of the final task (one entry per
 * id, none missing, none extra) and every artifact the stream brought (each one in the final task, with
 * the same content). Anything else is a failure that says what did not match. The patch returned with
 * a verified result is built from the verified artifact's own parts, so what is reviewed and applied is
 * what was signed, byte for byte; callers keep these bytes and never read the patch from the journal
 * again (later events cannot swap it). A result may hold several patches (src/core/patch/patchArtifacts.ts):
 * each artifact's is verified with the result, a diff in the agent's final message never is — the
 * envelope signs the status, but Baton treats text it had to find a diff in as unsigned.
 */
import { createHash } from 'node:crypto';
import { Artifact, Role, SendMessageRequest, TaskStatus, taskStateToJSON } from '@a2a-js/sdk';
import type { AgentCard, Task } from '@a2a-js/sdk';
import type { VerifiedKey } from '../core/agentRegistry';
import { META, SIGNED_RESULT_EXTENSION_URI } from '../core/batonProfile';
import { isTerminalTaskState, partsText } from '../core/delegation';
import { scanPatches, type PatchScan, type PatchSource } from '../core/patch/patchArtifacts';
import type { PatchLink } from '../core/protocol/delegationView';
import { english } from '../core/protocol/l10n';
import { resultCheckText, type ResultMessage } from '../core/resultText';
import type { ArtifactConflict, DelegationJournal, DelegationRequest, JournalEntry } from '../core/delegation';
import { sendMessageParams } from './a2a/delegationRunner';
import { toolCallsPatch, workspaceRootOf } from '../core/devTool';
import { requestDigest, toVerifiedKey, verifyResultEnvelope } from './signing';
import type { ArtifactLike, PublicJwk } from './signing';

/** A patch to review and apply: the bytes that were checked, and their digest to check them again. */
export interface ReviewPatch {
  /** The artifact's id, or `message:<messageId>` for a diff in the agent's final message. */
  readonly artifactId: string;
  /** The artifact's name (or file name), `message` for a diff in the final message. */
  readonly name: string;
  readonly source: PatchSource;
  /** `verified` only for the bytes of an artifact of a verified result; a message's diff never is. */
  readonly signature: 'verified' | 'unsigned';
  /** The patch as the agent sent it (text parts as UTF-8, file parts' bytes). */
  readonly bytes: Buffer;
  /** `sha256:<hex>` of `bytes`. */
  readonly sha256: string;
}

/**
 * `text` is what the check says, as data: the host says it in the user's language; `detail` is the
 * same in English, for logs and the CLI.
 */
export type ResultCheck = (
  | {
      readonly status: 'verified';
      readonly detail: string;
      readonly kid: string;
      /** The first of `patches`: the gateway's `changes.patch` when there is one. */
      readonly patch?: ReviewPatch;
      readonly patches?: readonly ReviewPatch[];
      readonly links?: readonly PatchLink[];
      /** Who executed it, as signed (the task's own `baton/executor` metadata is not). */
      readonly executor?: Readonly<Record<string, unknown>>;
    }
  /** No signature was promised and none came: the patch is the final task's, unverified. */
  | {
      readonly status: 'unsigned';
      readonly detail: string;
      readonly patch?: ReviewPatch;
      readonly patches?: readonly ReviewPatch[];
      readonly links?: readonly PatchLink[];
    }
  /** Verification failed, or the result is ambiguous: no patch is offered for review. */
  | { readonly status: 'invalid'; readonly detail: string; readonly failure: string }
) & { readonly text: ResultMessage };

export interface ResultCheckInput {
  /** The delegation as the user saw it: its request, task, state and what was streamed. */
  readonly journal: DelegationJournal;
  /** The final task (`finalTaskOf` the journal's entries). */
  readonly final: Task | undefined;
  /** The keys the result must be signed with (`resultKeys`). */
  readonly keys: readonly VerifiedKey[];
  /** The approved card declares signed results: a result without a valid signature is a failure. */
  readonly signaturesPromised: boolean;
  /** Who signs, for the messages (the agent's origin). */
  readonly signer: string;
}

/** The last final task (GetTask after the task settled) in a journal. */
export function finalTaskOf(entries: readonly JournalEntry[]): Task | undefined {
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i];
    if (e.kind === 'snapshot' && e.source === 'final') return e.task;
  }
  return undefined;
}

/** The digests of the first message as the runner may have sent it (streaming, or polling). */
export function sentRequestDigests(request: DelegationRequest): string[] {
  return [false, true].map((returnImmediately) =>
    requestDigest(
      SendMessageRequest.toJSON(sendMessageParams(request.message, returnImmediately)) as Record<string, unknown>,
    ),
  );
}

/** What a card says about signed results: whether it declares them, and the key it names for them. */
export function signedResultsOf(card: AgentCard): { readonly promised: boolean; readonly publicJwk?: PublicJwk } {
  const ext = card.capabilities?.extensions.find((e) => e.uri === SIGNED_RESULT_EXTENSION_URI);
  if (!ext) return { promised: false };
  const jwk: unknown = ext.params?.publicKeyJwk;
  const usable = typeof jwk === 'object' && jwk !== null && typeof (jwk as { kty?: unknown }).kty === 'string';
  return { promised: true, ...(usable ? { publicJwk: jwk as PublicJwk } : {}) };
}

/**
 * The keys a result must verify with: those pinned for the agent's origin (from its signed card), else
 * the one the approved card names — approval pinned the card by digest, so a card naming another key
 * is a changed card that goes back to review.
 */
export async function resultKeys(pinned: readonly VerifiedKey[], card: AgentCard): Promise<VerifiedKey[]> {
  if (pinned.length > 0) return [...pinned];
  const { publicJwk } = signedResultsOf(card);
  if (!publicJwk) return [];
  try {
    return [await toVerifiedKey(publicJwk)];
  } catch {
    return [];
  }
}

function sha256(bytes: Buffer): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

/** The patches of a final task: its artifacts' (src/core/patch/patchArtifacts.ts), then its final message's. */
function scanFinal(final: Task): PatchScan {
  const m = final.status?.message;
  return scanPatches(final.artifacts, m && m.role !== Role.ROLE_USER ? m : undefined);
}

/** What makes a final task's patches unreviewable: several `changes.patch`, or one with a part not text. */
function patchProblem(scan: PatchScan): ResultMessage | undefined {
  if (scan.named.length > 1) return { code: 'patch-ambiguous', count: scan.named.length, ids: scan.named };
  if (scan.problems.some((p) => p.kind === 'not-text')) return { code: 'patch-not-text' };
  return undefined;
}

/**
 * The patches to review, as bytes: an artifact's are `verified` when the result is (its bytes are the
 * signed artifact's parts); a diff in the agent's message never is.
 */
function reviewPatches(scan: PatchScan, verified: boolean): ReviewPatch[] {
  return scan.patches.map((p) => {
    const bytes = Buffer.from(p.bytes.buffer, p.bytes.byteOffset, p.bytes.byteLength);
    return {
      artifactId: p.artifactId,
      name: p.name,
      source: p.source,
      signature: verified && p.source === 'artifact' ? 'verified' : 'unsigned',
      bytes,
      sha256: sha256(bytes),
    };
  });
}

/** Patches returned as links: named, never fetched. */
function linksOf(scan: PatchScan): PatchLink[] {
  return scan.problems.flatMap((p) => (p.kind === 'url' ? [{ name: p.name, url: p.url }] : []));
}

/** `patch`, `patches` and `links` of a check, each only when there is something. */
function patchFields(patches: readonly ReviewPatch[], links: readonly PatchLink[]) {
  return {
    ...(patches.length ? { patch: patches[0], patches } : {}),
    ...(links.length ? { links } : {}),
  };
}

function conflictText(c: ArtifactConflict): ResultMessage {
  const name = c.name || c.artifactId;
  switch (c.kind) {
    case 'not-final':
      return { code: 'artifact-not-final', name };
    case 'differs':
      return { code: 'artifact-differs', name };
    case 'after-final':
      return { code: 'artifact-after-final', name };
  }
}

/**
 * What makes the final task ambiguous apart from its signature: the first reason, or undefined. For a
 * signed result, also everything the stream showed that the signed task does not have; an unsigned one
 * promises nothing about the stream, and its final task is what is reviewed.
 */
function ambiguity(
  journal: DelegationJournal,
  final: Task,
  artifacts: readonly ArtifactLike[],
  signed: boolean,
): { failure: string; text: ResultMessage } | undefined {
  if (final.id !== journal.taskId)
    return {
      failure: 'task-mismatch',
      text: { code: 'task-mismatch', taskId: final.id, expected: journal.taskId ?? '(none)' },
    };
  if (journal.contextId && final.contextId !== journal.contextId)
    return {
      failure: 'task-mismatch',
      text: { code: 'context-mismatch', contextId: final.contextId, expected: journal.contextId },
    };
  const seen = new Set<string>();
  for (const a of artifacts) {
    if (seen.has(a.artifactId))
      return { failure: 'artifact-duplicate', text: { code: 'artifact-duplicate', name: a.name || a.artifactId } };
    seen.add(a.artifactId);
  }
  if (signed) {
    const [conflict] = journal.artifactConflicts();
    if (conflict) return { failure: `artifact-${conflict.kind}`, text: conflictText(conflict) };
    if (journal.taskState !== final.status?.state)
      return { failure: 'result-mismatch', text: { code: 'state-mismatch' } };
    const shown = journal.stateText;
    const finalText = partsText(final.status?.message?.parts) || undefined;
    if (shown !== finalText) {
      return {
        failure: 'result-mismatch',
        text: { code: 'status-mismatch', shown: JSON.stringify(shown ?? ''), signed: JSON.stringify(finalText ?? '') },
      };
    }
  }
  const problem = patchProblem(scanFinal(final));
  if (problem) return { failure: 'patch-ambiguous', text: problem };
  return undefined;
}

function invalid(failure: string, text: ResultMessage): ResultCheck {
  return { status: 'invalid', failure, text, detail: resultCheckText(text, english) };
}

function unsigned(
  text: ResultMessage,
  patches: readonly ReviewPatch[] = [],
  links: readonly PatchLink[] = [],
): ResultCheck {
  return { status: 'unsigned', text, detail: resultCheckText(text, english), ...patchFields(patches, links) };
}

/**
 * The patch of a development-tool agent (Gemini CLI's server), which returns no patch artifact: built from
 * the edits its tool calls reported, once the delegation ended (finished by the user, or a terminal
 * state), relative to the workspace root it reported. Undefined when it made no edit or is no such agent.
 */
function toolCallResult(input: ResultCheckInput): ResultCheck | undefined {
  const { journal, final } = input;
  if (!journal.devTool) return undefined;
  if (journal.finishedBy !== 'user' && !isTerminalTaskState(journal.taskState)) return undefined;
  const calls = journal.toolCalls();
  const built = toolCallsPatch(calls, workspaceRootOf(calls));
  if (!built) return undefined;
  if (built.kind === 'outside')
    return invalid('tool-calls-outside', { code: 'tool-calls-outside', root: built.root ?? '', paths: built.paths });
  const bytes = Buffer.from(built.text, 'utf8');
  const signed = input.signaturesPromised || typeof final?.metadata?.[META.envelope] === 'string';
  return unsigned({ code: 'tool-calls', files: built.files.length, signed }, [
    {
      artifactId: 'tool-calls',
      name: 'tool-calls',
      source: 'tool-calls',
      signature: 'unsigned',
      bytes,
      sha256: sha256(bytes),
    },
  ]);
}

/** Checks a settled delegation's result; see the file comment for what `verified` guarantees. */
export async function checkResult(input: ResultCheckInput): Promise<ResultCheck> {
  const { journal, final, signer } = input;
  const taskId = journal.taskId;
  if (!taskId) return unsigned({ code: 'no-task' });
  const fromTools = toolCallResult(input);
  if (fromTools) return fromTools;
  if (!isTerminalTaskState(journal.taskState)) return unsigned({ code: 'not-finished' });
  if (!final) {
    if (input.signaturesPromised) return invalid('no-final-task', { code: 'no-final-task' });
    const streamed = journal.patch();
    const bytes = streamed && streamed.otherParts.length === 0 ? Buffer.from(streamed.text, 'utf8') : undefined;
    const name = streamed?.name || streamed?.filename || streamed?.artifactId || '';
    return unsigned(
      { code: 'no-signature', streamedDiffers: false },
      streamed && bytes
        ? [
            {
              artifactId: streamed.artifactId,
              name,
              source: 'artifact',
              signature: 'unsigned',
              bytes,
              sha256: sha256(bytes),
            },
          ]
        : [],
    );
  }
  const artifacts = final.artifacts.map((a) => Artifact.toJSON(a) as unknown as ArtifactLike);
  const jws = final.metadata?.[META.envelope];
  const checkable = typeof jws === 'string' && input.keys.length > 0;
  if (!checkable) {
    if (input.signaturesPromised) {
      return typeof jws === 'string'
        ? invalid('unknown-key', { code: 'unknown-key', signer })
        : invalid('unsigned', { code: 'promised-unsigned', signer });
    }
    const bad = ambiguity(journal, final, artifacts, false);
    if (bad) return invalid(bad.failure, bad.text);
    const scan = scanFinal(final);
    const streamedDiffers = journal.artifactConflicts().length > 0;
    return unsigned(
      typeof jws === 'string'
        ? { code: 'no-pinned-key', signer, streamedDiffers }
        : { code: 'no-signature', streamedDiffers },
      reviewPatches(scan, false),
      linksOf(scan),
    );
  }
  const r = await verifyResultEnvelope(jws, {
    keys: input.keys,
    taskId,
    contextId: journal.contextId ?? final.contextId,
    artifacts,
    requestDigest: sentRequestDigests(journal.request),
    state: taskStateToJSON(journal.taskState ?? final.status?.state ?? 0),
    status: TaskStatus.toJSON(final.status ?? { state: 0, message: undefined, timestamp: undefined }) as Record<
      string,
      unknown
    >,
  });
  if (!r.ok) {
    // A2A 0.3 cannot carry all of a 1.0 message (part media types, file names, part metadata), so what
    // the agent received and signed is not what was sent: that is not verified either, but say why.
    const version = journal.request.agent.protocolVersion;
    const legacy = r.failure === 'request-mismatch' && version.startsWith('0.');
    return invalid(
      r.failure,
      legacy ? { code: 'envelope-legacy', detail: r.message, version } : { code: 'envelope', detail: r.message },
    );
  }
  const bad = ambiguity(journal, final, artifacts, true);
  if (bad) return invalid(bad.failure, bad.text);
  const scan = scanFinal(final);
  const executor = r.envelope.executor;
  const text: ResultMessage = { code: 'verified', signer, kid: r.key.kid };
  return {
    status: 'verified',
    text,
    detail: resultCheckText(text, english),
    kid: r.key.kid,
    ...patchFields(reviewPatches(scan, true), linksOf(scan)),
    ...(executor && typeof executor === 'object' ? { executor } : {}),
  };
}
