import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-badge/index.js';
import '@vscode-elements/elements/dist/vscode-divider/index.js';
import '@vscode-elements/elements/dist/vscode-icon/index.js';
import '@vscode-elements/elements/dist/vscode-textarea/index.js';
import '@vscode-elements/elements/dist/vscode-checkbox/index.js';
import * as l10n from '@vscode/l10n';
import { html, nothing, render } from 'lit';
import {
  PANEL_STATE_VERSION,
  migratePanelState,
  type HostToWebviewMessage,
  type PanelCommand,
  type PanelRequestMethod,
  type PanelRequests,
  type PanelSnapshot,
  type PanelUiState,
  type DelegationView,
} from '../core/protocol/panelProtocol';
import type { AgentReviewActions } from './agentReviewView';
import type { DelegationActions } from './delegationView';
import { boundDelegationView, oneLine } from '../core/protocol/panelLimits';
import { agentReviewTemplate } from './agentReviewView';
import { delegationTemplate } from './delegationView';
import { configureL10n } from './l10n';
import { startRenderFrame } from './markdown';
import { agentStyles, delegationStyles, panelStyles, reviewStyles } from './styles';
import { vscodeApi } from './vscodeApi';

// Before anything renders: every string the panel shows is looked up in the host's translations.
configureL10n(document.getElementById('app'));
const vscode = vscodeApi();
let uiState: PanelUiState = migratePanelState(vscode.getState());
vscode.setState(uiState);

let snapshot: PanelSnapshot | undefined;
let busy: PanelRequestMethod | undefined;
let lastError: string | undefined;
let nextId = 1;
const waiting = new Map<number, (result: { ok: true; value: unknown } | { ok: false; error: string }) => void>();

/** Sends a request; resolves with its method's result (the host answers each request's id once, for that request). */
function request<M extends PanelRequestMethod>(
  method: M,
  params: PanelRequests[M]['params'],
): Promise<PanelRequests[M]['result']> {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    waiting.set(id, (r) => (r.ok ? resolve(r.value as PanelRequests[M]['result']) : reject(new Error(r.error))));
    vscode.postMessage({ type: 'request', id, method, params } as Extract<
      Parameters<typeof vscode.postMessage>[0],
      { method: M }
    >);
  });
}

/** Sends a request with the panel busy meanwhile; `then` gets its result, an error shows in the panel. */
async function run<M extends PanelRequestMethod>(
  method: M,
  params: PanelRequests[M]['params'],
  then?: (result: PanelRequests[M]['result']) => void,
): Promise<void> {
  busy = method;
  lastError = undefined;
  draw();
  try {
    const result = await request(method, params);
    then?.(result);
  } catch (e) {
    lastError = e instanceof Error ? e.message : String(e);
  } finally {
    busy = undefined;
    draw();
  }
}

function setUi(next: Partial<Omit<PanelUiState, '__v'>>): void {
  uiState = { ...uiState, ...next, __v: PANEL_STATE_VERSION };
  vscode.setState(uiState);
  draw();
}

const command = (c: PanelCommand) => () => void run('runCommand', { command: c });

function stat(icon: string, label: string, value: string | number) {
  return html`<div class="stat">
    <vscode-icon name=${icon}></vscode-icon><span class="stat-value">${value}</span
    ><span class="stat-label">${label}</span>
  </div>`;
}

const refresh = () => void run('refresh', {}, (s) => (snapshot = bounded(s)));

function clearReplyBox(): void {
  const box = document.getElementById('reply-text') as (HTMLElement & { value: string }) | null;
  if (box) box.value = '';
}

/** What a delegation's panel asks of the host: the requests of a delegation panel only. */
const actions: DelegationActions = {
  cancel: () => void run('cancel', {}),
  reply: (text: string) => void run('reply', { text }, clearReplyBox),
  review: (index?: number) => void run('reviewChanges', index === undefined ? {} : { patch: index }),
  checkAgain: () => void run('checkAgain', {}),
  provideToken: () => void run('provideToken', {}),
  delegateAgain: () => void run('delegateAgain', {}),
  showFullText: (seq?: number) => void run('showFullText', seq === undefined ? {} : { seq }),
  openChild: (childId: string) => void run('openChild', { childId }),
  answerToolCall: (callId: string, outcome: string) => void run('answerToolCall', { callId, outcome }),
  finish: () => void run('finish', {}),
  send: (method, params) => void run(method, params),
  get busy() {
    return busy !== undefined;
  },
};

