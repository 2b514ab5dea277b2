/**
 * How much agent text the delegation panel takes. Agent text is untrusted and unbounded (one message
 * can be megabytes, a task can send thousands of steps), while a snapshot is serialised, posted and
 * rendered many times a second. The host trims every snapshot to these bounds before posting it, and
 * the panel applies them again to whatever it receives, so neither side depends on the other.
 */
import { DATA_SUMMARY_KEYS, isDataPartView, summaryOnly, type DataPartView } from './dataView';
import type { DelegationView, TimelineEntry } from './delegationView';
import type { TimelineParam } from './timelineText';

export const PANEL_LIMITS = {
  /** Timeline entries in one snapshot: the latest ones; the count of earlier ones is shown instead. */
  timelineEntries: 500,
  /** Characters of one entry's text (or the agent's question, or an outcome reason) in a snapshot. */
  entryChars: 100_000,
  /** Characters of all timeline text in one snapshot; older entries go first when it is exceeded. */
  snapshotChars: 2_000_000,
  /** Characters of a title or another one-line field. */
  lineChars: 500,
  /** Characters of one value in Baton's own words for an entry (an error message the agent sent, a name). */
  paramChars: 2_000,
  /**
   * Characters of one entry the panel renders as markdown; the rest of it is not shown. The parser's
   * emphasis matching is superlinear on hostile text (`_a_b_a_b…`): 10,000 characters cost at most a
   * few hundred milliseconds, once (renders are cached).
   */
  markdownChars: 10_000,
  /** Milliseconds of markdown rendering per frame; entries past it show as plain text until the next frame. */
  renderBudgetMs: 100,
  /**
   * Levels of markdown nesting (block quotes, lists, emphasis, brackets) the panel renders; deeper
   * text is shown as plain text. The markdown parser recurses per level and overflows the stack
   * after a few thousand; real messages rarely go past five.
   */
  markdownDepth: 16,
  /** Levels of HTML the rendered markdown may have (raw HTML in agent text nests too). */
  domDepth: 48,
  /** Data parts of one entry the panel takes (each kept whole within the entry's characters, else summarised). */
  dataParts: 20,
  /** Levels of a data part's tree the panel renders; deeper values show as their size. */
  dataDepth: 32,
  /** Keys or items of one object or array the panel renders; the rest are counted. */
  dataItems: 500,
  /** Characters of a string value shown before it collapses behind its length. */
  dataStringChars: 200,
} as const;

/**
 * The first `max` characters of `text` (never splitting a surrogate pair), and how long it was. The
 * cut prefers a line break near the end so a shortened message does not stop mid-line.
 */
export function shorten(
  text: string,
  max: number,
): { readonly text: string; readonly total: number; readonly shortened: boolean } {
  if (text.length <= max) return { text, total: text.length, shortened: false };
  let end = max;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  const newline = text.lastIndexOf('\n', end);
  if (newline > end * 0.9) end = newline;
  return { text: text.slice(0, end), total: text.length, shortened: true };
}

/** One line for a title or label: bounded, with an ellipsis when it was cut. */
export function oneLine(text: string, max: number = PANEL_LIMITS.lineChars): string {
  return text.length <= max ? text : `${shorten(text, max - 1).text}…`;
}

/** Text of an untrusted field, bounded; anything that is not a string (a malformed snapshot) becomes ''. */
function bounded(text: unknown, max: number): string {
  return typeof text === 'string' ? shorten(text, max).text : '';
}

/** A timeline param (an error message, a count), bounded; anything but a string or number becomes ''. */
function boundedParam(p: unknown): TimelineParam {
  return typeof p === 'number' ? p : bounded(p, PANEL_LIMITS.paramChars);
}

/** A summary's keys within the panel's bounds (it may come from a host that did not bound them). */
function boundedSummary(d: DataPartView): DataPartView {
  if (!('summary' in d)) return d;
  const keys = d.summary.keys.slice(0, DATA_SUMMARY_KEYS).map((k) => oneLine(String(k), 200));
  return { summary: { ...d.summary, keys }, bytes: d.bytes };
}

