import * as l10n from '@vscode/l10n';
import { html, nothing, type TemplateResult } from 'lit';
import { unsafeHTML } from 'lit/directives/unsafe-html.js';
import { oneLine, PANEL_LIMITS } from '../core/protocol/panelLimits';
import type { DelegationChildView } from '../core/protocol/delegationView';
import type { DelegationView, TimelineEntry } from '../core/protocol/panelProtocol';
import type { ToolCallPanelView } from '../core/protocol/delegationView';
import { TOOL_CALL_APPROVE, TOOL_CALL_DENY } from '../core/protocol/toolCalls';
import { stateLabel, stateLook } from '../core/protocol/delegationStates';
import { outcomeReasonText } from '../core/protocol/outcomeText';
import { timelineEntryText } from '../core/protocol/timelineText';
import { dataPartsTemplate } from './dataTree';
import { fileCount, signatureLabel, t } from './l10n';
import { renderAgentText } from './markdown';
import { reviewTemplate, type ReviewActions } from './reviewView';

export interface DelegationActions extends ReviewActions {
  cancel(): void;
  reply(text: string): void;
  /** Open a returned patch for review: the `index`-th of several, else the first. */
  review(index?: number): void;
  checkAgain(): void;
  provideToken(): void;
  /** Start the same task again as a new delegation (failed, rejected, canceled or expired). */
  delegateAgain(): void;
  /** Open the full text of a shortened timeline entry (by seq) or of the agent's question (no seq). */
  showFullText(seq?: number): void;
  /** Open a listed child: its panel when it is a delegation of this window, else its info. */
  openChild(childId: string): void;
  /** Approve or deny a tool call the agent asks about (an outcome it offers: proceed_once, cancel, …). */
  answerToolCall(callId: string, outcome: string): void;
  /** Done: accept what an agent waiting for you did and end the delegation as completed. */
  finish(): void;
  readonly busy: boolean;
}

// Labels are looked up when shown, not when this module loads: the translations are configured first.

const ENTRY_ICON: Record<TimelineEntry['kind'], string> = {
  status: 'pulse',
  message: 'comment',
  step: 'debug-step-over',
  artifact: 'file-code',
  error: 'error',
  note: 'info',
};

export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  if (h) return l10n.t('{0}h {1}m', h, m);
  return m ? l10n.t('{0}m {1}s', m, String(sec).padStart(2, '0')) : l10n.t('{0}s', sec);
}

function capabilityChips(c: DelegationView['capabilities']): TemplateResult {
  const chips = [
    c.write
      ? html`<span
          class="chip warn"
          title=${l10n.t(
            'The agent may edit files in its throwaway copy; edits come back only as a patch for you to review',
          )}
          >${l10n.t('write')}</span
        >`
      : html`<span
          class="chip"
          title=${l10n.t('The agent may only read and propose a patch: nothing reaches your files until you apply it')}
          >${l10n.t('read-only')}</span
        >`,
    c.shell
      ? html`<span
          class="chip warn"
          title=${l10n.t(
            'The agent may run shell commands. A throwaway copy is not a sandbox: unconfined, a shell can reach anything you can',
          )}
          >${l10n.t('shell')}</span
        >`
      : nothing,
    c.network
      ? html`<span class="chip warn" title=${l10n.t('The agent may reach the network beyond its own model API')}
          >${l10n.t('network')}</span
        >`
      : nothing,
  ];
  // Said in words too: "read-only" beside a returned patch puzzles people until they read this.
  const hint =
    c.write || c.shell || c.network
      ? l10n.t('changes come back only as a patch you review')
      : l10n.t('may only propose a patch; you review it before anything changes');
  return html`${chips} <span class="muted cap-hint">${hint}</span>`;
}

