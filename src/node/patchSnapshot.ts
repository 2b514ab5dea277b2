/**
 * Snapshots of the files a patch touches, taken before anything is written, so that a failed, partial,
 * aborted or undone apply puts the user's files back byte for byte (contents, mode, existence, and
 * symlinks as links). Synchronous fs calls on purpose: a few thousand small reads in a tight loop are
 * faster than as many promises, and the snapshot must be complete before git starts writing.
 */
import { createHash } from 'node:crypto';
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  readdirSync,
  rmdirSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';

export type FileKind = 'file' | 'symlink' | 'missing' | 'other';

export interface FileState {
  /** Repository-relative, '/'-separated. */
  readonly path: string;
  readonly kind: FileKind;
  /** Permission bits (e.g. 0o644), for files. */
  readonly mode: number | undefined;
  /** Contents for files, link target for symlinks. */
  readonly content: Buffer | undefined;
  /** `sha256:<hex>` of the contents plus the mode (or link target), or null when missing. */
  readonly digest: string | null;
}

export interface Snapshot {
  readonly root: string;
  readonly files: ReadonlyMap<string, FileState>;
  /** The nearest ancestor folder of each path that existed, so folders an apply created can be removed. */
  readonly existingDirs: ReadonlySet<string>;
  readonly takenAt: string;
}

export class SnapshotError extends Error {
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(message);
    this.name = 'SnapshotError';
  }
}

/** `sha256:…` of a file's bytes and type/mode: equal digests mean the same content and mode. */
export function digestBytes(content: Buffer | Uint8Array, kind: 'file' | 'symlink', mode: number | undefined): string {
  const h = createHash('sha256');
  h.update(kind === 'symlink' ? 'l' : `f${(mode ?? 0).toString(8)}`);
  h.update('\0');
  h.update(content);
  return `sha256:${h.digest('hex')}`;
}

/** Resolves a repository-relative path and refuses one that would leave the root. */
export function insideRoot(root: string, path: string): string {
  if (path === '' || isAbsolute(path) || /^[A-Za-z]:/.test(path) || path.includes('\0'))
    throw new SnapshotError(`Refusing the path ${JSON.stringify(path)}: it is not inside the repository.`, path);
  const abs = resolve(root, path);
  const rel = relative(root, abs);
  if (rel === '' || rel === '..' || rel.startsWith('..' + sep) || isAbsolute(rel))
    throw new SnapshotError(`Refusing the path ${JSON.stringify(path)}: it is not inside the repository.`, path);
  return abs;
}

/** Reads one path's current state (no following of a final symlink). */
export function readState(root: string, path: string, keepContent = true): FileState {
  const abs = insideRoot(root, path);
  let st;
  try {
    st = lstatSync(abs);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR')
      return { path, kind: 'missing', mode: undefined, content: undefined, digest: null };
    throw e;
  }
  if (st.isSymbolicLink()) {
    const target = Buffer.from(readlinkSync(abs, { encoding: 'buffer' }));
    return {
      path,
      kind: 'symlink',
      mode: undefined,
      content: target,
      digest: digestBytes(target, 'symlink', undefined),
    };
  }
  if (!st.isFile())
    return { path, kind: 'other', mode: st.mode & 0o7777, content: undefined, digest: `other:${st.mode.toString(8)}` };
  const content = readFileSync(abs);
  const mode = st.mode & 0o7777;
  if (!keepContent) return { path, kind: 'file', mode, content: undefined, digest: digestBytes(content, 'file', mode) };
  // A snapshot keeps the bytes; their digest is computed when first needed (a record, a restore), off
  // the apply's hot path.
  const state = { path, kind: 'file', mode, content } as FileState;
  let digest: string | undefined;
  Object.defineProperty(state, 'digest', {
    enumerable: true,
    get: () => (digest ??= digestBytes(content, 'file', mode)),
  });
  return state;
}

/** Current digest of a path (null when missing). */
export function currentDigest(root: string, path: string): string | null {
  return readState(root, path, false).digest;
}

/**
 * Refuses paths that go through a symlinked folder: writing there would land outside the repository
 * (git refuses the same, "beyond a symbolic link").
 */
function checkAncestors(root: string, path: string, seen: Map<string, boolean>, existing: Set<string>): void {
  const parts = path.split('/');
  let cur = '';
  for (let i = 0; i < parts.length - 1; i++) {
    cur = cur ? `${cur}/${parts[i]}` : parts[i];
    let exists = seen.get(cur);
    if (exists === undefined) {
      try {
        const st = lstatSync(join(root, cur));
        if (st.isSymbolicLink())
          throw new SnapshotError(`Refusing ${path}: its folder ${cur} is a symbolic link.`, path);
        exists = st.isDirectory();
      } catch (e) {
        if (e instanceof SnapshotError) throw e;
        exists = false;
      }
      seen.set(cur, exists);
    }
    if (exists) existing.add(cur);
    else return;
  }
}

export function takeSnapshot(root: string, paths: Iterable<string>): Snapshot {
  const files = new Map<string, FileState>();
  const seen = new Map<string, boolean>();
  const existingDirs = new Set<string>();
  for (const p of paths) {
    if (files.has(p)) continue;
    checkAncestors(root, p, seen, existingDirs);
    const s = readState(root, p);
    if (s.kind === 'other')
      throw new SnapshotError(`Refusing ${p}: it is not a regular file (a folder or device is in the way).`, p);
    files.set(p, s);
  }
  return { root, files, existingDirs, takenAt: new Date().toISOString() };
}

/** Paths whose current state differs from the snapshot. */
export function changedSince(snapshot: Snapshot): string[] {
  const out: string[] = [];
  for (const s of snapshot.files.values()) if (currentDigest(snapshot.root, s.path) !== s.digest) out.push(s.path);
  return out;
}

function removeEmptyDirsUpTo(root: string, path: string, keep: ReadonlySet<string>): void {
  let dir = dirname(path);
  while (dir !== '.' && dir !== '' && !keep.has(dir)) {
    const abs = join(root, dir);
    try {
      if (readdirSync(abs).length > 0) return;
      rmdirSync(abs);
    } catch {
      return;
    }
    dir = dirname(dir);
  }
}

/**
 * Puts every snapshotted path back as it was; paths already equal are not touched. Returns the paths
 * that were rewritten. Folders created since (and now empty) are removed.
 */
export function restoreSnapshot(snapshot: Snapshot): string[] {
  const restored: string[] = [];
  const { root } = snapshot;
  // Removals first, so a path that became a folder's parent can be restored as a file.
  const states = [...snapshot.files.values()];
  for (const s of states) {
    const now = readState(root, s.path, false);
    if (now.digest === s.digest) continue;
    const abs = insideRoot(root, s.path);
    if (now.kind === 'file' || now.kind === 'symlink') unlinkSync(abs);
    if (s.kind === 'missing') {
      restored.push(s.path);
      removeEmptyDirsUpTo(root, s.path, snapshot.existingDirs);
    }
  }
  for (const s of states) {
    if (s.kind === 'missing') continue;
    const abs = insideRoot(root, s.path);
    const now = readState(root, s.path, false);
    if (now.digest === s.digest) continue;
    mkdirSync(dirname(abs), { recursive: true });
    if (now.kind !== 'missing') unlinkSync(abs);
    if (s.kind === 'symlink') symlinkSync(s.content ?? Buffer.alloc(0), abs);
    else {
      writeFileSync(abs, s.content ?? Buffer.alloc(0), { mode: s.mode });
      chmodSync(abs, s.mode ?? 0o644);
    }
    restored.push(s.path);
  }
  return restored;
}
