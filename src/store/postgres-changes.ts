/**
 * PostgreSQL's side of the change feed: one dedicated connection LISTENs on the channel the triggers
 * of migration 0008 notify with every committed write ('<schema>.<table>'), by any node or any
 * client, and reports the tables of this store's schema to the change log.
 *
 * A connection can die without a word (a firewall or proxy dropping an idle connection, a network
 * cut: no error, no end), and a node that kept trusting its caches then would serve them for ever.
 * So the connection proves it is alive: every second it NOTIFYs a heartbeat on a channel of its own,
 * which PostgreSQL delivers back to it like any other notification (after every notification
 * committed before it). When none has been heard for 3 s the log is untrusted at once (every cached
 * read goes to the database), the socket is destroyed (a graceful end would wait on a peer that never
 * answers) and a new connection is made. The log is trusted again only once the new connection
 * listens and has heard its first heartbeat; trusting again counts everything as changed (a flush).
 * Silence is timed in real time (performance.now), not on the service's clock: it is PostgreSQL that
 * goes quiet, the store is shared by compositions with clocks of their own, and a test moving its
 * clock must not make a healthy feed look lost. The read caches' age bound is on the clock.
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import pg from 'pg';
import type { ChangeLog } from './changes.ts';

/** Also in migration 0008, which must not import it (migrations are frozen). */
export const CHANGES_CHANNEL = 'latchkey_changes';

export interface ListenOptions {
  /** How often the connection sends itself a heartbeat (default 1000 ms). */
  heartbeatMs?: number;
  /** Without a heartbeat heard for this long the connection counts as lost (default 3000 ms). */
  deadAfterMs?: number;
  /** Wait before connecting again after a loss (default 1000 ms). */
  reconnectMs?: number;
  /**
   * Told when the feed is lost after having worked ('lost': nothing is served from memory) and when
   * it is trusted again ('back'); not for the first connection.
   */
  onStateChange?: (state: 'lost' | 'back') => void;
}

export async function listenForChanges(
  connection: pg.ClientConfig,
  log: ChangeLog,
  options: ListenOptions = {},
): Promise<{ close(): Promise<void> }> {
  const { heartbeatMs = 1000, deadAfterMs = 3000, reconnectMs = 1000 } = options;
  // This node's own channel: other nodes do not hear its heartbeats, nor it theirs.
  const heartbeatChannel = `latchkey_heartbeat_${randomBytes(8).toString('hex')}`;
  log.setTrusted(false);
  let closed = false;
  let current: Attempt | undefined;
  let retry: NodeJS.Timeout | undefined;
  let schema: string | undefined;
  // What the node was last told: 'lost' only after it had worked, 'back' only after 'lost'.
  let state: 'starting' | 'working' | 'lost' = 'starting';
  const trustNow = () => {
    if (closed) return;
    log.setTrusted(true);
    if (state === 'lost') options.onStateChange?.('back');
    state = 'working';
  };

  interface Attempt {
    client: pg.Client;
    socket: net.Socket;
    /** Ticks with the heartbeat: sends one, and gives the connection up when none came back in time. */
    timer: NodeJS.Timeout;
    lastHeard: number;
    /** LISTEN is in place: heartbeats may be sent. */
    listening: boolean;
    /** A heartbeat query is under way: the next waits for it (queries must not pile up on a dead socket). */
    sending: boolean;
    /** Settles the first connect of listenForChanges. */
    settled: () => void;
  }

  const lost = (attempt: Attempt) => {
    if (current !== attempt) return;
    current = undefined;
    log.setTrusted(false);
    if (state === 'working' && !closed) {
      state = 'lost';
      options.onStateChange?.('lost');
    }
    clearInterval(attempt.timer);
    attempt.socket.destroy();
    attempt.settled();
    if (!closed) retry = setTimeout(connect, reconnectMs).unref();
  };

  const heartbeat = (attempt: Attempt) => {
    if (performance.now() - attempt.lastHeard > deadAfterMs) return lost(attempt);
    if (attempt.sending || !attempt.listening) return;
    attempt.sending = true;
    // Not awaited: on a cut connection it never settles; the timer above decides.
    attempt.client.query('select pg_notify($1, $2)', [heartbeatChannel, '']).then(
      () => { attempt.sending = false; },
      () => lost(attempt),
    );
  };

  function connect(): Promise<void> {
    return new Promise((settled) => {
      // Our own socket, so a lost connection can be destroyed whatever state pg's client is in.
      const socket = new net.Socket();
      const client = new pg.Client({ ...connection, stream: () => socket });
      const attempt: Attempt = {
        client, socket, lastHeard: performance.now(), listening: false, sending: false, settled,
        // Also bounds the connect and LISTEN themselves: a cut network may never answer them.
        timer: setInterval(() => heartbeat(attempt), heartbeatMs).unref(),
      };
      current = attempt;
      // Listeners stay for the client's life: an error after it was given up must not crash the process.
      client.on('error', () => lost(attempt));
      client.on('end', () => lost(attempt));
      client.on('notification', ({ channel, payload }) => {
        if (current !== attempt) return;
        if (channel === heartbeatChannel) {
          attempt.lastHeard = performance.now();
          trustNow();
          attempt.settled();
          return;
        }
        if (channel !== CHANGES_CHANNEL || !payload) return;
        const dot = payload.indexOf('.');
        if (dot > 0 && payload.slice(0, dot) === schema) log.changed([payload.slice(dot + 1)]);
      });
      (async () => {
        await client.connect();
        schema ??= (await client.query<{ name: string }>('select current_schema() as name')).rows[0]?.name;
        await client.query(`listen ${CHANGES_CHANNEL}`);
        await client.query(`listen ${heartbeatChannel}`);
        if (current !== attempt) return;
        // Trusted once this comes back: the feed is in place from here on.
        attempt.listening = true;
        attempt.lastHeard = performance.now();
        heartbeat(attempt);
      })().catch(() => lost(attempt));
    });
  }

  // Resolves once the feed is trusted, or the first attempt failed (the pool may still work; the
  // listener keeps trying, and until then every cached read goes to the database).
  await connect();
  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      const attempt = current;
      current = undefined;
      log.setTrusted(false);
      if (!attempt) return;
      clearInterval(attempt.timer);
      attempt.settled();
      // A graceful end when the connection answers; its socket destroyed when it does not.
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise((resolve) => { timer = setTimeout(resolve, Math.min(deadAfterMs, 1000)); });
      await Promise.race([attempt.client.end().catch(() => {}), timeout]);
      clearTimeout(timer);
      attempt.socket.destroy();
    },
  };
}
