// Runs the conformance table (table.json) against guard.wasm on Node's
// node:wasi and prints {caseName: [{code, prev}, ...]} as JSON. It is also
// the smallest complete host of the guard ABI: see docs/wasm-abi.md.
'use strict';
const fs = require('node:fs');
const { WASI } = require('node:wasi');

const [wasmPath, tablePath] = process.argv.slice(2);
const cases = JSON.parse(fs.readFileSync(tablePath, 'utf8'));

async function main() {
  const module = await WebAssembly.compile(fs.readFileSync(wasmPath));
  const out = {};
  for (const c of cases) {
    // A fresh instance per case: each starts with no high-water marks.
    const wasi = new WASI({ version: 'preview1', args: [], env: {} });
    const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
    wasi.initialize(instance); // runs _initialize; exports trap before it
    out[c.name] = c.steps.map((s) => step(instance.exports, s));
  }
  process.stdout.write(JSON.stringify(out));
}

// withID copies the id into a guest buffer from guard_alloc, calls fn with
// (ptr, len), and frees the buffer.
function withID(g, id, fn) {
  if (id.length === 0) return fn(0, 0); // refused before memory is read
  const ptr = g.guard_alloc(id.length) >>> 0;
  if (ptr === 0) throw new Error('guard_alloc failed');
  try {
    new Uint8Array(g.memory.buffer, ptr, id.length).set(id);
    return fn(ptr, id.length);
  } finally {
    g.guard_free(ptr);
  }
}

// lastRequired reads the mark an accepted check compared its token with.
function lastRequired(g) {
  const ptr = g.guard_last_required_ptr() >>> 0;
  return new DataView(g.memory.buffer).getBigInt64(ptr, true);
}

let handleCalls = 0;

// checkBatch1 checks one (handle, token) record with guard_check_batch and
// returns its code; the mark it was compared with, which the record
// carries (the batch leaves guard_last_required_ptr's cell alone), goes to
// batchPrev.
let batchPrev = null;
function checkBatch1(g, h, token) {
  const ptr = g.guard_alloc(16) >>> 0;
  try {
    let dv = new DataView(g.memory.buffer, ptr, 16);
    dv.setUint32(0, h, true);
    dv.setBigInt64(8, token, true);
    const n = g.guard_check_batch(ptr, 1);
    if (n !== 1) throw new Error('guard_check_batch returned ' + n);
    dv = new DataView(g.memory.buffer, ptr, 16);
    batchPrev = dv.getBigInt64(8, true);
    return dv.getBigInt64(0, true);
  } finally {
    g.guard_free(ptr);
  }
}

function step(g, s) {
  const id = Buffer.from(s.id || '', 'base64');
  const token = BigInt(s.token);
  let code;
  switch (s.op) {
    case 'check':
      code = withID(g, id, (p, n) => g.guard_check(p, n, token));
      break;
    case 'check_handle': {
      const h = withID(g, id, (p, n) => g.guard_handle(p, n));
      // Every other check by handle goes through guard_check_batch, as a
      // batch of one record.
      if (h < 0) code = BigInt(h);
      else if (handleCalls++ % 2 === 0) code = g.guard_check_handle(h, token);
      else code = checkBatch1(g, h, token);
      break;
    }
    case 'seed':
      code = withID(g, id, (p, n) => g.guard_seed(p, n, token));
      break;
    case 'high_water':
      code = withID(g, id, (p, n) => g.guard_high_water(p, n));
      break;
    case 'trust': {
      const key = Buffer.from(s.key || '', 'base64');
      code = withID(g, key, (p, n) => g.guard_trust_key(p, n));
      break;
    }
    case 'check_signed': {
      const sig = Buffer.from(s.sig || '', 'base64');
      code = withID(g, id, (p, n) => withID(g, sig, (sp, sn) => g.guard_check_signed(p, n, token, sp, sn)));
      break;
    }
    default:
      throw new Error('unknown op ' + s.op);
  }
  const accepted = (s.op === 'check' || s.op === 'check_handle' || s.op === 'check_signed') && code === 0n;
  const prev = batchPrev !== null ? batchPrev : lastRequired(g);
  batchPrev = null;
  return { code: String(code), prev: String(accepted ? prev : 0n) };
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
