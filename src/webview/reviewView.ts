import * as l10n from '@vscode/l10n';
import { html, nothing, type TemplateResult } from 'lit';
import type { ReviewFileView, ReviewRequests, ReviewView } from '../core/protocol/panelProtocol';
import { fileCount } from './l10n';

export interface ReviewActions {
  send<M extends keyof ReviewRequests>(method: M, params: ReviewRequests[M]['params']): void;
  readonly busy: boolean;
}

// The one-letter status is git's (A, M, D…), the same in every language; its title says it in words.
const STATUS_LABEL: Record<ReviewFileView['status'], string> = {
  added: 'A',
  deleted: 'D',
  modified: 'M',
  renamed: 'R',
  copied: 'C',
};

const STATUS_TITLE: Record<ReviewFileView['status'], () => string> = {
  added: () => l10n.t('added'),
  deleted: () => l10n.t('deleted'),
  modified: () => l10n.t('modified'),
  renamed: () => l10n.t('renamed'),
  copied: () => l10n.t('copied'),
};

function fileRow(f: ReviewFileView, a: ReviewActions, editable: boolean): TemplateResult {
  const refused = f.risks.some((r) => r.severity === 'refuse' && !r.allowed);
  const done = f.applied === 'all';
  return html`<li class="file ${done ? 'applied' : f.selection}" data-file=${f.path} data-applied=${f.applied}>
    <div class="file-row">
      <vscode-checkbox
        data-select-file=${f.path}
        ?checked=${done || f.selection === 'all'}
        ?indeterminate=${!done && f.selection === 'some'}
        ?disabled=${!editable || refused || done || a.busy}
        @change=${(e: Event) => a.send('reviewSelect', { fileId: f.id, selected: (e.target as HTMLInputElement).checked })}
      ></vscode-checkbox>
      <span class="status-letter ${f.status}" title=${STATUS_TITLE[f.status]()}>${STATUS_LABEL[f.status]}</span>
      <a
        href="#"
        class="path"
        data-open-file=${f.path}
        @click=${(e: Event) => {
          e.preventDefault();
          a.send('reviewOpen', { fileId: f.id });
        }}
        >${f.oldPath ? html`${f.oldPath} → ` : nothing}${f.path}</a
      >
      <span class="add">+${f.added}</span><span class="del">−${f.removed}</span>
      ${
        f.applied === 'all'
          ? html`<span class="chip ok">${l10n.t('applied')}</span>`
          : f.applied === 'some'
            ? html`<span class="chip ok" title=${l10n.t('Some hunks are applied; the others can still be')}
                >${l10n.t('partly applied')}</span
              >`
            : nothing
      }
      ${f.binary ? html`<span class="chip warn">${l10n.t('binary')}</span>` : nothing}
      ${f.dirty ? html`<span class="chip warn" title=${l10n.t('Save or revert it before applying')}>${l10n.t('unsaved')}</span>` : nothing}
      ${f.applies || done ? nothing : html`<span class="chip bad" title=${f.checkErrors.join('\n')}>${l10n.t('does not apply')}</span>`}
    </div>
    ${
      f.risks.length
        ? html`<ul class="risks">
            ${f.risks.map(
              (r) =>
                html`<li class="risk ${r.severity} ${r.allowed ? 'allowed' : ''}" data-risk=${r.id}>
                  <vscode-icon
                    name=${r.severity === 'refuse' ? (r.allowed ? 'unlock' : 'lock') : 'warning'}
                  ></vscode-icon>
                  <span>${r.reason}</span>
                  ${r.severity === 'refuse' && editable ? html`<vscode-button secondary data-allow=${r.id} ?disabled=${a.busy} @click=${() => a.send('reviewOverride', { riskId: r.id, allow: !r.allowed })}>${r.allowed ? l10n.t('Refuse again') : l10n.t('Allow anyway')}</vscode-button>` : nothing}
                </li>`,
            )}
          </ul>`
        : nothing
    }
    ${
      f.hunks.length > 1 && !refused && !done
        ? html`<ul class="hunks">
            ${f.hunks.map(
              (h) =>
                html`<li data-hunk=${h.id} class=${h.applied ? 'applied' : ''}>
                  <vscode-checkbox
                    data-select-hunk=${h.id}
                    ?checked=${h.applied || h.selected}
                    ?disabled=${!editable || h.applied || a.busy}
                    @change=${(e: Event) => a.send('reviewSelect', { fileId: f.id, hunkId: h.id, selected: (e.target as HTMLInputElement).checked })}
                  ></vscode-checkbox>
                  <code>${h.header}</code> <span class="add">+${h.added}</span
                  ><span class="del">−${h.removed}</span
                  >${h.applied ? html` <span class="chip ok">${l10n.t('applied')}</span>` : nothing}
                </li>`,
            )}
          </ul>`
        : nothing
    }
  </li>`;
}