/** What an agent review panel asks of the host. */
const agentActions: AgentReviewActions = {
  send: (method, params) => void run(method, params),
  redraw: () => draw(),
  get busy() {
    return busy !== undefined;
  },
};

/**
 * The delegation, or when its template cannot be built at all, what the user needs to act on it: the
 * state, Cancel and the reason it is not shown. Entries fail on their own (delegationView.ts); this
 * is the last line, so no snapshot leaves the panel at "Connecting…".
 */
function delegationOrFallback(d: DelegationView) {
  try {
    return delegationTemplate(d, actions, Date.now());
  } catch (e) {
    return fallbackView(d, e);
  }
}

function fallbackView(d: DelegationView | undefined, e: unknown) {
  const why = e instanceof Error ? e.message.slice(0, 300) : l10n.t('unknown error');
  return html`<header class="header">
      <vscode-icon name="rocket" size="20"></vscode-icon>
      <div class="title"><h1>${oneLine(typeof d?.title === 'string' ? d.title : l10n.t('Delegation'))}</h1></div>
      <span class="spacer"></span>
      <span class="state" id="state" data-state=${String(d?.state ?? 'unknown')}>${String(d?.state ?? 'unknown')}</span>
    </header>
    <div class="banner warn" role="alert">
      <vscode-icon name="warning"></vscode-icon>
      <div>
        ${l10n.t(
          'Part of this delegation could not be shown ({0}). Its journal keeps everything; the Delegations view and the audit log show it.',
          why,
        )}
      </div>
    </div>
    <div class="actions toolbar">
      <span class="spacer"></span
      >${d && !d.terminal ? html`<vscode-button id="cancel" secondary icon="debug-stop" ?disabled=${busy !== undefined} @click=${() => actions.cancel()}>${l10n.t('Cancel')}</vscode-button>` : nothing}
    </div>`;
}

function view() {
  // Shown only if Baton's first snapshot is slow to come: a panel shown again (VS Code loads its page
  // again) gets it within a few frames, and a flash of this line each time would be noise.
  if (!snapshot) return html`<p class="muted" id="connecting" role="status">${l10n.t('Connecting to Baton…')}</p>`;
  const s = snapshot;
  if (s.agentReview) {
    return html`${agentReviewTemplate(s.agentReview, agentActions, s.trusted)}${lastError ? html`<p class="error" role="alert">${lastError}</p>` : nothing}`;
  }
  if (s.delegation) {
    return html`${delegationOrFallback(s.delegation)}${lastError ? html`<p class="error" role="alert">${lastError}</p>` : nothing}`;
  }
  return html` <header class="header">
      <vscode-icon name="rocket" size="20"></vscode-icon>
      <h1>${l10n.t('Delegation')}</h1>
      <vscode-badge variant="counter">${s.delegations}</vscode-badge>
      <span class="spacer"></span>
      <vscode-button id="refresh" secondary icon="refresh" ?disabled=${busy !== undefined} @click=${refresh}
        >${l10n.t('Refresh')}</vscode-button
      >
    </header>
    ${
      s.trusted
        ? nothing
        : html`<div class="banner warning" role="alert">
            <vscode-icon name="shield"></vscode-icon>
            ${l10n.t(
              'Restricted Mode: Baton shows agents and past delegations, but nothing is delegated, run or applied until you trust this workspace.',
            )}
          </div>`
    }
    <section class="stats">
      ${stat('organization', l10n.t('approved agents'), s.agents)}
      ${stat('history', l10n.t('delegations'), s.delegations)}
      ${stat(
        s.trusted ? 'workspace-trusted' : 'workspace-untrusted',
        l10n.t('workspace'),
        s.trusted ? l10n.t('trusted') : l10n.t('restricted'),
      )}
    </section>
    <vscode-divider></vscode-divider>
    <section class="empty">
      <h2>${l10n.t('No delegation selected')}</h2>
      <p>
        ${l10n.t(
          'Hand a bounded task to an agent. Its status, steps and artifacts stream here, and the changes it proposes come back as a patch you review before anything touches your files.',
        )}
      </p>
      <div class="actions">
        <vscode-button
          id="delegate"
          icon="rocket"
          ?disabled=${!s.trusted || busy !== undefined}
          @click=${command('baton.delegate')}
          >${l10n.t('Delegate…')}</vscode-button
        >
        <vscode-button
          id="add-agent"
          secondary
          icon="add"
          ?disabled=${!s.trusted || busy !== undefined}
          @click=${command('baton.addAgent')}
          >${l10n.t('Add Agent…')}</vscode-button
        >
      </div>
    </section>
    <footer class="footer muted">
      <span id="refresh-status"
        >${
          s.refreshCount === 0
            ? l10n.t('Up to date')
            : l10n.t('Refreshed {0}× · {1}', s.refreshCount, new Date(s.producedAt).toLocaleTimeString())
        }</span
      >
      ${lastError ? html`<span class="error" role="alert">${lastError}</span>` : nothing}
      <a
        href="#"
        class="toggle"
        @click=${(e: Event) => {
          e.preventDefault();
          setUi({ timelineExpanded: !uiState.timelineExpanded });
        }}
        >${uiState.timelineExpanded ? l10n.t('Compact') : l10n.t('Expand')}</a
      >
    </footer>`;
}

