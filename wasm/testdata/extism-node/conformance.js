// Runs the conformance table's calls (calls.json, made by go test) on
// guard-extism.wasm in the Extism JavaScript SDK and prints, per case, each
// call's output text or error message as JSON. go test turns them into the
// table's codes. It is also a complete Extism host of the guard: see
// docs/wasm-abi.md.
'use strict';
const fs = require('node:fs');
const createPlugin = require('@extism/extism');

const [wasmPath, callsPath] = process.argv.slice(2);
const cases = JSON.parse(fs.readFileSync(callsPath, 'utf8'));

async function main() {
  const wasm = fs.readFileSync(wasmPath);
  const out = {};
  for (const c of cases) {
    // A fresh plugin per case: no marks, no trusted keys.
    const plugin = await createPlugin({ wasm: [{ data: wasm }] }, { useWasi: true });
    try {
      const answers = [];
      for (const call of c.calls) {
        try {
          // A copy that owns its ArrayBuffer: this SDK version reads a Buffer
          // from its pool's start, ignoring its byteOffset.
          const res = await plugin.call(call.fn, new Uint8Array(Buffer.from(call.input, 'base64')));
          answers.push({ ok: res === null ? '' : res.text() });
        } catch (err) {
          answers.push({ err: String(err && err.message ? err.message : err) });
        }
      }
      out[c.name] = answers;
    } finally {
      await plugin.close();
    }
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
