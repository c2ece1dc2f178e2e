/** The progress of users import/export: a bar on a terminal, plain lines in a log, and always a last line at 100 %. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createProgress, formatDuration } from '../../src/cli/progress.ts';

function fakeStream(isTTY: boolean) {
  const writes: string[] = [];
  return { isTTY, writes, write: (text: string) => writes.push(text) };
}

test('on a terminal: a bar with count, rate and time left, redrawn at most ten times a second, the last draw at 100 %', () => {
  const stream = fakeStream(true);
  let now = 1_000_000;
  const progress = createProgress({ task: 'users import', unit: 'rows', total: 20000, stream, now: () => now });
  now += 1000;
  progress.update(500);
  assert.deepEqual(stream.writes, [`\r[#.......................] 500/20000 rows (2 %), 500 rows/s, about 39 s left\x1b[K`]);
  now += 50;
  progress.update(1000); // within 100 ms of the last draw: skipped
  assert.equal(stream.writes.length, 1);
  now += 9000;
  progress.update(18500);
  assert.equal(stream.writes.at(-1), `\r[######################..] 18500/20000 rows (92 %), 1841 rows/s, about 1 s left\x1b[K`);
  now += 10;
  progress.update(20000); // skipped by the rate limit: finish draws it
  assert.equal(stream.writes.length, 2);
  now += 790;
  progress.finish(20000, '20000 created, 0 updated, 0 unchanged, 0 failed');
  assert.equal(stream.writes.at(-1), `\r[########################] 20000/20000 rows (100 %), in 11 s, 1843 rows/s; 20000 created, 0 updated, 0 unchanged, 0 failed\x1b[K\n`);
  progress.update(1); // over: nothing more
  assert.equal(stream.writes.length, 3);
});

test('without a terminal: a line every interval, and a last line', () => {
  const stream = fakeStream(false);
  let now = 0;
  const progress = createProgress({ task: 'users export', unit: 'users', total: 2000, stream, now: () => now, intervalMs: 5000 });
  for (let done = 500; done <= 2000; done += 500) {
    now += 3000;
    progress.update(done);
  }
  progress.finish(2000);
  assert.deepEqual(stream.writes, [
    'latchkey: users export: 1000/2000 users (50 %), 167 users/s, about 6 s left\n',
    'latchkey: users export: 2000/2000 users (100 %), 167 users/s\n',
    'latchkey: users export: 2000/2000 users (100 %), in 12 s, 167 users/s\n',
  ]);
});

test('interval 0: a line at every update; a failure ends a bar without claiming more; a count that was off ends at what was done', () => {
  const stream = fakeStream(false);
  let now = 0;
  const every = createProgress({ task: 'users import', unit: 'rows', total: 3, stream, now: () => now, intervalMs: 0 });
  every.update(1);
  every.update(2);
  now += 2000;
  every.update(4);
  every.finish(4);
  assert.deepEqual(stream.writes, [
    'latchkey: users import: 1/3 rows (33 %)\n',
    'latchkey: users import: 2/3 rows (66 %)\n',
    'latchkey: users import: 4/3 rows (133 %), 2 rows/s\n',
    'latchkey: users import: 4/4 rows (100 %), in 2 s, 2 rows/s\n',
  ]);
  const tty = fakeStream(true);
  const failed = createProgress({ task: 'users import', unit: 'rows', total: 10, stream: tty, now: () => 0 });
  failed.update(5);
  failed.abort();
  failed.finish(10);
  assert.equal(tty.writes.length, 2);
  assert.equal(tty.writes[1], '\n');
  assert.deepEqual([formatDuration(400), formatDuration(75_000), formatDuration(3_725_000)], ['0 s', '1 min 15 s', '1 h 2 min']);
});
