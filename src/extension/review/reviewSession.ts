import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import {
  appliedParts,
  applyHunks,
  defaultSelection,
  displayPath,
  fileApplyState,
  hunkApplied,
  isEmptySelection,
  NOTHING_APPLIED,
  remainingHunks,
  remainingOf,
  remainingOffered,
  riskReasonText,
  type AppliedParts,
  type PatchFile,
  type PatchSelection,
} from '../../core/patch';
import { applyMessageText } from '../../core/patch/applyText';
import type { ReviewFileView, ReviewView } from '../../core/protocol/panelProtocol';
import { changeEntry } from '../../core/review/reviewUri';
import {
  abortApply,
  applyReviewed,
  finishMerge,
  PatchApplyError,
  prepareReview,
  undoApplies,
  type AppliedPatch,
  type ApplyRecord,
  type PatchReview,
  type PendingMerge,
} from '../../node/patchApply';
import type { DriftBase } from '../../node/patchDrift';
import type { PatchSource } from '../../node/patchSource';
import { Disposable } from '../lifecycle';
import { changesUri, reviewUri, sideUri, type ReviewDocKind, type ReviewDocumentProvider } from './reviewDocuments';

type FileChoice = { kind: 'all' } | { kind: 'none' } | { kind: 'hunks'; hunks: Set<string> };

/** What a review reports to its delegation (journal and audit log). */
export type ReviewRecord =
  | { readonly kind: 'applied'; readonly record: ApplyRecord }
  | { readonly kind: 'undone'; readonly record: ApplyRecord; readonly restored: readonly string[] }
  | { readonly kind: 'rejected'; readonly at: string }
  | { readonly kind: 'merge-aborted'; readonly record: ApplyRecord };

/**
 * One review of one delegation's changes.patch: what is selected, which refusals the user overrode,
 * the check against the current tree, and every apply so far (what is in the tree, and for undo). The
 * user may apply part of it, then more: each apply is one atomic step after a snapshot, of what is not
 * applied yet. Nothing is written to the user's tree except by `apply`.
 */
/** An apply, merge or undo that did not go through, said in the user's language (the error's `message` is English). */
function inUserLanguage(e: unknown): unknown {
  return e instanceof PatchApplyError ? new Error(applyMessageText(e.why, vscode.l10n.t)) : e;
}

export class ReviewSession extends Disposable {
  private review: PatchReview | undefined;
  private readonly choices = new Map<string, FileChoice>();
  private readonly overrides = new Set<string>();
  private state: ReviewView['state'] = 'preparing';
  private message: string | undefined;
  private progress: number | undefined;
  /** The applies so far, oldest first; undo restores them all. */
  private applies: AppliedPatch[] = [];
  private pending: PendingMerge | undefined;
  private readonly _onDidChange = this._register(new vscode.EventEmitter<void>());
  readonly onDidChange = this._onDidChange.event;

  constructor(
    readonly id: string,
    readonly folder: string,
    private readonly source: PatchSource,
    private readonly base: DriftBase | undefined,
    private readonly docs: ReviewDocumentProvider,
    private readonly record: (r: ReviewRecord) => void,
    /** Runs before anything is written; throws to refuse (the delegation's result no longer checks out). */
    private readonly beforeApply: () => Promise<void> = () => Promise.resolve(),
    /** Who made the changes (the changes editor's title). */
    private readonly agentName?: string,
    /** What the agent called the patch (`fix.diff`, …), for the merge editor; `changes.patch` when unsaid. */
    private readonly patchName?: string,
  ) {
    super();
    this._register(docs.register(id, (kind, path) => this.content(kind, path)));
    this._register(
      vscode.workspace.onDidChangeTextDocument(
        (e) => e.document.isDirty !== undefined && this.review && this._onDidChange.fire(),
      ),
    );
  }

