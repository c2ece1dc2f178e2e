/**
 * Connections answered without reading everything the client sends: requests Node's HTTP parser
 * refuses (oversized headers, Transfer-Encoding with Content-Length) and answers that close before
 * the request body was read (a 413 on its Content-Length). Closing a socket with unread bytes
 * makes a reset, and the client never reads the answer; so what remains is read and discarded
 * for a bounded time first (nginx's lingering close).
 */
import { STATUS_CODES } from 'node:http';
import type { Duplex, Readable } from 'node:stream';
import { finished } from 'node:stream';
import type { FastifyError } from 'fastify';
import type { ErrorRenderer } from './app.ts';

/**
 * How long, and how many bytes, a refused connection or an unread request body is read and
 * discarded before the connection is closed. The bytes cover a client that sends a few MB
 * before it reads (the 413's own body limit is 256 KiB); the time bounds a client that trickles.
 */
const LINGER_MS = 2000;
const LINGER_BYTES = 4 * 1024 * 1024;

/**
 * Answers a request Node's HTTP parser refused (headers over the limit, Transfer-Encoding with
 * Content-Length, bad framing) with a complete response in the face's error shape, then closes.
 * Fastify's own handler destroys the socket at once: with the client's bytes still unread that is
 * a reset, and the client never reads the answer. So the write side is closed first and the rest
 * is read and discarded for a bounded time (nginx's lingering close).
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Duplex, render: ErrorRenderer | undefined): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const code = status === 431 ? 'LK_HEADER_OVERFLOW' : status === 408 ? 'LK_REQUEST_TIMEOUT' : 'LK_MALFORMED_REQUEST';
  const { type, body } = renderClientError(render, Object.assign(new Error(code), { code, statusCode: status }));
  if (socket.writable) {
    socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: ${type}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`
      + `Connection: close\r\n\r\n${body}`);
  }
  discard(socket, () => socket.destroy());
}

/**
 * Reads and discards `stream` until it ends, fails or closes, or for at most LINGER_MS and
 * LINGER_BYTES, then calls `done` once: the lingering close of both a refused connection
 * (answerClientError) and a request answered before its body was read (the onSend hook).
 */
export function discard(stream: Readable, done: () => void): void {
  let read = 0;
  let over = false;
  const onData = (chunk: Buffer) => { read += chunk.length; if (read > LINGER_BYTES) stop(); };
  const stop = () => {
    if (over) return;
    over = true;
    clearTimeout(timer);
    stream.off('data', onData);
    stopWatching();
    done();
  };
  const timer = setTimeout(stop, LINGER_MS);
  timer.unref();
  stream.on('data', onData);
  // Only the reading side: a socket's writing side has its own end.
  const stopWatching = finished(stream, { writable: false }, stop);
  stream.resume();
}

/** The face's own error body for `error`, as text with its content type. */
function renderClientError(render: ErrorRenderer | undefined, error: FastifyError): { type: string; body: string } {
  const wire = render?.(error) ?? { status: error.statusCode ?? 400, body: { statusCode: error.statusCode, error: STATUS_CODES[error.statusCode ?? 400] } };
  return typeof wire.body === 'string'
    ? { type: 'text/plain; charset=utf-8', body: wire.body }
    : { type: 'application/json; charset=utf-8', body: JSON.stringify(wire.body) };
}
