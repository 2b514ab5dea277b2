/**
 * Where a patch's bytes come from, and how they reach git: a file on disk is streamed through the
 * parser in 1 MiB chunks (never held whole) and handed to git by path; a sub-patch is written to git's
 * stdin part by part, whole files copied straight from the original bytes.
 */
import { createReadStream, openSync, readSync, closeSync, statSync } from 'node:fs';
import type { Writable } from 'node:stream';
import type { ParsedPatch } from '../core/patch/patchModel';
import { PatchStreamParser } from '../core/patch/patchParser';
import type { SubPatch } from '../core/patch/subPatch';

/** A patch on disk (e.g. the stored `changes.patch` artifact) or in memory. */
export type PatchSource = { readonly path: string } | { readonly bytes: Uint8Array };

export type ProgressCallback = (done: number, total: number) => void;

const CHUNK = 1 << 20;

export function sourceSize(source: PatchSource): number {
  return 'bytes' in source ? source.bytes.length : statSync(source.path).size;
}

/** Parses a patch, streaming it from disk when it is a file, reporting bytes read. */
export async function readPatch(
  source: PatchSource,
  opts: { onProgress?: ProgressCallback; signal?: AbortSignal } = {},
): Promise<ParsedPatch> {
  const parser = new PatchStreamParser();
  if ('bytes' in source) {
    const total = source.bytes.length;
    for (let o = 0; o < total; o += CHUNK) {
      opts.signal?.throwIfAborted();
      parser.push(source.bytes.subarray(o, Math.min(total, o + CHUNK)));
      opts.onProgress?.(Math.min(total, o + CHUNK), total);
    }
    return parser.end();
  }
  const total = statSync(source.path).size;
  let done = 0;
  const stream = createReadStream(source.path, { highWaterMark: CHUNK, signal: opts.signal });
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    parser.push(chunk);
    done += chunk.length;
    opts.onProgress?.(done, total);
    // Yield between chunks so a host sharing this thread (the extension host) stays responsive.
    await new Promise<void>((r) => setImmediate(r));
  }
  return parser.end();
}

/** Reads `[start, end)` of a patch. */
export function readRange(source: PatchSource, start: number, end: number): Buffer {
  if ('bytes' in source) return Buffer.from(source.bytes.buffer, source.bytes.byteOffset + start, end - start);
  const buf = Buffer.allocUnsafe(end - start);
  const fd = openSync(source.path, 'r');
  try {
    let o = 0;
    while (o < buf.length) {
      const n = readSync(fd, buf, o, buf.length - o, start + o);
      if (n === 0) throw new Error(`The patch file ${source.path} is shorter than when it was read.`);
      o += n;
    }
  } finally {
    closeSync(fd);
  }
  return buf;
}

function writeChunk(out: Writable, chunk: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const ok = out.write(chunk, (err) => {
      if (err) reject(err);
    });
    if (ok) resolve();
    else {
      const onDrain = (): void => {
        out.off('error', onError);
        resolve();
      };
      const onError = (err: Error): void => {
        out.off('drain', onDrain);
        reject(err);
      };
      out.once('drain', onDrain);
      out.once('error', onError);
    }
  });
}

/** Writes a sub-patch to a stream (git's stdin), bounded memory: byte ranges go in 1 MiB pieces. */
export async function writeSubPatch(sub: SubPatch, source: PatchSource, out: Writable): Promise<void> {
  for (const part of sub.parts) {
    if (part.kind === 'text') {
      await writeChunk(out, Buffer.from(part.text, 'utf8'));
      continue;
    }
    for (let o = part.range.start; o < part.range.end; o += CHUNK) {
      await writeChunk(out, readRange(source, o, Math.min(part.range.end, o + CHUNK)));
    }
  }
}

/** The whole sub-patch in memory (for small patches and the plain-folder patcher). */
export function subPatchBytes(sub: SubPatch, source: PatchSource): Buffer {
  return Buffer.concat(
    sub.parts.map((p) =>
      p.kind === 'text' ? Buffer.from(p.text, 'utf8') : readRange(source, p.range.start, p.range.end),
    ),
  );
}
