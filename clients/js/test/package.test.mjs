// The package's shape: no module imports another that imports it back
// (directly or around a loop), and the client's raw call is not its API.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { Client } from '../dist/index.js';

test("dist's modules import one another without a cycle", async () => {
  const dir = new URL('../dist/', import.meta.url);
  const files = (await readdir(dir)).filter((f) => f.endsWith('.js'));
  const edges = new Map();
  for (const f of files) {
    const text = await readFile(new URL(f, dir), 'utf8');
    // tsc leaves only the imports a module needs at run time.
    edges.set(f, [...text.matchAll(/^(?:import|export)\b[^;]*?from '\.\/([^']+)'/gm)].map((m) => m[1]));
  }
  assert.ok(edges.get('primitives.js').length > 0, 'the imports were read');
  const state = new Map();
  const visit = (f, path) => {
    if (state.get(f) === 'done') return;
    assert.notEqual(state.get(f), 'open', `an import cycle: ${[...path, f].join(' -> ')}`);
    state.set(f, 'open');
    for (const g of edges.get(f) ?? []) visit(g, [...path, f]);
    state.set(f, 'done');
  };
  for (const f of files) visit(f, []);
});

test('the raw call of the primitives is not a method of the API', () => {
  assert.equal('v3' in Client.prototype, false);
  const names = Object.getOwnPropertyNames(Client.prototype);
  assert.ok(names.includes('lock') && names.includes('close'));
  assert.ok(names.every((n) => !/^v[0-9]$/.test(n)), names.join());
});
