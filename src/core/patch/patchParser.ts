/**
 * Reads `changes.patch` into the patch model. The diff grammar is jsdiff's (`parsePatch`, which already
 * knows git's rename/copy/mode/`Binary files` headers); this layer adds what it lacks for review:
 * `GIT binary patch` data, `index` blob ids and modes, git's one-level path strip, stable ids, and
 * streaming — the input arrives in byte chunks and is cut at `diff --git` lines, so a 50 MB patch is
 * never held as one string (each file's section is decoded, parsed and dropped in turn).
 */
import { parsePatch } from 'diff';
import type { StructuredPatch } from 'diff';
import type { ParsedPatch, PatchFile, PatchFileStatus, PatchHunk } from './patchModel';
import { PatchParseError } from './patchModel';

const DIFF_GIT = new TextEncoder().encode('diff --git ');
const NL = 0x0a;

function startsDiffGit(buf: Uint8Array, p: number): boolean {
  if (buf.length - p < DIFF_GIT.length) return false;
  for (let k = 0; k < DIFF_GIT.length; k++) if (buf[p + k] !== DIFF_GIT[k]) return false;
  return true;
}

const strictDecoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const lenientDecoder = new TextDecoder('utf-8', { ignoreBOM: true });

/** git strips one leading path component (`-p1`) from every name in a patch. */
function stripOne(name: string | undefined): string | undefined {
  if (name === undefined) return undefined;
  const n = name.endsWith('\r') ? name.slice(0, -1) : name;
  if (n === '/dev/null') return undefined;
  const slash = n.indexOf('/');
  return slash === -1 ? n : n.slice(slash + 1);
}

function hunkHeaderLines(text: string): string[] {
  const out: string[] = [];
  let p = text.startsWith('@@ ') ? 0 : text.indexOf('\n@@ ');
  if (p > 0) p += 1;
  while (p !== -1 && p < text.length) {
    const nl = text.indexOf('\n', p);
    out.push(text.slice(p, nl === -1 ? text.length : nl).replace(/\r$/, ''));
    const next = nl === -1 ? -1 : text.indexOf('\n@@ ', nl);
    p = next === -1 ? -1 : next + 1;
  }
  return out;
}

const C_ESCAPES: Record<number, string> = {
  0x07: 'a',
  0x08: 'b',
  0x09: 't',
  0x0a: 'n',
  0x0b: 'v',
  0x0c: 'f',
  0x0d: 'r',
  0x22: '"',
  0x5c: '\\',
};

