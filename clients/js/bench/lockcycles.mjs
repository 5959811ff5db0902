// Lock cycles per second from concurrent async holders, over HTTP and over
// the RPC stream: the Node client's side of fenceload's "grant" mix. Each
// cycle is tryAcquire (a fixed lease, no watchdog) then release, on a
// resource picked at random; a resource another holder has is counted as
// busy, not as a cycle. Not part of the test run.
//
//   node bench/lockcycles.mjs --url http://127.0.0.1:8080 [--key SECRET]
//        [--holders 64] [--resources 1024] [--duration 5] [--transport http,rpc]
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { Client } from '../dist/index.js';

const { values: o } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://127.0.0.1:8080' },
    key: { type: 'string', default: process.env.FENCEVIEW_KEY },
    holders: { type: 'string', default: '64' },
    resources: { type: 'string', default: '1024' },
    duration: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '1' },
    transport: { type: 'string', default: 'http,rpc' },
  },
});
const holders = Number(o.holders);
const run = randomBytes(4).toString('hex');
const names = Array.from({ length: Number(o.resources) }, (_, i) => `bench-${run}-${i}`);

async function measure(transport) {
  const c = new Client(o.url, o.key === undefined ? { rpc: transport === 'rpc' } : { key: o.key, rpc: transport === 'rpc' });
  let counting = false;
  let stop = false;
  let cycles = 0;
  let busy = 0;
  const lastToken = new Map();
  const latencies = [];
  async function holder(h) {
    const locks = new Map();
    while (!stop) {
      const r = names[Math.floor(Math.random() * names.length)];
      let lock = locks.get(r);
      if (lock === undefined) locks.set(r, (lock = c.lock(r, { holder: `h${h}`, leaseMs: 10_000 })));
      const t0 = performance.now();
      const token = await lock.tryAcquire({ watchdog: false });
      if (token === null) {
        if (counting) busy++;
        continue;
      }
      // Tokens of one resource only ever rise: checked, as fenceload does.
      if (token <= (lastToken.get(r) ?? 0n)) throw new Error(`token ${token} for ${r} after ${lastToken.get(r)}`);
      lastToken.set(r, token);
      await lock.release();
      if (counting) {
        cycles++;
        latencies.push(performance.now() - t0);
      }
    }
  }
  const all = Array.from({ length: holders }, (_, h) => holder(h));
  await new Promise((r) => setTimeout(r, Number(o.warmup) * 1000));
  counting = true;
  const start = performance.now();
  const cpu0 = process.cpuUsage();
  await new Promise((r) => setTimeout(r, Number(o.duration) * 1000));
  counting = false;
  const secs = (performance.now() - start) / 1000;
  const cpu = process.cpuUsage(cpu0);
  stop = true;
  await Promise.all(all);
  c.close();
  latencies.sort((a, b) => a - b);
  const q = (p) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]?.toFixed(2);
  return {
    transport,
    holders,
    cyclesPerSec: Math.round(cycles / secs),
    busyPerSec: Math.round(busy / secs),
    p50ms: q(0.5),
    p99ms: q(0.99),
    clientCpuUsPerCycle: Math.round((cpu.user + cpu.system) / Math.max(cycles, 1)),
  };
}

for (const t of o.transport.split(',')) console.log(JSON.stringify(await measure(t)));