  /** Reads, classifies and checks the patch against the current tree (shown before the user decides). */
  async prepare(): Promise<void> {
    this.state = 'preparing';
    this._onDidChange.fire();
    try {
      let last = 0;
      this.review = await prepareReview({
        folder: this.folder,
        source: this.source,
        base: this.base,
        onProgress: (done, total) => {
          const p = total ? done / total : 0;
          if (p - last >= 0.05) {
            last = p;
            this.progress = p;
            this._onDidChange.fire();
          }
        },
      });
      this.progress = undefined;
      const initial = defaultSelection(this.review.patch, this.review.risks, [...this.overrides]);
      const chosen = new Set(initial.files);
      this.choices.clear();
      for (const f of this.review.patch.files)
        this.choices.set(f.id, chosen.has(f.id) ? { kind: 'all' } : { kind: 'none' });
      if (this.review.patch.files.length === 0) {
        this.state = 'error';
        this.message = vscode.l10n.t('The patch is empty: the agent changed nothing.');
      } else {
        this.state = 'ready';
        this.message = undefined;
      }
    } catch (e) {
      this.state = 'error';
      this.message = e instanceof Error ? e.message : String(e);
    }
    this._onDidChange.fire();
  }

  get patchFiles(): readonly PatchFile[] {
    return this.review?.patch.files ?? [];
  }

  private file(fileId: string): PatchFile {
    const f = this.review?.patch.files.find((x) => x.id === fileId);
    if (!f) throw new Error(vscode.l10n.t('No file {0} in this patch.', fileId));
    return f;
  }

  select(fileId: string, hunkId: string | undefined, selected: boolean): void {
    this.choose(fileId, hunkId, selected);
    this._onDidChange.fire();
  }

  /** Selects every file that can be applied and is not applied yet (refused ones stay out), or none. */
  selectAll(selected: boolean): void {
    const parts = this.parts();
    for (const f of this.patchFiles) {
      const state = fileApplyState(f, parts);
      if (!selected || state === 'all' || this.refusedAndNotAllowed(f.id)) this.choices.set(f.id, { kind: 'none' });
      else
        this.choices.set(
          f.id,
          state === 'none'
            ? { kind: 'all' }
            : { kind: 'hunks', hunks: new Set(f.hunks.filter((h) => !parts.hunks.has(h.id)).map((h) => h.id)) },
        );
    }
    this._onDidChange.fire();
  }

  private choose(fileId: string, hunkId: string | undefined, selected: boolean): void {
    const f = this.file(fileId);
    const parts = this.parts();
    if (selected && (hunkId === undefined ? fileApplyState(f, parts) === 'all' : hunkApplied(f, hunkId, parts)))
      throw new Error(vscode.l10n.t('{0} is already applied.', hunkId ?? displayPath(f)));
    if (selected && this.refusedAndNotAllowed(fileId)) throw this.refused(f);
    if (hunkId === undefined) {
      this.choices.set(fileId, selected ? { kind: 'all' } : { kind: 'none' });
    } else {
      if (!f.hunks.some((h) => h.id === hunkId))
        throw new Error(vscode.l10n.t('No hunk {0} in {1}.', hunkId, displayPath(f)));
      const cur = this.choices.get(fileId) ?? { kind: 'none' };
      const set =
        cur.kind === 'all'
          ? new Set(f.hunks.map((h) => h.id))
          : cur.kind === 'hunks'
            ? new Set(cur.hunks)
            : new Set<string>();
      if (selected) set.add(hunkId);
      else set.delete(hunkId);
      this.choices.set(
        fileId,
        set.size === 0
          ? { kind: 'none' }
          : set.size === f.hunks.length
            ? { kind: 'all' }
            : { kind: 'hunks', hunks: set },
      );
    }
  }

  /** What the applies so far wrote. */
  private parts(): AppliedParts {
    const patch = this.review?.patch;
    return patch
      ? appliedParts(
          patch,
          this.applies.map((a) => a.record.files),
        )
      : NOTHING_APPLIED;
  }

  override(riskId: string, allow: boolean): void {
    const item = this.review?.risks.items.find((i) => i.id === riskId);
    if (!item) throw new Error(vscode.l10n.t('No risk item {0}.', riskId));
    if (allow) this.overrides.add(riskId);
    else {
      this.overrides.delete(riskId);
      if (item.severity === 'refuse') this.choices.set(item.fileId, { kind: 'none' });
    }
    this.settle();
    this._onDidChange.fire();
  }

