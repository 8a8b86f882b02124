/**
 * A small Prometheus registry (text exposition format 0.0.4): counters with labels and
 * gauges read at scrape time. Enough for `/metrics` without another dependency.
 *
 * Other parts add their own: `metrics.counter('switchboard_calls_total', 'help', ['result'])`.
 */

import { isKnownEventType } from '../../shared/events.ts';

type Labels = Record<string, string>;

/**
 * The `type` label of a webhook event: the type when the interface knows it, else
 * `unknown`, so that a sender making up types cannot grow the registry without bound.
 */
export function eventTypeLabel(type: string): string {
  return isKnownEventType(type) ? type : 'unknown';
}

const escapeLabel = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
const fmtLabels = (l: Labels) => {
  const keys = Object.keys(l);
  return keys.length === 0 ? '' : `{${keys.map((k) => `${k}="${escapeLabel(l[k]!)}"`).join(',')}}`;
};

export interface Counter {
  inc(labels?: Labels, n?: number): void;
  /** Current value for these labels (tests). */
  get(labels?: Labels): number;
}

interface Metric {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'summary';
  render(): Promise<string[]>;
}

export class Metrics {
  private readonly metrics = new Map<string, Metric>();
  private readonly counters = new Map<string, Counter>();

  /** A counter; asking twice for the same name returns the same counter. */
  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    const existing = this.counters.get(name);
    if (existing) return existing;
    const values = new Map<string, { labels: Labels; value: number }>();
    const keyOf = (labels: Labels) => {
      let key = '';
      for (const k of labelNames) key += (labels[k] ?? '') + '\u0000';
      return key;
    };
    const counter: Counter = {
      inc(labels = {}, n = 1) {
        const key = keyOf(labels);
        const v = values.get(key);
        if (v) v.value += n;
        else values.set(key, { labels: Object.fromEntries(labelNames.map((k) => [k, labels[k] ?? ''])), value: n });
      },
      get(labels = {}) {
        return values.get(keyOf(labels))?.value ?? 0;
      },
    };
    this.counters.set(name, counter);
    this.metrics.set(name, {
      name,
      help,
      type: 'counter',
      render: async () => [...values.values()].map((v) => `${name}${fmtLabels(v.labels)} ${v.value}`),
    });
    return counter;
  }

  /** A gauge whose value is read at scrape time; a failing read is left out of the scrape. */
  gauge(name: string, help: string, read: () => number | Promise<number>): void {
    this.metrics.set(name, {
      name,
      help,
      type: 'gauge',
      render: async () => {
        try {
          return [`${name} ${await read()}`];
        } catch {
          return [];
        }
      },
    });
  }

  /** A summary read at scrape time: its quantiles (`[['0.5', v], ...]`, in that order), count and sum. */
  summary(name: string, help: string, read: () => { quantiles: Array<[string, number]>; count: number; sum: number }): void {
    this.metrics.set(name, {
      name,
      help,
      type: 'summary',
      render: async () => {
        const { quantiles, count, sum } = read();
        return [...quantiles.map(([q, v]) => `${name}{quantile="${q}"} ${v}`), `${name}_sum ${sum}`, `${name}_count ${count}`];
      },
    });
  }

  /** The text exposition of every metric. */
  async render(): Promise<string> {
    const out: string[] = [];
    for (const m of this.metrics.values()) {
      out.push(`# HELP ${m.name} ${m.help}`, `# TYPE ${m.name} ${m.type}`, ...(await m.render()));
    }
    return out.join('\n') + '\n';
  }
}

/** The metrics the foundation itself keeps. */
export function foundationMetrics(metrics: Metrics) {
  return {
    httpRequests: metrics.counter('switchboard_http_requests_total', 'HTTP requests by method, route and status.', ['method', 'route', 'status']),
    webhookRequests: metrics.counter(
      'switchboard_webhook_requests_total',
      'Webhook deliveries by receiver outcome (accepted, duplicate, unauthorized, bad_request, too_large, busy, unavailable).',
      ['outcome'],
    ),
    webhookEvents: metrics.counter(
      'switchboard_webhook_events_total',
      'Webhook events by type and outcome (accepted, duplicate at the receiver; processed, ignored, failed, dead_lettered in the workers).',
      ['type', 'outcome'],
    ),
    deadLettered: metrics.counter('switchboard_webhook_dead_lettered_total', 'Events moved to the dead-letter list, by type.', ['type']),
  };
}
export type FoundationMetrics = ReturnType<typeof foundationMetrics>;
