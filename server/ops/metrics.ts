/**
 * `/metrics` on prom-client: each node's own registry (counters, histograms, and gauges and
 * summaries read at scrape time), plus the process's default metrics (CPU, memory, heap,
 * event-loop lag, GC: one registry per process, however many nodes a test runs in it).
 *
 * Other parts add their own: `metrics.counter('switchboard_calls_total', 'help', ['result'])`.
 */
import { collectDefaultMetrics, Counter as PromCounter, Gauge, Histogram as PromHistogram, Registry, Summary } from 'prom-client';
import { isKnownEventType } from '../../shared/events.ts';

type Labels = Record<string, string>;

/**
 * The `type` label of a webhook event: the type when the interface knows it, else
 * `unknown`, so that a sender making up types cannot grow the registry without bound.
 */
export function eventTypeLabel(type: string): string {
  return isKnownEventType(type) ? type : 'unknown';
}

export interface Counter {
  inc(labels?: Labels, n?: number): void;
  /** Current value for these labels (tests). */
  get(labels?: Labels): number;
}

export interface Histogram {
  /** One observation, in the histogram's unit (seconds for `_seconds`). */
  observe(value: number, labels?: Labels): void;
}

/** Seconds: 1 ms to 10 s, for latencies on the call path. */
export const LATENCY_BUCKETS = [0.001, 0.002, 0.005, 0.01, 0.015, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

let processRegistry: Registry | undefined;
/** The process's default metrics, collected once per process. */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/** A gauge read at scrape time; a failing read leaves it out of the scrape. */
class ReadGauge extends Gauge {
  constructor(name: string, help: string, registry: Registry, private readonly read: () => number | Promise<number>) {
    super({ name, help, registers: [registry] });
  }
  override async get() {
    try {
      this.set(await this.read());
      return super.get();
    } catch {
      return { ...(await super.get()), values: [] };
    }
  }
}

/** A summary whose quantiles, count and sum are read at scrape time (a histogram kept elsewhere). */
class ReadSummary extends Summary {
  constructor(private readonly metricName: string, help: string, registry: Registry, private readonly read: () => { quantiles: Array<[string, number]>; count: number; sum: number }) {
    super({ name: metricName, help, registers: [registry] });
  }
  override async get() {
    const { quantiles, count, sum } = this.read();
    const name = this.metricName;
    return {
      ...(await super.get()),
      values: [
        ...quantiles.map(([q, v]) => ({ value: v, labels: { quantile: q } })),
        { value: sum, labels: {}, metricName: `${name}_sum` },
        { value: count, labels: {}, metricName: `${name}_count` },
      ],
    };
  }
}

export class Metrics {
  readonly registry = new Registry();
  private readonly counters = new Map<string, Counter>();
  private readonly histograms = new Map<string, Histogram>();

  constructor(o: { processMetrics?: boolean } = {}) {
    this.withProcess = o.processMetrics ?? true;
  }
  private readonly withProcess: boolean;

  /** A counter; asking twice for the same name returns the same counter. */
  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    const existing = this.counters.get(name);
    if (existing) return existing;
    const c = new PromCounter({ name, help, labelNames: [...labelNames], registers: [this.registry] });
    // Read back synchronously (tests, the ready check): prom-client's own get() is async.
    const values = new Map<string, number>();
    const keyOf = (labels: Labels) => labelNames.map((k) => labels[k] ?? '').join('\u0000');
    const counter: Counter = {
      inc(labels = {}, n = 1) {
        const full = Object.fromEntries(labelNames.map((k) => [k, labels[k] ?? '']));
        c.inc(full, n);
        const key = keyOf(labels);
        values.set(key, (values.get(key) ?? 0) + n);
      },
      get: (labels = {}) => values.get(keyOf(labels)) ?? 0,
    };
    this.counters.set(name, counter);
    return counter;
  }

  /** A histogram; asking twice for the same name returns the same one. */
  histogram(name: string, help: string, o: { buckets?: readonly number[]; labelNames?: readonly string[] } = {}): Histogram {
    const existing = this.histograms.get(name);
    if (existing) return existing;
    const h = new PromHistogram({ name, help, buckets: [...(o.buckets ?? LATENCY_BUCKETS)], labelNames: [...(o.labelNames ?? [])], registers: [this.registry] });
    const out: Histogram = { observe: (v, labels) => (labels ? h.observe(labels, v) : h.observe(v)) };
    this.histograms.set(name, out);
    return out;
  }

  /** A gauge whose value is read at scrape time; a failing read is left out of the scrape. */
  gauge(name: string, help: string, read: () => number | Promise<number>): void {
    this.forget(name);
    new ReadGauge(name, help, this.registry, read);
  }

  /** A summary read at scrape time: its quantiles (`[['0.5', v], ...]`, in that order), count and sum. */
  summary(name: string, help: string, read: () => { quantiles: Array<[string, number]>; count: number; sum: number }): void {
    this.forget(name);
    new ReadSummary(name, help, this.registry, read);
  }

  /** A gauge or summary defined again (a part re-created in tests) replaces the old one. */
  private forget(name: string): void {
    if (this.registry.getSingleMetric(name)) this.registry.removeSingleMetric(name);
  }

  /** The text exposition of every metric (this node's, then the process's). */
  async render(): Promise<string> {
    const own = await this.registry.metrics();
    return this.withProcess ? own + (await processMetrics().metrics()) : own;
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
    handlerSeconds: metrics.histogram('switchboard_webhook_handler_seconds', 'Webhook handler attempts by lane, start to end (seconds).', { labelNames: ['lane'], buckets: [...LATENCY_BUCKETS, 30, 60] }),
  };
}
export type FoundationMetrics = ReturnType<typeof foundationMetrics>;
