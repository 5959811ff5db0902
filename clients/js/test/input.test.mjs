import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, InvalidInputError, InvalidRequestError, FenceviewError } from '../dist/index.js';

// Input the client refuses before sending is the InvalidRequestError the
// server would answer: status 400, its code and the field at fault. No
// server is needed: nothing is sent.
test('input the client checks is refused as the server would refuse it', async () => {
  const c = new Client('http://127.0.0.1:1');
  const cases = [
    ['invalid-request', 'holder', () => c.lock('r', { holder: 'h'.repeat(100) })],
    ['invalid-request', 'resource', () => c.lock('x'.repeat(161))],
    ['invalid-token', 'token', () => c.fence('r', -3n)],
    ['invalid-request', 'candidate', () => c.election('e', { candidate: 'c'.repeat(100) })],
    ['invalid-request', 'name', () => c.election('x'.repeat(161))],
    ['invalid-request', 'permits', () => c.semaphore('jobs', 0)],
    ['invalid-request', 'name', () => c.semaphore('a#b', 2)],
    ['invalid-request', 'resources', () => c.lockAll(['a', 'a'], { holder: 'h' })],
    ['invalid-request', 'value', () => c.election('e').campaign('v'.repeat(5000))],
    ['invalid-request', 'waitMs', () => c.semaphore('jobs', 2).acquire({ waitMs: -1 })],
  ];
  for (const [code, field, call] of cases) {
    await assert.rejects(async () => call(), (err) => {
      assert.ok(err instanceof InvalidInputError && err instanceof InvalidRequestError && err instanceof FenceviewError, `${field}: ${err}`);
      assert.deepEqual({ status: err.status, code: err.code, field: err.field }, { status: 400, code, field });
      return true;
    });
  }
  c.close();
});
