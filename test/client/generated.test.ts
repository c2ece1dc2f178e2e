/**
 * CI's staleness check for the generated client: the service's OpenAPI document is produced again
 * in-process and run through openapi-typescript; the committed packages/client files must match.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { CLIENT_DIR, GENERATED_FILES, generateClient } from '../../scripts/generate-client.ts';

function committed(name: string): string | undefined {
  try {
    return readFileSync(join(CLIENT_DIR, name), 'utf8');
  } catch {
    return undefined;
  }
}

/** Where two texts first differ, as `file:line: committed | generated`, to make the message useful. */
function firstDifference(name: string, old: string | undefined, fresh: string): string {
  if (old === undefined) return `${name} is missing`;
  const a = old.split('\n');
  const b = fresh.split('\n');
  const line = a.findIndex((text, i) => text !== b[i]);
  const at = line < 0 ? a.length : line;
  return `${name}:${at + 1}: committed ${JSON.stringify(a[at]?.trim() ?? '<end>')}, generated ${JSON.stringify(b[at]?.trim() ?? '<end>')}`;
}

test('packages/client is up to date with the OpenAPI document (else: npm run client:generate)', async () => {
  const fresh = await generateClient();
  const stale = GENERATED_FILES.filter((name) => committed(name) !== fresh[name]);
  assert.ok(stale.length === 0, `The generated client is stale against the service's OpenAPI document; run \`npm run client:generate\` and commit packages/client.\n${
    stale.map((name) => `  ${firstDifference(name, committed(name), fresh[name])}`).join('\n')}`);
});
