// Copies the Go Redis guard's Lua scripts into dist/redisguard/, where
// src/redis.ts reads them: one source for both guards, byte for byte.
import { cpSync } from 'node:fs';

for (const name of ['write.lua', 'read.lua']) {
  cpSync(new URL(`../../guard/redisguard/${name}`, import.meta.url), new URL(`./dist/redisguard/${name}`, import.meta.url));
}