  private refused(f: PatchFile): Error {
    const refusal = this.review?.risks.items.find((i) => i.fileId === f.id && i.severity === 'refuse');
    return new Error(
      vscode.l10n.t(
        '{0} is refused: {1} Allow it first if you are sure.',
        displayPath(f),
        refusal ? riskReasonText(refusal.message, vscode.l10n.t) : '',
      ),
    );
  }

  private refusedAndNotAllowed(fileId: string): boolean {
    return (this.review?.risks.items ?? []).some(
      (i) => i.fileId === fileId && i.severity === 'refuse' && !this.overrides.has(i.id),
    );
  }

  selection(): PatchSelection {
    const files: string[] = [];
    const hunks: string[] = [];
    for (const [id, c] of this.choices) {
      if (c.kind === 'all') files.push(id);
      else if (c.kind === 'hunks') hunks.push(...c.hunks);
    }
    return { files, hunks, overrides: [...this.overrides] };
  }

  private pathsOf(f: PatchFile): string[] {
    return [f.oldPath, f.newPath].filter((p): p is string => !!p);
  }

  private dirtyPaths(): Set<string> {
    const root = this.review?.target.root;
    const out = new Set<string>();
    if (!root) return out;
    for (const d of vscode.workspace.textDocuments) {
      if (d.isDirty && d.uri.scheme === 'file' && d.uri.fsPath.startsWith(root + '/'))
        out.add(d.uri.fsPath.slice(root.length + 1));
    }
    return out;
  }

  /** Applies what is selected (less what is applied already). */
  async apply(threeWay: boolean): Promise<boolean> {
    return this.applySelection(this.selection(), threeWay);
  }

  /** Applies every file that is offered and not applied yet (the editor's Apply All). */
  async applyAll(): Promise<boolean> {
    const review = this.requireApplicable();
    return this.applySelection(remainingOffered(review.patch, review.risks, [...this.overrides], this.parts()), false);
  }

  /** Applies one file, whatever else is selected (the diff editor's Apply This File). */
  async applyFile(fileId: string): Promise<boolean> {
    this.requireApplicable();
    const f = this.file(fileId);
    if (this.refusedAndNotAllowed(fileId)) throw this.refused(f);
    return this.applySelection({ files: [f.id], overrides: [...this.overrides] }, false);
  }

  private requireApplicable(): PatchReview {
    const review = this.review;
    if (!review || (this.state !== 'ready' && this.state !== 'applied'))
      throw new Error(vscode.l10n.t('Nothing to apply: the review is {0}.', this.state));
    return review;
  }

  private async applySelection(chosen: PatchSelection, threeWay: boolean): Promise<boolean> {
    const review = this.requireApplicable();
    const parts = this.parts();
    const selection = remainingOf(review.patch, chosen, parts);
    if (isEmptySelection(selection)) {
      throw new Error(
        isEmptySelection(chosen)
          ? vscode.l10n.t('Nothing is selected. Choose files or hunks to apply.')
          : vscode.l10n.t('Everything selected is already applied.'),
      );
    }
    const selectedIds = new Set([
      ...(selection.files ?? []),
      ...this.patchFiles.filter((f) => f.hunks.some((h) => selection.hunks?.includes(h.id))).map((f) => f.id),
    ]);
    const dirty = this.dirtyPaths();
    const blocked = this.patchFiles
      .filter((f) => selectedIds.has(f.id))
      .flatMap((f) => this.pathsOf(f))
      .filter((p) => dirty.has(p));
    if (blocked.length)
      throw new Error(vscode.l10n.t('Save or revert your unsaved changes first: {0}.', blocked.join(', ')));
    await this.beforeApply();
    const outcome = await applyReviewed(review, { selection, threeWay, applied: parts }).catch((e: unknown) => {
      throw inUserLanguage(e);
    });
    if (outcome.kind === 'applied') {
      this.recordApply(outcome.applied);
      this.message = vscode.l10n.t('Applied {0} file(s).', outcome.applied.record.files.length);
      this.record({ kind: 'applied', record: outcome.applied.record });
      this._onDidChange.fire();
      this.refreshAfterDocs();
      return true;
    }
    if (outcome.kind === 'conflicts') {
      this.pending = outcome.pending;
      this.state = 'conflicts';
      this.message = vscode.l10n.t(
        '{0} file(s) have conflicts. Resolve them in the merge editor, or abort to restore your files.',
        outcome.pending.conflicts.length,
      );
      this._onDidChange.fire();
      await this.openMergeEditors();
      return false;
    }
    this.message = applyMessageText(outcome.failure, vscode.l10n.t);
    this._onDidChange.fire();
    throw new Error(this.message + (outcome.restored.length ? ' ' + vscode.l10n.t('Your files were restored.') : ''));
  }

