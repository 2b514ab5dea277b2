// Real repositories and folders in temp dirs for the patch tests, and a whole-tree fingerprint.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export function tempDir(prefix = 'baton-patch-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export function sh(cwd: string, args: readonly string[], input?: string | Buffer): string {
  return execFileSync(
    'git',
    [
      '-c',
      'user.name=T',
      '-c',
      'user.email=t@example.invalid',
      '-c',
      'core.hooksPath=/dev/null',
      '-c',
      'commit.gpgSign=false',
      ...args,
    ],
    {
      cwd,
      input,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: cwd,
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_CONFIG_GLOBAL: '/dev/null',
        LC_ALL: 'C',
      },
      maxBuffer: 256 * 1024 * 1024,
    },
  ).toString('utf8');
}

export function write(root: string, files: Record<string, string | Buffer>): void {
  for (const [p, c] of Object.entries(files)) {
    mkdirSync(dirname(join(root, p)), { recursive: true });
    writeFileSync(join(root, p), c);
  }
}

/** A repository with the files committed (initial branch main). */
export function makeRepo(files: Record<string, string | Buffer>): string {
  const root = tempDir('baton-repo-');
  sh(root, ['init', '-q', '-b', 'main', '.']);
  write(root, files);
  sh(root, ['add', '-A']);
  sh(root, ['commit', '-q', '-m', 'base']);
  return root;
}

/**
 * The patch an agent would return: edits applied in a clone-like way (same repo, then rolled back).
 * `edit` changes the working tree; the patch is `git diff --binary` of it against HEAD (new files included).
 */
export function makePatch(root: string, edit: (root: string) => void): string {
  edit(root);
  sh(root, ['add', '-A']);
  const patch = sh(root, ['diff', '--cached', '--binary', '-M']);
  sh(root, ['reset', '-q', '--hard']);
  sh(root, ['clean', '-q', '-fdx']);
  return patch;
}

/** sha256 of every file under root (path, type, mode, bytes), `.git` excluded except its index and HEAD (unless `files` only: to compare two repositories). */
export function treeHash(root: string, only?: 'files'): string {
  const h = createHash('sha256');
  const walk = (rel: string): void => {
    const abs = join(root, rel);
    for (const name of readdirSync(abs).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      if (r === '.git') continue;
      const st = lstatSync(join(root, r));
      if (st.isDirectory()) {
        h.update(`d ${r}\n`);
        walk(r);
      } else if (st.isSymbolicLink()) h.update(`l ${r} ${readlinkSync(join(root, r))}\n`);
      else {
        h.update(`f ${r} ${(st.mode & 0o7777).toString(8)} `);
        h.update(readFileSync(join(root, r)));
        h.update('\n');
      }
    }
  };
  walk('');
  if (only === 'files') return h.digest('hex');
  for (const g of ['.git/index', '.git/HEAD']) {
    try {
      h.update(readFileSync(join(root, g)));
    } catch {
      /* plain folder */
    }
  }
  return h.digest('hex');
}

export function cleanup(...dirs: string[]): void {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}

export function makeExecutable(root: string, path: string): void {
  chmodSync(join(root, path), 0o755);
}
