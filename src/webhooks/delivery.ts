/**
 * One attempt of one delivery: the Standard Webhooks request (standardwebhooks signs it), POSTed
 * with a 10 s limit, no redirect followed (node's http client follows none), to an address checked
 * after resolution (./targets.ts); the answer's first 1 KB kept.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Webhook as Signer } from 'standardwebhooks';
import type { AuditEvent } from '../audit/types.ts';
import { isNonPublicAddress, literalAddress, publicOnlyLookup, RefusedTarget } from './targets.ts';
import type { TargetPolicy } from './rules.ts';

export const ATTEMPT_TIMEOUT_MS = 10_000;
/** How much of an answer is read and kept. */
export const ANSWER_LIMIT_BYTES = 1024;

export interface WebhookMessage {
  /** `msg_…`, the same on every attempt. */
  messageId: string;
  event: AuditEvent;
}

/** The body: `{type, timestamp, data}` as Standard Webhooks lays it out; the same bytes on every attempt. */
export function webhookBody(event: AuditEvent): string {
  return JSON.stringify({ type: event.action, timestamp: new Date(event.time).toISOString(), data: event });
}

/** The three headers for this attempt: webhook-timestamp is its own, so is the signature. */
export function signedHeaders(secret: string, messageId: string, body: string, now: number): Record<string, string> {
  const timestamp = new Date(now);
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(Math.floor(now / 1000)),
    'webhook-signature': new Signer(secret).sign(messageId, timestamp, body),
  };
}

export interface Answer {
  status: number;
  /** The first ANSWER_LIMIT_BYTES of the body, as text. */
  body: string;
}

/**
 * POSTs `body` to `url`. Resolves with the answer, whatever its status.
 * @throws RefusedTarget when the URL or an address it resolves to is not allowed; a network error or the timeout.
 */
export async function postWebhook(url: URL, body: string, headers: Record<string, string>, policy: TargetPolicy): Promise<Answer> {
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && policy.allowHttp)) throw new RefusedTarget(`${url.protocol} endpoints are not allowed`);
  const address = literalAddress(url);
  // A literal address is connected to without a lookup: checked here instead.
  if (!policy.allowPrivate && address !== undefined && isNonPublicAddress(address)) throw new RefusedTarget(`${address} is not a public address`);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<Answer>((resolve, reject) => {
    const req = send(url, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'user-agent': 'Latchkey-Webhooks' },
      ...(policy.allowPrivate ? {} : { lookup: publicOnlyLookup }),
      // A fresh connection each attempt: a pooled socket would skip the lookup's check.
      agent: false,
      signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
    }, (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let kept = 0;
      const finish = () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8').slice(0, ANSWER_LIMIT_BYTES) });
      res.on('data', (chunk: Buffer) => {
        if (kept >= ANSWER_LIMIT_BYTES) return;
        chunks.push(chunk.subarray(0, ANSWER_LIMIT_BYTES - kept));
        kept += Math.min(chunk.length, ANSWER_LIMIT_BYTES - kept);
        // Enough read: the rest of a large answer is not waited for.
        if (kept >= ANSWER_LIMIT_BYTES) { finish(); res.destroy(); }
      });
      res.on('end', finish);
      res.on('error', () => finish());
      res.on('close', finish);
    });
    req.on('error', reject);
    req.end(body);
  });
}