/** How the agent ran on this machine, with the reason in words (hover and a line), never a bare badge. */
function executionChip(d: DelegationView): TemplateResult | typeof nothing {
  if (d.executorKind === 'builtin') {
    return html` <span
      class="chip"
      title=${
        d.executorDetail ??
        l10n.t(
          'Runs inside the gateway on its throwaway copy only; it runs no repository code, so no sandbox is needed',
        )
      }
      >${l10n.t('built-in')}</span
    >`;
  }
  if (d.confined === false) {
    const why = (
      d.executorDetail ?? l10n.t('it has your user rights; only its working folder is a throwaway copy.')
    ).replace(/^Unconfined:\s*/, '');
    const detail = l10n.t('Runs without a sandbox on this machine: {0}', why);
    return html` <span class="chip warn" title=${detail}>${l10n.t('unconfined')}</span>
      <div class="muted exec-detail">${detail}</div>`;
  }
  if (d.confined)
    return html` <span class="chip" title=${d.executorDetail ?? l10n.t('Confined with bubblewrap')}
      >${l10n.t('confined')}</span
    >`;
  return nothing;
}

/**
 * Agent text, rendered on its own: markdown when it can be, plain text with a note when it cannot,
 * and a way to the full text when it was shortened.
 */
function agentText(
  text: string,
  markdown: boolean,
  fullChars: number | undefined,
  cls: string,
  openFull: (() => void) | undefined,
): TemplateResult {
  const r = renderAgentText(text, markdown, fullChars);
  const body =
    r.kind === 'html'
      ? html`<div class="md ${cls}">${unsafeHTML(r.html)}</div>`
      : html`<div class="text ${cls} ${r.pending ? 'render-pending' : ''}">${r.text}</div>`;
  const note = r.notes.length
    ? html`<div class="render-note muted">
        ${r.notes.join(' ')}${
          r.shortened && openFull
            ? html` <a
                href="#"
                class="open-full"
                @click=${(ev: Event) => {
                  ev.preventDefault();
                  openFull();
                }}
                >${l10n.t('Open the full text in an editor')}</a
              >`
            : nothing
        }
      </div>`
    : nothing;
  return html`${body}${note}`;
}

function timeOf(at: unknown): string {
  const t = typeof at === 'string' ? new Date(at) : undefined;
  return t && !Number.isNaN(t.getTime()) ? t.toLocaleTimeString() : '';
}

/** One timeline entry. Whatever goes wrong with it stays in its own row: the rest of the panel renders. */
function entry(e: TimelineEntry, a: DelegationActions): TemplateResult {
  try {
    const line = timelineEntryText(e, t);
    return html`<li class="entry ${e.kind}" data-seq=${e.seq}>
      <vscode-icon name=${ENTRY_ICON[e.kind] ?? 'info'}></vscode-icon>
      <time datetime=${e.at} title=${e.at}>${timeOf(e.at)}</time>
      <div class="body">
        ${agentText(line, e.markdown === true, e.fullChars, '', () => a.showFullText(e.seq))}${dataPartsTemplate(e.data)}
      </div>
    </li>`;
  } catch (err) {
    return html`<li class="entry error">
      <vscode-icon name="warning"></vscode-icon><time></time>
      <div class="render-note muted">
        ${l10n.t(
          'This entry could not be shown ({0}).',
          err instanceof Error ? err.message.slice(0, 200) : l10n.t('unknown error'),
        )}
      </div>
    </li>`;
  }
}

function timeline(d: DelegationView, a: DelegationActions): TemplateResult {
  const shown =
    d.timeline.length > PANEL_LIMITS.timelineEntries ? d.timeline.slice(-PANEL_LIMITS.timelineEntries) : d.timeline;
  const omitted = (d.timelineOmitted ?? 0) + d.timeline.length - shown.length;
  return html`<h2>${l10n.t('Timeline')} <span class="muted">(${omitted + shown.length})</span></h2>
    ${
      omitted > 0
        ? html`<p class="muted" id="timeline-omitted">
            ${l10n.t(
              "{0} earlier entries are not shown (the delegation's journal keeps them).",
              omitted.toLocaleString('en-US'),
            )}
          </p>`
        : nothing
    }
    <ol class="timeline" id="timeline">
      ${shown.map((e) => entry(e, a))}
    </ol>`;
}

/**
 * Delegate Again: the same task to the same agent, as a new delegation (the start flow confirms it
 * first); to another agent the user picks when Baton no longer calls this one.
 */
function againButton(d: DelegationView, a: DelegationActions): TemplateResult {
  return html`<vscode-button
    id="delegate-again"
    secondary
    icon="debug-restart"
    ?disabled=${a.busy}
    @click=${() => a.delegateAgain()}
    >${d.agentUnavailable ? l10n.t('Delegate to Another Agent…') : l10n.t('Delegate Again')}</vscode-button
  >`;
}

