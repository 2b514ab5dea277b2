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
 * again (later events cannot swap it).
 */
import { createHash } from 'node:crypto';
import { Artifact, SendMessageRequest, TaskStatus, taskStateToJSON } from '@a2a-js/sdk';
import type { AgentCard, Task } from '@a2a-js/sdk';
import type { VerifiedKey } from '../core/agentRegistry';
import { META, PATCH_ARTIFACT, SIGNED_RESULT_EXTENSION_URI } from '../core/batonProfile';
import { isTerminalTaskState, partsText } from '../core/delegation';
import { english } from '../core/protocol/l10n';
import { resultCheckText, type ResultMessage } from '../core/resultText';
import type { ArtifactConflict, DelegationJournal, DelegationRequest, JournalEntry } from '../core/delegation';
import { sendMessageParams } from './a2a/delegationRunner';
import { toolCallsPatch, workspaceRootOf } from '../core/devTool';
import { requestDigest, toVerifiedKey, verifyResultEnvelope } from './signing';
import type { ArtifactLike, PublicJwk } from './signing';

/** The patch to review and apply: the bytes that were checked, and their digest to check them again. */
export interface ReviewPatch {
  readonly artifactId: string;
  /** The artifact's text parts, concatenated, UTF-8. */
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
      readonly patch?: ReviewPatch;
      /** Who executed it, as signed (the task's own `baton/executor` metadata is not). */
      readonly executor?: Readonly<Record<string, unknown>>;
    }
  /** No signature was promised and none came: the patch is the final task's, unverified. */
  | { readonly status: 'unsigned'; readonly detail: string; readonly patch?: ReviewPatch }
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

function isPatchArtifact(a: ArtifactLike): boolean {
  return (
    a.name === PATCH_ARTIFACT.name ||
    a.parts.some(
      (p) => typeof p === 'object' && p !== null && (p as { filename?: unknown }).filename === PATCH_ARTIFACT.name,
    )
  );
}

/** The patch among the final artifacts, as bytes; a message says why there is no single text patch. */
function patchOf(artifacts: readonly ArtifactLike[]): ReviewPatch | undefined | ResultMessage {
  const patches = artifacts.filter(isPatchArtifact);
  if (patches.length === 0) return undefined;
  if (patches.length > 1)
    return { code: 'patch-ambiguous', count: patches.length, ids: patches.map((p) => p.artifactId) };
  const [p] = patches;
  const texts: string[] = [];
  for (const part of p.parts) {
    const text = typeof part === 'object' && part !== null ? (part as { text?: unknown }).text : undefined;
    if (typeof text !== 'string') return { code: 'patch-not-text' };
    texts.push(text);
  }
  const bytes = Buffer.from(texts.join(''), 'utf8');
  return { artifactId: p.artifactId, bytes, sha256: sha256(bytes) };
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

/** A ReviewPatch, or nothing when `patchOf` found none or said why not. */
function isReviewPatch(p: ReturnType<typeof patchOf>): p is ReviewPatch {
  return p !== undefined && 'bytes' in p;
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
  const patch = patchOf(artifacts);
  if (patch !== undefined && !isReviewPatch(patch)) return { failure: 'patch-ambiguous', text: patch };
  return undefined;
}

function invalid(failure: string, text: ResultMessage): ResultCheck {
  return { status: 'invalid', failure, text, detail: resultCheckText(text, english) };
}

function unsigned(text: ResultMessage, patch?: ReviewPatch): ResultCheck {
  return { status: 'unsigned', text, detail: resultCheckText(text, english), ...(patch ? { patch } : {}) };
}

/**
 * The patch of a development-tool agent (Gemini CLI's server), which returns no patch artifact: built from
 * the edits its tool calls reported, once the delegation ended (finished by the user, or a terminal
 * state), relative to the workspace root it reported. Undefined when it made no edit or is no such agent.
 */
function toolCallResult(journal: DelegationJournal): ResultCheck | undefined {
  if (!journal.devTool) return undefined;
  if (journal.finishedBy !== 'user' && !isTerminalTaskState(journal.taskState)) return undefined;
  const calls = journal.toolCalls();
  const built = toolCallsPatch(calls, workspaceRootOf(calls));
  if (!built) return undefined;
  if (built.kind === 'outside')
    return invalid('tool-calls-outside', { code: 'tool-calls-outside', root: built.root ?? '', paths: built.paths });
  const bytes = Buffer.from(built.text, 'utf8');
  return unsigned(
    { code: 'tool-calls', files: built.files.length },
    { artifactId: 'tool-calls', bytes, sha256: sha256(bytes) },
  );
}

/** Checks a settled delegation's result; see the file comment for what `verified` guarantees. */
export async function checkResult(input: ResultCheckInput): Promise<ResultCheck> {
  const { journal, final, signer } = input;
  const taskId = journal.taskId;
  if (!taskId) return unsigned({ code: 'no-task' });
  const fromTools = toolCallResult(journal);
  if (fromTools) return fromTools;
  if (!isTerminalTaskState(journal.taskState)) return unsigned({ code: 'not-finished' });
  if (!final) {
    if (input.signaturesPromised) return invalid('no-final-task', { code: 'no-final-task' });
    const streamed = journal.patch();
    const bytes = streamed && streamed.otherParts.length === 0 ? Buffer.from(streamed.text, 'utf8') : undefined;
    return unsigned(
      { code: 'no-signature', streamedDiffers: false },
      streamed && bytes ? { artifactId: streamed.artifactId, bytes, sha256: sha256(bytes) } : undefined,
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
    const patch = patchOf(artifacts);
    const streamedDiffers = journal.artifactConflicts().length > 0;
    return unsigned(
      typeof jws === 'string'
        ? { code: 'no-pinned-key', signer, streamedDiffers }
        : { code: 'no-signature', streamedDiffers },
      isReviewPatch(patch) ? patch : undefined,
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
  const patch = patchOf(artifacts);
  const executor = r.envelope.executor;
  const text: ResultMessage = { code: 'verified', signer, kid: r.key.kid };
  return {
    status: 'verified',
    text,
    detail: resultCheckText(text, english),
    kid: r.key.kid,
    ...(isReviewPatch(patch) ? { patch } : {}),
    ...(executor && typeof executor === 'object' ? { executor } : {}),
  };
}
