// Times signed checks of guard.wasm on Node's node:wasi for BenchmarkCheckSigned:
//   node bench-signed.js guard.wasm input.json
// input.json: {"mode": "verify" | "cached", "n": N, "key": hex, "id": string,
// "sigs": [hex, ...]} (sigs[i] signs token i+1). "verify" checks tokens 1..64
// in turn, a fresh instance each round (tokens only grow), so each check is a
// first verification; "cached" checks token 1 over and over. Prints
// {"cpuNs": ..., "wallNs": ...}: the checks alone, instantiation left out.
'use strict';
const fs = require('node:fs');
const { WASI } = require('node:wasi');

const [wasmPath, inputPath] = process.argv.slice(2);
const input = JSON.parse(fs.readFileSync(inputPath, 'utf8'));

function put(g, bytes) {
  const ptr = g.guard_alloc(bytes.length) >>> 0;
  if (ptr === 0) throw new Error('guard_alloc failed');
  new Uint8Array(g.memory.buffer, ptr, bytes.length).set(bytes);
  return ptr;
}

async function main() {
  const module = await WebAssembly.compile(fs.readFileSync(wasmPath));
  const id = Buffer.from(input.id, 'utf8');
  const sigs = input.sigs.map((h) => Buffer.from(h, 'hex'));
  let g, idPtr, sigPtrs;
  const fresh = async () => {
    const wasi = new WASI({ version: 'preview1', args: [], env: {} });
    const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
    wasi.initialize(instance);
    g = instance.exports;
    const key = put(g, Buffer.from(input.key, 'hex'));
    if (g.guard_trust_key(key, 32) !== 0n) throw new Error('guard_trust_key failed');
    idPtr = put(g, id);
    sigPtrs = sigs.map((s) => put(g, s));
  };
  let cpu = 0, wall = 0n;
  for (let done = 0; done < input.n;) {
    await fresh();
    const round = input.mode === 'cached' ? input.n : Math.min(sigs.length, input.n - done);
    const c0 = process.cpuUsage(), w0 = process.hrtime.bigint();
    for (let i = 0; i < round; i++) {
      const k = input.mode === 'cached' ? 0 : i;
      const code = g.guard_check_signed(idPtr, id.length, BigInt(k + 1), sigPtrs[k], 64);
      if (code !== 0n) throw new Error('token ' + (k + 1) + ': code ' + code);
    }
    const c = process.cpuUsage(c0);
    wall += process.hrtime.bigint() - w0;
    cpu += (c.user + c.system) * 1000;
    done += round;
  }
  process.stdout.write(JSON.stringify({ cpuNs: cpu, wallNs: Number(wall) }));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
