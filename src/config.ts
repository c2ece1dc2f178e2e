/**
 * The only reader of process.env. Parses every LATCHKEY_* variable once, reports every problem in
 * one message, and returns a frozen Config that compose/ passes down. Secrets are never logged.
 */
import { resolve } from 'node:path';
import { Invalid } from './lib/errors.ts';
import { parseSender } from './mail/addresses.ts';
import { checkSmtpUrl } from './mail/transports/smtp-url.ts';

export type SiteMethod = 'jwt' | 'provider' | 'apikey' | 'apitoken';
export const SITE_METHODS: readonly SiteMethod[] = ['jwt', 'provider', 'apikey', 'apitoken'];

export interface SiteConfig {
  customerKey: string | undefined;
  methods: readonly SiteMethod[];
  jwtAlg: 'HS256' | 'RS256';
  jwtTtlSeconds: number;
  jwtHeader: string;
  apiKeyHeader: string;
  /** Group whose members may write posts (besides users whose role is an editor role). */
  editorGroup: string;
  /** User roles (upper case) that may write posts. */
  editorRoles: readonly string[];
  /** Group whose members are site administrators (manage any user's API keys and tokens). */
  adminGroup: string;
  /** PEM file with the RS256 private key; when absent the key is generated into the data dir. */
  jwtPrivateKeyFile: string | undefined;
  /** How long a node serves a cached posts page before reading the database again (0: never cached). */
  postsCacheMs: number;
  /** Failed-login throttling of the token endpoint (per username and per client address). */
  login: {
    /** Failures per username allowed before each further one adds an exponential delay. */
    userFreeAttempts: number;
    /** Failures per client address allowed before each further one adds an exponential delay. */
    ipFreeAttempts: number;
    /** Longest delay one failure can impose, so nobody can lock a user out for long. */
    maxDelaySeconds: number;
  };
  provider: {
    issuer: string | undefined;
    introspectionUrl: string | undefined;
    userinfoUrl: string | undefined;
    clientId: string | undefined;
    clientSecret: string | undefined;
    userClaim: string;
    timeoutMs: number;
    cacheSeconds: number;
  };
  apiTokens: {
    /** Longest allowed lifetime of a new token; 0 means tokens may never expire. */
    maxExpiryDays: number;
    maxPerUser: number;
    /** The scheduler deletes tokens expired for more than this many days. */
    purgeAfterDays: number;
    purgeIntervalSeconds: number;
  };
}

/** A request budget per client address and route family; max 0 turns the family's limit off. */
export interface RateLimit { max: number; windowSeconds: number }

export interface Config {
  dataDir: string;
  /** LATCHKEY_REDIS_URL: the replay guard and the rate limits in Redis (shared by every node) instead of the database and each node's memory. */
  redisUrl: string | undefined;
  /** LATCHKEY_RATE_LIMIT_<FAMILY> = "max/seconds" per client address, or 0 (off). */
  rateLimits: { admin: RateLimit; site: RateLimit; siteToken: RateLimit; landing: RateLimit; oauthToken: RateLimit };
  /** A postgres:// URL, or a SQLite file path (":memory:" in tests). */
  databaseUrl: string;
  host: string;
  identityPort: number;
  sitePort: number;
  /** The management interface (metrics, health, readiness detail): loopback by default, never public. */
  managementHost: string;
  /** 0: an ephemeral port (tests). */
  managementPort: number;
  publicUrl: string;
  siteUrl: string;
  /** LATCHKEY_SMTP_URL (smtp:// or smtps://); absent: mails are written as .eml files under the data dir. */
  smtpUrl: string | undefined;
  /** LATCHKEY_MAIL_FROM: the sender of every mail; default `Latchkey <no-reply@<public URL host>>`. */
  mailFrom: string;
  /** Webhook deliveries (src/webhooks/). */
  webhooks: {
    /** LATCHKEY_WEBHOOKS_RETRY_SCHEDULE: seconds to wait before each retry; its length is the number of retries. */
    retryScheduleSeconds: number[];
    /** LATCHKEY_WEBHOOKS_ALLOW_HTTP: http:// endpoints accepted (https:// only by default). */
    allowHttp: boolean;
    /** LATCHKEY_WEBHOOKS_ALLOW_PRIVATE: endpoints resolving to loopback, private or link-local addresses accepted. */
    allowPrivate: boolean;
  };
  /** LATCHKEY_OAUTH_TOKEN_TTL_SECONDS: lifetime of the access tokens POST /oauth/token issues. */
  oauthTokenTtlSeconds: number;
  /** LATCHKEY_AUDIT_RETENTION_DAYS: how long audit events are kept before the purge deletes them. */
  auditRetentionDays: number;
  /** End users' SSO sessions: LATCHKEY_SSO_IDLE_MINUTES (default 30), LATCHKEY_SSO_MAX_HOURS (default 10). */
  sso: { idleMs: number; maxMs: number };
  /** base64 or hex of 32 bytes; when absent, compose/index.ts uses (or creates) <dataDir>/master.key. */
  masterKey: string | undefined;
  logLevel: string;
  /** LATCHKEY_TRUST_PROXY: true, a hop count, or comma-separated proxy addresses/CIDRs; default off. */
  trustProxy: boolean | number | string;
  /** On SIGTERM, how long in-flight requests may take before the process exits anyway. */
  shutdownTimeoutSeconds: number;
  /** LATCHKEY_READ_CACHE: keep hot reads (users/get, getall pages, API tokens) in memory, validated per use. */
  readCache: boolean;
  admin: {
    /** Accepted difference between the Timestamp header and the server clock. */
    clockSkewMs: number;
    replayGuard: boolean;
    /** How long after first use a signed header triple may be used again (same-millisecond calls). */
    replayGraceMs: number;
    /** Live triples the in-memory guard (SQLite store, no Redis) keeps at most; each customer gets a share. */
    replayMaxEntries: number;
    /** How long a node caches a customer's decrypted API key. */
    customerCacheMs: number;
  };
  site: SiteConfig;
}