const root = document.getElementById('app');
/** Lit renders into this; replaced by a fresh one if a render ever throws half-way through. */
let canvas: HTMLElement | undefined;
let redrawQueued = false;
function draw(): void {
  if (!root) return;
  root.classList.toggle('compact', !uiState.timelineExpanded);
  if (!canvas) root.append((canvas = document.createElement('div')));
  const deferred = startRenderFrame();
  try {
    render(view(), canvas);
  } catch (e) {
    canvas.remove();
    root.append((canvas = document.createElement('div')));
    render(fallbackView(snapshot?.delegation, e), canvas);
  }
  // Entries past this frame's rendering budget show as plain text for now: render more next frame.
  if (deferred() && !redrawQueued) {
    redrawQueued = true;
    setTimeout(() => {
      redrawQueued = false;
      draw();
    }, 16);
  }
}

/** A snapshot within the panel's bounds, whatever the host sent (see panelLimits.ts). */
function bounded(s: PanelSnapshot): PanelSnapshot {
  if (!s.delegation) return s;
  try {
    return { ...s, delegation: boundDelegationView(s.delegation) };
  } catch {
    return s;
  }
}

window.addEventListener('message', (event: MessageEvent<HostToWebviewMessage>) => {
  const message = event.data;
  switch (message.type) {
    case 'snapshot':
      snapshot = bounded(message.snapshot);
      if (snapshot.delegation && uiState.delegationId !== snapshot.delegation.id)
        setUi({ delegationId: snapshot.delegation.id });
      if (snapshot.agentReview && uiState.agentCardUrl !== snapshot.agentReview.cardUrl)
        setUi({ agentCardUrl: snapshot.agentReview.cardUrl });
      draw();
      return;
    case 'response': {
      const settle = waiting.get(message.id);
      waiting.delete(message.id);
      settle?.(message.ok ? { ok: true, value: message.result } : { ok: false, error: message.error });
      return;
    }
  }
});

const style = document.createElement('style');
style.textContent = panelStyles + delegationStyles + reviewStyles + agentStyles;
document.head.append(style);
draw();
// Elapsed time and the deadline count live while a delegation runs.
setInterval(() => {
  if (snapshot?.delegation && !snapshot.delegation.terminal) draw();
}, 1000);
// The host holds everything it wants to send until it hears this.
vscode.postMessage({ type: 'ready', stateVersion: PANEL_STATE_VERSION });
