/**
 * The raw argon2id verify rate with Latchkey's parameters at a given concurrency, in its own process
 * like the server: the ceiling for the token endpoint, whose cost is one verification per login.
 *
 *   node --import tsx bench/argon2-rate.ts --concurrency 10 --seconds 6   → {"verifiesPerSecond": …}
 */
import argon2 from 'argon2';
import { ARGON2_OPTIONS } from '../src/lib/passwords.ts';

function argument(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
}

const concurrency = argument('concurrency', 10);
const seconds = argument('seconds', 6);
const password = 'violet-otter-harbour-42';
const hash = await argon2.hash(password, ARGON2_OPTIONS);
// One verification first, so start-up is not counted.
await argon2.verify(hash, password);

let done = 0;
const until = performance.now() + seconds * 1000;
const start = performance.now();
await Promise.all(Array.from({ length: concurrency }, async () => {
  while (performance.now() < until) {
    if (!(await argon2.verify(hash, password))) throw new Error('verification failed');
    done++;
  }
}));
process.stdout.write(JSON.stringify({ verifiesPerSecond: done / ((performance.now() - start) / 1000) }) + '\n');