type Env = Record<string, string | undefined>;

export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];

  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    if (!/^-?\d+$/.test(raw)) { problems.push(`${name} must be an integer`); return fallback; }
    const n = Number(raw);
    if (n < min || n > max) { problems.push(`${name} must be between ${min} and ${max}`); return fallback; }
    return n;
  };
  const str = (name: string): string | undefined => (env[name] === '' ? undefined : env[name]);
  const bool = (name: string, fallback: boolean): boolean => {
    const raw = str(name);
    if (raw === undefined) return fallback;
    if (/^(1|true|yes|on)$/i.test(raw)) return true;
    if (/^(0|false|no|off)$/i.test(raw)) return false;
    problems.push(`${name} must be true or false`);
    return fallback;
  };
  /** Seconds between attempts, comma-separated: 1 to 50 waits of 1..604800 s each. */
  const retrySchedule = (name: string, fallback: string): number[] => {
    const raw = str(name) ?? fallback;
    const waits = raw.split(',').map((part) => part.trim());
    if (waits.length > 50 || !waits.every((w) => /^\d{1,6}$/.test(w) && Number(w) >= 1 && Number(w) <= 604_800)) {
      problems.push(`${name} must be 1 to 50 comma-separated waits in seconds, each 1..604800`);
      return fallback.split(',').map(Number);
    }
    return waits.map(Number);
  };
  const header = (name: string): string => {
    const raw = str(name) ?? 'Authorization';
    if (!/^[A-Za-z0-9-]{1,64}$/.test(raw)) problems.push(`${name} must be a header name`);
    return raw.toLowerCase();
  };

  const dataDir = resolve(str('LATCHKEY_DATA_DIR') ?? './data');
  const host = str('LATCHKEY_HOST') ?? '0.0.0.0';
  const identityPort = int('LATCHKEY_IDENTITY_PORT', 8080, 0, 65535);
  const sitePort = int('LATCHKEY_SITE_PORT', 8081, 0, 65535);
  const localHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;

  const methodsRaw = str('LATCHKEY_SITE_METHODS');
  const methods = methodsRaw === undefined
    ? SITE_METHODS
    : methodsRaw.split(',').map((m) => m.trim()).filter(Boolean) as SiteMethod[];
  for (const m of methods) if (!SITE_METHODS.includes(m)) problems.push(`LATCHKEY_SITE_METHODS: unknown method "${m}"`);

  const jwtAlg = (str('LATCHKEY_SITE_JWT_ALG') ?? 'HS256').toUpperCase();
  if (jwtAlg !== 'HS256' && jwtAlg !== 'RS256') problems.push('LATCHKEY_SITE_JWT_ALG must be HS256 or RS256');

  const url = (name: string): string | undefined => {
    const raw = str(name);
    if (raw !== undefined && !/^https?:\/\/\S+$/.test(raw)) problems.push(`${name} must be an http(s) URL`);
    return raw;
  };

  const rate = (name: string, fallback: string): RateLimit => {
    const raw = str(name) ?? fallback;
    const match = /^(\d{1,9})(?:\/(\d{1,6}))?$/.exec(raw.trim());
    const limit = match ? { max: Number(match[1]), windowSeconds: Number(match[2] ?? 60) } : undefined;
    if (!limit || limit.windowSeconds < 1) { problems.push(`${name} must be "max/seconds" (e.g. 600/60) or 0`); return { max: 0, windowSeconds: 60 }; }
    return limit;
  };
  const redisUrl = str('LATCHKEY_REDIS_URL');
  if (redisUrl !== undefined && !/^rediss?:\/\/\S+$/.test(redisUrl)) problems.push('LATCHKEY_REDIS_URL must be a redis:// or rediss:// URL');

  // The mail module's own checks, run at boot so a bad sender or SMTP URL stops the start, not the
  // first mail. Their message names the rule only: the URL may hold a password.
  const mailCheck = (name: string, check: () => unknown) => {
    try { check(); } catch (error) {
      if (!(error instanceof Invalid)) throw error;
      problems.push(`${name} ${error.message.slice(error.field.length + 1)}`);
    }
  };
  const smtpUrl = str('LATCHKEY_SMTP_URL');
  if (smtpUrl !== undefined) mailCheck('LATCHKEY_SMTP_URL', () => checkSmtpUrl(smtpUrl));
  const publicUrl = (url('LATCHKEY_PUBLIC_URL') ?? `http://${localHost}:${identityPort}`).replace(/\/+$/, '');
  const mailFrom = str('LATCHKEY_MAIL_FROM') ?? defaultSender(publicUrl);
  mailCheck('LATCHKEY_MAIL_FROM', () => parseSender(mailFrom));

  const config: Config = {
    dataDir,
    redisUrl,
    rateLimits: {
      admin: rate('LATCHKEY_RATE_LIMIT_ADMIN', '0'),
      site: rate('LATCHKEY_RATE_LIMIT_SITE', '0'),
      siteToken: rate('LATCHKEY_RATE_LIMIT_SITE_TOKEN', '0'),
      landing: rate('LATCHKEY_RATE_LIMIT_LANDING', '0'),
      oauthToken: rate('LATCHKEY_RATE_LIMIT_OAUTH_TOKEN', '0'),
    },
    databaseUrl: str('LATCHKEY_DATABASE_URL') ?? resolve(dataDir, 'latchkey.sqlite'),
    host,
    identityPort,
    sitePort,
    managementHost: str('LATCHKEY_MANAGEMENT_HOST') ?? '127.0.0.1',
    managementPort: int('LATCHKEY_MANAGEMENT_PORT', 9000, 0, 65535),
    publicUrl,
    siteUrl: (url('LATCHKEY_SITE_URL') ?? `http://${localHost}:${sitePort}`).replace(/\/+$/, ''),
    smtpUrl,
    mailFrom,
    webhooks: {
      retryScheduleSeconds: retrySchedule('LATCHKEY_WEBHOOKS_RETRY_SCHEDULE', '5,300,1800,7200,18000,36000,36000'),
      allowHttp: bool('LATCHKEY_WEBHOOKS_ALLOW_HTTP', false),
      allowPrivate: bool('LATCHKEY_WEBHOOKS_ALLOW_PRIVATE', false),
    },
    oauthTokenTtlSeconds: int('LATCHKEY_OAUTH_TOKEN_TTL_SECONDS', 3600, 60, 86_400),
    auditRetentionDays: int('LATCHKEY_AUDIT_RETENTION_DAYS', 90, 1, 3650),
    sso: {
      idleMs: int('LATCHKEY_SSO_IDLE_MINUTES', 30, 1, 24 * 60) * 60_000,
      maxMs: int('LATCHKEY_SSO_MAX_HOURS', 10, 1, 30 * 24) * 3600_000,
    },
    masterKey: str('LATCHKEY_MASTER_KEY'),
    logLevel: str('LATCHKEY_LOG_LEVEL') ?? 'info',
    trustProxy: parseTrustProxy(str('LATCHKEY_TRUST_PROXY')),
    shutdownTimeoutSeconds: int('LATCHKEY_SHUTDOWN_TIMEOUT_SECONDS', 25, 1, 3600),
    readCache: bool('LATCHKEY_READ_CACHE', true),
    admin: {
      clockSkewMs: int('LATCHKEY_ADMIN_CLOCK_SKEW_SECONDS', 300, 1, 900) * 1000,
      replayGuard: bool('LATCHKEY_ADMIN_REPLAY_GUARD', true),
      replayGraceMs: int('LATCHKEY_ADMIN_REPLAY_GRACE_MS', 2000, 0, 60_000),
      replayMaxEntries: int('LATCHKEY_ADMIN_REPLAY_MAX_ENTRIES', 500_000, 100, 100_000_000),
      customerCacheMs: int('LATCHKEY_ADMIN_CUSTOMER_CACHE_MS', 1000, 0, 1000),
    },
    site: {
      customerKey: str('LATCHKEY_SITE_CUSTOMER_KEY'),
      methods: Object.freeze([...new Set(methods)]),
      jwtAlg: jwtAlg as 'HS256' | 'RS256',
      jwtTtlSeconds: int('LATCHKEY_SITE_JWT_TTL_SECONDS', 3600, 60, 30 * 24 * 3600),
      jwtHeader: header('LATCHKEY_SITE_JWT_HEADER'),
      apiKeyHeader: header('LATCHKEY_SITE_APIKEY_HEADER'),
      editorGroup: str('LATCHKEY_SITE_EDITOR_GROUP') ?? 'editors',
      editorRoles: Object.freeze((str('LATCHKEY_SITE_EDITOR_ROLES') ?? 'EDITOR,ADMIN').split(',').map((r) => r.trim().toUpperCase()).filter(Boolean)),
      adminGroup: str('LATCHKEY_SITE_ADMIN_GROUP') ?? 'site-admins',
      jwtPrivateKeyFile: str('LATCHKEY_SITE_JWT_PRIVATE_KEY_FILE'),
      postsCacheMs: int('LATCHKEY_SITE_POSTS_CACHE_MS', 1000, 0, 60_000),
      login: {
        userFreeAttempts: int('LATCHKEY_SITE_LOGIN_USER_ATTEMPTS', 5, 1, 1000),
        ipFreeAttempts: int('LATCHKEY_SITE_LOGIN_IP_ATTEMPTS', 50, 1, 100_000),
        maxDelaySeconds: int('LATCHKEY_SITE_LOGIN_MAX_DELAY_SECONDS', 300, 1, 3600),
      },
      provider: {
        issuer: url('LATCHKEY_SITE_PROVIDER_ISSUER'),
        introspectionUrl: url('LATCHKEY_SITE_PROVIDER_INTROSPECTION_URL'),
        userinfoUrl: url('LATCHKEY_SITE_PROVIDER_USERINFO_URL'),
        clientId: str('LATCHKEY_SITE_PROVIDER_CLIENT_ID'),
        clientSecret: str('LATCHKEY_SITE_PROVIDER_CLIENT_SECRET'),
        userClaim: str('LATCHKEY_SITE_PROVIDER_USER_CLAIM') ?? 'email',
        timeoutMs: int('LATCHKEY_SITE_PROVIDER_TIMEOUT_MS', 3000, 100, 60_000),
        cacheSeconds: int('LATCHKEY_SITE_PROVIDER_CACHE_SECONDS', 60, 0, 3600),
      },
      apiTokens: {
        maxExpiryDays: int('LATCHKEY_SITE_API_TOKEN_MAX_EXPIRY_DAYS', 365, 0, 36500),
        maxPerUser: int('LATCHKEY_SITE_API_TOKEN_MAX_PER_USER', 20, 1, 10_000),
        purgeAfterDays: int('LATCHKEY_SITE_API_TOKEN_PURGE_AFTER_DAYS', 30, 0, 36500),
        purgeIntervalSeconds: int('LATCHKEY_SITE_API_TOKEN_PURGE_INTERVAL_SECONDS', 3600, 1, 86_400),
      },
    },
  };

  if (problems.length > 0) throw new Error(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
  return deepFreeze(config);
}

/**
 * `Latchkey <no-reply@<host>>`; a host without a dot (localhost) gets `.invalid`, and one that is no
 * domain (an IPv6 literal) becomes localhost.invalid, so the default is always a valid address.
 */
function defaultSender(publicUrl: string): string {
  let host = 'localhost';
  try { host = new URL(publicUrl).hostname; } catch { /* reported as a bad LATCHKEY_PUBLIC_URL */ }
  if (!/^[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$/.test(host)) host = 'localhost';
  return `Latchkey <no-reply@${host.includes('.') ? host : `${host}.invalid`}>`;
}

function parseTrustProxy(raw: string | undefined): boolean | number | string {
  if (raw === undefined || /^(0|false|no|off)$/i.test(raw)) return false;
  if (/^(true|yes|on)$/i.test(raw)) return true;
  if (/^[1-9][0-9]?$/.test(raw)) return Number(raw);
  return raw;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
