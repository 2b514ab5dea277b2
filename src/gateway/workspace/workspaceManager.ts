/**
 * Throwaway workspaces for local agents (docs/architecture.md "Headless workspace").
 *
 * Layout under the root (default ~/.baton/ws, %LOCALAPPDATA%\baton\ws on Windows: workspaceRoot.ts;
 * never the shared temp dir, because CLIs read instruction files from parent folders):
 *   <root>/<taskId>/                    the agent's folder: a `git clone --shared` of the caller's
 *                                       repository, detached at its HEAD, remote removed, plus the
 *                                       caller's uncommitted and untracked (non-ignored) files
 *   <root>/.baton-private/<taskId>/     Baton's own state, outside the agent's folder:
 *       git/                            a private bare git dir whose objects borrow the caller's
 *                                       (alternates); Baton's trees are written here, never in the clone
 *       index-a, index-b                private index files (tree A after setup, tree B after the agent)
 *       home/, tmp/                     the agent's private HOME and TMPDIR
 *       owner.json                      who owns the workspace and which workers run in it (orphan sweep)
 *
 * Baton never reads the clone's .git (the agent can write anything there): trees are recorded with
 * GIT_DIR=<private git>, GIT_WORK_TREE=<folder>, GIT_INDEX_FILE=<private index>, so the clone's config,
 * hooks, fsmonitor and drivers are never consulted, and every call is hardened by src/node/git.ts on top.
 * changes.patch is `git diff-tree -p --binary --full-index -M A B` in the private git dir.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import {
  appendFile,
  copyFile,
  lstat,
  mkdir,
  readdir,
  readFile,
  realpath,
  rename,
  rm,
  stat,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { homedir, hostname } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { configText, GitError, git, runGit } from '../../node/git';
import { lfsObjectsInPlace } from '../../node/lfsPointer';
import { cwdInside, isAlive, processStartTime, selfStartTime } from './procfs';
import { defaultWorkspaceRoot } from './workspaceRoot';

export const PRIVATE_DIR_NAME = '.baton-private';
const EMPTY_TREE: Record<string, string> = {
  sha1: '4b825dc642cb6eb9a060e54bf8d69288fbee4904',
  sha256: '6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321',
};
/** Largest changes.patch a run may return; past it the run fails with a clear reason. */
export const MAX_PATCH_BYTES = 64 * 1024 * 1024;

export type WorkspaceErrorCode =
  | 'invalid-task-id'
  | 'workspace-exists'
  | 'repository-missing'
  | 'bare-repository'
  | 'not-a-work-tree'
  | 'git-failed'
  | 'patch-too-large';

/** A setup or recording failure, with a message the user can act on. */
export class WorkspaceError extends Error {
  constructor(
    readonly code: WorkspaceErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'WorkspaceError';
  }
}

export interface WorkspaceManagerOptions {
  /** Where workspaces live; default defaultWorkspaceRoot(). Tests pass a temp folder. */
  readonly root?: string;
  /** The real home whose XDG git ignore file counts for "non-ignored" (default os.homedir()). */
  readonly userHome?: string;
}

export interface PrepareRequest {
  readonly taskId: string;
  /** The caller's repository (or a folder inside it); none → an empty scratch folder. */
  readonly repoPath?: string;
  /** Files open with unsaved edits in the caller's editor: not in the copy, said so in the notes. */
  readonly unsavedFiles?: readonly string[];
}

export interface Workspace {
  readonly taskId: string;
  /** The agent's folder. */
  readonly dir: string;
  /** Baton's private state for this workspace (outside `dir`). */
  readonly privateDir: string;
  readonly gitDir: string;
  /** The agent's private HOME and TMPDIR. */
  readonly home: string;
  readonly tmp: string;
  readonly kind: 'clone' | 'scratch';
  /** The caller's working tree top and git common dir (clone only). */
  readonly repoTop?: string;
  readonly repoCommonDir?: string;
  /** The commit the copy is detached at (absent for scratch folders and unborn branches). */
  readonly headCommit?: string;
  readonly objectFormat: 'sha1' | 'sha256';
  /** Tree A: the folder as set up, before the agent ran. */
  readonly treeA: string;
  /** Things the agent and the user should know about the copy, in plain words. */
  readonly notes: readonly string[];
}

export interface Changes {
  readonly treeB: string;
  /** changes.patch ('' when nothing changed). */
  readonly patch: string;
  /** The agent removed its folder, or every file in it: no patch is offered. */
  readonly destroyed?: string;
}

