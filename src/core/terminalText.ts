/**
 * Text from an agent or a card, made safe to write to a terminal.
 *
 * A terminal obeys what it is sent: ESC/CSI move the cursor and clear the screen, OSC sets the title,
 * writes the clipboard (OSC 52) or makes hyperlinks (OSC 8), DCS talks to the terminal itself, a bare
 * CR or backspaces redraw a line ("failed" becomes "completed"), and bidi overrides reorder what is
 * shown. Every such character is written as a visible escape instead (`\x1b`, `\u202e`), so what the
 * user reads is what the agent sent. Only `terminalBlock` keeps newlines, and it indents every line
 * after the first, so an agent's text cannot start a line that looks like one of the program's own.
 */

// C0 controls, DEL, C1 controls, the bidi embeddings/overrides/isolates and marks, and the Unicode
// line and paragraph separators (some terminals and most pagers break lines on them).
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

function escape(ch: string): string {
  if (ch === '\t') return ' ';
  const code = ch.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/** One line: every control character (newlines too) as a visible escape, tabs as a space. */
export function terminalLine(text: string): string {
  return text.replace(UNSAFE, escape);
}

/** The indent `terminalBlock` puts before each continuation line by default. */
export const CONTINUATION_INDENT = '    ';

/**
 * Multi-line text: newlines (LF or CRLF) are kept, every other control character is escaped, trailing
 * newlines are dropped, and each line after the first starts with `indent`.
 */
export function terminalBlock(text: string, indent: string = CONTINUATION_INDENT): string {
  return text.replace(/\r\n/g, '\n').replace(/\n+$/, '').split('\n').map(terminalLine).join(`\n${indent}`);
}

/**
 * JSON for a terminal: exactly `JSON.stringify(value)` as a value (it parses back to the same thing),
 * with the characters JSON leaves raw but a terminal would act on (DEL, C1, bidi, U+2028/2029) written
 * as `\u` escapes. They can only occur inside strings, where the escape means the same character.
 */
export function terminalJson(value: unknown): string {
  return (JSON.stringify(value) ?? 'null').replace(
    UNSAFE,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