/**
 * An entry's data parts within `max` JSON bytes: values kept whole while they fit, the rest as their
 * summaries (never a value cut short); what is not a data part view is dropped.
 */
function boundedData(
  parts: readonly unknown[],
  max: number,
): { readonly parts: readonly DataPartView[]; readonly used: number } {
  const out: DataPartView[] = [];
  let used = 0;
  for (const p of parts.slice(0, PANEL_LIMITS.dataParts)) {
    if (!isDataPartView(p)) continue;
    const keep = 'value' in p && used + p.bytes <= max;
    if (keep) used += p.bytes;
    const d = keep ? p : boundedSummary(summaryOnly(p));
    if ('summary' in d) used += d.summary.keys.reduce((n, k) => n + k.length, 0);
    out.push(d);
  }
  return { parts: out, used };
}

/**
 * A delegation view within `PANEL_LIMITS`: the latest timeline entries that fit the character budget
 * (`timelineOmitted` counts the rest), each entry's text shortened with its full length kept in
 * `fullChars`, and the agent's question, the reason and the one-line fields bounded. Linear in what
 * it keeps, not in what it drops, so a huge view costs no more than a bounded one.
 */
export function boundDelegationView(d: DelegationView): DelegationView {
  const timeline: TimelineEntry[] = [];
  let budget: number = PANEL_LIMITS.snapshotChars;
  const all = Array.isArray(d.timeline) ? d.timeline : [];
  for (let i = all.length - 1; i >= 0 && timeline.length < PANEL_LIMITS.timelineEntries && budget > 0; i--) {
    const e = all[i];
    const text: unknown = e.text;
    // A malformed entry goes through as it is: the panel shows it as one that could not be shown.
    if (typeof text !== 'string') {
      timeline.push(e);
      continue;
    }
    const cut = shorten(text, Math.min(PANEL_LIMITS.entryChars, budget));
    budget -= cut.text.length;
    const fullChars = Math.max(cut.total, e.fullChars ?? 0);
    const params = Array.isArray(e.params) ? { params: e.params.map(boundedParam) } : {};
    const data = Array.isArray(e.data) ? boundedData(e.data, Math.min(PANEL_LIMITS.entryChars, budget)) : undefined;
    if (data) budget -= data.used;
    timeline.push({
      ...e,
      ...params,
      text: cut.text,
      ...(fullChars > cut.text.length ? { fullChars } : {}),
      ...(data ? { data: data.parts } : {}),
    });
  }
  timeline.reverse();
  const question = typeof d.question === 'string' ? shorten(d.question, PANEL_LIMITS.entryChars) : undefined;
  return {
    ...d,
    title: oneLine(bounded(d.title, PANEL_LIMITS.entryChars)),
    agent: {
      name: oneLine(bounded(d.agent.name, PANEL_LIMITS.entryChars)),
      endpoint: oneLine(bounded(d.agent.endpoint, PANEL_LIMITS.entryChars), 2048),
    },
    ...(d.executor !== undefined ? { executor: oneLine(bounded(d.executor, PANEL_LIMITS.entryChars)) } : {}),
    ...(d.reason !== undefined ? { reason: bounded(d.reason, PANEL_LIMITS.entryChars) } : {}),
    ...(d.reasonWords
      ? {
          reasonWords: {
            code: d.reasonWords.code,
            ...(Array.isArray(d.reasonWords.params)
              ? { params: d.reasonWords.params.map((p) => bounded(p, PANEL_LIMITS.paramChars)) }
              : {}),
          },
        }
      : {}),
    ...(question ? { question: question.text, ...(question.shortened ? { questionChars: question.total } : {}) } : {}),
    timeline,
    timelineOmitted: (d.timelineOmitted ?? 0) + all.length - timeline.length,
  };
}