export interface SweepReport {
  readonly removed: string[];
  readonly killed: number[];
  /** Workspaces left because a worker in them could not be confirmed or stopped. */
  readonly left: string[];
}

export interface SweepOptions {
  /**
   * The ids of the tasks still running, here or on another live instance sharing this root (asked
   * after the folders are listed, so a task started meanwhile is never missed): their workspaces are
   * always kept. Without it only the owner process is looked at, and a workspace another host made
   * is left alone.
   */
  readonly running?: () => Promise<ReadonlySet<string>>;
  /** Also remove this process's own workspaces whose task is not running (a clean stop). */
  readonly own?: boolean;
}

interface OwnerRecord {
  readonly ownerPid: number;
  readonly ownerStart?: string;
  /** The host the owner runs on: its pid means nothing on another one. */
  readonly ownerHost?: string;
  readonly created: string;
  readonly workers: { pid: number; start?: string }[];
}

const TASK_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/**
 * `git add --all` that records a tree and never refuses a file: `core.safecrlf=true` (a user setting
 * Baton keeps for its line endings) makes add fail on a file with mixed line endings, and such a file
 * in the user's tree or the agent's output must not stop the copy or lose the agent's work.
 */
const RECORD_ALL = ['-c', 'core.safecrlf=false', 'add', '--all', '--', '.'];

export class WorkspaceManager {
  readonly root: string;
  private readonly userHome: string;

  constructor(opts: WorkspaceManagerOptions = {}) {
    this.root = resolve(opts.root ?? defaultWorkspaceRoot());
    this.userHome = opts.userHome ?? homedir();
  }

  /** Sets up the agent's folder and records tree A. On failure nothing is left behind. */
  async prepare(req: PrepareRequest): Promise<Workspace> {
    if (!TASK_ID.test(req.taskId))
      throw new WorkspaceError(
        'invalid-task-id',
        `Task id "${req.taskId}" cannot name a folder: use letters, digits, '.', '_' and '-'.`,
      );
    const dir = join(this.root, req.taskId);
    const privateDir = join(this.root, PRIVATE_DIR_NAME, req.taskId);
    if (existsSync(dir) || existsSync(privateDir))
      throw new WorkspaceError('workspace-exists', `A workspace for task ${req.taskId} already exists at ${dir}.`);
    await mkdir(join(this.root, PRIVATE_DIR_NAME), { recursive: true, mode: 0o700 });
    await mkdir(privateDir, { mode: 0o700 });
    const base = {
      taskId: req.taskId,
      dir,
      privateDir,
      gitDir: join(privateDir, 'git'),
      home: join(privateDir, 'home'),
      tmp: join(privateDir, 'tmp'),
    };
    try {
      await Promise.all([mkdir(base.home, { mode: 0o700 }), mkdir(base.tmp, { mode: 0o700 })]);
      await this.writeOwner(privateDir, {
        ownerPid: process.pid,
        ownerStart: selfStartTime(),
        ownerHost: hostname(),
        created: new Date().toISOString(),
        workers: [],
      });
      const notes: string[] = [];
      if (req.unsavedFiles?.length) {
        notes.push(
          `Not in the copy: unsaved editor changes to ${req.unsavedFiles.join(', ')} (the copy has these files as last saved).`,
        );
      }
      const repo = req.repoPath === undefined ? undefined : await probeRepository(req.repoPath);
      if (!repo) {
        if (req.repoPath !== undefined)
          notes.unshift(
            `${req.repoPath} is not a git repository: the agent starts in an empty folder and its patch adds files relative to it.`,
          );
        await mkdir(dir, { mode: 0o700 });
        await initPrivateGit(base.gitDir, 'sha1');
        return { ...base, kind: 'scratch', objectFormat: 'sha1', treeA: EMPTY_TREE.sha1, notes };
      }
      return await this.prepareClone(base, repo, notes);
    } catch (e) {
      await rm(dir, { recursive: true, force: true, maxRetries: 3 });
      await rm(privateDir, { recursive: true, force: true, maxRetries: 3 });
      if (e instanceof GitError) throw new WorkspaceError('git-failed', `Could not set up the workspace: ${e.message}`);
      throw e;
    }
  }

