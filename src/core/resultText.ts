/**
 * What Baton says about a settled delegation's result (src/node/resultCheck.ts), as data (a code and
 * what it names) and as a sentence made where it is shown: the panel in the user's language, logs and
 * the `baton` CLI in English (`resultCheckText(m, english)`, the check's `detail`).
 */
import { PATCH_ARTIFACT } from './batonProfile';
import type { Translate } from './protocol/l10n';

export type ResultMessage =
  | { readonly code: 'no-task' | 'not-finished' | 'no-final-task' | 'state-mismatch' | 'patch-not-text' }
  /** Unsigned: `streamedDiffers` when what was streamed is not the final task (which is what is shown). */
  | { readonly code: 'no-signature'; readonly streamedDiffers: boolean }
  | { readonly code: 'no-pinned-key'; readonly signer: string; readonly streamedDiffers: boolean }
  | { readonly code: 'unknown-key' | 'promised-unsigned'; readonly signer: string }
  /** The envelope did not verify; `detail` is the verifier's own sentence. */
  | { readonly code: 'envelope'; readonly detail: string }
  /** Likewise, for a request that went over A2A 0.x, which cannot carry all of what was sent. */
  | { readonly code: 'envelope-legacy'; readonly detail: string; readonly version: string }
  | { readonly code: 'task-mismatch'; readonly taskId: string; readonly expected: string }
  | { readonly code: 'context-mismatch'; readonly contextId: string; readonly expected: string }
  | {
      readonly code: 'artifact-duplicate' | 'artifact-not-final' | 'artifact-differs' | 'artifact-after-final';
      readonly name: string;
    }
  /** Both texts as JSON strings, so an empty or odd status shows as what it is. */
  | { readonly code: 'status-mismatch'; readonly shown: string; readonly signed: string }
  | { readonly code: 'patch-ambiguous'; readonly count: number; readonly ids: readonly string[] }
  | { readonly code: 'verified'; readonly signer: string; readonly kid: string }
  /**
   * Unsigned: the patch is built from the edits the agent's tool calls made (development-tool extension).
   * `signed`: the agent signs its results all the same (a gateway signs the tasks it relays); a signature
   * covers a task's status and artifacts, never these edits, so it does not make this patch verified.
   */
  | { readonly code: 'tool-calls'; readonly files: number; readonly signed: boolean }
  /** Edits outside the workspace root the agent reported (or with no root reported): no patch is offered. */
  | { readonly code: 'tool-calls-outside'; readonly root: string; readonly paths: readonly string[] };

const PATCH = PATCH_ARTIFACT.name;

export function resultCheckText(m: ResultMessage, t: Translate): string {
  switch (m.code) {
    case 'no-task':
      return t('the agent returned no task, so there is no result to check');
    case 'tool-calls':
      if (m.signed)
        return m.files === 1
          ? t(
              'the agent signs its results, but a signature does not cover the edits its tool calls reported; the patch is made from them (1 file), unverified',
            )
          : t(
              'the agent signs its results, but a signature does not cover the edits its tool calls reported; the patch is made from them ({0} files), unverified',
              m.files,
            );
      return m.files === 1
        ? t(
            'the agent sent no signed result; the patch is made from the edits its tool calls reported (1 file), unverified',
          )
        : t(
            'the agent sent no signed result; the patch is made from the edits its tool calls reported ({0} files), unverified',
            m.files,
          );
    case 'tool-calls-outside':
      return m.root
        ? t(
            'The agent edited files outside its workspace {0}: {1}. No patch is offered; look at the files at the agent.',
            m.root,
            m.paths.join(', '),
          )
        : t(
            'The agent did not report its workspace root, so its edits cannot be made into a patch: {0}. Look at the files at the agent.',
            m.paths.join(', '),
          );
    case 'not-finished':
      return t('the task has not finished: a result is checked when it ends');
    case 'no-final-task':
      return t(
        'The final task could not be fetched from the agent, so nothing of this result is verified. Do not apply what was streamed.',
      );
    case 'no-signature':
      return m.streamedDiffers
        ? t('the agent sent no signed result; what was streamed differs from the final task, which is what is shown')
        : t('the agent sent no signed result');
    case 'no-pinned-key':
      return m.streamedDiffers
        ? t(
            'signed, but no key is pinned for {0} to check it with; what was streamed differs from the final task, which is what is shown',
            m.signer,
          )
        : t('signed, but no key is pinned for {0} to check it with', m.signer);
    case 'unknown-key':
      return t(
        'The result is signed, but Baton holds no key for {0} to check it with: the card promised signed results without naming a key it could pin.',
        m.signer,
      );
    case 'promised-unsigned':
      return t(
        '{0} promised signed results, but this result carries no signature: it may have been replaced on the way. Do not apply it.',
        m.signer,
      );
    case 'envelope':
      return m.detail;
    case 'envelope-legacy':
      return t(
        "{0} The request went over A2A {1}, which does not carry all of what Baton sent, so the agent signed what it received instead: approve the agent's A2A 1.0 interface to get results that verify.",
        m.detail,
        m.version,
      );
    case 'task-mismatch':
      return t('The agent answered with task {0}, not {1}.', m.taskId, m.expected);
    case 'context-mismatch':
      return t('The final task is in context {0}, not {1}.', m.contextId, m.expected);
    case 'artifact-duplicate':
      return t('The task lists artifact "{0}" more than once: Baton cannot tell which one to show.', m.name);
    case 'artifact-not-final':
      return t(
        'Artifact "{0}" was streamed but is not in the final result the agent signed: what was shown is not what the agent returned. Do not apply it.',
        m.name,
      );
    case 'artifact-differs':
      return t('Artifact "{0}" as streamed differs from the final result the agent signed. Do not apply it.', m.name);
    case 'artifact-after-final':
      return t(
        'Artifact "{0}" was updated after the final result the agent signed was taken. Do not apply it.',
        m.name,
      );
    case 'state-mismatch':
      return t('The state the stream showed differs from the signed final task.');
    case 'status-mismatch':
      return t(
        'The status message shown ({0}) differs from the one in the signed final status ({1}).',
        m.shown,
        m.signed,
      );
    case 'patch-ambiguous':
      return t(
        'The task carries {0} {1} artifacts ({2}): Baton cannot tell which one to review.',
        m.count,
        PATCH,
        m.ids.join(', '),
      );
    case 'patch-not-text':
      return t(
        '{0} carries a part that is not text: Baton reviews text patches only, so part of what was sent would not be shown.',
        PATCH,
      );
    case 'verified':
      return t('signed by {0}’s key {1}', m.signer, m.kid.slice(0, 12));
  }
}
