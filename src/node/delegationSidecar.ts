/**
 * Per-delegation facts the journal does not hold, in `<requestId>.baton.json` beside it: the folder
 * the delegation was started from and the repository's state then (the base a review checks drift
 * against). Written once, when the delegation starts.
 *
 * Older versions also kept the result check here (signature, executor, the approved patch's digest);
 * it is now a `resultCheck` entry in the journal. `adoptLegacyResultCheck` gives a journal those
 * versions wrote the entry they would have written, so it shows the same as before.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DelegationJournal, ExecutorInfo, JournalEntry } from '../core/delegation';
import type { WorkingState } from './patchDrift';
import { isRecord } from '../core/isRecord';

export interface DelegationSidecar {
  /** The repository (or folder) the delegation was started from; '' when none was open. */
  readonly folder: string;
  readonly base?: WorkingState;
}

export function sidecarPath(dir: string, requestId: string): string {
  return join(dir, `${requestId}.baton.json`);
}

function readJson(dir: string, requestId: string): Record<string, unknown> | undefined {
  const file = sidecarPath(dir, requestId);
  if (!existsSync(file)) return undefined;
  try {
    const raw: unknown = JSON.parse(readFileSync(file, 'utf8'));
    return isRecord(raw) ? (raw as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The sidecar, or undefined when there is none or it cannot be read. */
export function readSidecar(dir: string, requestId: string): DelegationSidecar | undefined {
  const raw = readJson(dir, requestId);
  if (!raw) return undefined;
  const base = raw.base;
  return {
    folder: typeof raw.folder === 'string' ? raw.folder : '',
    ...(typeof base === 'object' && base !== null ? { base: base as WorkingState } : {}),
  };
}

export function writeSidecar(dir: string, requestId: string, sidecar: DelegationSidecar): void {
  writeFileSync(sidecarPath(dir, requestId), JSON.stringify(sidecar), { mode: 0o600 });
}

const optionalString = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** The result check an older version kept in a sidecar, as the journal entry this version writes. */
export function legacyResultCheck(raw: Record<string, unknown>, at: number): JournalEntry | undefined {
  const sig = raw.signature as { status?: unknown; detail?: unknown } | undefined;
  const status = sig?.status;
  if (status !== 'verified' && status !== 'invalid' && status !== 'unsigned') return undefined;
  const label = optionalString(raw.executor);
  const kind = optionalString(raw.executorKind);
  const detail = optionalString(raw.executorDetail);
  const executor: ExecutorInfo | undefined = label
    ? {
        label,
        ...(kind !== undefined ? { kind } : {}),
        ...(detail !== undefined ? { detail } : {}),
        ...(typeof raw.confined === 'boolean' ? { confined: raw.confined } : {}),
      }
    : undefined;
  const patch = raw.patch as { artifactId?: unknown; sha256?: unknown } | undefined;
  const artifactId = optionalString(patch?.artifactId);
  const sha256 = optionalString(patch?.sha256);
  return {
    kind: 'resultCheck',
    at,
    signature: { status, detail: optionalString(sig?.detail) ?? '' },
    ...(executor ? { executor } : {}),
    ...(artifactId !== undefined && sha256 !== undefined ? { patch: { artifactId, sha256 } } : {}),
  };
}

/**
 * For a journal with no result check of its own, applies the one an older version kept in its
 * sidecar (in memory: the file stays as that version wrote it). Returns whether it did.
 */
export function adoptLegacyResultCheck(dir: string, journal: DelegationJournal, at: number): boolean {
  if (journal.resultCheck) return false;
  const raw = readJson(dir, journal.requestId);
  const entry = raw && legacyResultCheck(raw, at);
  if (!entry) return false;
  journal.apply(entry);
  return true;
}
