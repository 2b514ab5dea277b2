/**
 * Applying a patch to a plain folder (no git): jsdiff computes each file's new text in memory first
 * (that is the check), and only when every chosen file fits are the files written, after a snapshot,
 * so the guarantees match the git path. Text must be UTF-8 (a byte-exact round trip); binary patches,
 * symlinks and submodules need git.
 */
import type { PatchFile } from '../core/patch/patchModel';
import { applyHunks } from '../core/patch/patchText';
import type { SelectedFile } from '../core/patch/subPatch';
import { readState } from './patchSnapshot';

export type PlannedWrite =
  { readonly kind: 'file'; readonly content: Buffer; readonly mode: number } | { readonly kind: 'delete' };

export interface PlainPlan {
  /** Final state of each touched path, in write order. */
  readonly writes: ReadonlyMap<string, PlannedWrite>;
  /** Errors per file id (a file with errors has no writes). */
  readonly errors: ReadonlyMap<string, readonly string[]>;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function modeBits(gitMode: string | undefined, fallback: number): number {
  if (gitMode === undefined) return fallback;
  return /^100[0-7]{3}$/.test(gitMode) && (parseInt(gitMode.slice(3), 8) & 0o111) !== 0
    ? 0o755
    : gitMode === '100644'
      ? 0o644
      : fallback;
}

interface Current {
  exists: boolean;
  text?: string;
  mode?: number;
  error?: string;
}

/** Plans the writes for the chosen files; files are applied in patch order, later ones seeing earlier results. */
export function planPlain(root: string, selected: readonly SelectedFile[]): PlainPlan {
  const writes = new Map<string, PlannedWrite>();
  const errors = new Map<string, string[]>();
  const current = (path: string): Current => {
    const w = writes.get(path);
    if (w)
      return w.kind === 'delete' ? { exists: false } : { exists: true, text: utf8.decode(w.content), mode: w.mode };
    const s = readState(root, path);
    if (s.kind === 'missing') return { exists: false };
    if (s.kind !== 'file') return { exists: true, error: `${path} is not a regular file` };
    try {
      return { exists: true, text: utf8.decode(s.content ?? Buffer.alloc(0)), mode: s.mode };
    } catch {
      return { exists: true, error: `${path} is not UTF-8 text; only git can patch it` };
    }
  };
  for (const { file: f, hunks } of selected) {
    const errs = planFile(f, hunks, current, writes);
    if (errs.length) errors.set(f.id, errs);
  }
  return { writes, errors };
}

function planFile(
  f: PatchFile,
  hunks: SelectedFile['hunks'],
  current: (p: string) => Current,
  writes: Map<string, PlannedWrite>,
): string[] {
  const label = f.newPath ?? f.oldPath ?? f.id;
  if (f.binary) return [`${label}: binary patches can only be applied in a git repository`];
  if ([f.oldMode, f.newMode].some((m) => m === '120000' || m === '160000'))
    return [`${label}: symbolic links and submodules can only be applied in a git repository`];
  if (f.status === 'added') {
    const path = f.newPath ?? '';
    const cur = current(path);
    if (cur.exists) return [`${path} already exists`];
    const text = applyHunks('', hunks);
    if (text === undefined) return [`${path}: the new file's hunks are malformed`];
    writes.set(path, { kind: 'file', content: Buffer.from(text, 'utf8'), mode: modeBits(f.newMode, 0o644) });
    return [];
  }
  const from = f.oldPath ?? '';
  const cur = current(from);
  if (!cur.exists) return [`${from} does not exist (deleted since the agent started?)`];
  if (cur.error !== undefined || cur.text === undefined) return [cur.error ?? `${from} cannot be read`];
  const text = applyHunks(cur.text, hunks);
  if (text === undefined) return [`${from}: a hunk no longer matches the file`];
  if (f.status === 'deleted') {
    if (text !== '') return [`${from}: the file has content the patch does not delete`];
    writes.set(from, { kind: 'delete' });
    return [];
  }
  const to = f.newPath ?? from;
  if (to !== from && current(to).exists) return [`${to} already exists`];
  const mode = f.oldMode !== f.newMode ? modeBits(f.newMode, cur.mode ?? 0o644) : (cur.mode ?? 0o644);
  if (f.status === 'renamed') writes.set(from, { kind: 'delete' });
  writes.set(to, { kind: 'file', content: Buffer.from(text, 'utf8'), mode });
  return [];
}
