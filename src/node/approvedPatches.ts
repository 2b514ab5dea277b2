/**
 * The patch each delegation's result check approved for review: exactly the bytes checked, kept in
 * `<requestId>.review.patch` beside the journal (whose result check records their digest), and held
 * in memory with their statistics. The statistics are computed once per patch, when it is stored or
 * read back and verified: the panel shows them on every snapshot, up to 60 a second.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parsePatchText } from '../core/patch';
import type { PatchStats } from '../core/protocol/delegationView';
import { sha256Hex } from './journalStore';

export interface ApprovedPatch {
  /** `sha256:<hex>` of `bytes`. */
  readonly sha256: string;
  readonly bytes: Buffer;
  /** Undefined when the bytes do not parse as a patch (a review then says why). */
  readonly stats: PatchStats | undefined;
}

/** Why approved bytes cannot be had: the file is gone, or it no longer has the approved digest. */
export class ApprovedPatchError extends Error {
  override readonly name = 'ApprovedPatchError';
  constructor(readonly reason: 'missing' | 'changed') {
    super(reason === 'missing' ? 'the approved patch is missing' : 'the approved patch changed since it was checked');
  }
}

export function patchDigest(bytes: Uint8Array): string {
  return `sha256:${sha256Hex(bytes)}`;
}

/** Files and added/removed lines of a patch; undefined when it does not parse. */
export function patchStats(bytes: Uint8Array): PatchStats | undefined {
  try {
    const parsed = parsePatchText(Buffer.from(bytes).toString('utf8'));
    return {
      files: parsed.files.length,
      additions: parsed.files.reduce((n, f) => n + f.added, 0),
      deletions: parsed.files.reduce((n, f) => n + f.removed, 0),
    };
  } catch {
    return undefined;
  }
}

export class ApprovedPatches {
  private readonly held = new Map<string, ApprovedPatch>();

  constructor(private readonly dir: string) {}

  private file(requestId: string): string {
    return join(this.dir, `${requestId}.review.patch`);
  }

  /** Keeps the bytes a check approved (written to disk for after a reload). */
  store(requestId: string, bytes: Buffer, sha256: string): ApprovedPatch {
    writeFileSync(this.file(requestId), bytes, { mode: 0o600 });
    const patch = { sha256, bytes, stats: patchStats(bytes) };
    this.held.set(requestId, patch);
    return patch;
  }

  /** Drops the delegation's approved patch (the check approved none). */
  remove(requestId: string): void {
    this.held.delete(requestId);
    rmSync(this.file(requestId), { force: true });
  }

  /**
   * The approved patch with this digest: the one held in memory (checked when it was stored, so not
   * hashed again), or read back from disk and checked against the digest. Throws `ApprovedPatchError`.
   */
  get(requestId: string, sha256: string): ApprovedPatch {
    const held = this.held.get(requestId);
    if (held?.sha256 === sha256) return held;
    let bytes: Buffer;
    try {
      bytes = readFileSync(this.file(requestId));
    } catch {
      throw new ApprovedPatchError('missing');
    }
    if (patchDigest(bytes) !== sha256) {
      this.held.delete(requestId);
      throw new ApprovedPatchError('changed');
    }
    const patch = { sha256, bytes, stats: patchStats(bytes) };
    this.held.set(requestId, patch);
    return patch;
  }
}