  private async prepareClone(
    base: Pick<Workspace, 'taskId' | 'dir' | 'privateDir' | 'gitDir' | 'home' | 'tmp'>,
    repo: RepositoryInfo,
    notes: string[],
  ): Promise<Workspace> {
    const indexA = join(base.privateDir, 'index-a');
    const env = { GIT_DIR: base.gitDir, GIT_WORK_TREE: repo.top, GIT_INDEX_FILE: indexA };
    const settings = await checkoutSettings(repo);

    // The clone and its checkout (the slow part) run while tree A is computed from the caller's
    // tree, which hashes only what the caller's own index says changed.
    const cloneDone = (async () => {
      // probeRepository got here, so git accepted the repository's owner at its work tree; the
      // clone's upload-pack checks the git dir by its own path.
      await runGit(['clone', '--shared', '--no-checkout', '--quiet', '--', repo.commonDir, base.dir], {
        cwd: this.root,
        safeDirectories: [repo.commonDir],
      });
      await runGit(['remote', 'remove', 'origin'], { cwd: base.dir });
      await applyCheckoutSettings(join(base.dir, '.git'), settings);
      if (repo.head) await runGit(['checkout', '--quiet', '--detach', repo.head], { cwd: base.dir });
    })();
    const treeDone = (async () => {
      await initPrivateGit(base.gitDir, repo.objectFormat, join(repo.commonDir, 'objects'));
      await this.copyIgnoreRules(repo, base.gitDir);
      await applyCheckoutSettings(base.gitDir, settings);
      let seeded = false;
      try {
        // The copy keeps the index's time (a little earlier, never later): git hashes again an entry
        // whose file changed in the same tick as the index was written ("racily clean") only when it
        // sees that index time. A fresh time would make it trust the entry, and a file rewritten with
        // the same size right after `git add` would be copied as it was staged, not as it is.
        const { mtimeMs, atime } = await stat(repo.indexFile);
        await copyFile(repo.indexFile, indexA);
        await utimes(indexA, atime, new Date(Math.floor(mtimeMs) - 1));
        seeded = true;
      } catch {
        // No index yet (fresh repository): everything is hashed.
      }
      try {
        await runGit(RECORD_ALL, { cwd: repo.top, env });
      } catch (e) {
        if (!seeded) throw e;
        // An index Baton cannot read on its own (e.g. split index): start from HEAD instead.
        await rm(indexA, { force: true });
        if (repo.head) await runGit(['read-tree', repo.head], { cwd: repo.top, env });
        await runGit(RECORD_ALL, { cwd: repo.top, env });
      }
      return git(['write-tree'], { cwd: repo.top, env });
    })();
    // Both must have stopped before a failure cleans up, or the clone could still be writing.
    const [cloned, tree] = await Promise.allSettled([cloneDone, treeDone]);
    if (cloned.status === 'rejected') throw cloned.reason;
    if (tree.status === 'rejected') throw tree.reason;
    const privateGit = { cwd: base.privateDir, env: { GIT_DIR: base.gitDir } };
    const diffFromHead = async (tree: string): Promise<string[]> =>
      (
        await runGit(
          ['diff-tree', '-r', '-z', '--no-renames', '--raw', repo.head ?? EMPTY_TREE[repo.objectFormat], tree],
          privateGit,
        )
      ).stdout
        .toString('utf8')
        .split('\0');
    let treeA = tree.value;
    let fields = await diffFromHead(treeA);
    // A Git LFS object in the working tree where HEAD has its pointer (git-lfs installed, the file's stat
    // data out of date in the index) is not a change of the user's: the copy keeps the pointer, as for
    // every other LFS file, and tree A records it.
    const asCommitted = await lfsObjectsAsCommitted(fields, repo.top, privateGit);
    if (asCommitted.length) {
      await runGit(['update-index', '-z', '--index-info'], {
        ...privateGit,
        env: { ...privateGit.env, GIT_INDEX_FILE: indexA },
        input: asCommitted.map((e) => `100644 ${e.blob}\t${e.path}\0`).join(''),
      });
      treeA = await git(['write-tree'], { ...privateGit, env: { ...privateGit.env, GIT_INDEX_FILE: indexA } });
      fields = await diffFromHead(treeA);
    }

    // Bring the caller's uncommitted state into the folder: exactly the entries where tree A
    // differs from HEAD, written from tree A's blobs so the folder and tree A agree byte for byte.
    const toWrite: string[] = [];
    const toDelete: string[] = [];
    const skippedLinks: string[] = [];
    for (let i = 0; i + 1 < fields.length; i += 2) {
      const meta = fields[i].split(' ');
      const path = fields[i + 1];
      const newMode = meta[1];
      const status = meta[4];
      if (status === 'D') toDelete.push(path);
      else if (newMode === '160000') skippedLinks.push(path);
      else toWrite.push(path);
    }
    for (const p of toDelete) await rm(join(base.dir, p), { force: true, recursive: true });
    if (toWrite.length) {
      await runGit(['checkout-index', '--force', '-z', '--stdin'], {
        cwd: base.dir,
        env: { GIT_DIR: base.gitDir, GIT_WORK_TREE: base.dir, GIT_INDEX_FILE: indexA },
        input: toWrite.join('\0') + '\0',
      });
    }
    if (toWrite.length + toDelete.length)
      notes.push(
        `The copy includes ${toWrite.length + toDelete.length} uncommitted change(s) from the working tree (staged, unstaged and untracked files).`,
      );
    await this.describeRepository(repo, base.dir, skippedLinks, notes);
    return {
      ...base,
      kind: 'clone',
      repoTop: repo.top,
      repoCommonDir: repo.commonDir,
      headCommit: repo.head,
      objectFormat: repo.objectFormat,
      treeA,
      notes,
    };
  }