/**
 * The agent refused Baton's token: while Baton reconnected, once it gave up, or at the first message
 * (the delegation failed before any task). Set Token… stores a new one; once contact is lost it also
 * checks again, and a failed delegation is started again with Delegate Again.
 */
function tokenRefusedBanner(d: DelegationView, a: DelegationActions): TemplateResult {
  const gaveUp = d.state === 'unknown';
  const failed = d.state === 'failed';
  return html`<div class="banner warn" role="alert" id="token-refused">
    <vscode-icon name="key"></vscode-icon>
    <div>
      <strong>${l10n.t('The agent at {0} refused Baton’s token.', new URL(d.agent.endpoint).host)}</strong>
      ${
        failed
          ? l10n.t(
              'The task was not started. Set the token for that host (kept in VS Code’s secret storage, sent only there), then Delegate Again.',
            )
          : gaveUp
            ? l10n.t(
                'Baton stopped trying to reach the task. If the token was changed or revoked, set the new one: Baton then asks the agent where the task is.',
              )
            : l10n.t(
                'If the token was changed or revoked, set the new one (kept in VS Code’s secret storage, sent only to that host): Baton keeps trying with it.',
              )
      }${(gaveUp || failed) && d.reason ? html`<div class="muted">${reasonOf(d)}</div>` : nothing}
    </div>
    <div class="banner-actions">
      <vscode-button id="provide-token" icon="key" ?disabled=${a.busy} @click=${() => a.provideToken()}
        >${l10n.t('Set Token…')}</vscode-button
      >
      ${
        gaveUp
          ? html`<vscode-button
              id="check-again"
              secondary
              icon="refresh"
              ?disabled=${a.busy}
              @click=${() => a.checkAgain()}
              >${l10n.t('Check again')}</vscode-button
            >`
          : failed
            ? againButton(d, a)
            : nothing
      }
    </div>
  </div>`;
}

function outcomeBanner(d: DelegationView, a: DelegationActions): TemplateResult | typeof nothing {
  if (d.tokenRefused && (d.state === 'unknown' || d.state === 'reconnecting' || d.state === 'failed'))
    return tokenRefusedBanner(d, a);
  switch (d.state) {
    case 'unknown':
      return html`<div class="banner warn" role="alert">
        <vscode-icon name="question"></vscode-icon>
        <div>
          <strong>${l10n.t('Baton lost contact and cannot tell how this ended.')}</strong>
          ${l10n.t(
            "The agent may still be working or may have finished. Check the agent's own status before starting it again; Baton never retries it blindly.",
          )}${d.reason ? html`<div class="muted">${reasonOf(d)}</div>` : nothing}
        </div>
        <vscode-button id="check-again" secondary icon="refresh" ?disabled=${a.busy} @click=${() => a.checkAgain()}
          >${l10n.t('Check again')}</vscode-button
        >
      </div>`;
    case 'expired':
      return html`<div class="banner bad" role="alert">
        <vscode-icon name="watch"></vscode-icon>
        <div>
          <strong>${l10n.t('The deadline passed.')}</strong> ${l10n.t(
            'Baton canceled the task at the agent.',
          )}${d.reason ? html` ${reasonOf(d)}` : nothing}
        </div>
        ${againButton(d, a)}
      </div>`;
    case 'failed':
    case 'rejected':
      return html`<div class="banner bad" role="alert">
        <vscode-icon name="error"></vscode-icon>
        <div>
          <strong>${stateLabel(d.state, t)}.</strong> ${d.reason ? reasonOf(d) : l10n.t('The agent gave no reason.')}
        </div>
        ${againButton(d, a)}
      </div>`;
    case 'canceled':
      return html`<div class="banner" role="status">
        <vscode-icon name="circle-slash"></vscode-icon>
        <div>
          ${l10n.t('Canceled.')}
          ${
            d.cancelConfirmed === false
              ? l10n.t('The agent did not confirm the cancel in time; it may still be running.')
              : l10n.t('The agent confirmed.')
          }
        </div>
        ${againButton(d, a)}
      </div>`;
    case 'auth-required':
      return html`<div class="banner warn" role="alert">
        <vscode-icon name="key"></vscode-icon>
        <div>
          <strong>${l10n.t('The agent needs authorization for {0}.', new URL(d.agent.endpoint).host)}</strong>
          ${l10n.t(
            "Set a token (kept in VS Code's secret storage, sent only to that host) and Baton picks the task up again; if the agent asked you to sign in elsewhere, do that: Baton checks again when you come back to this window, or press Check Again.",
          )}${d.reason ? html`<div class="muted">${reasonOf(d)}</div>` : nothing}
        </div>
        <div class="banner-actions">
          <vscode-button id="provide-token" icon="key" ?disabled=${a.busy} @click=${() => a.provideToken()}
            >${l10n.t('Set Token…')}</vscode-button
          >
          <vscode-button id="check-again" secondary icon="refresh" ?disabled=${a.busy} @click=${() => a.checkAgain()}
            >${l10n.t('Check Again')}</vscode-button
          >
        </div>
      </div>`;
    default:
      return nothing;
  }
}

