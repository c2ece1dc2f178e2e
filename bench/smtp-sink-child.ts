/**
 * The bench's local SMTP server, in its own process (forked by bench/smtp-sink.ts) so accepting
 * mail never competes with the load generator's event loop: smtp-server on 127.0.0.1, plain SMTP
 * (no STARTTLS, no AUTH), every message read to its end and discarded. It records when each
 * message arrived; the parent asks over IPC.
 */
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { SMTPServer } from 'smtp-server';

export type SinkRequest = { type: 'stats'; id: number; from: number } | { type: 'stop' };
export type SinkReply =
  | { type: 'ready'; port: number }
  | { type: 'stats'; id: number; received: number; firstAt?: number; lastAt?: number };

/** Arrival times (ms, performance.timeOrigin-based) of every accepted message, in order. */
const arrivals: number[] = [];
const send = (message: SinkReply) => process.send?.(message);

const server = new SMTPServer({
  logger: false,
  authOptional: true,
  disabledCommands: ['STARTTLS', 'AUTH'],
  closeTimeout: 50,
  onData(stream, _session, callback) {
    stream.on('end', () => {
      arrivals.push(performance.timeOrigin + performance.now());
      callback();
    });
    stream.resume();
  },
});
server.on('error', (error) => process.stderr.write(`bench SMTP sink: ${error.message}\n`));

server.listen(0, '127.0.0.1', () => {
  send({ type: 'ready', port: (server.server.address() as AddressInfo).port });
});

process.on('message', (message: SinkRequest) => {
  if (message.type === 'stats') {
    send({ type: 'stats', id: message.id, received: arrivals.length, firstAt: arrivals[message.from], lastAt: arrivals.at(-1) });
  } else if (message.type === 'stop') {
    server.close(() => process.exit(0));
  }
});
process.on('disconnect', () => process.exit(0));