  /** The caller's exclude rules count for "non-ignored": .gitignore files are read from the tree itself. */
  private async copyIgnoreRules(repo: RepositoryInfo, gitDir: string): Promise<void> {
    await mkdir(join(gitDir, 'info'), { recursive: true });
    try {
      await copyFile(join(repo.commonDir, 'info', 'exclude'), join(gitDir, 'info', 'exclude'));
    } catch {
      // none
    }
    // The excludes file the user's git reads for this repository (its own config, else the kept global
    // one: `~/.gitignore_global` and the like), else git's default place for it.
    const configured = (
      await runGit(['config', '--path', '--get', 'core.excludesFile'], { cwd: repo.top, okCodes: [1] })
    ).stdout
      .toString('utf8')
      .trim();
    const xdg = process.env.XDG_CONFIG_HOME
      ? join(process.env.XDG_CONFIG_HOME, 'git', 'ignore')
      : join(this.userHome, '.config', 'git', 'ignore');
    const excludes = configured ? resolve(repo.top, configured) : existsSync(xdg) ? xdg : undefined;
    if (excludes) await runGit(['config', 'core.excludesFile', excludes], { cwd: gitDir, env: { GIT_DIR: gitDir } });
  }

  private async describeRepository(
    repo: RepositoryInfo,
    dir: string,
    skippedLinks: string[],
    notes: string[],
  ): Promise<void> {
    if (!repo.head) notes.push('The repository has no commits yet: every file in the copy is new.');
    else if (repo.detached)
      notes.push(`The repository is on a detached HEAD (${repo.head.slice(0, 12)}); the copy is detached there too.`);
    const state = [
      ['MERGE_HEAD', 'a merge'],
      ['CHERRY_PICK_HEAD', 'a cherry-pick'],
      ['REVERT_HEAD', 'a revert'],
      ['rebase-merge', 'a rebase'],
      ['rebase-apply', 'a rebase or am'],
    ].find(([f]) => existsSync(join(repo.gitDir, f)));
    if (state) {
      const unmerged = await git(['ls-files', '--unmerged', '-z'], { cwd: repo.top });
      const paths = [
        ...new Set(
          unmerged
            .split('\0')
            .filter(Boolean)
            .map((l) => l.slice(l.indexOf('\t') + 1)),
        ),
      ];
      notes.push(
        `The repository is in the middle of ${state[1]}: the copy has the working files as they are` +
          (paths.length ? `, conflict markers included (unresolved: ${paths.join(', ')})` : '') +
          '; the copy itself has no merge state, and the patch applies to the working files.',
      );
    }
    if (existsSync(join(dir, '.gitmodules'))) {
      const links = (await git(['ls-files', '-s', '-z'], { cwd: dir }))
        .split('\0')
        .filter((l) => l.startsWith('160000 '))
        .map((l) => l.slice(l.indexOf('\t') + 1));
      const all = [...new Set([...links, ...skippedLinks])];
      if (all.length)
        notes.push(
          `Submodules are not checked out in the copy (empty folders): ${all.join(', ')}. Changes inside them are not part of the patch.`,
        );
    } else if (skippedLinks.length) {
      notes.push(`Nested repositories are not copied: ${skippedLinks.join(', ')}.`);
    }
    const attrs = await readFile(join(dir, '.gitattributes'), 'utf8').catch(() => '');
    if (/filter=lfs/.test(attrs))
      notes.push('Files tracked by Git LFS are pointer files in the copy (their content is not downloaded).');
  }