/** A tool call's status, in the panel's words. */
function toolStatusLabel(s: ToolCallPanelView['status']): string {
  switch (s) {
    case 'validating':
      return l10n.t('checking');
    case 'scheduled':
      return l10n.t('scheduled');
    case 'awaiting_approval':
      return l10n.t('waiting for your approval');
    case 'executing':
      return l10n.t('running');
    case 'success':
      return l10n.t('done');
    case 'error':
      return l10n.t('failed');
    case 'cancelled':
      return l10n.t('denied or canceled');
    case 'unknown':
      return l10n.t('unknown');
  }
}

const TOOL_STATUS_ICON: Record<ToolCallPanelView['status'], string> = {
  validating: 'loading',
  scheduled: 'clock',
  awaiting_approval: 'question',
  executing: 'loading',
  success: 'check',
  error: 'error',
  cancelled: 'circle-slash',
  unknown: 'question',
};

/** A unified diff, one line each, coloured by what the line does (the text itself is never rendered as HTML). */
function diffBlock(diff: string): TemplateResult {
  const lines = diff.replace(/\n$/, '').split('\n');
  return html`<pre class="tool-diff">
${lines.map((l) => {
      const cls =
        l.startsWith('+++') || l.startsWith('---') || l.startsWith('Index:') || l.startsWith('===')
          ? 'meta'
          : l.startsWith('@@')
            ? 'hunk'
            : l.startsWith('+')
              ? 'add'
              : l.startsWith('-')
                ? 'del'
                : '';
      return html`<span class=${cls}>${l}</span>`;
    })}</pre>`;
}

/** The call's arguments as a list of names and values (strings as they are, the rest as JSON). */
function argsList(args: Readonly<Record<string, unknown>>): TemplateResult | typeof nothing {
  const entries = Object.entries(args);
  if (entries.length === 0) return nothing;
  return html`<dl class="tool-args">
    ${entries.map(
      ([k, v]) =>
        html`<dt>${k}</dt>
          <dd><code>${typeof v === 'string' ? v : JSON.stringify(v)}</code></dd>`,
    )}
  </dl>`;
}

