/**
 * Site settings an operator sets with `latchkey site config set`: stored in the database (so every
 * node reads the same), applied over the environment when the site starts. Secrets are never
 * settable here; they stay in the environment.
 */
import type { Kysely } from 'kysely';
import { SITE_METHODS, type SiteConfig, type SiteMethod } from '../../config.ts';
import type { Clock } from '../../lib/clock.ts';
import { Invalid } from '../../lib/errors.ts';
import type { Database } from '../../store/schema.ts';
import * as repo from './repo.ts';

export const SETTING_NAMES = ['methods', 'jwtTtlSeconds', 'jwtHeader', 'apiKeyHeader', 'editorGroup', 'editorRoles', 'adminGroup'] as const;
export type SettingName = typeof SETTING_NAMES[number];
export type SiteSettingChanges = Partial<Pick<SiteConfig, SettingName>>;

export interface EffectiveSiteConfig {
  config: SiteConfig;
  /** The settings that come from the CLI rather than the environment. */
  fromCli: SettingName[];
}

export interface SiteSettingsService {
  /** The environment's site settings with the CLI's applied over them. */
  effective(base: SiteConfig): Promise<EffectiveSiteConfig>;
  /** @throws Invalid naming the first bad setting (nothing is written then). */
  set(changes: SiteSettingChanges): Promise<void>;
  /** Forgets every CLI setting: the environment applies again (the customer binding stays). */
  reset(): Promise<void>;
  /** The customer key the site bound itself to when it first found a single customer, if any. */
  boundCustomerKey(): Promise<string | undefined>;
  /**
   * Records `customerKey` as the site's customer unless one is recorded already (another node may
   * have been first); returns the recorded key.
   */
  bindCustomer(customerKey: string): Promise<string>;
}

/**
 * Not a CLI setting: the customer the site served when it started with a single customer. Kept so
 * that creating a second customer later does not leave the site unable to choose.
 */
const BOUND_CUSTOMER = 'boundCustomerKey';

const HEADER = /^[A-Za-z0-9-]{1,64}$/;
const NAME = /^[^\u0000-\u001f\u007f]{1,100}$/;

/** The value, checked and normalised; throws Invalid. */
function check(name: SettingName, value: unknown): unknown {
  switch (name) {
    case 'methods': {
      if (!Array.isArray(value) || value.length === 0) throw new Invalid('methods', `must list one or more of ${SITE_METHODS.join(', ')}`);
      for (const m of value) if (!SITE_METHODS.includes(m as SiteMethod)) throw new Invalid('methods', `has an unknown method "${String(m)}"`);
      return [...new Set(value as SiteMethod[])];
    }
    case 'jwtTtlSeconds':
      if (!Number.isSafeInteger(value) || (value as number) < 60 || (value as number) > 30 * 24 * 3600) {
        throw new Invalid('jwtTtlSeconds', 'must be an integer between 60 and 2592000');
      }
      return value;
    case 'jwtHeader':
    case 'apiKeyHeader':
      if (typeof value !== 'string' || !HEADER.test(value)) throw new Invalid(name, 'must be a header name');
      return value.toLowerCase();
    case 'editorGroup':
    case 'adminGroup':
      if (typeof value !== 'string' || !NAME.test(value.trim())) throw new Invalid(name, 'must be a group name');
      return value.trim();
    case 'editorRoles':
      if (!Array.isArray(value) || !value.every((r) => typeof r === 'string' && NAME.test(r))) throw new Invalid('editorRoles', 'must be a list of role names');
      return (value as string[]).map((r) => r.trim().toUpperCase());
  }
}

export function createSiteSettingsService(deps: { db: Kysely<Database>; clock: Clock }): SiteSettingsService {
  const { db, clock } = deps;
  return {
    async effective(base) {
      const stored = await repo.readSettings(db);
      const overrides: Record<string, unknown> = {};
      const fromCli: SettingName[] = [];
      for (const name of SETTING_NAMES) {
        const raw = stored.get(name);
        if (raw === undefined) continue;
        try {
          overrides[name] = check(name, JSON.parse(raw));
          fromCli.push(name);
        } catch {
          // A row this version cannot read (written by a newer one) leaves the environment's value.
        }
      }
      return { config: Object.freeze({ ...base, ...overrides }) as SiteConfig, fromCli };
    },

    async set(changes) {
      const checked: [SettingName, unknown][] = [];
      for (const name of SETTING_NAMES) {
        if (changes[name] !== undefined) checked.push([name, check(name, changes[name])]);
      }
      const now = clock.now();
      await db.transaction().execute(async (trx) => {
        for (const [name, value] of checked) await repo.writeSetting(trx, name, JSON.stringify(value), now);
      });
    },

    reset: () => repo.deleteSettings(db, SETTING_NAMES),

    async boundCustomerKey() {
      const raw = await repo.readSetting(db, BOUND_CUSTOMER);
      try {
        const value: unknown = raw === undefined ? undefined : JSON.parse(raw);
        return typeof value === 'string' ? value : undefined;
      } catch {
        return undefined;
      }
    },

    async bindCustomer(customerKey) {
      return JSON.parse(await repo.insertSettingIfAbsent(db, BOUND_CUSTOMER, JSON.stringify(customerKey), clock.now())) as string;
    },
  };
}
