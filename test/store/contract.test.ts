/**
 * The store contracts: the same cases for every repo, on SQLite always and on PostgreSQL when
 * LATCHKEY_TEST_POSTGRES_URL is set (skipped with the reason otherwise; a failure in CI).
 */
import type { TestContext } from 'node:test';
import { describeEachStore, openTestStore } from '../helpers/stores.ts';
import { apiTokensRepoContract } from './api-tokens.contract.ts';
import { groupsRepoContract } from './groups.contract.ts';
import { siteApiKeysRepoContract } from './site-api-keys.contract.ts';
import { usersRepoContract } from './users.contract.ts';

describeEachStore('store contracts', (kind) => {
  const openStore = async (t: TestContext) => {
    const { store, owned } = await openTestStore(kind);
    if (owned) t.after(() => store.close());
    return store;
  };
  usersRepoContract(openStore);
  groupsRepoContract(openStore);
  apiTokensRepoContract(openStore);
  siteApiKeysRepoContract(openStore);
});