  /** Records tree B (the folder as the agent left it) and returns changes.patch from A to B. */
  async changes(ws: Workspace): Promise<Changes> {
    const empty = EMPTY_TREE[ws.objectFormat];
    const st = await lstat(ws.dir).catch(() => undefined);
    if (!st || !st.isDirectory())
      return {
        treeB: empty,
        patch: '',
        destroyed: 'The agent deleted its workspace folder; nothing was returned and your files are untouched.',
      };
    const indexB = join(ws.privateDir, 'index-b');
    await rm(indexB, { force: true });
    const env = { GIT_DIR: ws.gitDir, GIT_WORK_TREE: ws.dir, GIT_INDEX_FILE: indexB };
    // From tree A itself, not a copy of index-a: that one comes from the user's index, whose
    // skip-worktree (sparse checkout) and assume-unchanged entries would make add pass over the
    // agent's edits to those files. Its stat data describes the user's files, not the copy's, so
    // every file is hashed either way.
    await runGit(['read-tree', ws.treeA], { cwd: ws.dir, env });
    await runGit(RECORD_ALL, { cwd: ws.dir, env });
    const treeB = await git(['write-tree'], { cwd: ws.dir, env });
    if (treeB === empty && ws.treeA !== empty)
      return {
        treeB,
        patch: '',
        destroyed: 'The agent deleted every file in its workspace; no patch is offered and your files are untouched.',
      };
    const patch = await this.diff(ws, ws.treeA, treeB);
    return { treeB, patch };
  }

  /** `git diff-tree -p --binary --full-index -M` between two trees of this workspace. */
  async diff(ws: Workspace, from: string, to: string): Promise<string> {
    if (from === to) return '';
    try {
      const out = await runGit(
        [
          'diff-tree',
          '-r',
          '-p',
          '--binary',
          '--full-index',
          '-M',
          '--no-ext-diff',
          '--no-textconv',
          '--no-color',
          '--src-prefix=a/',
          '--dst-prefix=b/',
          from,
          to,
        ],
        { cwd: ws.privateDir, env: { GIT_DIR: ws.gitDir }, maxBuffer: MAX_PATCH_BYTES },
      );
      return out.stdout.toString('utf8');
    } catch (e) {
      if (e instanceof RangeError || /maxBuffer/i.test(String((e as Error).message))) {
        throw new WorkspaceError(
          'patch-too-large',
          `The changes are larger than ${MAX_PATCH_BYTES >> 20} MiB; no patch is offered.`,
        );
      }
      throw e;
    }
  }

  /** Notes a worker process started in the workspace, so a sweep can stop it if Baton dies. */
  async recordWorker(ws: Workspace, pid: number): Promise<void> {
    const rec = await this.readOwner(ws.privateDir);
    const workers = [...(rec?.workers ?? []), { pid, start: processStartTime(pid) }];
    await this.writeOwner(ws.privateDir, {
      ownerPid: rec?.ownerPid ?? process.pid,
      ownerStart: rec?.ownerStart,
      ownerHost: rec?.ownerHost,
      created: rec?.created ?? new Date().toISOString(),
      workers,
    });
  }

  /** Removes the folder and Baton's private state. */
  async remove(ws: Pick<Workspace, 'dir' | 'privateDir'>): Promise<void> {
    // Renaming first would be faster, but the folder may be a mount point or gone already.
    await rm(ws.dir, { recursive: true, force: true, maxRetries: 3 });
    await rm(ws.privateDir, { recursive: true, force: true, maxRetries: 3 });
  }

