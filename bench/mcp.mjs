// mcp.mjs: what an MCP host waits for from `corral mcp` over stdio, through
// the official v1 SDK client (@modelcontextprotocol/sdk, what most hosts
// embed), unmodified:
//
//  1. a trivial step: run_python `1+1`, --calls times in a row on one
//     connection (after --warmup not counted): p50, p90, p99, max;
//  2. start to first result: spawn `corral mcp`, initialize, the first
//     run_python `1+1`, --spawns times one after the other, each closed off
//     the clock.  One spawn first, not counted, so that the user's session
//     host is up and warm, as it is for a host that has run corral before.
//
//   node bench/mcp.mjs [--calls 200] [--warmup 5] [--spawns 10] [--json FILE] [--md FILE]
//
// $CORRAL (default build/corral) is the binary; the SDK comes from
// $CORRAL_MCP_MODULES, else tests/mcp (tests/mcp/setup.sh installs it and
// prints the node to use).  bench/run-all.sh runs it.  Figures, not pass/fail.
import { readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'

const here = dirname(fileURLToPath(import.meta.url))
const root = dirname(here)
const modules = process.env.CORRAL_MCP_MODULES || join(root, 'tests', 'mcp')
const requireFrom = createRequire(join(modules, 'package.json'))
const load = (name) => import(pathToFileURL(requireFrom.resolve(name)).href)
const { Client } = await load('@modelcontextprotocol/sdk/client/index.js')
const { StdioClientTransport } = await load('@modelcontextprotocol/sdk/client/stdio.js')
const sdkVersion = JSON.parse(readFileSync(join(modules, 'node_modules', '@modelcontextprotocol', 'sdk', 'package.json'), 'utf8')).version

const { values: opt } = parseArgs({
  options: {
    calls: { type: 'string', default: '200' },
    warmup: { type: 'string', default: '5' },
    spawns: { type: 'string', default: '10' },
    json: { type: 'string' },
    md: { type: 'string' },
  },
})
const calls = Number(opt.calls)
const warmup = Number(opt.warmup)
const spawns = Number(opt.spawns)
const corral = resolve(process.env.CORRAL || join(root, 'build', 'corral'))

// The transport passes a server only HOME, PATH and a few more: corral's
// own variables (its parts, the session host's directory) are handed on.
const env = {}
for (const [k, v] of Object.entries(process.env)) {
  if (/^(CORRAL_|XDG_)|^[A-Z]+SAN_OPTIONS$|^(LANG|LC_ALL|TMPDIR)$/.test(k)) env[k] = v
}

// p-th percentile by linear interpolation, as bench/benchlib.py's pct().
function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b)
  const k = ((s.length - 1) * p) / 100
  const lo = Math.floor(k)
  const hi = Math.min(lo + 1, s.length - 1)
  return s[lo] + (s[hi] - s[lo]) * (k - lo)
}

// 'release build', 'debug build with address,undefined', ... as benchlib's build_kind().
function buildKind() {
  try {
    const o = Object.fromEntries(JSON.parse(readFileSync(join(dirname(corral), 'meson-info', 'intro-buildoptions.json'), 'utf8'))
      .map((x) => [x.name, x.value]))
    const san = o.b_sanitize ?? 'none'
    return `${o.buildtype ?? '?'} build` + (san !== 'none' && san !== '' ? ` with ${san}` : '')
  } catch {
    return 'build of unknown type'
  }
}

async function connect() {
  const client = new Client({ name: 'corral-bench', version: '0' })
  await client.connect(new StdioClientTransport({ command: corral, args: ['mcp'], env, stderr: 'inherit' }))
  return client
}

async function onePlusOne(client) {
  const r = await client.callTool({ name: 'run_python', arguments: { code: '1+1' } })
  if (r.isError || r.structuredContent?.value !== '2') throw new Error(`run_python 1+1 gave ${JSON.stringify(r)}`)
}

const samples = { call: [], start: [], connect: [], first: [] }

// 1. Steps on one connection.
{
  const client = await connect()
  try {
    for (let i = 0; i < warmup; i++) await onePlusOne(client)
    for (let i = 0; i < calls; i++) {
      const t0 = performance.now()
      await onePlusOne(client)
      samples.call.push(performance.now() - t0)
    }
  } finally {
    await client.close()
  }
}

// 2. Spawn to first result; the first spawn (warming the session host) off the clock.
for (let i = 0; i <= spawns; i++) {
  const t0 = performance.now()
  const client = await connect()
  const t1 = performance.now()
  try {
    await onePlusOne(client)
  } finally {
    const t2 = performance.now()
    if (i > 0) {
      samples.start.push(t2 - t0)
      samples.connect.push(t1 - t0)
      samples.first.push(t2 - t1)
    }
    await client.close()
  }
}

const names = {
  call: "run_python('1+1') on an open connection",
  start: 'spawn to first result',
  connect: '  spawn + initialize',
  first: "  first run_python('1+1')",
}
const counts = { call: calls, start: spawns, connect: spawns, first: spawns }
const summary = {}
for (const k of Object.keys(samples)) {
  const xs = samples[k]
  summary[k] = { n: xs.length, p50: pct(xs, 50), p90: pct(xs, 90), p99: pct(xs, 99), max: Math.max(...xs) }
}

const cmd = `${process.env.CORRAL ? `CORRAL=${process.env.CORRAL} ` : ''}node bench/mcp.mjs ${process.argv.slice(2).join(' ')}`.trim()
const kind = buildKind()
console.log(`corral mcp over stdio, ${corral} (${kind}), @modelcontextprotocol/sdk ${sdkVersion}, Node ${process.version}; ms:`)
console.log(`${'what'.padEnd(42)} ${'n'.padStart(4)} ${['p50', 'p90', 'p99', 'max'].map((h) => h.padStart(8)).join(' ')}`)
for (const k of Object.keys(samples)) {
  const row = ['p50', 'p90', 'p99', 'max'].map((p) => summary[k][p].toFixed(1).padStart(8))
  console.log(`${names[k].padEnd(42)} ${String(counts[k]).padStart(4)} ${row.join(' ')}`)
}

if (opt.md) {
  const f = (x) => x.toFixed(1)
  const rows = Object.keys(samples).map((k) => {
    const s = summary[k]
    return `| ${names[k].trim()} | ${counts[k]} | ${f(s.p50)} | ${f(s.p90)} | ${f(s.p99)} | ${f(s.max)} |`
  })
  writeFileSync(opt.md, [
    `\`${cmd}\`: \`corral mcp\` over stdio driven by the official MCP SDK (\`@modelcontextprotocol/sdk\` ${sdkVersion},`,
    `Node ${process.version}); corral: ${kind}. A trivial \`run_python\` (\`1+1\`) ${calls} times on one connection`,
    `(after ${warmup} not counted), then ${spawns} times: spawn \`corral mcp\`, initialize and the first \`run_python\``,
    '(the user\'s session host already up and warm: one spawn before, not counted). Times in ms, as the client sees them.',
    '',
    '| what | n | p50 | p90 | p99 | max |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
    '',
  ].join('\n'))
}
if (opt.json) {
  writeFileSync(opt.json, JSON.stringify({
    command: cmd, corral, build: kind, sdk: sdkVersion, node: process.version,
    calls, warmup, spawns, names, summary, samples_ms: samples,
  }, null, 1) + '\n')
  console.log(`wrote ${opt.json}`)
}