export function reviewTemplate(r: ReviewView, a: ReviewActions): TemplateResult {
  if (r.state === 'preparing') {
    return html`<section class="review" id="review">
      <h2>${l10n.t('Changes')}</h2>
      <p class="muted">
        <vscode-icon name="loading" spin></vscode-icon>
        ${
          r.progress !== undefined
            ? l10n.t('Reading and checking the patch ({0}%)…', Math.round(r.progress * 100))
            : l10n.t('Reading and checking the patch…')
        }
      </p>
    </section>`;
  }
  const editable = r.state === 'ready';
  const open = r.files.filter((f) => f.applied !== 'all');
  const selectedFiles = open.filter((f) => f.selection !== 'none');
  const selectable = open.filter((f) => !f.risks.some((x) => x.severity === 'refuse' && !x.allowed));
  const refused = r.files.flatMap((f) =>
    f.risks.filter((x) => x.severity === 'refuse' && !x.allowed).map((x) => ({ f, x })),
  );
  return html`<section class="review" id="review" data-review-state=${r.state}>
    <h2>
      ${l10n.t('Changes')}
      <span class="muted"
        >(${r.target === 'folder' ? l10n.t('{0}, plain folder', fileCount(r.files.length)) : fileCount(r.files.length)})</span
      >
    </h2>
    ${
      r.state === 'error'
        ? html`<div class="banner bad" role="alert">
            <vscode-icon name="error"></vscode-icon>
            <div>${r.message}</div>
          </div>`
        : nothing
    }
    ${
      r.message && r.state !== 'error'
        ? html`<div class="banner" role="status">
            <vscode-icon name="info"></vscode-icon>
            <div id="review-message">${r.message}</div>
          </div>`
        : nothing
    }
    ${r.checkOk === true && editable ? html`<p class="ok" id="check"><vscode-icon name="pass"></vscode-icon> ${l10n.t('Applies cleanly to your current tree.')}</p>` : nothing}
    ${
      r.checkOk === false && editable
        ? html`<div class="banner warn" id="check">
            <vscode-icon name="warning"></vscode-icon>
            <div>
              ${l10n.t(
                'Some files do not apply cleanly to your current tree. Apply with a 3-way merge to resolve the conflicts in the merge editor.',
              )}
            </div>
            <vscode-button
              id="apply-3way"
              secondary
              icon="git-merge"
              ?disabled=${a.busy || !selectedFiles.length}
              @click=${() => a.send('reviewApply', { threeWay: true })}
              >${l10n.t('Apply with 3-way Merge')}</vscode-button
            >
          </div>`
        : nothing
    }
    ${
      r.drift
        ? html`<div class="banner warn" id="drift">
            <vscode-icon name="history"></vscode-icon>
            <div>
              ${
                r.drift.headMoved
                  ? l10n.t('Your tree moved since the delegation started (HEAD changed).')
                  : l10n.t('Your tree moved since the delegation started.')
              }${r.drift.changedFiles.length ? html` ${l10n.t('Changed under the patch:')} <code>${r.drift.changedFiles.join(', ')}</code>` : nothing}
            </div>
          </div>`
        : nothing
    }
    ${
      refused.length
        ? html`<div class="refusals" id="refusals">
            <h3><vscode-icon name="shield"></vscode-icon> ${l10n.t('Refused by default ({0})', refused.length)}</h3>
            <ul>
              ${refused.map(({ f, x }) => html`<li><code>${f.path}</code> — ${x.reason}</li>`)}
            </ul>
            <p class="muted">${l10n.t('These are left out. Allow an item below only if you are sure.')}</p>
          </div>`
        : nothing
    }
    ${
      editable && selectable.length
        ? html`<div class="select-bar">
            <vscode-button
              id="select-all"
              secondary
              icon="check-all"
              ?disabled=${a.busy || selectable.every((f) => f.selection === 'all')}
              @click=${() => a.send('reviewSelectAll', { selected: true })}
              >${l10n.t('Select All')}</vscode-button
            >
            <vscode-button
              id="select-none"
              secondary
              icon="clear-all"
              ?disabled=${a.busy || !selectedFiles.length}
              @click=${() => a.send('reviewSelectAll', { selected: false })}
              >${l10n.t('Select None')}</vscode-button
            >
            ${
              r.applied
                ? html`<span class="muted" id="remaining"
                    >${
                      r.files.length === 1
                        ? l10n.t('{0} of {1} file left to apply', open.length, r.files.length)
                        : l10n.t('{0} of {1} files left to apply', open.length, r.files.length)
                    }</span
                  >`
                : nothing
            }
          </div>`
        : nothing
    }
    <ul class="files" id="files">
      ${r.files.map((f) => fileRow(f, a, editable))}
    </ul>
    <div class="actions">
      <vscode-button id="open-changes" secondary icon="diff-multiple" @click=${() => a.send('reviewOpen', {})}
        >${l10n.t('Open Changes Editor')}</vscode-button
      >
      ${
        editable
          ? html`<vscode-button
                id="apply"
                icon="check"
                ?disabled=${a.busy || !selectedFiles.length || (r.checkOk === false && selectedFiles.some((f) => !f.applies))}
                @click=${() => a.send('reviewApply', { threeWay: false })}
                >${
                  !r.applied && selectedFiles.length === r.files.length
                    ? l10n.t('Apply All')
                    : l10n.t('Apply Selected ({0})', selectedFiles.length)
                }</vscode-button
              >
              <vscode-button
                id="reject"
                secondary
                icon="close"
                ?disabled=${a.busy}
                @click=${() => a.send('reviewReject', {})}
                >${l10n.t('Reject')}</vscode-button
              >`
          : nothing
      }
      ${
        r.state === 'conflicts'
          ? html`<vscode-button
                id="finish-merge"
                icon="check"
                ?disabled=${a.busy}
                @click=${() => a.send('reviewMerge', { action: 'finish' })}
                >${l10n.t('Finish Merge')}</vscode-button
              >
              <vscode-button
                id="abort-merge"
                secondary
                icon="discard"
                ?disabled=${a.busy}
                @click=${() => a.send('reviewMerge', { action: 'abort' })}
                >${l10n.t('Abort and Restore')}</vscode-button
              >`
          : nothing
      }
      ${r.applied?.undoable ? html`<vscode-button id="undo" secondary icon="discard" ?disabled=${a.busy} @click=${() => a.send('reviewUndo', {})}>${l10n.t('Undo Apply')}</vscode-button>` : nothing}
    </div>
  </section>`;
}
