/**
 * A real SMTP server in the test process (smtp-server), collecting every message it accepts,
 * parsed with mailparser. It can stop and listen again on the same port (SMTP down, then back).
 */
import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  envelope: { from: string; to: string[] };
  raw: string;
  parsed: ParsedMail;
}

export interface SmtpSink {
  readonly port: number;
  /** smtp://127.0.0.1:<port> */
  readonly url: string;
  readonly messages: ReceivedMail[];
  /** Resolves once `count` messages arrived; rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedMail[]>;
  /** Stops listening and drops open connections (SMTP down). */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  restart(): Promise<void>;
}

export async function startSmtpSink(): Promise<SmtpSink> {
  const messages: ReceivedMail[] = [];
  const waiters = new Set<() => void>();
  let server: SMTPServer | undefined;
  let port = 0;

  const make = () => new SMTPServer({
    logger: false,
    authOptional: true,
    // close() waits this long for clients to quit (pooled ones never do) before dropping them.
    closeTimeout: 50,
    // Plain SMTP on loopback: the client would otherwise upgrade to a self-signed certificate.
    disabledCommands: ['STARTTLS', 'AUTH'],
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        simpleParser(raw).then((parsed) => {
          messages.push({
            envelope: {
              from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
              to: session.envelope.rcptTo.map((r) => r.address),
            },
            raw,
            parsed,
          });
          for (const wake of waiters) wake();
          callback();
        }, callback);
      });
    },
  });

  const listen = () => new Promise<void>((resolve, reject) => {
    server = make();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      port = ((server as unknown as { server: { address(): AddressInfo } }).server.address()).port;
      resolve();
    });
  });

  await listen();
  return {
    get port() { return port; },
    get url() { return `smtp://127.0.0.1:${port}`; },
    messages,
    waitFor(count, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (messages.length < count) return;
          clearTimeout(timeout);
          waiters.delete(check);
          resolve(messages);
        };
        const timeout = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`expected ${count} messages, got ${messages.length}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    stop() {
      const current = server;
      server = undefined;
      if (!current) return Promise.resolve();
      return new Promise<void>((resolve) => current.close(() => resolve()));
    },
    restart: listen,
  };
}
