/**
 * `npm run bench -- panel`: 10,000 events a second for 10 seconds through a delegation journal and the
 * host's update coalescer into a headless webview stand-in (it JSON-serialises each post, as
 * `postMessage` does, and parses it on the other side). Prints
 * `BENCH panel posts_per_s=<n> heap_mb=<start>/<end>`; the goal is ≤ 60 posts/s and flat memory.
 */
import { randomUUID } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { StreamResponse } from '@a2a-js/sdk';
import { Role, TaskState } from '@a2a-js/sdk';
import { UpdateCoalescer } from '../src/core/coalescer';
import { DelegationJournal } from '../src/core/delegation';
import { buildDelegationMessage } from '../src/core/delegation/context';
import { READ_ONLY } from '../src/core/delegation/guards';
import { delegationPanelView } from '../src/core/delegation/panelView';
import type { DelegationView } from '../src/core/protocol/delegationView';
import { loadNote } from './util';

const EVENTS_PER_S = 10_000;
const SECONDS = 10;

function gcNow(): void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  gc();
}

function heapMb(): number {
  gcNow();
  return Math.round((process.memoryUsage().heapUsed / 1024 / 1024) * 10) / 10;
}

/** Stands in for a webview: receives serialised posts and renders nothing. */
class HeadlessWebview {
  received = 0;
  lastTimelineLength = 0;
  postMessage(message: unknown): void {
    const wire = JSON.stringify(message);
    const view = (JSON.parse(wire) as { view: DelegationView }).view;
    this.received++;
    this.lastTimelineLength = view.timeline.length;
  }
}

function event(i: number): StreamResponse {
  return {
    payload: {
      $case: 'statusUpdate',
      value: {
        taskId: 't',
        contextId: 'c',
        status: {
          state: TaskState.TASK_STATE_WORKING,
          timestamp: undefined,
          message: {
            messageId: `m${i}`,
            contextId: 'c',
            taskId: 't',
            role: Role.ROLE_AGENT,
            parts: [
              { content: { $case: 'text', value: `step ${i}` }, filename: '', mediaType: '', metadata: undefined },
            ],
            metadata: undefined,
            extensions: [],
            referenceTaskIds: [],
          },
        },
        metadata: undefined,
      },
    },
  };
}

export async function run(): Promise<void> {
  const requestId = randomUUID();
  const { message, contextDigests } = buildDelegationMessage({
    requestId,
    task: 'bench',
    capabilities: READ_ONLY,
    chain: ['bench'],
  });
  const journal = new DelegationJournal({
    requestId,
    title: 'bench',
    who: 'bench',
    agent: {
      id: 'bench',
      name: 'Bench',
      endpoint: 'http://127.0.0.1:1/a2a',
      protocolBinding: 'JSONRPC',
      protocolVersion: '1.0',
    },
    message,
    createdAt: Date.now(),
    capabilities: { requested: READ_ONLY, effective: READ_ONLY },
    contextDigests,
    chain: ['bench'],
  });
  journal.apply({ kind: 'send', at: Date.now(), attempt: 1 });
  journal.apply({ kind: 'task', at: Date.now(), taskId: 't', contextId: 'c' });
  const webview = new HeadlessWebview();
  const coalescer = new UpdateCoalescer<DelegationView>({
    produce: () => delegationPanelView(journal.view(Date.now())),
    post: (view) => webview.postMessage({ type: 'delegation', view }),
    clock: {
      now: () => performance.now(),
      setTimeout: (fn, ms) => setTimeout(fn, ms),
      clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
    },
  });
  const heapStart = heapMb();
  const start = performance.now();
  let pushed = 0;
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const elapsed = performance.now() - start;
      const due = Math.min(EVENTS_PER_S * SECONDS, Math.floor((elapsed / 1000) * EVENTS_PER_S));
      while (pushed < due) {
        pushed++;
        journal.apply({
          kind: 'event',
          at: Date.now(),
          taskId: 't',
          seq: journal.nextLocalSeq(),
          sequenced: false,
          event: event(pushed),
        });
        coalescer.invalidate();
      }
      if (pushed >= EVENTS_PER_S * SECONDS) resolve();
      else setTimeout(tick, 1);
    };
    tick();
  });
  const seconds = (performance.now() - start) / 1000;
  coalescer.flush();
  coalescer.dispose();
  const heapEnd = heapMb();
  const postsPerS = Math.round((webview.received / seconds) * 10) / 10;
  console.log(
    `# pushed ${pushed} events in ${seconds.toFixed(2)} s (${Math.round(pushed / seconds)}/s); posts ${webview.received}; timeline shown ${webview.lastTimelineLength}`,
  );
  console.log(`BENCH panel posts_per_s=${postsPerS} heap_mb=${heapStart}/${heapEnd} ${loadNote()}`);
}
