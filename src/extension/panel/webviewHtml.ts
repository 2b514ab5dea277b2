import { randomBytes } from 'node:crypto';
import type * as vscode from 'vscode';

/** The folders a Baton webview may load from: the bundle and the media folder, nothing else. */
export function webviewRoots(
  extensionUri: vscode.Uri,
  joinPath: (base: vscode.Uri, ...p: string[]) => vscode.Uri,
): vscode.Uri[] {
  return [joinPath(extensionUri, 'dist', 'webview'), joinPath(extensionUri, 'media')];
}

export function newNonce(): string {
  return randomBytes(18).toString('base64url');
}

/**
 * Content-Security-Policy for every Baton webview: nothing by default, our scripts by nonce only
 * (no `unsafe-eval`), styles and fonts from the bundle, images only from the bundle or inline data
 * (agent text must never make the panel fetch a remote image), no network connections.
 */
export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src ${cspSource} 'unsafe-inline'`,
    `font-src ${cspSource}`,
    `img-src ${cspSource} data:`,
    "connect-src 'none'",
    "frame-src 'none'",
    "form-action 'none'",
    "base-uri 'none'",
  ].join('; ');
}

export interface PanelHtmlInput {
  readonly cspSource: string;
  readonly scriptUri: string;
  readonly codiconCssUri: string;
  readonly title: string;
  readonly nonce: string;
  /**
   * `vscode.l10n.bundle`: the translations of the runtime strings, undefined in English. It reaches
   * the panel as data (JSON in an escaped attribute the script reads), never as script, so the CSP
   * stays nonce-only.
   */
  /** `vscode.env.language`, for the page's `lang` (screen readers pick their voice by it); English by default. */
  readonly language?: string;
  readonly l10nBundle?: { readonly [message: string]: string };
}

const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

export function panelHtml(input: PanelHtmlInput): string {
  const { cspSource, scriptUri, codiconCssUri, title, nonce, l10nBundle } = input;
  const bundle = l10nBundle ? ` data-l10n="${escapeHtml(JSON.stringify(l10nBundle))}"` : '';
  return `<!DOCTYPE html>
<html lang="${escapeHtml(input.language ?? 'en')}">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(contentSecurityPolicy(cspSource, nonce))}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="${escapeHtml(codiconCssUri)}" id="vscode-codicon-stylesheet">
<title>${escapeHtml(title)}</title>
</head>
<body>
<main id="app" aria-live="polite"${bundle}></main>
<script type="module" nonce="${nonce}" src="${escapeHtml(scriptUri)}"></script>
</body>
</html>`;
}
