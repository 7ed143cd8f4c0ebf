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
// --transport http: the same over Streamable HTTP against the /mcp of a
// `corral serve` started once (127.0.0.1, a port of its own); 2. is then a
// new session (initialize) to its first result, each session ended with
// DELETE off the clock.
//
//   node bench/mcp.mjs [--transport stdio|http] [--calls 200] [--warmup 5] [--spawns 10] [--json FILE] [--md FILE]
//
// $CORRAL (default build/corral) is the binary; the SDK comes from
// $CORRAL_MCP_MODULES, else tests/mcp (tests/mcp/setup.sh installs it and
// prints the node to use).  bench/run-all.sh runs it.  Figures, not pass/fail.
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
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
const { StreamableHTTPClientTransport } = await load('@modelcontextprotocol/sdk/client/streamableHttp.js')
const sdkVersion = JSON.parse(readFileSync(join(modules, 'node_modules', '@modelcontextprotocol', 'sdk', 'package.json'), 'utf8')).version

const { values: opt } = parseArgs({
  options: {
    transport: { type: 'string', default: 'stdio' },
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
const http = opt.transport === 'http'
if (!http && opt.transport !== 'stdio') throw new Error(`--transport: stdio or http, not '${opt.transport}'`)

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

// --transport http: one `corral serve`, its token made in a directory of ours.
let server = null
if (http) {
  const dir = mkdtempSync(join(tmpdir(), 'corral-bench-mcp-'))
  const proc = spawn(corral, ['serve', '--listen', '127.0.0.1:0', '--data', dir],
    { env: { ...env, PATH: process.env.PATH, HOME: process.env.HOME || '/' }, stdio: ['ignore', 'pipe', 'inherit'] })
  const line = await new Promise((ok, fail) => {
    let buf = ''
    proc.stdout.setEncoding('utf8')
    proc.stdout.on('data', (c) => { buf += c; if (buf.includes('\n')) ok(buf.split('\n')[0]) })
    proc.on('exit', (code) => fail(new Error(`corral serve exited ${code} before its URL`)))
  })
  const token = readFileSync(join(dir, 'token'), 'utf8').trim()
  server = { proc, dir, url: new URL('/mcp', line.trim()), headers: { Authorization: `Bearer ${token}` } }
}

async function connect() {
  const client = new Client({ name: 'corral-bench', version: '0' })
  const transport = http
    ? new StreamableHTTPClientTransport(server.url, { requestInit: { headers: server.headers } })
    : new StdioClientTransport({ command: corral, args: ['mcp'], env, stderr: 'inherit' })
  await client.connect(transport)
  if (http) {
    // close() leaves an HTTP session to its idle expiry: end it.
    const close = client.close.bind(client)
    client.close = async () => { await transport.terminateSession(); await close() }
  }
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

const names = http ? {
  call: "run_python('1+1') in an open session",
  start: 'new session to first result',
  connect: '  initialize',
  first: "  first run_python('1+1')",
} : {
  call: "run_python('1+1') on an open connection",
  start: 'spawn to first result',
  connect: '  spawn + initialize',
  first: "  first run_python('1+1')",
}
if (server) {
  server.proc.kill('SIGTERM')
  await new Promise((ok) => server.proc.on('exit', ok))
  rmSync(server.dir, { recursive: true, force: true })
}
const counts = { call: calls, start: spawns, connect: spawns, first: spawns }
const summary = {}
for (const k of Object.keys(samples)) {
  const xs = samples[k]
  summary[k] = { n: xs.length, p50: pct(xs, 50), p90: pct(xs, 90), p99: pct(xs, 99), max: Math.max(...xs) }
}

const cmd = `${process.env.CORRAL ? `CORRAL=${process.env.CORRAL} ` : ''}node bench/mcp.mjs ${process.argv.slice(2).join(' ')}`.trim()
const kind = buildKind()
const over = http ? 'corral serve\'s /mcp over Streamable HTTP' : 'corral mcp over stdio'
console.log(`${over}, ${corral} (${kind}), @modelcontextprotocol/sdk ${sdkVersion}, Node ${process.version}; ms:`)
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
    ...(http ? [
      `\`${cmd}\`: \`corral serve\`'s \`/mcp\` over Streamable HTTP driven by the official MCP SDK`,
      `(\`@modelcontextprotocol/sdk\` ${sdkVersion}, Node ${process.version}); corral: ${kind}. A trivial \`run_python\``,
      `(\`1+1\`) ${calls} times in one session (after ${warmup} not counted), then ${spawns} times: a new session`,
      '(initialize) and its first `run_python`, on a server started once (one session before, not counted). Times in',
      'ms, as the client sees them.',
    ] : [
      `\`${cmd}\`: \`corral mcp\` over stdio driven by the official MCP SDK (\`@modelcontextprotocol/sdk\` ${sdkVersion},`,
      `Node ${process.version}); corral: ${kind}. A trivial \`run_python\` (\`1+1\`) ${calls} times on one connection`,
      `(after ${warmup} not counted), then ${spawns} times: spawn \`corral mcp\`, initialize and the first \`run_python\``,
      '(the user\'s session host already up and warm: one spawn before, not counted). Times in ms, as the client sees them.',
    ]),
    '',
    '| what | n | p50 | p90 | p99 | max |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
    '',
  ].join('\n'))
}
if (opt.json) {
  writeFileSync(opt.json, JSON.stringify({
    command: cmd, transport: opt.transport, corral, build: kind, sdk: sdkVersion, node: process.version,
    calls, warmup, spawns, names, summary, samples_ms: samples,
  }, null, 1) + '\n')
  console.log(`wrote ${opt.json}`)
}