  /**
   * Removes workspaces whose owner process is gone. A worker still running in one is stopped only
   * when /proc/<pid>/cwd shows it runs inside that workspace; a pid now naming another process is
   * never touched, and a workspace whose worker cannot be checked is left for a later sweep. A
   * workspace of a task `running` names is kept whoever owns it; one owned by another host is
   * removed only when `running` says its task has ended there.
   */
  async sweep(opts: SweepOptions = {}): Promise<SweepReport> {
    const report: SweepReport = { removed: [], killed: [], left: [] };
    const privRoot = join(this.root, PRIVATE_DIR_NAME);
    const names = new Set<string>();
    for (const n of await readdir(this.root).catch(() => [] as string[]))
      if (n !== PRIVATE_DIR_NAME && TASK_ID.test(n)) names.add(n);
    for (const n of await readdir(privRoot).catch(() => [] as string[])) if (TASK_ID.test(n)) names.add(n);
    if (!names.size) return report;
    const running = opts.running ? await opts.running() : undefined;
    const host = hostname();
    const me = selfStartTime();
    for (const taskId of names) {
      if (running?.has(taskId)) continue;
      const dir = join(this.root, taskId);
      const privateDir = join(privRoot, taskId);
      const owner = await this.readOwner(privateDir);
      // Its workers ran on that host too: their pids are not looked up here.
      const elsewhere = owner?.ownerHost !== undefined && owner.ownerHost !== host;
      if (owner) {
        if (elsewhere) {
          if (!running) continue;
        } else if (isAlive(owner.ownerPid, owner.ownerStart)) {
          const mine = owner.ownerPid === process.pid && owner.ownerStart === me;
          if (!(opts.own && running && mine)) continue;
        }
      }
      let leave = false;
      const realDir = await realpath(dir).catch(() => dir);
      for (const w of elsewhere ? [] : (owner?.workers ?? [])) {
        const where = cwdInside(w.pid, realDir);
        if (where === 'inside') {
          try {
            process.kill(-w.pid, 'SIGKILL');
          } catch {
            try {
              process.kill(w.pid, 'SIGKILL');
            } catch {
              // already gone
            }
          }
          report.killed.push(w.pid);
        } else if (where === 'unknown') {
          leave = true;
        }
      }
      if (leave) {
        report.left.push(dir);
        continue;
      }
      await this.remove({ dir, privateDir });
      report.removed.push(dir);
    }
    return report;
  }

  private async readOwner(privateDir: string): Promise<OwnerRecord | undefined> {
    try {
      return JSON.parse(await readFile(join(privateDir, 'owner.json'), 'utf8')) as OwnerRecord;
    } catch {
      return undefined;
    }
  }

  private async writeOwner(privateDir: string, rec: OwnerRecord): Promise<void> {
    const tmp = join(privateDir, `owner.${randomBytes(4).toString('hex')}.tmp`);
    await writeFile(tmp, JSON.stringify(rec), { mode: 0o600 });
    await rename(tmp, join(privateDir, 'owner.json'));
  }
}

interface RepositoryInfo {
  readonly top: string;
  readonly gitDir: string;
  readonly commonDir: string;
  readonly indexFile: string;
  readonly head?: string;
  readonly detached: boolean;
  readonly objectFormat: 'sha1' | 'sha256';
}

/** What the caller's path is: undefined when it is not in a git repository; throws for a bare repository. */
export async function probeRepository(path: string): Promise<RepositoryInfo | undefined> {
  if (!isAbsolute(path))
    throw new WorkspaceError('repository-missing', `The repository path must be absolute: ${path}`);
  const st = await stat(path).catch(() => undefined);
  if (!st?.isDirectory()) throw new WorkspaceError('repository-missing', `${path} does not exist or is not a folder.`);
  let out: string;
  try {
    out = await git(
      [
        'rev-parse',
        '--path-format=absolute',
        '--is-bare-repository',
        '--is-inside-work-tree',
        '--git-dir',
        '--git-common-dir',
        '--show-object-format',
      ],
      { cwd: path },
    );
  } catch (e) {
    if (e instanceof GitError && /not a git repository/i.test(e.stderr)) return undefined;
    throw e;
  }
  const [bare, inside, gitDir, commonDir, format] = out.split('\n');
  if (bare === 'true')
    throw new WorkspaceError(
      'bare-repository',
      `${path} is a bare repository (it has no working tree to copy). Delegate from a clone of it instead.`,
    );
  if (inside !== 'true')
    throw new WorkspaceError(
      'not-a-work-tree',
      `${path} is inside a .git folder, not a working tree. Delegate from the repository's folder.`,
    );
  const top = await git(['rev-parse', '--path-format=absolute', '--show-toplevel'], { cwd: path });
  const indexFile = await git(['rev-parse', '--path-format=absolute', '--git-path', 'index'], { cwd: path });
  const head =
    (await runGit(['rev-parse', '--quiet', '--verify', 'HEAD^{commit}'], { cwd: path, okCodes: [1] })).stdout
      .toString('utf8')
      .trim() || undefined;
  const symbolic = await runGit(['symbolic-ref', '--quiet', 'HEAD'], { cwd: path, okCodes: [1] });
  return {
    top,
    gitDir,
    commonDir,
    indexFile,
    head,
    detached: symbolic.exitCode !== 0,
    objectFormat: format === 'sha256' ? 'sha256' : 'sha1',
  };
}