function toolCallCard(c: ToolCallPanelView, a: DelegationActions): TemplateResult {
  const waiting = c.status === 'awaiting_approval' && c.answered === undefined;
  const conf = c.confirmation;
  const label = c.displayName && c.displayName !== c.name ? `${c.displayName} (${c.name})` : c.name;
  const target = conf?.fileName ?? conf?.filePath ?? (typeof c.args.file_path === 'string' ? c.args.file_path : '');
  const offers = (o: string) => c.options.includes(o);
  return html`<li class="tool-call ${waiting ? 'waiting' : ''}" data-call-id=${c.callId} data-status=${c.status}>
    <div class="tool-head">
      <vscode-icon
        name=${TOOL_STATUS_ICON[c.status]}
        ?spin=${c.status === 'executing' || c.status === 'validating'}
      ></vscode-icon>
      <strong>${label}</strong> ${target ? html`<code>${target}</code>` : nothing}
      <span class="spacer"></span>
      <span class="tool-status">${toolStatusLabel(c.status)}</span>
    </div>
    ${c.autoApproved ? html`<div class="muted">${l10n.t('Approved automatically: automatic approval is on for this agent.')}</div>` : nothing}
    ${conf?.title ? html`<div class="muted">${conf.title}</div>` : nothing}
    ${conf?.command ? html`<pre class="tool-command">$ ${conf.command}</pre>` : nothing}
    ${conf?.fileDiff ? diffBlock(conf.fileDiff) : c.status === 'success' && c.output ? diffBlock(c.output) : nothing}
    ${conf?.fileDiff || conf?.command ? nothing : argsList(c.args)}
    ${c.error ? html`<div class="error">${c.error}</div>` : nothing}
    ${
      waiting
        ? html`<div class="actions">
            ${
              offers(TOOL_CALL_APPROVE)
                ? html`<vscode-button
                    class="approve"
                    icon="check"
                    ?disabled=${a.busy}
                    @click=${() => a.answerToolCall(c.callId, TOOL_CALL_APPROVE)}
                    >${l10n.t('Approve')}</vscode-button
                  >`
                : nothing
            }
            ${
              offers(TOOL_CALL_DENY)
                ? html`<vscode-button
                    class="deny"
                    secondary
                    icon="close"
                    ?disabled=${a.busy}
                    @click=${() => a.answerToolCall(c.callId, TOOL_CALL_DENY)}
                    >${l10n.t('Deny')}</vscode-button
                  >`
                : nothing
            }
          </div>`
        : nothing
    }
  </li>`;
}

function toolCalls(d: DelegationView, a: DelegationActions): TemplateResult | typeof nothing {
  if (!d.toolCalls?.length) return nothing;
  return html`<section class="tool-calls">
    <h2><vscode-icon name="tools"></vscode-icon> ${l10n.t('Tool calls')}</h2>
    <ol id="tool-calls">
      ${d.toolCalls.map((c) => toolCallCard(c, a))}
    </ol>
  </section>`;
}

/** The agent ended its turn without a question: it waits for the user to go on, accept it (Done) or cancel. */
function waitingBanner(d: DelegationView, a: DelegationActions): TemplateResult | typeof nothing {
  if (d.state !== 'input-required' || d.waiting !== 'turn') return nothing;
  return html`<div class="banner" role="status" id="waiting-for-you">
    <vscode-icon name="account"></vscode-icon>
    <div>
      <strong>${l10n.t('{0} finished its turn and is waiting for you.', d.agent.name)}</strong>
      ${l10n.t(
        'Reply to go on, Done to accept what it did (the delegation ends as completed and its changes come to you for review), or Cancel.',
      )}
    </div>
    <vscode-button id="done" icon="check-all" ?disabled=${a.busy} @click=${() => a.finish()}
      >${l10n.t('Done')}</vscode-button
    >
  </div>`;
}

function replyBox(d: DelegationView, a: DelegationActions): TemplateResult | typeof nothing {
  if (d.state !== 'input-required' || d.waiting === 'approval') return nothing;
  const send = () => {
    const area = document.getElementById('reply-text') as (HTMLElement & { value: string }) | null;
    const text = area?.value.trim() ?? '';
    if (text) a.reply(text);
  };
  return html`<section class="reply">
    <h3>
      <vscode-icon name="comment-discussion"></vscode-icon>
      ${d.question || d.waiting !== 'turn' ? l10n.t('The agent asks') : l10n.t('Your reply')}
    </h3>
    ${d.question ? agentText(d.question, true, d.questionChars, 'question', () => a.showFullText()) : nothing}
    <vscode-textarea
      id="reply-text"
      rows="3"
      placeholder=${l10n.t('Your answer…')}
      resize="vertical"
      @keydown=${(e: KeyboardEvent) => {
        if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) send();
      }}
    ></vscode-textarea>
    <div class="actions">
      <vscode-button id="send-reply" icon="send" ?disabled=${a.busy} @click=${send}
        >${l10n.t('Send Reply')}</vscode-button
      >
      <span class="muted">${l10n.t('Ctrl+Enter')}</span>
    </div>
  </section>`;
}