  /** Records an apply: what it wrote leaves the selection; the review stays open for the rest. */
  private recordApply(a: AppliedPatch): void {
    this.applies.push(a);
    const parts = this.parts();
    for (const written of a.record.files) {
      const f = this.patchFiles.find((x) => x.id === written.fileId);
      const c = this.choices.get(written.fileId);
      if (!f || !c || c.kind === 'none') continue;
      // What is left of a file chosen whole stays out until chosen again; chosen hunks that were not written stay chosen.
      const left =
        c.kind === 'hunks' && fileApplyState(f, parts) !== 'all'
          ? new Set([...c.hunks].filter((h) => !parts.hunks.has(h)))
          : new Set<string>();
      this.choices.set(f.id, left.size ? { kind: 'hunks', hunks: left } : { kind: 'none' });
    }
    this.settle();
  }

  /** Applied once nothing offered is left (refused files are not offered until the user allows them). */
  private settle(): void {
    const review = this.review;
    if (!review || !this.applies.length || (this.state !== 'ready' && this.state !== 'applied')) return;
    this.state = isEmptySelection(remainingOffered(review.patch, review.risks, [...this.overrides], this.parts()))
      ? 'applied'
      : 'ready';
  }

  async openMergeEditors(): Promise<void> {
    const pending = this.pending;
    if (!pending) return;
    for (const c of pending.conflicts) {
      const output = vscode.Uri.file(join(pending.snapshot.root, c.path));
      await vscode.commands.executeCommand('_open.mergeEditor', {
        base: reviewUri(this.id, 'base', pending.snapshot.root, c.path),
        input1: {
          uri: reviewUri(this.id, 'ours', pending.snapshot.root, c.path),
          title: vscode.l10n.t('Yours'),
          description: vscode.l10n.t('your working tree'),
        },
        input2: {
          uri: reviewUri(this.id, 'theirs', pending.snapshot.root, c.path),
          title: vscode.l10n.t('Agent'),
          description: this.patchName ?? vscode.l10n.t('changes.patch'),
        },
        output,
      });
    }
  }

  /** After the user resolved the conflicts in the merge editor. */
  finishMerge(): void {
    if (!this.pending) throw new Error(vscode.l10n.t('No merge in progress.'));
    let done: AppliedPatch;
    try {
      done = finishMerge(this.pending);
    } catch (e) {
      throw inUserLanguage(e);
    }
    this.pending = undefined;
    this.state = 'ready';
    this.recordApply(done);
    this.record({ kind: 'applied', record: done.record });
    this._onDidChange.fire();
    this.refreshAfterDocs();
  }

