/**
 * An agent's structured content (a data part) as a collapsed tree: one `<details>` per object or
 * array, keys and scalar values as text, long strings folded behind their length. Everything is
 * rendered through lit's text bindings — nothing the agent sent becomes HTML — and bounded: depth,
 * items per level and string characters come from `PANEL_LIMITS`, the rest is counted, not shown.
 */
import * as l10n from '@vscode/l10n';
import { html, nothing, type TemplateResult } from 'lit';
import { dataSummaryOf, dataSummaryLine, formatBytes, type DataPartView } from '../core/protocol/dataView';
import { PANEL_LIMITS } from '../core/protocol/panelLimits';

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function scalar(v: unknown): TemplateResult {
  if (typeof v === 'string') {
    if (v.length <= PANEL_LIMITS.dataStringChars) return html`<span class="data-string">${JSON.stringify(v)}</span>`;
    return html`<details class="data-long">
      <summary>
        <span class="data-string">${JSON.stringify(v.slice(0, 80))}…</span>
        <span class="muted">${l10n.t('{0} characters', v.length.toLocaleString())}</span>
      </summary>
      <pre class="data-string-full">${v}</pre>
    </details>`;
  }
  if (typeof v === 'number' || typeof v === 'boolean') return html`<span class="data-${typeof v}">${String(v)}</span>`;
  return html`<span class="data-null">null</span>`;
}

function size(v: unknown[] | Record<string, unknown>): string {
  const n = Array.isArray(v) ? v.length : Object.keys(v).length;
  return Array.isArray(v)
    ? n === 1
      ? l10n.t('1 item')
      : l10n.t('{0} items', n)
    : n === 1
      ? l10n.t('1 key')
      : l10n.t('{0} keys', n);
}

/** One value: scalars inline, objects and arrays as a collapsed level. */
function node(label: TemplateResult | typeof nothing, v: unknown, depth: number): TemplateResult {
  if (!Array.isArray(v) && !isPlainObject(v)) return html`<div class="data-leaf">${label}${scalar(v)}</div>`;
  const entries: [string, unknown][] = Array.isArray(v) ? v.map((x, i) => [String(i), x]) : Object.entries(v);
  const open = Array.isArray(v) ? '[' : '{';
  const close = Array.isArray(v) ? ']' : '}';
  if (depth >= PANEL_LIMITS.dataDepth)
    return html`<div class="data-leaf">${label}<span class="muted">${open}${size(v)}${close}</span></div>`;
  const shown = entries.slice(0, PANEL_LIMITS.dataItems);
  const more = entries.length - shown.length;
  return html`<details class="data-node">
    <summary>${label}<span class="muted">${open}${size(v)}${close}</span></summary>
    <div class="data-children">
      ${shown.map(([k, x]) => node(html`<span class="data-key">${k}</span>: `, x, depth + 1))}
      ${more > 0 ? html`<div class="muted">${l10n.t('… {0} more', more.toLocaleString())}</div>` : nothing}
    </div>
  </details>`;
}

/** One data part: its tree, collapsed, or its summary when only that was kept. */
export function dataPartTemplate(d: DataPartView): TemplateResult {
  const bytes = typeof d.bytes === 'number' ? formatBytes(d.bytes) : '';
  if ('value' in d) {
    return html`<div class="data-part" title=${dataSummaryLine(d)}>
      ${node(html`<span class="muted data-label">${l10n.t('data')} (${bytes}) </span>`, d.value, 0)}
    </div>`;
  }
  const s = dataSummaryOf(d);
  return html`<div class="data-part data-summary">
    <span class="muted data-label">${l10n.t('data')} (${bytes}) </span>
    <span>${s.type === 'object' ? `{${s.keys.join(', ')}${s.count > s.keys.length ? ', …' : ''}}` : s.type}</span>
    <span class="muted"
      >${
        s.type === 'object'
          ? l10n.t('{0} keys, too large to show here; the journal keeps all of it', s.count)
          : l10n.t('too large to show here; the journal keeps all of it')
      }</span
    >
  </div>`;
}

/** Every data part of a timeline entry. */
export function dataPartsTemplate(parts: readonly DataPartView[] | undefined): TemplateResult | typeof nothing {
  if (!Array.isArray(parts) || parts.length === 0) return nothing;
  return html`${parts.slice(0, PANEL_LIMITS.dataParts).map((p) => dataPartTemplate(p))}`;
}
