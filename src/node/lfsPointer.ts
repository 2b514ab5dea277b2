/**
 * Git LFS pointers, read without git-lfs. Baton's git runs no filter driver (docs/security.md), so
 * where git-lfs is installed a tracked file's content in the user's working tree (the object itself)
 * differs from its blob in the index (the pointer) whenever git looks at the file's bytes rather than
 * its stat data: after a `touch`, or for a "racily clean" entry just after a checkout or pull. Git with
 * git-lfs's clean filter would call such a file unchanged. `matchesLfsPointer` says the same from the
 * pointer's own fields (the SHA-256 and size of the object), so nothing is run and nothing downloaded.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { runGit } from './git';
import type { GitOptions } from './git';

export interface LfsPointer {
  /** The object's SHA-256, lowercase hex. */
  readonly oid: string;
  readonly size: number;
}

/** git-lfs writes pointers well under this; larger blobs are not read as pointers (spec: < 1024 bytes). */
export const LFS_POINTER_MAX_BYTES = 1024;

const POINTER = /^version https:\/\/git-lfs\.github\.com\/spec\/v1\n(?:[a-z0-9.-]+ [^\n]*\n)*$/;

/** The pointer a blob holds (git-lfs spec v1: `version` first, then sorted `key value` lines), or undefined. */
export function parseLfsPointer(blob: Buffer | string): LfsPointer | undefined {
  const text = typeof blob === 'string' ? blob : blob.toString('utf8');
  if (text.length >= LFS_POINTER_MAX_BYTES || !POINTER.test(text)) return undefined;
  const oid = /\noid sha256:([0-9a-f]{64})\n/.exec(text)?.[1];
  const size = /\nsize (0|[1-9][0-9]{0,15})\n/.exec(text)?.[1];
  if (oid === undefined || size === undefined) return undefined;
  return { oid, size: Number(size) };
}

/**
 * True when the regular file at `path` is the object `pointer` names: same size, same SHA-256. A file
 * of another size is not read. Errors (the file is gone, unreadable) are `false`: it is then a change.
 */
export async function matchesLfsPointer(path: string, pointer: LfsPointer): Promise<boolean> {
  try {
    const st = await lstat(path);
    if (!st.isFile() || st.size !== pointer.size) return false;
    const hash = createHash('sha256');
    for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
    return hash.digest('hex') === pointer.oid;
  } catch {
    return false;
  }
}

/**
 * The LFS pointers among `blobs` (object ids in the repository `opts` names, full or abbreviated), by
 * the id as given: their sizes are asked first, and only blobs small enough to be a pointer are read.
 */
export async function lfsPointersOf(
  blobs: readonly string[],
  opts: Pick<GitOptions, 'cwd' | 'env'>,
): Promise<Map<string, LfsPointer>> {
  const found = new Map<string, LfsPointer>();
  const ids = [...new Set(blobs)].filter((id) => /^[0-9a-fA-F]{4,64}$/.test(id));
  if (!ids.length) return found;
  // One answer line per id asked, in order: "<full id> <type> <size>", or "<id> missing".
  const sizes = (await runGit(['cat-file', '--batch-check'], { ...opts, input: ids.join('\n') + '\n' })).stdout
    .toString('utf8')
    .split('\n');
  const asked = new Map<string, string[]>();
  ids.forEach((given, i) => {
    const [full, type, size] = (sizes[i] ?? '').split(' ');
    if (type !== 'blob' || !(Number(size) < LFS_POINTER_MAX_BYTES)) return;
    asked.set(full, [...(asked.get(full) ?? []), given]);
  });
  if (!asked.size) return found;
  const out = (await runGit(['cat-file', '--batch'], { ...opts, input: [...asked.keys()].join('\n') + '\n' })).stdout;
  // Each: "<id> blob <size>\n<content>\n".
  let at = 0;
  while (at < out.length) {
    const eol = out.indexOf(0x0a, at);
    if (eol < 0) break;
    const [id, type, sizeText] = out.subarray(at, eol).toString('utf8').split(' ');
    if (type !== 'blob') {
      at = eol + 1;
      continue;
    }
    const size = Number(sizeText);
    const pointer = parseLfsPointer(out.subarray(eol + 1, eol + 1 + size));
    at = eol + 1 + size + 1;
    if (pointer) for (const given of asked.get(id) ?? []) found.set(given, pointer);
  }
  return found;
}

/**
 * Of `entries` (a path and the blob git has for it), those whose blob is an LFS pointer and whose file
 * under `root` is the object it names: what git with git-lfs's clean filter would call unchanged.
 * `opts` names the repository that holds the blobs.
 */
export async function lfsObjectsInPlace<E extends { readonly path: string; readonly blob: string }>(
  entries: readonly E[],
  root: string,
  opts: Pick<GitOptions, 'cwd' | 'env'>,
): Promise<E[]> {
  if (!entries.length) return [];
  const pointers = await lfsPointersOf(
    entries.map((e) => e.blob),
    opts,
  );
  const same: E[] = [];
  for (const e of entries) {
    const pointer = pointers.get(e.blob);
    if (pointer && (await matchesLfsPointer(join(root, e.path), pointer))) same.push(e);
  }
  return same;
}
