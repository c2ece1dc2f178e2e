/**
 * `audit list`: the customer's audit events, newest first (as POST /api/admin/audit/getall), or with
 * --follow the latest ones oldest first and then every new event as it is written, like `tail -f`,
 * until interrupted (SIGINT or SIGTERM ends it with exit 0).
 */
import type { Composition } from '../../compose/index.ts';
import type { AuditQuery } from '../../audit/types.ts';
import type { AuditEvent } from '../../audit/types.ts';
import { stringFlag, UsageError, type ParsedArgs } from '../args.ts';
import type { Command } from '../command.ts';
import { customerIdOf } from './customer-key.ts';

const DEFAULT_LIMIT = 50;
const POLL_MS = 1000;
/** The newest page a follow poll reads; more new events than this in a second are read on further pages. */
const POLL_PAGE = 500;
/** Event ids remembered by a follow: an event committed late (behind newer ones) is still recognised as new. */
const REMEMBERED = 5000;

function numberFlag(args: ParsedArgs, name: string): number | undefined {
  const value = stringFlag(args, name);
  if (value === undefined) return undefined;
  if (!/^[0-9]{1,16}$/.test(value)) throw new UsageError(`--${name} must be a whole number`);
  return Number(value);
}

/** One line per event: time, action, actor, target, ip (tab-separated, for cut and awk). */
export function eventLine(event: AuditEvent): string {
  const actor = event.actor.id ? `${event.actor.type}:${event.actor.id}` : event.actor.type;
  return [new Date(event.time).toISOString(), event.action, actor, `${event.target.type}:${event.target.id}:${event.target.name}`, event.ip || '-'].join('\t');
}

async function filtersOf(args: ParsedArgs, app: Composition, customerId: number): Promise<Omit<AuditQuery, 'limit' | 'cursor'>> {
  const login = stringFlag(args, 'user');
  // A user by username or e-mail, else (a deleted user) by its id.
  const user = login === undefined ? undefined : await app.services.users.findByLogin(customerId, login);
  if (login !== undefined && !user && !/^[0-9]{1,15}$/.test(login)) throw new UsageError(`--user: no user ${login} (give a username, e-mail or user id)`);
  return { action: stringFlag(args, 'action'), from: numberFlag(args, 'from'), to: numberFlag(args, 'to'), targetId: login === undefined ? undefined : user ? String(user.id) : login, targetType: login === undefined ? undefined : 'user' };
}

async function follow(app: Composition, customerId: number, filters: Omit<AuditQuery, 'limit' | 'cursor'>, limit: number, json: boolean): Promise<void> {
  const seen = new Set<string>();
  let stopped = false;
  let wake: (() => void) | undefined;
  const stop = () => { stopped = true; wake?.(); };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const print = (events: AuditEvent[]) => {
    for (const event of events) {
      process.stdout.write((json ? JSON.stringify(event) : eventLine(event)) + '\n');
      seen.add(event.eventId);
    }
    // A Set iterates in insertion order: the oldest remembered go first.
    for (const id of seen) { if (seen.size <= REMEMBERED) break; seen.delete(id); }
  };
  try {
    // The newest page is remembered whole, though only `limit` of it is shown: a poll stops at the first
    // remembered event, so none older than the start is ever printed as new.
    const start = (await app.services.audit.list(customerId, { ...filters, limit: POLL_PAGE })).events;
    for (const event of start.slice(limit)) seen.add(event.eventId);
    print(start.slice(0, limit).reverse());
    while (!stopped) {
      // A timer that keeps the process alive: it is what the command is waiting for.
      await new Promise<void>((resolve) => { const timer = setTimeout(resolve, POLL_MS); wake = () => { clearTimeout(timer); resolve(); }; });
      if (stopped) break;
      const fresh: AuditEvent[] = [];
      let cursor = '';
      // Newest pages until one holds an event already printed (or the log ends).
      for (;;) {
        const page = await app.services.audit.list(customerId, { ...filters, limit: POLL_PAGE, cursor });
        fresh.push(...page.events.filter((e) => !seen.has(e.eventId)));
        if (page.nextCursor === '' || page.events.some((e) => seen.has(e.eventId))) break;
        cursor = page.nextCursor;
      }
      print(fresh.reverse());
    }
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

export const auditList: Command = {
  name: 'audit list',
  usage: 'audit list --customer-key K [--action P] [--user U] [--from MS] [--to MS] [--limit N] [--follow] [--json]',
  summary: 'List the audit events, newest first; --follow prints the latest oldest first, then each new event as it comes until interrupted.',
  options: {
    'customer-key': 'the numeric customer key (customer list shows it)',
    'action': 'only actions starting with P, e.g. user. or user.created',
    'user': 'only events whose target is this user (username, e-mail or user id)',
    'from': 'only events at or after this time (epoch milliseconds)',
    'to': 'only events at or before this time (epoch milliseconds)',
    'limit': `how many events (1..500, default ${DEFAULT_LIMIT}); with --follow, how many past events to show first`,
    'follow': 'keep running and print new events as they are written (checked every second); with --json one event per line',
  },
  async run(args, { app, auditContext }) {
    if (args.positionals.length > 2) throw new UsageError(`unexpected argument ${args.positionals[2]}`);
    const customerId = await customerIdOf(args, app);
    const limit = numberFlag(args, 'limit') ?? DEFAULT_LIMIT;
    if (limit < 1 || limit > 500) throw new UsageError('--limit must be 1..500');
    const followFlag = args.flags.follow;
    if (followFlag !== undefined && followFlag !== true) throw new UsageError('--follow takes no value');
    const filters = await filtersOf(args, app, customerId);
    if (followFlag) {
      await follow(app, customerId, filters, limit, args.flags.json === true);
      return { json: undefined, text: '', printed: true };
    }
    const page = await app.services.audit.list(customerId, { ...filters, limit });
    return {
      json: page,
      text: page.events.length === 0 ? 'No events.' : page.events.map(eventLine).join('\n'),
    };
  },
};
