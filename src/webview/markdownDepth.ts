/**
 * How deeply a markdown text nests, estimated in one linear pass before it reaches the parser. The
 * parser recurses once per level of block quote, list, emphasis and link text, so a few kilobytes of
 * `>>>>…`, `- - - …` or `**…**` overflow its stack, and deeply indented lists take it minutes. The
 * estimate errs high (a false alarm only shows a message as plain text), never low on what nests:
 *
 * - blocks: per line, each `>` and each list marker before the content is one level, and a list
 *   marker's indentation counts a level per two columns (that is how lists nest in markdown);
 * - inline: per paragraph, an opening `*`/`_`/`~` run or `[` is one level until something closes it;
 *   code spans are skipped, as the parser does.
 *
 * Stops counting as soon as `limit` is passed, so hostile text costs no more than the limit.
 */
export function markdownDepth(text: string, limit: number): number {
  let deepest = 0;
  let inline = 0;
  let start = 0;
  while (start <= text.length && deepest <= limit) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const line = text.slice(start, end);
    start = end + 1;
    const block = blockDepth(line);
    if (block.newBlock) inline = 0;
    inline = inlineDepth(line, block.contentAt, inline, limit);
    deepest = Math.max(deepest, block.depth, inline + block.depth);
  }
  return deepest;
}

const THEMATIC_BREAK = /^[ \t]*([-*_])(?:[ \t]*\1){2,}[ \t]*$/;

/** Container levels at the start of one line, where its content starts, and whether it starts a block. */
function blockDepth(line: string): { depth: number; contentAt: number; newBlock: boolean } {
  let i = 0;
  let depth = 0;
  let newBlock = false;
  for (;;) {
    let indent = 0;
    while (line[i] === ' ' || line[i] === '\t') {
      indent += line[i] === '\t' ? 4 : 1;
      i++;
    }
    const c = line[i];
    if (c === '>') {
      depth++;
      i++;
      newBlock = true;
      continue;
    }
    const marker = listMarkerLength(line, i);
    if (marker > 0 && !THEMATIC_BREAK.test(line.slice(i))) {
      depth += 1 + Math.floor(indent / 2);
      i += marker;
      newBlock = true;
      continue;
    }
    if (
      i >= line.length ||
      c === '#' ||
      (c === '`' && line.startsWith('```', i)) ||
      (c === '~' && line.startsWith('~~~', i))
    )
      newBlock = true;
    return { depth, contentAt: i, newBlock };
  }
}

/** Length of a list marker (`-`, `*`, `+`, `1.`, `1)`) at `i` followed by a space or the line end; 0 if none. */
function listMarkerLength(line: string, i: number): number {
  const c = line[i];
  let j = i;
  if (c === '-' || c === '*' || c === '+') j++;
  else {
    while (j - i < 9 && line[j] >= '0' && line[j] <= '9') j++;
    if (j === i || (line[j] !== '.' && line[j] !== ')')) return 0;
    j++;
  }
  return j >= line.length || line[j] === ' ' || line[j] === '\t' ? j - i : 0;
}

const OPENERS = new Set(['[', '(', '<', '{']);

const isSpace = (c: string | undefined): boolean => c === undefined || c === ' ' || c === '\t' || c === '\n';

/** The open inline levels after one line, given those still open from the paragraph's earlier lines. */
function inlineDepth(line: string, from: number, open: number, limit: number): number {
  let depth = open;
  for (let i = from; i < line.length && depth <= limit; i++) {
    const c = line[i];
    if (c === '\\') {
      i++;
    } else if (c === '`') {
      let run = 1;
      while (line[i + run] === '`') run++;
      const close = line.indexOf('`'.repeat(run), i + run);
      i = close >= 0 ? close + run - 1 : i + run - 1;
    } else if (c === '*' || c === '_' || c === '~') {
      let run = 1;
      while (line[i + run] === '*' || line[i + run] === '_' || line[i + run] === '~') run++;
      const before = line[i - 1];
      const after = line[i + run];
      // Each delimiter character of a run can open one level (`***` is strong inside emphasis). A run
      // right after an opening bracket counts as opening, so `*[*[*[…` cannot hide its depth.
      if (before !== undefined && !isSpace(before) && !OPENERS.has(before) && depth > 0)
        depth = Math.max(0, depth - run);
      else if (!isSpace(after)) depth += run;
      i += run - 1;
    } else if (c === '[') {
      depth++;
    } else if (c === ']' && depth > 0) {
      depth--;
    }
  }
  return depth;
}
