/**
 * Seeds users for the bench straight through Kysely: multi-row inserts, many per transaction, and
 * everything users/repo.ts keeps beside a user row — the user_id_buckets counts that deep paging
 * sums, and the default-group membership a user created without groups gets. One argon2id hash is
 * shared by every user (hashing a million passwords would take hours); rows have their real width.
 */
import { randomUUID } from 'node:crypto';
import { sql, type Insertable } from 'kysely';
import { hashPassword } from '../src/lib/passwords.ts';
import { BUCKET_BITS, normalise } from '../src/identity/users/repo.ts';
import type { Store } from '../src/store/db.ts';
import type { UsersTable } from '../src/store/schema.ts';

/** Rows per INSERT: 15 parameters each stays under SQLite's 32,766 and PostgreSQL's 65,535. */
const ROWS_PER_STATEMENT = 1000;
const STATEMENTS_PER_TRANSACTION = 10;

const FIRST_NAMES = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Margaret', 'Ken', 'Frances', 'Dennis'];
const LAST_NAMES = ['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Hamilton', 'Thompson', 'Allen', 'Ritchie'];

/** The username of the i-th seeded user (1-based); its e-mail is `<username>@bench.example`. */
export function benchUsername(i: number): string {
  return `user${String(i).padStart(8, '0')}`;
}

export const BENCH_PASSWORD = 'bench-password-1';

export interface SeedResult {
  users: number;
  seconds: number;
}

/** A progress bar on stderr; on a non-terminal, a line every 10%. */
export function progressBar(label: string, total: number): { update(done: number): void; finish(): void } {
  const started = Date.now();
  const tty = process.stderr.isTTY;
  let lastDecile = -1;
  const line = (done: number) => {
    const fraction = total === 0 ? 1 : done / total;
    const width = 30;
    const filled = Math.round(fraction * width);
    const seconds = (Date.now() - started) / 1000;
    const rate = seconds > 0 ? done / seconds : 0;
    const eta = rate > 0 ? (total - done) / rate : 0;
    return `${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${(fraction * 100).toFixed(0).padStart(3)}% `
      + `${done.toLocaleString('en-US')}/${total.toLocaleString('en-US')}  ${Math.round(rate).toLocaleString('en-US')}/s  eta ${eta.toFixed(0)}s`;
  };
  return {
    update(done) {
      if (tty) { process.stderr.write(`\r${line(done)}\x1b[K`); return; }
      const decile = Math.floor((done / Math.max(total, 1)) * 10);
      if (decile !== lastDecile) { lastDecile = decile; process.stderr.write(`${line(done)}\n`); }
    },
    finish() {
      if (tty) process.stderr.write(`\r${line(total)}\x1b[K\n`);
      else if (lastDecile !== 10) process.stderr.write(`${line(total)}\n`);
    },
  };
}

