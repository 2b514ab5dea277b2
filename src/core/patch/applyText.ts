/**
 * Why an apply, a merge or an undo did not go through, as data (a code and what it names) and as a
 * sentence made where it is shown: the review says it in the user's language, logs, the CLI and the
 * `message` of outcomes and errors in English (`applyMessageText(m, english)`). `detail` is what git or
 * the file system said: it is shown as it is.
 */
import type { Translate } from '../protocol/l10n';

export type ApplyMessage =
  /** The rest of a partly applied patch no longer applies to the tree; nothing was written. */
  | { readonly code: 'rest-does-not-apply'; readonly detail: string }
  | { readonly code: 'did-not-apply'; readonly detail: string }
  | { readonly code: 'git-skipped'; readonly paths: readonly string[] }
  | { readonly code: 'write-failed'; readonly detail: string }
  /** git and Baton's parser read the patch differently (`restored`: after a write, undone). */
  | { readonly code: 'parsers-disagree'; readonly restored: boolean }
  /** The patch's own check found it inconsistent; `detail` lists what it found. */
  | { readonly code: 'inconsistent'; readonly detail: string }
  | { readonly code: 'conflict-markers'; readonly paths: readonly string[] }
  | { readonly code: 'edited-since-apply'; readonly paths: readonly string[] };

export function applyMessageText(m: ApplyMessage, t: Translate): string {
  switch (m.code) {
    case 'rest-does-not-apply':
      return t('The rest of the patch does not apply to your current tree; your files are unchanged. {0}', m.detail);
    case 'did-not-apply':
      return t('The patch did not apply; your files are unchanged. {0}', m.detail);
    case 'git-skipped':
      return t('git skipped {0}; nothing was applied.', m.paths.join(', '));
    case 'write-failed':
      return t('Writing failed, your files were restored: {0}', m.detail);
    case 'parsers-disagree':
      return m.restored
        ? t("git reads this patch differently from Baton's parser; it will not be applied. Your files were restored.")
        : t("git reads this patch differently from Baton's parser; it will not be applied");
    case 'inconsistent':
      return m.detail;
    case 'conflict-markers':
      return t('These files still have conflict markers: {0}. Resolve them or abort.', m.paths.join(', '));
    case 'edited-since-apply':
      return t(
        'Undo would discard edits made since the apply, in: {0}. Revert those edits first or undo by hand.',
        m.paths.join(', '),
      );
  }
}
