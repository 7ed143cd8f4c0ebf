// e2b.mjs: what an E2B user waits for, through the official SDK
// (@e2b/code-interpreter from npm, unmodified): Sandbox.create() and then
// the first runCode('1+1'), --rounds times one after the other.  Each
// sandbox is killed off the clock.  Prints p50/p90/p99/max in ms of the
// create, the first runCode and both; --json FILE keeps every sample.
//
//   E2B_API_KEY=<token> E2B_API_URL=http://127.0.0.1:PORT E2B_SANDBOX_URL=http://127.0.0.1:PORT \
//     node bench/e2b.mjs [--rounds 100] [--warmup 2] [--json FILE]
//
// bench/e2b.py starts the server and runs this.  The SDK comes from
// $CORRAL_E2B_MODULES, else tests/e2b (tests/e2b/setup.sh installs it).
// Figures, not pass/fail.
import { writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'

const here = dirname(fileURLToPath(import.meta.url))
const sdkDir = process.env.CORRAL_E2B_MODULES || join(here, '..', 'tests', 'e2b')
const sdkEntry = createRequire(join(sdkDir, 'package.json')).resolve('@e2b/code-interpreter')
const { Sandbox } = await import(pathToFileURL(sdkEntry).href)

const { values: opt } = parseArgs({
  options: {
    rounds: { type: 'string', default: '100' },
    warmup: { type: 'string', default: '2' },
    json: { type: 'string' },
  },
})
const rounds = Number(opt.rounds)
const warmup = Number(opt.warmup)

// p-th percentile by linear interpolation, as bench/benchlib.py's pct().
function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b)
  const k = ((s.length - 1) * p) / 100
  const lo = Math.floor(k)
  const hi = Math.min(lo + 1, s.length - 1)
  return s[lo] + (s[hi] - s[lo]) * (k - lo)
}

async function round() {
  const t0 = performance.now()
  const sbx = await Sandbox.create()
  const t1 = performance.now()
  let e, t2
  try {
    e = await sbx.runCode('1+1')
    t2 = performance.now()
  } finally {
    await sbx.kill()
  }
  if (e.text !== '2') throw new Error(`runCode('1+1') gave ${JSON.stringify(e.toJSON?.() ?? e)}`)
  return { create: t1 - t0, first: t2 - t1, total: t2 - t0 }
}

// The first sandboxes pay for the server's zygote and the SDK's modules.
for (let i = 0; i < warmup; i++) await round()
const samples = { create: [], first: [], total: [] }
for (let i = 0; i < rounds; i++) {
  const r = await round()
  for (const k of Object.keys(samples)) samples[k].push(r[k])
}

const names = { total: 'create + first runCode', create: 'Sandbox.create()', first: "first runCode('1+1')" }
const summary = {}
console.log(`${rounds} rounds (after ${warmup} not counted), ms:`)
console.log(`${'what'.padEnd(24)} ${['p50', 'p90', 'p99', 'max'].map((h) => h.padStart(8)).join(' ')}`)
for (const k of ['total', 'create', 'first']) {
  const xs = samples[k]
  summary[k] = { p50: pct(xs, 50), p90: pct(xs, 90), p99: pct(xs, 99), max: Math.max(...xs) }
  const row = ['p50', 'p90', 'p99', 'max'].map((p) => summary[k][p].toFixed(1).padStart(8))
  console.log(`${names[k].padEnd(24)} ${row.join(' ')}`)
}
if (opt.json) {
  writeFileSync(opt.json, JSON.stringify({ rounds, warmup, node: process.version, names, summary, samples_ms: samples }, null, 1) + '\n')
}