/** Inserts `count` users for `customerId`, each a member of the customer's default group. */
export async function seedUsers(store: Store, customerId: number, count: number): Promise<SeedResult> {
  const { db } = store;
  const started = Date.now();
  if (store.dialect === 'sqlite') {
    // The seeding connection only: a bigger page cache keeps the random-guid index inserts fast.
    await sql`pragma cache_size = -262144`.execute(db);
  }
  const group = await db.selectFrom('groups').select('id')
    .where('customer_id', '=', customerId).where('is_default', '=', 1).executeTakeFirstOrThrow();
  const passwordHash = await hashPassword(BENCH_PASSWORD);
  // Creation times one second apart, ending now, so creation order is id order as in real life.
  const firstCreatedAt = Date.now() - count * 1000;
  const progress = progressBar('seeding users', count);

  let next = 1;
  while (next <= count) {
    await db.transaction().execute(async (trx) => {
      const buckets = new Map<number, number>();
      for (let s = 0; s < STATEMENTS_PER_TRANSACTION && next <= count; s++) {
        const rows: (Insertable<UsersTable> & { created_at: number })[] = [];
        for (let r = 0; r < ROWS_PER_STATEMENT && next <= count; r++, next++) {
          const username = benchUsername(next);
          const email = `${username}@bench.example`;
          const createdAt = firstCreatedAt + next * 1000;
          const user = {
            guid: randomUUID(),
            firstName: FIRST_NAMES[next % FIRST_NAMES.length],
            lastName: LAST_NAMES[Math.floor(next / FIRST_NAMES.length) % LAST_NAMES.length],
            phone: `+1555${String(next % 10_000_000).padStart(7, '0')}`,
            customAttributes: { customAttribute1: `dept-${next % 50}`, customAttribute2: `cc-${next % 997}` },
          };
          rows.push({
            customer_id: customerId,
            guid: user.guid,
            username,
            username_norm: normalise(username),
            email,
            email_norm: normalise(email),
            first_name: user.firstName,
            last_name: user.lastName,
            phone: user.phone,
            alternate_email: '',
            password_hash: passwordHash,
            password_changed_at: createdAt,
            custom_attributes: JSON.stringify(user.customAttributes),
            created_at: createdAt,
            updated_at: createdAt,
          });
        }
        const ids = await trx.insertInto('users').values(rows).returning('id').execute();
        for (const { id } of ids) {
          const bucket = Math.floor(id / 2 ** BUCKET_BITS);
          buckets.set(bucket, (buckets.get(bucket) ?? 0) + 1);
        }
        await trx.insertInto('group_members').values(ids.map(({ id }, i) => ({
          customer_id: customerId,
          group_id: group.id,
          user_id: id,
          attributes: '[]',
          created_at: rows[i].created_at,
          updated_at: rows[i].created_at,
        }))).execute();
      }
      await trx.insertInto('user_id_buckets')
        .values([...buckets].map(([bucket, n]) => ({ customer_id: customerId, bucket, user_count: n })))
        .onConflict((oc) => oc.columns(['customer_id', 'bucket']).doUpdateSet((eb) => ({
          user_count: eb('user_id_buckets.user_count', '+', eb.ref('excluded.user_count')),
        })))
        .execute();
    });
    progress.update(next - 1);
  }
  progress.finish();
  // A server that just took a bulk load would have autovacuum analyse it within a minute.
  if (store.dialect === 'postgres') await sql`analyze`.execute(db);
  return { users: count, seconds: (Date.now() - started) / 1000 };
}

/** Columns per audit row: 12, so 2,000 rows per INSERT stay under SQLite's 32,766 parameters. */
const EVENTS_PER_STATEMENT = 2000;
const EVENT_ACTIONS = ['user.updated', 'magiclink.generated', 'signin.succeeded', 'signin.failed', 'user.created', 'group.members.updated'];

/**
 * Inserts `count` audit events for `customerId` straight through Kysely (multi-row inserts, many per
 * transaction), as the audit service would write them one at a time: times one 100 ms step apart,
 * ending now, so id order is time order; a user target each (the seeded users' ids need not exist).
 */
export async function seedAuditEvents(store: Store, customerId: number, count: number): Promise<SeedResult> {
  const { db } = store;
  const started = Date.now();
  const firstTime = Date.now() - count * 100;
  const progress = progressBar('seeding audit events', count);
  let next = 1;
  while (next <= count) {
    await db.transaction().execute(async (trx) => {
      for (let s = 0; s < STATEMENTS_PER_TRANSACTION && next <= count; s++) {
        const rows = [];
        for (let r = 0; r < EVENTS_PER_STATEMENT && next <= count; r++, next++) {
          const user = 1 + (next % 100_000);
          rows.push({
            customer_id: customerId,
            event_id: randomUUID(),
            time: firstTime + next * 100,
            action: EVENT_ACTIONS[next % EVENT_ACTIONS.length]!,
            actor_type: next % 3 === 0 ? 'user' : 'api',
            actor_id: next % 3 === 0 ? String(user) : '',
            target_type: 'user',
            target_id: String(user),
            target_name: benchUsername(user),
            ip: '127.0.0.1',
            request_id: randomUUID(),
            correlation_id: '',
          });
        }
        await trx.insertInto('audit_events').values(rows).execute();
      }
    });
    progress.update(next - 1);
  }
  progress.finish();
  if (store.dialect === 'postgres') await sql`analyze audit_events`.execute(db);
  return { users: count, seconds: (Date.now() - started) / 1000 };
}
