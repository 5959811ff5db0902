// What a new user meets first: lock(name) without options, a script that
// ends by itself though its client was never closed, require() from
// CommonJS, and no warning printed by the package. Each runs in a child
// node process of its own, with the environment's warning switches off.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import * as esm from '../dist/index.js';
import { needServer, unique } from './helpers.mjs';

const pkg = fileURLToPath(new URL('..', import.meta.url));
const entry = new URL('../dist/index.js', import.meta.url).href;

/**
 * node runs code in a child node process (ESM unless cjs) and resolves
 * with its exit code, stdout and stderr once it has exited by itself.
 */
async function node(code, { cjs = false, extraEnv = {} } = {}) {
  const childEnv = { ...process.env, ...extraEnv };
  delete childEnv.NODE_NO_WARNINGS; // the package must not print warnings at all
  delete childEnv.NODE_OPTIONS;
  const args = cjs ? ['-e', code] : ['--input-type=module', '-e', code];
  const child = spawn(process.execPath, args, { cwd: pkg, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b) => (stdout += b));
  child.stderr.on('data', (b) => (stderr += b));
  const [exitCode, signal] = await once(child, 'exit');
  return { exitCode, signal, stdout, stderr };
}

describe('a script that never calls close() ends by itself', needServer, () => {
  for (const rpc of [true, false]) {
    test(`after a lock and an unlock ${rpc ? 'over the RPC stream' : 'over HTTP'}`, { timeout: 60_000 }, async () => {
      const r = unique('exits');
      const code = `
        import { Client } from ${JSON.stringify(entry)};
        const client = new Client(process.env.FENCEVIEW_URL, { key: process.env.FENCEVIEW_ADMIN_TOKEN, rpc: ${rpc} });
        const lock = client.lock(${JSON.stringify(r)});      // no options: a random holder, the client's lease
        const token = await lock.acquire();
        await lock.release();
        console.log(String(token));
      `;
      // The child exiting is the test: a socket or timer left holding the
      // event loop would keep it running (and the test's timeout fail it).
      const out = await node(code);
      assert.equal(out.exitCode, 0, out.stderr);
      assert.match(out.stdout, /^[1-9][0-9]*\n$/);
      assert.equal(out.stderr, '');
    });
  }

  test('a call waiting on an idle-unref stream still holds the process until answered', { timeout: 60_000 }, async () => {
    const r = unique('waits');
    // The second acquire waits on the server for the first lease (1 s) to
    // run out: nothing but the stream's pending call keeps the process up.
    const code = `
      import { Client } from ${JSON.stringify(entry)};
      const client = new Client(process.env.FENCEVIEW_URL, { key: process.env.FENCEVIEW_ADMIN_TOKEN, rpc: true });
      await client.lock(${JSON.stringify(r)}).acquire({ leaseMs: 1000, watchdog: false });
      const t = await client.lock(${JSON.stringify(r)}).acquire({ waitMs: 20000, watchdog: false });
      console.log('granted ' + t);
    `;
    const out = await node(code);
    assert.equal(out.exitCode, 0, out.stderr);
    assert.equal(out.stdout, 'granted 2\n');
  });
});

describe('CommonJS', () => {
  test("require('fenceview') gives the package, the same classes as import", async () => {
    const out = await node(`
      const f = require('fenceview');
      const c = new f.Client('http://127.0.0.1:1');
      const l = c.lock('x');
      console.log([typeof f.Client, typeof f.WasmGuard, typeof f.HeldError, l.resource, f.parse('{"token":9007199254740993}').token === 9007199254740993n].join(' '));
    `, { cjs: true });
    assert.equal(out.exitCode, 0, out.stderr);
    assert.equal(out.stdout, 'function function function x true\n');
    assert.equal(out.stderr, '');
    // One copy of the package for both forms: instanceof works across them.
    const cjs = createRequire(import.meta.url)('fenceview');
    assert.equal(cjs.Client, esm.Client);
    assert.equal(cjs.HeldError, esm.HeldError);
  });
});

test('loading and running the WebAssembly guard prints no warning', { timeout: 60_000 }, async () => {
  const module = fileURLToPath(new URL('../../../internal/modules/guard.wasm', import.meta.url));
  await readFile(module); // there, or this test is about nothing
  const out = await node(`
    import { readFile } from 'node:fs/promises';
    import { WasmGuard } from ${JSON.stringify(entry)};
    const guard = await WasmGuard.load({ module: await readFile(${JSON.stringify(module)}) });
    console.log(guard.checkUnsigned('r', 5n).accepted, guard.checkUnsigned('r', 4n).accepted);
    process.emitWarning('the package leaves other warnings alone', 'ExperimentalWarning');
  `);
  assert.equal(out.exitCode, 0, out.stderr);
  assert.equal(out.stdout, 'true false\n');
  // Only the warning the script itself emitted: none of node:wasi's.
  assert.match(out.stderr, /^\(node:\d+\) ExperimentalWarning: the package leaves other warnings alone\n/);
  assert.doesNotMatch(out.stderr, /WASI/);
});
