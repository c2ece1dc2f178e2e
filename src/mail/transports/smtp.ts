/**
 * Sends over SMTP with nodemailer from `LATCHKEY_SMTP_URL` (`smtp://host:port`, or
 * `smtps://user:pass@host:port` for implicit TLS). Pooled connections; every wait is bounded so a
 * stalled server fails the attempt (the worker retries later) instead of hanging the worker.
 */
import nodemailer from 'nodemailer';
import { toNodemailerMessage, type MailTransport } from '../transport.ts';
import { checkSmtpUrl } from './smtp-url.ts';

export interface SmtpTransportOptions {
  /** Connecting the TCP (and TLS) socket. Default 5 s. */
  connectionTimeoutMs?: number;
  /** The server's greeting after connecting. Default 5 s. */
  greetingTimeoutMs?: number;
  /** Silence on an open connection. Default 15 s. */
  socketTimeoutMs?: number;
  /** Simultaneous connections. Default 5. */
  maxConnections?: number;
}

export function createSmtpTransport(url: string, options: SmtpTransportOptions = {}): MailTransport {
  checkSmtpUrl(url);
  const transporter = nodemailer.createTransport({
    url,
    pool: true,
    maxConnections: options.maxConnections ?? 5,
    connectionTimeout: options.connectionTimeoutMs ?? 5_000,
    greetingTimeout: options.greetingTimeoutMs ?? 5_000,
    socketTimeout: options.socketTimeoutMs ?? 15_000,
    dnsTimeout: options.connectionTimeoutMs ?? 5_000,
    // nodemailer's own logger would print envelopes; the worker reports failures without content.
    logger: false,
    debug: false,
  });
  return {
    async send(mail) {
      await transporter.sendMail(toNodemailerMessage(mail));
    },
    close() {
      transporter.close();
    },
  };
}
