/**
 * Builds the first message of a delegation from explicit context only: the task
 * text, the selection (file, range, text), chosen files and chosen diagnostics travel as message parts,
 * each with its digest; the repository, base commit and a digest of the uncommitted state travel in
 * message metadata so the result can be checked against drift. Nothing else is sent.
 *
 * Pure: the SHA-256 is a parameter (src/node passes node:crypto's) so this runs anywhere.
 */
import type { Message, Part } from '@a2a-js/sdk';
import { Role } from '@a2a-js/sdk';
import { META } from '../batonProfile';
import type { CapabilitySet, ContextDigest } from '../delegation';
import { sha256, toHex } from '../jcs';

/** Lowercase hex SHA-256 of the UTF-8 bytes of `text`. */
export type Sha256Hex = (text: string) => string;

/** The pure SHA-256 from src/core/jcs.ts; src/node may pass node:crypto's for speed. */
export const pureSha256Hex: Sha256Hex = (text) => toHex(sha256(text));

/** 0-based, like VS Code's `Range`. */
export interface TextRange {
  readonly startLine: number;
  readonly startCharacter: number;
  readonly endLine: number;
  readonly endCharacter: number;
}

export interface SelectionContext {
  /** Repository-relative path, `/`-separated. */
  readonly path: string;
  readonly range: TextRange;
  readonly text: string;
  readonly languageId?: string;
}

export interface FileContext {
  readonly path: string;
  readonly text: string;
  readonly languageId?: string;
}

export interface DiagnosticContext {
  readonly path: string;
  readonly range: TextRange;
  readonly severity: 'error' | 'warning' | 'information' | 'hint';
  readonly message: string;
  readonly source?: string;
  readonly code?: string;
}

export interface RepositoryContext {
  /** The repository's top level, as the agent's machine sees it (for a local gateway: this machine). */
  readonly root: string;
  readonly baseCommit: string;
  /** `sha256:<hex>` of the uncommitted state (computed by the caller from git). */
  readonly uncommittedDigest: string;
}

export interface DelegationMessageInput {
  /** UUID; becomes the message's `messageId`. */
  readonly requestId: string;
  readonly task: string;
  readonly selection?: SelectionContext;
  readonly files?: readonly FileContext[];
  readonly diagnostics?: readonly DiagnosticContext[];
  /** Repository-relative paths named for the agent to read itself (their text does not travel). */
  readonly paths?: readonly string[];
  /** Paths open with unsaved changes: the agent's copy of the repository has their saved text. */
  readonly unsaved?: readonly string[];
  readonly repository?: RepositoryContext;
  /** The capabilities the user asked for (the agent reports the effective ones). */
  readonly capabilities: CapabilitySet;
  /** Epoch ms. */
  readonly deadline?: number;
  /** Agent ids from the root delegation down to this one's agent (see guards.ts). */
  readonly chain: readonly string[];
}

export const TEXT_MEDIA_TYPE = 'text/plain';
export const DIAGNOSTICS_MEDIA_TYPE = 'application/json';

export function digestText(text: string, sha256Hex: Sha256Hex): string {
  return `sha256:${sha256Hex(text)}`;
}

function rangeJson(r: TextRange): Record<string, number> {
  return { startLine: r.startLine, startCharacter: r.startCharacter, endLine: r.endLine, endCharacter: r.endCharacter };
}

function textPart(text: string, filename: string, metadata: Record<string, unknown>): Part {
  return { content: { $case: 'text', value: text }, filename, mediaType: TEXT_MEDIA_TYPE, metadata };
}

/**
 * The first message and the digests of what it carries. Parts, in order: the task, the selection, the
 * files, the diagnostics (one data part). Digests cover exactly the content that travels.
 */
export function buildDelegationMessage(
  input: DelegationMessageInput,
  sha256Hex: Sha256Hex = pureSha256Hex,
): { message: Message; contextDigests: ContextDigest[] } {
  const parts: Part[] = [
    { content: { $case: 'text', value: input.task }, filename: '', mediaType: TEXT_MEDIA_TYPE, metadata: undefined },
  ];
  const digests: ContextDigest[] = [];
  if (input.selection) {
    const s = input.selection;
    const digest = digestText(s.text, sha256Hex);
    parts.push(
      textPart(s.text, s.path, {
        [META.context]: 'selection',
        [META.digest]: digest,
        [META.range]: rangeJson(s.range),
        ...(s.languageId ? { languageId: s.languageId } : {}),
      }),
    );
    digests.push({ kind: 'selection', path: s.path, digest });
  }
  for (const f of input.files ?? []) {
    const digest = digestText(f.text, sha256Hex);
    parts.push(
      textPart(f.text, f.path, {
        [META.context]: 'file',
        [META.digest]: digest,
        ...(f.languageId ? { languageId: f.languageId } : {}),
      }),
    );
    digests.push({ kind: 'file', path: f.path, digest });
  }
  if (input.diagnostics && input.diagnostics.length > 0) {
    // Fixed key order, so the digest is reproducible from the data part as received.
    const value = input.diagnostics.map((d) => ({
      path: d.path,
      range: rangeJson(d.range),
      severity: d.severity,
      message: d.message,
      ...(d.source !== undefined ? { source: d.source } : {}),
      ...(d.code !== undefined ? { code: d.code } : {}),
    }));
    const digest = digestText(JSON.stringify(value), sha256Hex);
    parts.push({
      content: { $case: 'data', value },
      filename: '',
      mediaType: DIAGNOSTICS_MEDIA_TYPE,
      metadata: { [META.context]: 'diagnostics', [META.digest]: digest },
    });
    digests.push({ kind: 'diagnostics', digest });
  }
  const metadata: Record<string, unknown> = {
    [META.capabilities]: {
      write: input.capabilities.write,
      shell: input.capabilities.shell,
      network: input.capabilities.network,
    },
    [META.chain]: [...input.chain],
  };
  if (input.deadline !== undefined) metadata[META.deadline] = new Date(input.deadline).toISOString();
  const files = [
    ...new Set([
      ...(input.selection ? [input.selection.path] : []),
      ...(input.files ?? []).map((f) => f.path),
      ...(input.paths ?? []),
    ]),
  ];
  if (files.length > 0) metadata[META.files] = files;
  if (input.repository) {
    metadata[META.repository] = input.repository.root;
    metadata[META.baseCommit] = input.repository.baseCommit;
    metadata[META.uncommittedDigest] = input.repository.uncommittedDigest;
    digests.push({ kind: 'uncommitted', digest: input.repository.uncommittedDigest });
  }
  if (input.unsaved && input.unsaved.length > 0) metadata[`${META.files}.unsaved`] = [...input.unsaved];
  const message: Message = {
    messageId: input.requestId,
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts,
    metadata,
    extensions: [],
    referenceTaskIds: [],
  };
  return { message, contextDigests: digests };
}

/** A reply to `input-required`: continues the same task (same `taskId` and `contextId`). */
export function buildReplyMessage(messageId: string, taskId: string, contextId: string, text: string): Message {
  return {
    messageId,
    contextId,
    taskId,
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, filename: '', mediaType: TEXT_MEDIA_TYPE, metadata: undefined }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}
