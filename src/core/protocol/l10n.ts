/**
 * How pure code says a sentence without knowing the language: it takes a `t` with the signature of
 * `vscode.l10n.t` / `@vscode/l10n`'s `t` (the message is English and its own key; `{0}`, `{1}`… are
 * replaced by the arguments). The host passes `vscode.l10n.t`, the panel its `t` (src/webview/l10n.ts);
 * logs, the CLI and tests pass `english`. Call it as `t('literal message', …)`: `npm run l10n`
 * extracts the literal from src/core. Here in core/protocol because the panel shares it.
 */
export type Translate = (message: string, ...args: Array<string | number | boolean>) => string;

/** The message itself with its arguments filled in: what `vscode.l10n.t` gives without a translation. */
export const english: Translate = (message, ...args) =>
  message.replace(/\{(\d+)\}/g, (whole, i: string) => (Number(i) < args.length ? String(args[Number(i)]) : whole));