  async abortMerge(): Promise<string[]> {
    if (!this.pending) throw new Error(vscode.l10n.t('No merge in progress.'));
    // Close the merge editors first: their unsaved result must not be written over the restored files.
    const paths = new Set(this.pending.conflicts.map((c) => join(this.pending?.snapshot.root ?? '', c.path)));
    const mergeTabs = vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .filter((t) => {
        const input = t.input as { result?: vscode.Uri } | undefined;
        return input?.result instanceof vscode.Uri && paths.has(input.result.fsPath);
      });
    if (mergeTabs.length) await vscode.window.tabGroups.close(mergeTabs, true);
    if (!this.pending) throw new Error(vscode.l10n.t('No merge in progress.'));
    const restored = abortApply(this.pending);
    this.record({ kind: 'merge-aborted', record: this.pending.record });
    this.pending = undefined;
    this.state = 'ready';
    this.message = vscode.l10n.t('Merge aborted: your files were restored.');
    this.refreshAfterDocs();
    this._onDidChange.fire();
    return restored;
  }

  /** Undoes every apply of this review (newest first), as one step. */
  undo(): number {
    if (!this.applies.length) throw new Error(vscode.l10n.t('Nothing to undo.'));
    let restored: string[];
    try {
      restored = undoApplies(this.applies);
    } catch (e) {
      throw inUserLanguage(e);
    }
    for (const a of [...this.applies].reverse())
      this.record({ kind: 'undone', record: a.record, restored: restored.filter((p) => a.snapshot.files.has(p)) });
    this.applies = [];
    this.state = 'ready';
    this.message = vscode.l10n.t('Undone: {0} file(s) restored.', restored.length);
    void this.prepare();
    return restored.length;
  }

  reject(): void {
    this.state = 'rejected';
    this.message = vscode.l10n.t(
      'Rejected. The patch is kept in the delegation’s journal for audit; nothing was written.',
    );
    this.record({ kind: 'rejected', at: new Date().toISOString() });
    this._onDidChange.fire();
  }

  private current(path: string): string {
    try {
      return readFileSync(join(this.review?.target.root ?? this.folder, path), 'utf8');
    } catch {
      return '';
    }
  }

  private content(kind: ReviewDocKind, path: string): string {
    if (kind === 'base' || kind === 'ours' || kind === 'theirs') {
      const c = this.pending?.conflicts.find((x) => x.path === path);
      const buf = c?.[kind];
      return buf ? buf.toString('utf8') : '';
    }
    const f = this.patchFiles.find((x) => x.newPath === path || (x.status === 'deleted' && x.oldPath === path));
    if (!f) return '';
    if (f.status === 'deleted') return '';
    if (f.binary) return vscode.l10n.t('(binary file: not shown)');
    // What is applied is in the working tree already: the rest goes on top of it.
    const parts = this.parts();
    const state = fileApplyState(f, parts);
    if (state === 'all') return this.current(path);
    const before = f.status === 'added' ? '' : this.current(state === 'some' ? path : (f.oldPath ?? path));
    return (
      applyHunks(before, state === 'some' ? remainingHunks(f, parts.hunks) : f.hunks) ??
      vscode.l10n.t('(the patch does not apply to the current version of {0}; see the check result in the panel)', path)
    );
  }

  private get root(): string {
    return this.review?.target.root ?? this.folder;
  }

  /** The file a review document names, by its path. */
  fileIdOf(path: string): string | undefined {
    return this.patchFiles.find((f) => f.newPath === path || f.oldPath === path)?.id;
  }

  /** The "after" documents follow the tree: tell the open editors to read them again. */
  private refreshAfterDocs(): void {
    for (const f of this.patchFiles)
      this.docs.changed(reviewUri(this.id, 'after', this.root, f.newPath ?? f.oldPath ?? ''));
  }

  /** Left (the file as it is now) and right (with the patch) for one file, both under the file's path. */
  private sides(f: PatchFile): { left: vscode.Uri; right: vscode.Uri; title: string } {
    const root = this.root;
    const path = f.newPath ?? f.oldPath ?? '';
    const left =
      f.status === 'added' ? reviewUri(this.id, 'empty', root, path) : vscode.Uri.file(join(root, f.oldPath ?? path));
    const right =
      f.status === 'deleted' ? reviewUri(this.id, 'empty', root, path) : reviewUri(this.id, 'after', root, path);
    const label = f.status === 'renamed' ? `${f.oldPath} → ${f.newPath}` : path;
    const status = {
      added: vscode.l10n.t('added'),
      deleted: vscode.l10n.t('deleted'),
      modified: vscode.l10n.t('modified'),
      renamed: vscode.l10n.t('renamed'),
      copied: vscode.l10n.t('copied'),
    }[f.status];
    return { left, right, title: `${label} (${status}) — ${vscode.l10n.t('Baton review')}` };
  }