/** Several returned patches: each with its name, size and signature, and its own Review button. */
function patchChoices(d: DelegationView, a: DelegationActions): TemplateResult {
  return html`<div class="patches" id="patches">
    <strong>${l10n.t('The agent returned {0} patches; review each on its own:', d.patches?.length ?? 0)}</strong>
    <ul>
      ${(d.patches ?? []).map(
        (p) =>
          html`<li class="patch-choice" data-index=${p.index}>
            <vscode-icon name="diff"></vscode-icon>
            <span class="patch-name"
              >${p.source === 'message' ? l10n.t('the agent’s message') : p.source === 'tool-calls' ? l10n.t('the agent’s edits') : p.name}</span
            >
            <span class="muted"
              >${
                p.stats
                  ? html`${fileCount(p.stats.files)}, <span class="add">+${p.stats.additions}</span>
                      <span class="del">−${p.stats.deletions}</span>`
                  : l10n.t('not a readable patch')
              }
              ·
              ${signatureLabel(p.signature)}${d.reviewing === p.index ? html` · ${l10n.t('in review')}` : nothing}</span
            >
            <vscode-button
              class="review-patch"
              icon="diff"
              ?secondary=${d.reviewing !== undefined && d.reviewing !== p.index}
              @click=${() => a.review(p.index)}
              >${l10n.t('Review')}</vscode-button
            >
          </li>`,
      )}
    </ul>
  </div>`;
}

/** Patches returned as links: said, never fetched. */
function patchLinks(d: DelegationView): TemplateResult | typeof nothing {
  if (!d.patchLinks?.length) return nothing;
  return html`${d.patchLinks.map(
    (l) =>
      html`<div class="banner warn patch-link" role="status">
        <vscode-icon name="link"></vscode-icon>
        <div>
          ${l10n.t(
            'The agent returned the patch {0} as a link ({1}), which Baton does not download. Fetch it yourself if you trust it, and review it before applying it.',
            l.name,
            l.url,
          )}
        </div>
      </div>`,
  )}`;
}

/** The most children a panel lists; the Delegations view has them all. */
const CHILDREN_SHOWN = 200;

/**
 * The delegations started from within this one, with their state and who started them. A click opens
 * a child's panel when it is a delegation of this window; a child its gateway started shows its info.
 */
function childrenList(d: DelegationView, a: DelegationActions): TemplateResult | typeof nothing {
  const all: readonly DelegationChildView[] = Array.isArray(d.children) ? d.children : [];
  if (!all.length) return nothing;
  const shown = all.slice(0, CHILDREN_SHOWN);
  return html`<h2>${l10n.t('Started from within this delegation')} <span class="muted">(${all.length})</span></h2>
    <ul class="children" id="children">
      ${shown.map((c) => {
        const st = stateLook(String(c.state));
        return html`<li class="child" data-child=${c.id}>
          <vscode-icon name=${st.icon} ?spin=${st.spin}></vscode-icon>
          <a
            href="#"
            title=${c.local ? l10n.t('Open its panel') : l10n.t('Show what Baton knows of it')}
            @click=${(ev: Event) => {
              ev.preventDefault();
              a.openChild(c.id);
            }}
            >${oneLine(String(c.title || c.taskId || c.id), 200)}</a
          >
          <span class="muted"
            >${oneLine(String(c.agentName), 120)} ·
            <span class="state ${st.tone}">${stateLabel(String(c.state), t)}</span> ·
            ${
              c.local
                ? c.startedBy === 'agent'
                  ? l10n.t('started by a chat agent')
                  : l10n.t('started by you')
                : l10n.t('started at the gateway')
            }${c.children ? html` · ${l10n.t('{0} children', c.children)}` : nothing}</span
          >
        </li>`;
      })}
    </ul>
    ${all.length > shown.length ? html`<p class="muted">${l10n.t('{0} more in the Delegations view.', all.length - shown.length)}</p>` : nothing}`;
}

/** Why it ended: Baton's reason in the reader's language, the agent's own as it wrote it. */
function reasonOf(d: DelegationView): string {
  return outcomeReasonText(d.reasonWords, d.reason ?? '', t);
}

