/** flushLog: a clean stop waits for the log's pending writes, but never longer than its bound. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, openSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { flushLog } from '../../src/util/log-destination.js';

test('the lines written before flushLog are in the file when it resolves', async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'op-flush-')), 'log');
  const fd = openSync(file, 'w');
  const dest = pino.destination({ dest: fd, sync: false });
  const log = pino(dest);
  for (let i = 0; i < 500; i++) log.info({ i }, 'line');
  log.info('stopped');
  await flushLog(dest);
  const lines = readFileSync(file, 'utf8').trim().split('\n');
  assert.equal(lines.length, 501);
  assert.equal(JSON.parse(lines.at(-1)!).msg, 'stopped');
  closeSync(fd);
});

test('a destination that never drains holds the exit for the bound only', async () => {
  // A write under way that never returns (a pipe nobody reads).
  const stuck = { write: () => true, _writing: true, once: () => {}, off: () => {} } as unknown as pino.DestinationStream;
  const t0 = Date.now();
  await flushLog(stuck, 150);
  const waited = Date.now() - t0;
  assert.ok(waited >= 140 && waited < 1000, `waited ${waited} ms`);
});

test('a destination with no write under way resolves at once', async () => {
  const t0 = Date.now();
  await flushLog({ write: () => true, _writing: false, once: () => {} } as unknown as pino.DestinationStream, 10_000);
  assert.ok(Date.now() - t0 < 1000);
});
