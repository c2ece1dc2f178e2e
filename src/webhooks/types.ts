/** A customer's webhook endpoints and their deliveries (one audit event to one endpoint). */

export interface Webhook {
  id: number;
  customerId: number;
  /** Public id, `wh_…`. */
  webhookId: string;
  url: string;
  /** Action prefixes; ["*"] for every event. */
  events: string[];
  /** False once a delivery was answered 410 Gone: no more deliveries go to it. */
  enabled: boolean;
  disabledAt: number | null;
  createdAt: number;
}

export interface CreatedWebhook {
  webhook: Webhook;
  /** `whsec_…`: shown once, now; stored sealed (it signs every delivery). */
  secret: string;
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'disabled';

export interface WebhookDelivery {
  id: number;
  /** The endpoint's public id. */
  webhookId: string;
  /** `msg_…`: the webhook-id header, the same on every attempt and on a resend. */
  messageId: string;
  action: string;
  eventId: string;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: number;
  /** The last answer's HTTP status; null when none came. */
  lastStatus: number | null;
  /** The last answer's body, its first 1 KB. */
  lastAnswer: string | null;
  lastError: string | null;
  createdAt: number;
  deliveredAt: number | null;
}
