// After tsc: copies the Go Redis guard's Lua scripts into dist/redisguard/,
// where src/redis.ts reads them (one source for both guards, byte for
// byte), and writes dist/index.cjs, the CommonJS entry.
import { cpSync, writeFileSync } from 'node:fs';

for (const name of ['write.lua', 'read.lua']) {
  cpSync(new URL(`../../guard/redisguard/${name}`, import.meta.url), new URL(`./dist/redisguard/${name}`, import.meta.url));
}

// require('fenceview') loads the ES module itself (require(esm), Node 20.19
// and later): one copy of the package for both forms, so a Client made by
// one and an error class checked by the other are the same.
writeFileSync(
  new URL('./dist/index.cjs', import.meta.url),
  "'use strict';\n// The CommonJS entry of fenceview: the ES module, through require(esm).\nmodule.exports = require('./index.js');\n",
);
