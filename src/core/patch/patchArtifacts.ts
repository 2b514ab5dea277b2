/**
 * Which of an agent's artifacts (and final message) is a unified diff, whatever the agent called it.
 * Baton's own agents return `changes.patch`; agents written elsewhere return `fix.diff`, a file part
 * typed `text/x-patch`, a text artifact named `result` that holds a git diff, or a fenced ```diff block
 * in their last message. One artifact is a patch when:
 *
 * - it is named `changes.patch` (artifact name or a part's filename): its text parts are the patch, as
 *   they always were, and any other part makes it unusable;
 * - a part's media type is `text/x-diff` or `text/x-patch` (parameters such as `charset` ignored), or
 *   the artifact or a part is named `*.diff` / `*.patch`: its text parts, and file parts whose bytes
 *   are inline, are the patch; a file part given by URL is named, not fetched;
 * - its text parses as a git or unified diff (the project's own parser; prose that merely mentions
 *   `--- a/` does not), or holds fenced ```diff / ```patch blocks that do.
 *
 * In the agent's final message only the content decides for text (a message is prose, whatever media
 * type its parts carry); a file part in it counts as in an artifact.
 *
 * Pure: the bytes are returned as they are found, and the caller decides what is verified.
 */
import { concatBytes } from './bytes';
import type { Artifact, Part } from '@a2a-js/sdk';
import { PATCH_ARTIFACT } from '../batonProfile';
import { parsePatchBytes } from './patchParser';

const DIFF_MEDIA_TYPES = new Set(['text/x-diff', 'text/x-patch', 'text/diff', 'application/x-patch']);

/** `text/x-diff`, `text/x-patch` (and their rarer spellings), with or without parameters. */
export function isDiffMediaType(mediaType: string | undefined): boolean {
  if (!mediaType) return false;
  return DIFF_MEDIA_TYPES.has(mediaType.split(';')[0].trim().toLowerCase());
}

/** A file name that says it holds a patch: `*.diff` or `*.patch`. */
export function isPatchFileName(name: string | undefined): boolean {
  return typeof name === 'string' && /\.(diff|patch)$/i.test(name.trim());
}

const utf8 = new TextEncoder();

/**
 * Whether `text` as a whole is a git or unified diff: it starts with `diff --git ` (or `--- ` followed
 * by `+++ `), the patch parser reads it, and each file of a plain unified diff has hunks. A document
 * that only mentions diff headers fails one of these.
 */
export function isDiffText(text: string): boolean {
  const body = text.replace(/^(?:[ \t]*\r?\n)+/, '');
  const git = body.startsWith('diff --git ');
  if (!git && !/^--- \S[^\n]*\r?\n\+\+\+ \S/.test(body)) return false;
  try {
    const parsed = parsePatchBytes(utf8.encode(body));
    return parsed.files.length > 0 && (git || parsed.files.every((f) => f.hunks.length > 0));
  } catch {
    return false;
  }
}

/** The fenced ```diff (or ```patch) blocks in markdown text whose content is a diff, in order. */
export function fencedDiffs(text: string): string[] {
  const out: string[] = [];
  const fence = /^([ \t]{0,3})(`{3,}|~{3,})[ \t]*(diff|patch|udiff)[ \t]*\r?\n([\s\S]*?)^[ \t]{0,3}\2[`~]*[ \t]*$/gim;
  for (const m of text.matchAll(fence)) {
    const body = m[4];
    if (isDiffText(body)) out.push(body);
  }
  return out;
}

/** The diff in agent text: the whole text when it is one, else its fenced diff blocks joined. */
export function diffInText(text: string): string | undefined {
  if (isDiffText(text)) return text;
  const blocks = fencedDiffs(text);
  return blocks.length ? blocks.map((b) => (b.endsWith('\n') ? b : `${b}\n`)).join('') : undefined;
}

/** Where a patch was found: an artifact (signed with the result when it is signed) or the agent's message. */
/** Where a patch came from: an artifact, a diff in the agent's final message, or the edits its tool calls reported. */
export type PatchSource = 'artifact' | 'message' | 'tool-calls';

/** A patch found in a result: its bytes as the agent sent them. */
export interface FoundPatch {
  /** The artifact's id, or `message:<messageId>` for a diff in the agent's final message. */
  readonly artifactId: string;
  /** What to call it: the artifact's name or file name, or "message". */
  readonly name: string;
  readonly source: PatchSource;
  readonly bytes: Uint8Array;
}

/** Why an artifact that is a patch cannot be reviewed. */
export type PatchProblem =
  /** `changes.patch` with a part that is not text. */
  | { readonly kind: 'not-text'; readonly artifactId: string; readonly name: string }
  /** The patch is a link: Baton does not download it. */
  | { readonly kind: 'url'; readonly artifactId: string; readonly name: string; readonly url: string };