  /** The changes editor's title; VS Code adds the number of files. */
  get changesTitle(): string {
    return this.agentName ? vscode.l10n.t('Baton: {0}', this.agentName) : vscode.l10n.t('Baton: changes');
  }

  async open(fileId?: string): Promise<void> {
    this.refreshAfterDocs();
    if (fileId) {
      const s = this.sides(this.file(fileId));
      await vscode.commands.executeCommand('vscode.diff', s.left, s.right, s.title, { preview: false });
      return;
    }
    const root = this.root;
    const entries = this.patchFiles.map((f) => changeEntry(this.id, f));
    const resources = entries.map((e) => ({
      originalUri: e.original && sideUri(this.id, root, e.original),
      modifiedUri: e.modified && sideUri(this.id, root, e.modified),
    }));
    try {
      // The changes editor with its own resource, so its title actions know which review they act on.
      await vscode.commands.executeCommand('_workbench.openMultiDiffEditor', {
        multiDiffSourceUri: changesUri(this.id, root),
        title: this.changesTitle,
        resources,
      });
    } catch {
      await vscode.commands.executeCommand(
        'vscode.changes',
        this.changesTitle,
        entries.map((e, i) => [
          vscode.Uri.file(join(root, e.file)),
          resources[i].originalUri,
          resources[i].modifiedUri,
        ]),
      );
    }
  }

  view(): ReviewView {
    const review = this.review;
    const dirty = this.dirtyPaths();
    const parts = this.parts();
    const files: ReviewFileView[] = (review?.patch.files ?? []).map((f) => {
      const choice = this.choices.get(f.id) ?? { kind: 'none' };
      const applied = fileApplyState(f, parts);
      const check = review?.check.files.find((c) => c.fileId === f.id);
      return {
        id: f.id,
        path: f.newPath ?? f.oldPath ?? '',
        oldPath: f.status === 'renamed' || f.status === 'copied' ? f.oldPath : undefined,
        status: f.status,
        added: f.added,
        removed: f.removed,
        binary: f.binary,
        applies: check?.ok ?? false,
        checkErrors: check?.errors ?? [],
        risks: (review?.risks.items ?? [])
          .filter((i) => i.fileId === f.id)
          .map((i) => ({
            id: i.id,
            kind: i.kind,
            severity: i.severity,
            reason: riskReasonText(i.message, vscode.l10n.t),
            allowed: this.overrides.has(i.id),
          })),
        selection: choice.kind === 'all' ? 'all' : choice.kind === 'none' ? 'none' : 'some',
        applied,
        hunks: f.hunks.map((h) => ({
          id: h.id,
          header: h.header,
          added: h.added,
          removed: h.removed,
          selected: choice.kind === 'all' || (choice.kind === 'hunks' && choice.hunks.has(h.id)),
          applied: hunkApplied(f, h.id, parts),
        })),
        dirty: this.pathsOf(f).some((p) => dirty.has(p)),
      };
    });
    return {
      state: this.state,
      message: this.message,
      progress: this.progress,
      target: review?.target.kind,
      checkOk: review?.check.ok,
      drift:
        review?.drift && (review.drift.headMoved || review.drift.changedFiles.length)
          ? { headMoved: review.drift.headMoved, changedFiles: review.drift.changedFiles }
          : undefined,
      files,
      conflicts: this.pending?.conflicts.map((c) => c.path),
      applied: this.applies.length
        ? {
            at: this.applies[this.applies.length - 1].record.appliedAt,
            files: [...new Set(this.applies.flatMap((a) => a.record.files.map((f) => f.newPath ?? f.oldPath ?? '')))],
            undoable: true,
          }
        : undefined,
    };
  }
}