/**
 * Entries of a raw `diff-tree -z` (HEAD to tree A) where HEAD has a Git LFS pointer and the user's file
 * is the object it names (src/node/lfsPointer.ts), with HEAD's blob: what git with git-lfs's clean
 * filter would call unchanged.
 */
async function lfsObjectsAsCommitted(
  fields: readonly string[],
  top: string,
  privateGit: { readonly cwd: string; readonly env: Readonly<Record<string, string>> },
): Promise<{ readonly path: string; readonly blob: string }[]> {
  const modified: { path: string; blob: string }[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const [oldMode, newMode, oldBlob, , status] = fields[i].split(' ');
    if (status === 'M' && oldMode === ':100644' && newMode === '100644')
      modified.push({ path: fields[i + 1], blob: oldBlob });
  }
  return lfsObjectsInPlace(modified, top, privateGit);
}

/** The caller's repository's own checkout settings: what its git converts files with, and how it writes links and modes. */
interface CheckoutSettings {
  /**
   * `core.autocrlf`, `core.eol`, `core.symlinks` and `core.fileMode` as the repository's git reads them
   * (its own config over the kept global one).
   */
  readonly config: readonly { key: string; value: string }[];
  /** The repository's `info/attributes` (eol, text, -text for every path), when it has one. */
  readonly attributes: Buffer | undefined;
}

/**
 * The copy is checked out, and trees A and B are hashed, by git dirs of Baton's own (the clone's,
 * the private one) that would otherwise know only the global config: a `core.autocrlf` or
 * `core.eol` in the repository's config, or its `info/attributes`, would be missed, the copy would
 * get other line endings than the user's checkout, and the user's CRLF files would hash as changed.
 * Likewise `core.symlinks=false` (Git for Windows without symlink rights writes it at clone): the
 * user's symbolic links are plain files holding their targets, and without it the copy would have
 * links and every such file would count as an uncommitted change; and `core.fileMode=false` (Windows,
 * a repository on a mounted drive): the executable bits of the user's files mean nothing to their git,
 * and without it each file whose bit differs would count as changed and its mode go into the patch.
 * These are data (no program is named), read from the caller's repository, never from the copy.
 */
async function checkoutSettings(repo: RepositoryInfo): Promise<CheckoutSettings> {
  const listed = await runGit(['config', '-z', '--get-regexp', '^core\\.(autocrlf|eol|symlinks|filemode)$'], {
    cwd: repo.top,
    okCodes: [1],
  });
  const last = new Map<string, string>();
  for (const entry of listed.stdout.toString('utf8').split('\0')) {
    const nl = entry.indexOf('\n');
    if (nl > 0) last.set(entry.slice(0, nl).toLowerCase(), entry.slice(nl + 1));
  }
  const attributes = await readFile(join(repo.commonDir, 'info', 'attributes')).catch(() => undefined);
  return { config: [...last].map(([key, value]) => ({ key, value })), attributes };
}

async function applyCheckoutSettings(gitDir: string, settings: CheckoutSettings): Promise<void> {
  if (settings.config.length) await appendFile(join(gitDir, 'config'), configText(settings.config));
  if (settings.attributes) {
    await mkdir(join(gitDir, 'info'), { recursive: true });
    await writeFile(join(gitDir, 'info', 'attributes'), settings.attributes);
  }
}

async function initPrivateGit(gitDir: string, format: 'sha1' | 'sha256', alternate?: string): Promise<void> {
  // No template: no sample hooks, nothing but what git needs.
  await runGit(['init', '--bare', '--quiet', '--template=', `--object-format=${format}`, gitDir], {
    cwd: resolve(gitDir, '..'),
  });
  if (alternate) {
    await mkdir(join(gitDir, 'objects', 'info'), { recursive: true });
    await writeFile(join(gitDir, 'objects', 'info', 'alternates'), alternate + '\n');
  }
}