export interface PatchScan {
  /** Every patch found, artifacts in their order first, then the message's. */
  readonly patches: readonly FoundPatch[];
  readonly problems: readonly PatchProblem[];
  /** Artifacts named `changes.patch`: more than one is ambiguous (the gateway returns one). */
  readonly named: readonly string[];
}

function isNamedPatch(a: Artifact): boolean {
  return a.name === PATCH_ARTIFACT.name || a.parts.some((p) => p.filename === PATCH_ARTIFACT.name);
}

function textOf(parts: readonly Part[]): string {
  return parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
}

/** What an artifact says about being a patch, without reading its content. */
function declaresPatch(name: string, parts: readonly Part[]): boolean {
  return isPatchFileName(name) || parts.some((p) => isDiffMediaType(p.mediaType) || isPatchFileName(p.filename));
}

type PartsResult =
  { readonly kind: 'patch'; readonly bytes: Uint8Array } | { readonly kind: 'url'; readonly url: string } | undefined;

/** The patch in parts: declared ones give their text and inline bytes; others only a diff in their text. */
function patchInParts(name: string, parts: readonly Part[]): PartsResult {
  if (declaresPatch(name, parts)) {
    const chunks: Uint8Array[] = [];
    let url: string | undefined;
    for (const p of parts) {
      const c = p.content;
      if (c?.$case === 'text') chunks.push(utf8.encode(c.value));
      else if (c?.$case === 'raw') chunks.push(c.value);
      else if (c?.$case === 'url') url ??= c.value;
    }
    if (chunks.length) {
      const bytes = concatBytes(chunks);
      if (bytes.length > 0) return { kind: 'patch', bytes };
    }
    return url !== undefined ? { kind: 'url', url } : undefined;
  }
  const diff = diffInText(textOf(parts));
  return diff !== undefined ? { kind: 'patch', bytes: utf8.encode(diff) } : undefined;
}

/** A text part with its media type and file name left out: only its content decides. */
function asPlainText(p: Part): Part {
  return { ...p, mediaType: '', filename: '' };
}

/** Whether an artifact is a patch (for a list of artifacts; `scanPatches` says which bytes). */
export function isPatchArtifact(a: Artifact): boolean {
  return isNamedPatch(a) || patchInParts(a.name, a.parts) !== undefined;
}

/**
 * The patches among a result's artifacts and in its final agent message (`messageId` and `parts`).
 * `changes.patch` keeps its own rules (text parts only, exactly one); any other recognised artifact is
 * one more patch for the user to choose from.
 */
export function scanPatches(
  artifacts: readonly Artifact[],
  message?: { readonly messageId: string; readonly parts: readonly Part[] },
): PatchScan {
  const patches: FoundPatch[] = [];
  const problems: PatchProblem[] = [];
  const named: string[] = [];
  for (const a of artifacts) {
    const name = a.name || a.parts.find((p) => p.filename)?.filename || a.artifactId;
    if (isNamedPatch(a)) {
      named.push(a.artifactId);
      if (a.parts.some((p) => p.content?.$case !== 'text')) {
        problems.push({ kind: 'not-text', artifactId: a.artifactId, name });
        continue;
      }
      patches.push({ artifactId: a.artifactId, name, source: 'artifact', bytes: utf8.encode(textOf(a.parts)) });
      continue;
    }
    const found = patchInParts(a.name, a.parts);
    if (found?.kind === 'patch')
      patches.push({ artifactId: a.artifactId, name, source: 'artifact', bytes: found.bytes });
    else if (found?.kind === 'url') problems.push({ kind: 'url', artifactId: a.artifactId, name, url: found.url });
  }
  if (message) {
    // A message's text is the agent's prose whatever its media type says: only a diff in it counts. Its
    // file parts count as an artifact's do.
    const files = message.parts.filter(
      (p) =>
        (p.content?.$case === 'raw' || p.content?.$case === 'url') &&
        (isDiffMediaType(p.mediaType) || isPatchFileName(p.filename)),
    );
    const texts = message.parts.filter((p) => p.content?.$case === 'text');
    const found = files.length ? patchInParts('', files) : patchInParts('', texts.map(asPlainText));
    const artifactId = `message:${message.messageId}`;
    if (found?.kind === 'patch') patches.push({ artifactId, name: 'message', source: 'message', bytes: found.bytes });
    else if (found?.kind === 'url') problems.push({ kind: 'url', artifactId, name: 'message', url: found.url });
  }
  // The gateway's own changes.patch comes first: it is the one reviewed when nobody chooses.
  patches.sort((x, y) => Number(named.includes(y.artifactId)) - Number(named.includes(x.artifactId)));
  return { patches, problems, named };
}
