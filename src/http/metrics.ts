/**
 * Prometheus metrics (text format 0.0.4) for both faces in one registry: requests by face, route and
 * status code, a latency histogram per route, and process memory. Each face instruments itself
 * with `instrument`; the management interface (src/http/management.ts) serves `render()`, so the
 * public ports never expose them. The hot path does a map lookup and a few additions per request;
 * the text is built only when scraped.
 */
import type { FastifyInstance, onResponseHookHandler } from 'fastify';

/** Upper bounds of the latency buckets, in seconds (argon2 hashing sits around 0.05–0.2 s). */
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

interface RouteSeries {
  face: string;
  method: string;
  route: string;
  statuses: Map<number, number>;
  /** Non-cumulative counts per bucket; the last slot is +Inf. */
  buckets: number[];
  sumSeconds: number;
  count: number;
}

/** Routes that did not match are counted under one label: a URL chosen by a caller is no label. */
const UNMATCHED = 'unmatched';

const escapeLabel = (value: string) => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

export interface MetricsRegistry {
  /**
   * Adds the counting hook to `app`, labelled `face` (call it before routes are added, so every
   * route inherits it). Several apps may share a face label: their counts add up.
   */
  instrument(app: FastifyInstance, face: string): void;
  /** The whole registry in the Prometheus text format. */
  render(): string;
}

function record(entry: RouteSeries, statusCode: number, elapsedMs: number): void {
  entry.statuses.set(statusCode, (entry.statuses.get(statusCode) ?? 0) + 1);
  const seconds = elapsedMs / 1000;
  let slot = 0;
  while (slot < BUCKETS.length && seconds > BUCKETS[slot]) slot++;
  entry.buckets[slot]++;
  entry.sumSeconds += seconds;
  entry.count++;
}

export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export function createMetricsRegistry(prefix = 'latchkey'): MetricsRegistry {
  const series = new Map<string, RouteSeries>();

  return {
    instrument(app, face) {
      const seriesOf = (method: string, route: string): RouteSeries => {
        const key = `${face} ${method} ${route}`;
        let entry = series.get(key);
        if (!entry) {
          entry = { face, method, route, statuses: new Map(), buckets: new Array(BUCKETS.length + 1).fill(0), sumSeconds: 0, count: 0 };
          series.set(key, entry);
        }
        return entry;
      };
      // Each route gets its own counting hook, its series found once when the route is added rather
      // than looked up by a key built per request. Callback style: an async hook costs a promise.
      app.addHook('onRoute', (route) => {
        const own = new Map<string, RouteSeries>();
        for (const method of [route.method].flat()) own.set(method, seriesOf(method, route.url));
        const count: onResponseHookHandler = (request, reply, done) => {
          const entry = own.get(request.method);
          if (entry) record(entry, reply.statusCode, reply.elapsedTime);
          done();
        };
        route.onResponse = [...[route.onResponse ?? []].flat(), count];
      });
      // Requests no route matched (404s), under one label.
      app.addHook('onResponse', (request, reply, done) => {
        if (request.is404) record(seriesOf(request.method, UNMATCHED), reply.statusCode, reply.elapsedTime);
        done();
      });
    },

    render() {
      const lines: string[] = [];
      const requests = `${prefix}_http_requests_total`;
      const duration = `${prefix}_http_request_duration_seconds`;
      const labelsOf = (entry: RouteSeries) =>
        `face="${escapeLabel(entry.face)}",method="${escapeLabel(entry.method)}",route="${escapeLabel(entry.route)}"`;

      lines.push(`# HELP ${requests} HTTP requests answered, by face, method, route and status code.`, `# TYPE ${requests} counter`);
      for (const entry of series.values()) {
        const labels = labelsOf(entry);
        for (const [status, count] of entry.statuses) lines.push(`${requests}{${labels},status_code="${status}"} ${count}`);
      }

      lines.push(`# HELP ${duration} Time from request received to response sent.`, `# TYPE ${duration} histogram`);
      for (const entry of series.values()) {
        const labels = labelsOf(entry);
        let cumulative = 0;
        BUCKETS.forEach((bound, i) => {
          cumulative += entry.buckets[i];
          lines.push(`${duration}_bucket{${labels},le="${bound}"} ${cumulative}`);
        });
        lines.push(`${duration}_bucket{${labels},le="+Inf"} ${entry.count}`);
        lines.push(`${duration}_sum{${labels}} ${entry.sumSeconds}`);
        lines.push(`${duration}_count{${labels}} ${entry.count}`);
      }

      const memory = process.memoryUsage();
      lines.push(
        '# HELP process_resident_memory_bytes Resident set size of the process.',
        '# TYPE process_resident_memory_bytes gauge',
        `process_resident_memory_bytes ${memory.rss}`,
        '# HELP nodejs_heap_used_bytes V8 heap in use.',
        '# TYPE nodejs_heap_used_bytes gauge',
        `nodejs_heap_used_bytes ${memory.heapUsed}`,
        '# HELP process_start_time_seconds Start time of the process since the Unix epoch.',
        '# TYPE process_start_time_seconds gauge',
        `process_start_time_seconds ${Math.round(Date.now() / 1000 - process.uptime())}`,
      );
      return lines.join('\n') + '\n';
    },
  };
}
