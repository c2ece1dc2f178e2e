/**
 * PostgreSQL's side of the change feed: one dedicated connection LISTENs on the channel the triggers
 * of migration 0008 notify with every committed write ('<schema>.<table>'), by any node or any
 * client, and reports the tables of this store's schema to the change log. While the connection is
 * down the log is untrusted (nothing counts as unchanged); it reconnects every second.
 */
import pg from 'pg';
import type { ChangeLog } from './changes.ts';

/** Also in migration 0008, which must not import it (migrations are frozen). */
export const CHANGES_CHANNEL = 'latchkey_changes';
const RECONNECT_MS = 1000;

export async function listenForChanges(connection: pg.ClientConfig, log: ChangeLog): Promise<{ close(): Promise<void> }> {
  log.setTrusted(false);
  let current: pg.Client | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;
  let schema: string | undefined;

  const lost = (client: pg.Client) => {
    if (current !== client) return;
    current = undefined;
    log.setTrusted(false);
    client.end().catch(() => {});
    if (!closed) retry = setTimeout(() => void connect(), RECONNECT_MS).unref();
  };

  async function connect(): Promise<void> {
    const client = new pg.Client(connection);
    current = client;
    client.on('error', () => lost(client));
    client.on('end', () => lost(client));
    client.on('notification', ({ channel, payload }) => {
      if (channel !== CHANGES_CHANNEL || !payload) return;
      const dot = payload.indexOf('.');
      if (dot > 0 && payload.slice(0, dot) === schema) log.changed([payload.slice(dot + 1)]);
    });
    try {
      await client.connect();
      schema ??= (await client.query<{ name: string }>('select current_schema() as name')).rows[0]?.name;
      await client.query(`listen ${CHANGES_CHANNEL}`);
      if (current === client && !closed) log.setTrusted(true);
    } catch {
      lost(client);
    }
  }

  await connect();
  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      const client = current;
      current = undefined;
      log.setTrusted(false);
      await client?.end().catch(() => {});
    },
  };
}
