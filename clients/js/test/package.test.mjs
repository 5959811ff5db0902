// The package's shape: no module imports another that imports it back
// (directly or around a loop), and the client's raw call is not its API.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { Client } from '../dist/index.js';

// importCycle returns an import cycle among the modules of dir (names
// ending in ext), or null.
async function importCycle(dir, ext) {
  const files = (await readdir(dir)).filter((f) => f.endsWith(ext));
  const edges = new Map();
  for (const f of files) {
    const text = await readFile(new URL(f, dir), 'utf8');
    edges.set(f, [...text.matchAll(/^(?:import|export)\b[^;]*?from '\.\/([^']+)'/gm)].map((m) => m[1].replace(/\.js$/, ext)));
  }
  assert.ok(edges.get('primitives' + ext).length > 0, 'the imports were read');
  const state = new Map();
  const visit = (f, path) => {
    if (state.get(f) === 'done') return null;
    if (state.get(f) === 'open') return [...path, f];
    state.set(f, 'open');
    for (const g of edges.get(f) ?? []) {
      const c = visit(g, [...path, f]);
      if (c) return c;
    }
    state.set(f, 'done');
    return null;
  };
  for (const f of files) {
    const c = visit(f, []);
    if (c) return c;
  }
  return null;
}

test("dist's modules import one another without a cycle", async () => {
  // tsc leaves only the imports a module needs at run time.
  const c = await importCycle(new URL('../dist/', import.meta.url), '.js');
  assert.equal(c, null, `an import cycle: ${c?.join(' -> ')}`);
});

test("src's modules import one another without a cycle, type-only imports included", async () => {
  const c = await importCycle(new URL('../src/', import.meta.url), '.ts');
  assert.equal(c, null, `an import cycle: ${c?.join(' -> ')}`);
});

test('the raw call of the primitives is not a method of the API', () => {
  assert.equal('v3' in Client.prototype, false);
  const names = Object.getOwnPropertyNames(Client.prototype);
  assert.ok(names.includes('lock') && names.includes('close'));
  assert.ok(names.every((n) => !/^v[0-9]$/.test(n)), names.join());
});