function quoteIfNeeded(name: string): string {
  // git's quote_c_style with core.quotePath on: control characters, '"', '\' and non-ASCII force quoting.
  // eslint-disable-next-line no-control-regex
  if (!/[\x00-\x1f"\\\x7f-\uffff]/.test(name)) return name;
  let out = '"';
  for (const byte of new TextEncoder().encode(name)) {
    const esc = C_ESCAPES[byte];
    if (esc !== undefined) out += '\\' + esc;
    else if (byte < 0x20 || byte >= 0x7f) out += '\\' + byte.toString(8).padStart(3, '0');
    else out += String.fromCharCode(byte);
  }
  return out + '"';
}

/** A path as git writes it in headers (C-quoted when needed). */
export function gitQuotePath(path: string): string {
  return quoteIfNeeded(path);
}

/** Parses a patch held in memory. For large inputs prefer `PatchStreamParser` fed chunk by chunk. */
export function parsePatchBytes(bytes: Uint8Array): ParsedPatch {
  const p = new PatchStreamParser();
  p.push(bytes);
  return p.end();
}

export function parsePatchText(text: string): ParsedPatch {
  return parsePatchBytes(new TextEncoder().encode(text));
}

/**
 * Incremental parser: `push` byte chunks as they are read, then `end()`. Sections are cut at lines that
 * begin with `diff --git ` (such a line cannot occur inside a hunk, whose lines all begin with ' ', '+',
 * '-' or '\'), so only one file's bytes are buffered at a time.
 */
export class PatchStreamParser {
  private parts: Uint8Array[] = [];
  private partsLen = 0;
  private sectionStart = 0;
  /** Absolute offset of the next byte `push` will receive. */
  private received = 0;
  /** Unscanned tail (a line start too short to test for `diff --git `). */
  private pending: Uint8Array | undefined;
  private nextAtLineStart = true;
  private readonly files: PatchFile[] = [];
  private readonly idCounts = new Map<string, number>();
  private sawNonEmpty = false;
  private ended = false;

  /** Feeds the next bytes. The chunk is kept until its file is parsed: do not modify it afterwards. */
  push(chunk: Uint8Array): void {
    if (this.ended) throw new Error('PatchStreamParser: push after end');
    if (chunk.length === 0) return;
    // A plain view: Node's Buffer overrides indexOf/subarray with slower wrappers.
    let buf =
      Object.getPrototypeOf(chunk) === Uint8Array.prototype
        ? chunk
        : new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let base = this.received;
    if (this.pending) {
      const joined = new Uint8Array(this.pending.length + buf.length);
      joined.set(this.pending);
      joined.set(buf, this.pending.length);
      buf = joined;
      base -= this.pending.length;
      this.pending = undefined;
    }
    this.received += chunk.length;
    this.scan(buf, base, false);
  }

  end(): ParsedPatch {
    if (this.ended) throw new Error('PatchStreamParser: end called twice');
    if (this.pending) {
      const buf = this.pending;
      this.pending = undefined;
      this.scan(buf, this.received - buf.length, true);
    }
    this.ended = true;
    this.cut();
    if (!this.sawNonEmpty) throw new PatchParseError('The patch is empty: the agent proposed no changes.', 'empty');
    if (this.files.length === 0)
      throw new PatchParseError('This is not a diff: no file changes were found in it.', 'not-a-diff');
    return { files: this.files, size: this.received };
  }

  private scan(buf: Uint8Array, base: number, final: boolean): void {
    let from = 0;
    let p = this.nextAtLineStart ? 0 : lineAfter(buf, 0);
    while (p !== -1 && p < buf.length) {
      if (!final && buf.length - p < DIFF_GIT.length) {
        this.append(buf.subarray(from, p));
        this.pending = buf.slice(p);
        this.nextAtLineStart = true;
        return;
      }
      if (startsDiffGit(buf, p) && this.partsLen + (p - from) > 0) {
        this.append(buf.subarray(from, p));
        this.cut();
        this.sectionStart = base + p;
        from = p;
      }
      p = lineAfter(buf, p);
    }
    this.append(buf.subarray(from));
    this.nextAtLineStart = buf.length > 0 && buf[buf.length - 1] === NL;
  }

  private append(bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    // Kept without copying: callers hand over each chunk (`push` documents it).
    this.parts.push(bytes);
    this.partsLen += bytes.length;
  }

  private cut(): void {
    if (this.partsLen === 0) return;
    let bytes: Uint8Array;
    if (this.parts.length === 1) bytes = this.parts[0];
    else {
      bytes = new Uint8Array(this.partsLen);
      let o = 0;
      for (const part of this.parts) {
        bytes.set(part, o);
        o += part.length;
      }
    }
    const start = this.sectionStart;
    this.parts = [];
    this.sectionStart += this.partsLen;
    this.partsLen = 0;
    this.parseSection(bytes, start);
  }

  private parseSection(bytes: Uint8Array, start: number): void {
    const range = { start, end: start + bytes.length };
    if (startsDiffGit(bytes, 0)) {
      this.sawNonEmpty = true;
      const firstHunk = hunkStart(bytes);
      const scan = firstHunk === -1 ? undefined : scanHunks(bytes, firstHunk);
      if (scan) {
        // The common case: one file, well-formed hunks. jsdiff reads the header now; the bodies are
        // decoded and parsed only when someone asks for them (the diff view, a per-hunk apply), and
        // until then only the section's bytes are kept.
        const head = decode(bytes.subarray(0, firstHunk));
        const structured = this.jsdiff(head.text, start).filter(isReal);
        if (structured.length === 1) {
          let body: { text: string; lossy: boolean } | undefined;
          const whole = (): { text: string; lossy: boolean } => (body ??= decode(bytes));
          let parsed: StructuredPatch | undefined;
          const bodies = (): readonly string[][] => {
            parsed ??= this.jsdiff(whole().text, start).filter(isReal)[0];
            if (!parsed || parsed.hunks.length !== scan.length)
              throw new PatchParseError(`The patch is malformed near byte ${start}.`, 'malformed', start);
            return parsed.hunks.map((h) => h.lines);
          };
          const file = this.toFile(
            structured[0],
            head.text,
            scan.map((h, k) => ({ ...h, lines: () => bodies()[k] })),
            range,
            head.lossy,
          );
          if (!head.lossy) Object.defineProperty(file, 'lossy', { enumerable: true, get: () => whole().lossy });
          this.files.push(file);
          return;
        }
      }
    }
    const { text, lossy } = decode(bytes);
    if (!this.sawNonEmpty && text.trim() !== '') this.sawNonEmpty = true;
    const real = this.jsdiff(text, start).filter(isReal);
    for (const st of real) {
      if (st.oldFileName === undefined && st.newFileName === undefined) {
        throw new PatchParseError(
          `The patch is malformed near byte ${start}: a hunk has no file header.`,
          'malformed',
          start,
        );
      }
    }
    const single = real.length === 1;
    for (const st of real) {
      const firstHunk = single ? (text.startsWith('@@ ') ? 0 : text.indexOf('\n@@ ')) : -1;
      const header = !single
        ? `--- ${quoteIfNeeded(st.oldFileName ?? '/dev/null')}\n+++ ${quoteIfNeeded(st.newFileName ?? '/dev/null')}\n`
        : firstHunk === -1
          ? text
          : text.slice(0, firstHunk === 0 ? 0 : firstHunk + 1);
      const headers = single ? hunkHeaderLines(text) : [];
      const specs = st.hunks.map((h, k) => {
        let added = 0;
        let removed = 0;
        for (const l of h.lines) {
          const c = l.charCodeAt(0);
          if (c === 0x2b) added++;
          else if (c === 0x2d) removed++;
        }
        // jsdiff reports a 0-line side's start one higher than the header says; keep the header's numbers.
        const oldStart = h.oldLines === 0 ? h.oldStart - 1 : h.oldStart;
        const newStart = h.newLines === 0 ? h.newStart - 1 : h.newStart;
        const header =
          headers.length === st.hunks.length
            ? headers[k]
            : `@@ -${oldStart},${h.oldLines} +${newStart},${h.newLines} @@`;
        return {
          oldStart,
          oldLines: h.oldLines,
          newStart,
          newLines: h.newLines,
          header,
          added,
          removed,
          lines: () => h.lines,
        };
      });
      this.files.push(this.toFile(st, header, specs, single ? range : undefined, lossy));
    }
  }

  private jsdiff(text: string, start: number): StructuredPatch[] {
    try {
      return parsePatch(text);
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      throw new PatchParseError(`The patch is malformed near byte ${start}: ${why}.`, 'malformed', start);
    }
  }

  private toFile(
    s: StructuredPatch,
    headerText: string,
    specs: readonly HunkSpec[],
    range: { start: number; end: number } | undefined,
    lossy: boolean,
  ): PatchFile {
    const index = this.files.length;
    const binaryData = /^GIT binary patch\r?$/m.test(headerText);
    const indexLine = /^index ([0-9a-fA-F]+)\.\.([0-9a-fA-F]+)(?: ([0-7]{6}))?\r?$/m.exec(headerText);
    const oldPath = stripOne(s.oldFileName);
    const newPath = stripOne(s.newFileName);
    const isCreate = s.isCreate === true || (oldPath === undefined && newPath !== undefined);
    const isDelete = s.isDelete === true || (newPath === undefined && oldPath !== undefined);
    const status: PatchFileStatus = isCreate
      ? 'added'
      : isDelete
        ? 'deleted'
        : s.isRename
          ? 'renamed'
          : s.isCopy
            ? 'copied'
            : 'modified';
    const shownPath = newPath ?? oldPath ?? '';
    const seen = this.idCounts.get(shownPath) ?? 0;
    this.idCounts.set(shownPath, seen + 1);
    const id = seen === 0 ? shownPath : `${shownPath}~${seen + 1}`;
    let fileAdded = 0;
    let fileRemoved = 0;
    const hunks: PatchHunk[] = specs.map((h, k) => {
      fileAdded += h.added;
      fileRemoved += h.removed;
      const hunk = {
        id: `${id}#${k + 1}`,
        index: k,
        oldStart: h.oldStart,
        oldLines: h.oldLines,
        newStart: h.newStart,
        newLines: h.newLines,
        header: h.header,
      } as PatchHunk;
      // Bodies are materialised on first use (enumerable, so JSON and deep equality see them).
      let lines: readonly string[] | undefined;
      Object.defineProperty(hunk, 'lines', { enumerable: true, get: () => (lines ??= h.lines()) });
      Object.defineProperty(hunk, 'added', { enumerable: true, value: h.added });
      Object.defineProperty(hunk, 'removed', { enumerable: true, value: h.removed });
      return hunk;
    });
    const indexMode = indexLine?.[3];
    return {
      id,
      index,
      oldPath: isCreate ? undefined : oldPath,
      newPath: isDelete ? undefined : newPath,
      status,
      oldMode: s.oldMode ?? (isCreate ? undefined : indexMode),
      newMode: s.newMode ?? (isDelete ? undefined : indexMode),
      oldBlob: indexLine?.[1],
      newBlob: indexLine?.[2],
      binary: binaryData || s.isBinary === true,
      binaryData,
      isGit: s.isGit === true,
      hunks,
      added: fileAdded,
      removed: fileRemoved,
      headerText: headerText.endsWith('\n') || headerText === '' ? headerText : headerText + '\n',
      bytes: range,
      lossy,
    };
  }
}

interface HunkSpec {
  readonly oldStart: number;
  readonly oldLines: number;
  readonly newStart: number;
  readonly newLines: number;
  readonly header: string;
  readonly added: number;
  readonly removed: number;
  readonly lines: () => readonly string[];
}

function isReal(s: StructuredPatch): boolean {
  return s.oldFileName !== undefined || s.newFileName !== undefined || s.isGit === true || s.hunks.length > 0;
}

const HUNK_HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

function decode(bytes: Uint8Array): { text: string; lossy: boolean } {
  try {
    return { text: strictDecoder.decode(bytes), lossy: false };
  } catch {
    return { text: lenientDecoder.decode(bytes), lossy: true };
  }
}

/** Offset of the first line that starts with `@@ `, or -1. '@' is rare in source, so search for it. */
function hunkStart(bytes: Uint8Array): number {
  let p = bytes.indexOf(0x40);
  while (p !== -1) {
    if ((p === 0 || bytes[p - 1] === NL) && bytes[p + 1] === 0x40 && bytes[p + 2] === 0x20) return p;
    p = bytes.indexOf(0x40, p + 1);
  }
  return -1;
}

/**
 * Walks the hunks of a one-file section by their line counts, on the bytes, without building line
 * strings, to learn ranges and counts cheaply. Returns undefined when anything is unusual (text between
 * or after hunks, an unknown line prefix, counts that do not add up): then jsdiff parses the section in
 * full at once and reports any error.
 */
function scanHunks(bytes: Uint8Array, p: number): Omit<HunkSpec, 'lines'>[] | undefined {
  const out: Omit<HunkSpec, 'lines'>[] = [];
  const n = bytes.length;
  while (p < n) {
    let nl = bytes.indexOf(NL, p);
    if (nl === -1) nl = n;
    const headerLine = lenientDecoder.decode(bytes.subarray(p, nl)).replace(/\r$/, '');
    const m = HUNK_HEADER.exec(headerLine);
    if (!m) return undefined;
    const oldLines = m[2] === undefined ? 1 : Number(m[2]);
    const newLines = m[4] === undefined ? 1 : Number(m[4]);
    let oldLeft = oldLines;
    let newLeft = newLines;
    let added = 0;
    let removed = 0;
    p = nl + 1;
    while (p < n && (oldLeft > 0 || newLeft > 0 || bytes[p] === 0x5c)) {
      let e = bytes.indexOf(NL, p);
      if (e === -1) e = n;
      const c = e === p ? 0x20 : bytes[p];
      if (c === 0x20) {
        oldLeft--;
        newLeft--;
      } else if (c === 0x2d) {
        oldLeft--;
        removed++;
      } else if (c === 0x2b) {
        newLeft--;
        added++;
      } else if (c !== 0x5c) return undefined;
      p = e + 1;
    }
    if (oldLeft !== 0 || newLeft !== 0) return undefined;
    out.push({
      oldStart: Number(m[1]),
      oldLines,
      newStart: Number(m[3]),
      newLines,
      header: headerLine,
      added,
      removed,
    });
    if (p < n && bytes[p] !== 0x40) return undefined;
  }
  return out;
}

function lineAfter(buf: Uint8Array, p: number): number {
  const nl = buf.indexOf(NL, p);
  return nl === -1 ? -1 : nl + 1;
}
