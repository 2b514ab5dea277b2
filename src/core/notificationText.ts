/**
 * Text for a VS Code notification. A notification renders `[label](target)` as a link, and opens a
 * `command:` target when it is clicked: words an agent wrote (its card's name, its reason for failing,
 * a gateway's error) would otherwise offer the user a command of the agent's choosing, dressed as
 * Baton's. A space between `]` and `(` keeps every word and makes no link.
 */
export function notificationText(text: string): string {
  return text.replace(/\]\s*\(/g, '] (');
}