export function delegationTemplate(d: DelegationView, a: DelegationActions, now: number): TemplateResult {
  const st = stateLook(d.state);
  const started = Date.parse(d.startedAt);
  const ended = d.endedAt ? Date.parse(d.endedAt) : now;
  const deadline = d.deadline ? Date.parse(d.deadline) : undefined;
  return html`
    <header class="header">
      <vscode-icon name="rocket" size="20"></vscode-icon>
      <div class="title">
        <h1 title=${d.title}>${d.title}</h1>
        <div class="muted">
          ${l10n.t('to')} <strong>${d.agent.name}</strong> ·
          <span class="endpoint" title=${l10n.t('Baton only calls the endpoint you approved')}>${d.agent.endpoint}</span
          >${
            d.startedBy === 'agent'
              ? html` ·
                  <span
                    class="chip"
                    id="started-by"
                    title=${l10n.t(
                      'A chat agent started this delegation through Baton’s tools. You review its patch as any other; the agent cannot apply it.',
                    )}
                    >${l10n.t('started by a chat agent')}</span
                  >`
              : nothing
          }
        </div>
      </div>
      <span class="spacer"></span>
      <span class="state ${st.tone}" id="state" data-state=${d.state}
        ><vscode-icon name=${st.icon} ?spin=${st.spin}></vscode-icon>${stateLabel(d.state, t)}</span
      >
    </header>
    <section class="facts">
      <div><span class="k">${l10n.t('Elapsed')}</span><span id="elapsed">${formatDuration(ended - started)}</span></div>
      <div>
        <span class="k">${l10n.t('Deadline')}</span
        ><span
          >${
            deadline === undefined
              ? l10n.t('none')
              : d.terminal
                ? new Date(deadline).toLocaleTimeString()
                : l10n.t('{0} left', formatDuration(deadline - now))
          }</span
        >
      </div>
      <div><span class="k">${l10n.t('Capabilities')}</span><span>${capabilityChips(d.capabilities)}</span></div>
      <div>
        <span class="k">${l10n.t('Executed by')}</span
        ><span>${d.executor ?? l10n.t('not reported')}${executionChip(d)}</span>
      </div>
      ${
        d.signature
          ? html`<div class="wide">
              <span class="k">${l10n.t('Signed result')}</span
              ><span class="sig ${d.signature.status}" id="signature"
                ><vscode-icon
                  name=${d.signature.status === 'verified' ? 'verified' : d.signature.status === 'invalid' ? 'error' : 'unverified'}
                ></vscode-icon
                >${signatureLabel(d.signature.status)} <span class="muted">${d.signature.detail}</span></span
              >
            </div>`
          : nothing
      }
    </section>
    ${outcomeBanner(d, a)} ${waitingBanner(d, a)} ${toolCalls(d, a)} ${replyBox(d, a)} ${patchLinks(d)}
    <div class="actions toolbar">
      ${
        d.patches && d.patches.length > 1
          ? patchChoices(d, a)
          : d.patch
            ? html`<vscode-button id="review" icon="diff" @click=${() => a.review()}
                  >${l10n.t('Review Changes')}
                  <vscode-badge variant="counter">${d.patch.files}</vscode-badge></vscode-button
                >
                <span class="muted"
                  >${fileCount(d.patch.files)}, <span class="add">+${d.patch.additions}</span>
                  <span class="del">−${d.patch.deletions}</span></span
                >`
            : nothing
      }
      <span class="spacer"></span>
      ${d.terminal ? nothing : html`<vscode-button id="cancel" secondary icon="debug-stop" ?disabled=${a.busy} @click=${() => a.cancel()}>${l10n.t('Cancel')}</vscode-button>`}
    </div>
    ${d.review ? reviewTemplate(d.review, a) : nothing} ${childrenList(d, a)}
    <vscode-divider></vscode-divider>
    ${timeline(d, a)}
    ${
      d.artifacts.length
        ? html`<h2>${l10n.t('Artifacts')}</h2>
            <ul class="artifacts">
              ${d.artifacts.map((x) => html`<li><vscode-icon name=${x.isPatch ? 'diff' : 'file'}></vscode-icon> ${x.name} <span class="muted">${x.mediaType ?? ''} · ${l10n.t('{0} bytes', x.bytes.toLocaleString())}${x.digest ? html` · <code title=${x.digest}>${x.digest.slice(0, 19)}…</code>` : nothing}</span></li>`)}
            </ul>`
        : nothing
    }
  `;
}
