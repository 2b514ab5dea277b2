/**
 * The patches each delegation's result check approved for review: exactly the bytes checked, kept in
 * `<requestId>.review.patch` (the first) and `<requestId>.<n>.review.patch` (the n-th of several, from
 * 2) beside the journal (whose result check records their digests), and held
 * in memory with their statistics. The statistics are computed once per patch, when it is stored or
 * read back and verified: the panel shows them on every snapshot, up to 60 a second.
 */
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

  private file(requestId: string, index: number): string {
    return join(this.dir, index === 0 ? `${requestId}.review.patch` : `${requestId}.${index + 1}.review.patch`);
  }

  private key(requestId: string, index: number): string {
    return `${requestId}\u0000${index}`;
  }

  /** Keeps the bytes a check approved (written to disk for after a reload); `index` among several. */
  store(requestId: string, bytes: Buffer, sha256: string, index = 0): ApprovedPatch {
    writeFileSync(this.file(requestId, index), bytes, { mode: 0o600 });
    const patch = { sha256, bytes, stats: patchStats(bytes) };
    this.held.set(this.key(requestId, index), patch);
    return patch;
  }

  /** Drops the delegation's approved patches (the check approved none), or those from `from` on. */
  remove(requestId: string, from = 0): void {
    for (const k of [...this.held.keys()]) {
      const [id, n] = k.split('\u0000');
      if (id === requestId && Number(n) >= from) this.held.delete(k);
    }
    if (from === 0) rmSync(this.file(requestId, 0), { force: true });
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return;
    }
    const prefix = `${requestId}.`;
    for (const name of names) {
      const m = name.startsWith(prefix) ? /^(\d+)\.review\.patch$/.exec(name.slice(prefix.length)) : null;
      if (m && Number(m[1]) - 1 >= Math.max(1, from)) rmSync(join(this.dir, name), { force: true });
    }
  }

  /**
   * The approved patch with this digest: the one held in memory (checked when it was stored, so not
   * hashed again), or read back from disk and checked against the digest. Throws `ApprovedPatchError`.
   */
  get(requestId: string, sha256: string, index = 0): ApprovedPatch {
    const key = this.key(requestId, index);
    const held = this.held.get(key);
    if (held?.sha256 === sha256) return held;
    let bytes: Buffer;
    try {
      bytes = readFileSync(this.file(requestId, index));
    } catch {
      throw new ApprovedPatchError('missing');
    }
    if (patchDigest(bytes) !== sha256) {
      this.held.delete(key);
      throw new ApprovedPatchError('changed');
    }
    const patch = { sha256, bytes, stats: patchStats(bytes) };
    this.held.set(key, patch);
    return patch;
  }
}
