// client.test.mjs: `corral mcp` driven by the official MCP clients from npm,
// unmodified (the v1 SDK most hosts embed, the v2 client in its legacy and
// auto modes, the Inspector's CLI), and by a raw newline-JSON client for
// what the SDKs hide: the probe before initialize, parse errors, version
// echoes, stdout holding nothing but protocol, and the exit on stdin's end.
// Then the same clients over Streamable HTTP, against the /mcp of a
// `corral serve` this file starts (127.0.0.1, a port and a token of its
// own); tests/e2e/test_mcp_http.py has the transport's edges.
//
// Run by tests/e2e/test_mcp.py.  By hand:
//   out=$(tests/mcp/setup.sh); node=$(echo "$out" | head -1)
//   CORRAL=build/corral CORRAL_MCP_MODULES=$(echo "$out" | tail -1) $node --test tests/mcp/client.test.mjs
// The stdio transports pass a server only HOME, PATH and a few more, so the
// CORRAL_*, XDG_* and sanitizer variables of this process are handed on
// explicitly (serverEnv).  CORRAL_MCP_ARGS adds arguments after `mcp`.
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'

const here = dirname(fileURLToPath(import.meta.url))
// The clients are imported by path: a read-only copy of the tree has its
// node_modules elsewhere (setup.sh), out of reach of a bare import.
const modules = process.env.CORRAL_MCP_MODULES || here
const requireFrom = createRequire(join(modules, 'package.json'))
const load = (name) => import(pathToFileURL(requireFrom.resolve(name)).href)
const { Client: Client1 } = await load('@modelcontextprotocol/sdk/client/index.js')
const { StdioClientTransport: Stdio1 } = await load('@modelcontextprotocol/sdk/client/stdio.js')
const { Client: Client2 } = await load('@modelcontextprotocol/client')
const { StdioClientTransport: Stdio2 } = await load('@modelcontextprotocol/client/stdio')
const { StreamableHTTPClientTransport: Http1 } = await load('@modelcontextprotocol/sdk/client/streamableHttp.js')
const { StreamableHTTPClientTransport: Http2 } = await load('@modelcontextprotocol/client')
const inspector = join(dirname(requireFrom.resolve('@modelcontextprotocol/inspector/package.json')),
  'clients', 'launcher', 'build', 'index.js')

const CORRAL = process.env.CORRAL
if (!CORRAL) throw new Error(`CORRAL is not set: see the top of ${fileURLToPath(import.meta.url)}`)
const ARGS = ['mcp', ...(process.env.CORRAL_MCP_ARGS || '').split(/\s+/).filter(Boolean)]
const LATEST = '2025-11-25'
const TOOLS = ['list_files', 'read_file', 'reset_session', 'run_python', 'run_shell', 'write_file']
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

// Marks every server this file starts, and nothing else: the session host
// (the only process allowed to outlive a server) keeps an allowlist of the
// environment, so it never carries the tag (src/session/client.c).
const TAG = randomBytes(8).toString('hex')

function serverEnv() {
  const env = { MCP_TEST_TAG: TAG }
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(CORRAL_|XDG_)|^[A-Z]+SAN_OPTIONS$|^(LANG|LC_ALL|TMPDIR)$/.test(k)) env[k] = v
  }
  return env
}

const serverParams = () => ({ command: CORRAL, args: ARGS, env: serverEnv() })

// The text of a tool result's text blocks, joined.
const textOf = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n')

// Processes carrying this file's tag: servers (and whatever they forked)
// still alive.
function tagged() {
  const found = []
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(`MCP_TEST_TAG=${TAG}`)) {
        found.push(`${pid} ${readFileSync(`/proc/${pid}/cmdline`, 'latin1').replaceAll('\0', ' ').trim()}`)
      }
    } catch {} // gone, or not ours to read
  }
  return found
}

// pid and every process below it, from /proc's parent links.
function descendants(root) {
  const parent = new Map()
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
      parent.set(Number(pid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]))
    } catch {}
  }
  const out = [root]
  for (let grew = true; grew;) {
    grew = false
    for (const [pid, ppid] of parent) {
      if (out.includes(ppid) && !out.includes(pid)) { out.push(pid); grew = true }
    }
  }
  return out
}

const alive = (pids) => pids.filter((p) => existsSync(`/proc/${p}`) &&
  !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${p}/stat`, 'latin1')))

async function until(what, ok, ms) {
  const end = Date.now() + ms
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await sleep(50)
  }
}

// `corral mcp` with our own newline-JSON reader and writer.  Every line on
// its stdout is kept; one that is not a JSON-RPC 2.0 object goes to junk.
class RawServer {
  constructor(extraArgs = []) {
    this.proc = spawn(CORRAL, [...ARGS, ...extraArgs], { env: serverEnv(), stdio: ['pipe', 'pipe', 'inherit'] })
    this.messages = []
    this.junk = []
    this.waiters = []
    this.nextId = 1
    this.exited = new Promise((resolve) => this.proc.on('exit', (code, signal) => resolve({ code, signal })))
    let buf = ''
    this.proc.stdout.setEncoding('utf8')
    this.proc.stdout.on('data', (chunk) => {
      buf += chunk
      for (let nl; (nl = buf.indexOf('\n')) >= 0;) {
        const line = buf.slice(0, nl)
        buf = buf.slice(nl + 1)
        let msg
        try { msg = JSON.parse(line) } catch {}
        if (msg && typeof msg === 'object' && !Array.isArray(msg) && msg.jsonrpc === '2.0') this.messages.push(msg)
        else this.junk.push(line)
        this.waiters = this.waiters.filter((w) => !w())
      }
    })
    this.proc.stdout.on('end', () => { if (buf) this.junk.push(buf) })
  }

  send(msg) { this.proc.stdin.write((typeof msg === 'string' ? msg : JSON.stringify(msg)) + '\n') }

  // The first message matching pred, waiting up to ms for it.
  wait(pred, ms = 10000, what = 'a message') {
    return new Promise((resolve, reject) => {
      const check = () => {
        const m = this.messages.find(pred)
        if (m) { clearTimeout(timer); resolve(m) }
        return Boolean(m)
      }
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== check)
        reject(new Error(`no ${what} within ${ms} ms; stdout so far: ${JSON.stringify(this.messages)} ${JSON.stringify(this.junk)}`))
      }, ms)
      if (!check()) this.waiters.push(check)
    })
  }

  // A request and its response (result or error).
  request(method, params, ms = 10000) {
    const id = this.nextId++
    this.send({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) })
    return this.wait((m) => m.id === id && !('method' in m), ms, `response to ${method} (id ${id})`)
  }

  async initialize(protocolVersion = LATEST) {
    const r = await this.request('initialize', {
      protocolVersion, capabilities: {}, clientInfo: { name: 'corral-raw-test', version: '0' },
    })
    assert.ok(r.result, `initialize failed: ${JSON.stringify(r)}`)
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' })
    return r.result
  }

  async close(ms = 5000) {
    this.proc.stdin.end()
    const t = setTimeout(() => this.proc.kill('SIGKILL'), ms)
    const r = await this.exited
    clearTimeout(t)
    return r
  }
}

after(async () => {
  // Each client closed its server; a server must be gone soon after, with
  // whatever it forked (v2's auto mode also kills a probe sibling).
  await until('every corral mcp started here to end', () => tagged().length === 0, 5000)
    .catch(() => assert.fail(`left running: ${tagged().join('; ')}`))
})

describe('v1 SDK client (@modelcontextprotocol/sdk 1.32)', () => {
  let client
  let negotiated
  const clientErrors = []

  before(async () => {
    const transport = new Stdio1(serverParams())
    // The client hands the negotiated version to transports that want it.
    transport.setProtocolVersion = (v) => { negotiated = v }
    client = new Client1({ name: 'corral-tests', version: '0' })
    // A response for an id the client no longer waits for (a cancelled
    // call answered anyway) is reported here.
    client.onerror = (e) => clientErrors.push(e)
    await client.connect(transport)
  })
  after(() => client?.close())

  const call = (name, args, opts) => client.callTool({ name, arguments: args }, undefined, opts)
  const py = (code) => call('run_python', { code })

  it('initializes: server info, protocol 2025-11-25, tools capability', () => {
    assert.equal(negotiated, LATEST)
    const info = client.getServerVersion()
    assert.match(info?.name ?? '', /corral/)
    assert.equal(typeof info.version, 'string')
    assert.ok(client.getServerCapabilities()?.tools, 'no tools capability')
  })

  it('lists the six tools, each with an object inputSchema', async () => {
    const { tools } = await client.listTools()
    assert.deepEqual(tools.map((t) => t.name).sort(), TOOLS)
    for (const t of tools) assert.equal(t.inputSchema?.type, 'object', t.name)
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]))
    assert.deepEqual(byName.run_python.inputSchema.required, ['code'])
    assert.equal(byName.run_python.inputSchema.properties.code.type, 'string')
    for (const n of ['run_python', 'run_shell']) assert.equal(byName[n].outputSchema?.type, 'object', n)
  })

  it('run_python keeps state between calls', async () => {
    const a = await py('x = 6')
    assert.ok(!a.isError, textOf(a))
    const b = await py('x * 7')
    assert.ok(!b.isError, textOf(b))
    assert.match(textOf(b), /42/)
    const s = b.structuredContent
    assert.equal(s.status, 'ok')
    assert.equal(s.exit_code, 0)
    assert.equal(s.value, '42')
    assert.equal(s.error, null)
    assert.equal(s.figures, 0)
  })

  it('run_python returns stdout and stderr', async () => {
    const r = await py("import sys\nprint('to stdout')\nprint('to stderr', file=sys.stderr)")
    assert.ok(!r.isError, textOf(r))
    assert.equal(r.structuredContent.stdout, 'to stdout\n')
    assert.equal(r.structuredContent.stderr, 'to stderr\n')
    assert.equal(r.structuredContent.value, null)
    assert.match(textOf(r), /to stdout/)
  })

  it('an open matplotlib figure comes back as a PNG image block', async () => {
    const r = await py('import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title("corral")')
    assert.ok(!r.isError, textOf(r))
    assert.equal(r.content[0].type, 'text', 'the text block comes first')
    const images = r.content.filter((c) => c.type === 'image')
    assert.equal(images.length, 1, JSON.stringify(r.content.map((c) => c.type)))
    assert.equal(images[0].mimeType, 'image/png')
    const png = Buffer.from(images[0].data, 'base64')
    assert.ok(png.length > 1000, `${png.length} bytes`)
    assert.deepEqual(png.subarray(0, 8), PNG)
    assert.equal(r.structuredContent.figures, 1)
  })

  it('1/0 is a tool error naming ZeroDivisionError', async () => {
    const r = await py('1/0')
    assert.equal(r.isError, true)
    assert.match(textOf(r), /ZeroDivisionError/)
    const s = r.structuredContent
    assert.equal(s.status, 'error')
    assert.equal(s.error?.name, 'ZeroDivisionError')
    assert.match(s.error.traceback ?? '', /ZeroDivisionError/)
  })

  it('run_shell: output and a non-zero exit as a tool error', async () => {
    const ok = await call('run_shell', { command: 'echo "$((6 * 7))"' })
    assert.ok(!ok.isError, textOf(ok))
    assert.equal(ok.structuredContent.stdout, '42\n')
    assert.equal(ok.structuredContent.exit_code, 0)
    const bad = await call('run_shell', { command: 'echo out; echo err >&2; exit 3' })
    assert.equal(bad.isError, true, textOf(bad))
    assert.equal(bad.structuredContent.exit_code, 3)
    assert.equal(bad.structuredContent.stdout, 'out\n')
    assert.match(bad.structuredContent.stderr, /err/)
  })

  it('write_file, then read_file, run_python and run_shell see the file', async () => {
    const w = await call('write_file', { path: 'notes/hello.txt', content: 'hello from MCP\nsecond line\n' })
    assert.ok(!w.isError, textOf(w))
    assert.match(textOf(w), /hello\.txt/)
    for (const path of ['notes/hello.txt', '/workspace/notes/hello.txt']) {
      const r = await call('read_file', { path })
      assert.ok(!r.isError, textOf(r))
      assert.match(textOf(r), /hello from MCP\nsecond line/)
    }
    const p = await py("open('/workspace/notes/hello.txt').read().splitlines()[1]")
    assert.equal(p.structuredContent.value, "'second line'")
    const s = await call('run_shell', { command: 'wc -l < /workspace/notes/hello.txt' })
    assert.equal(s.structuredContent.stdout.trim(), '2')
  })

  it('read_file of a missing file is a tool error', async () => {
    const r = await call('read_file', { path: 'no/such/file.txt' })
    assert.equal(r.isError, true, textOf(r))
  })

  it('read_file of a PNG gives an image block', async () => {
    const w = await py("import matplotlib.pyplot as plt\nplt.figure(); plt.plot([1, 2]); plt.savefig('/workspace/plot.png'); plt.close('all')")
    assert.ok(!w.isError, textOf(w))
    const r = await call('read_file', { path: 'plot.png' })
    const img = r.content.find((c) => c.type === 'image')
    assert.ok(img, `no image block: ${textOf(r)}`)
    assert.equal(img.mimeType, 'image/png')
    assert.deepEqual(Buffer.from(img.data, 'base64').subarray(0, 8), PNG)
  })

  it('list_files shows what was written', async () => {
    const all = await call('list_files', {})
    assert.ok(!all.isError, textOf(all))
    assert.match(textOf(all), /notes/)
    assert.match(textOf(all), /plot\.png/)
    const sub = await call('list_files', { path: 'notes' })
    assert.match(textOf(sub), /hello\.txt/)
  })

  it('reset_session starts a fresh interpreter; files stay', async () => {
    assert.equal((await py('x')).structuredContent.value, '6')
    const r = await call('reset_session', {})
    assert.ok(!r.isError, textOf(r))
    const gone = await py('x')
    assert.equal(gone.isError, true)
    assert.match(textOf(gone), /NameError/)
    const file = await py("open('/workspace/notes/hello.txt').read().split()[0]")
    assert.equal(file.structuredContent.value, "'hello'")
  })

  it('a cancelled step stops; the session and its state live on', async () => {
    await py('kept = 1234')
    const ac = new AbortController()
    setTimeout(() => ac.abort(), 1000)
    const t0 = Date.now()
    await assert.rejects(call('run_python', { code: 'import time; time.sleep(60)' }, { signal: ac.signal }))
    assert.ok(Date.now() - t0 < 5000, `the call took ${Date.now() - t0} ms to reject`)
    // The client rejects at once by itself; the server must have stopped
    // the step for the next call to be answered at once.
    const t1 = Date.now()
    const r = await py('kept + 1')
    const took = Date.now() - t1
    assert.ok(!r.isError, textOf(r))
    assert.equal(r.structuredContent.value, '1235')
    assert.ok(took < 5000, `the next call took ${took} ms: the cancelled step went on running`)
    // No response may come for the cancelled id.
    await sleep(300)
    assert.deepEqual(clientErrors.map(String), [])
  })

  it('a long step sends progress notifications when asked', async () => {
    const progress = []
    const r = await call('run_python', { code: 'import time; time.sleep(6.5); 7' },
      { onprogress: (p) => progress.push(p) })
    assert.equal(r.structuredContent.value, '7')
    assert.ok(progress.length >= 1, 'no notifications/progress during a 6.5 s step')
    assert.equal(typeof progress[0].progress, 'number')
  })

  it('a call may set a timeout shorter than the step', async () => {
    const t0 = Date.now()
    const r = await call('run_python', { code: 'import time; time.sleep(30)', timeout: 1 })
    assert.ok(Date.now() - t0 < 10000, `took ${Date.now() - t0} ms`)
    assert.equal(r.isError, true)
    assert.equal(r.structuredContent.status, 'timeout')
  })

  it('an unknown tool, or bad arguments, is JSON-RPC error -32602', async () => {
    await assert.rejects(call('no_such_tool', {}), (e) => e.code === -32602)
    await assert.rejects(call('run_python', {}), (e) => e.code === -32602)
    await assert.rejects(call('run_python', { code: 42 }), (e) => e.code === -32602)
    const r = await py('1 + 1') // still serving
    assert.equal(r.structuredContent.value, '2')
  })

  it('ping', async () => {
    assert.deepEqual(await client.ping(), {})
  })

  it('nothing came for an id or progress token no longer awaited', async () => {
    // A progress notification after its result would land here too.
    await sleep(200)
    assert.deepEqual(clientErrors.map(String), [])
  })

  it('close() is quick: the server exits on stdin\'s end and holds no pipe open', async () => {
    // The transport waits up to 2 s for the child's exit and its pipes'
    // end (a daemon left holding stdout keeps them open), then SIGTERMs.
    const t0 = Date.now()
    await client.close()
    client = null
    assert.ok(Date.now() - t0 < 1500, `close() took ${Date.now() - t0} ms`)
  })
})

for (const mode of ['legacy', 'auto']) {
  describe(`v2 client (@modelcontextprotocol/client 2.4) in ${mode} mode`, () => {
    let client
    before(async () => {
      client = new Client2({ name: 'corral-tests', version: '0' }, { versionNegotiation: { mode } })
      // auto probes with server/discover from a sibling process first.
      await client.connect(new Stdio2(serverParams()))
    })
    after(() => client?.close())

    it('negotiates 2025-11-25', () => {
      assert.equal(client.getNegotiatedProtocolVersion(), LATEST)
      assert.match(client.getServerVersion()?.name ?? '', /corral/)
    })

    it('lists the tools and runs Python', async () => {
      const { tools } = await client.listTools()
      assert.deepEqual(tools.map((t) => t.name).sort(), TOOLS)
      const r = await client.callTool({ name: 'run_python', arguments: { code: '6 * 7' } })
      assert.ok(!r.isError, textOf(r))
      assert.equal(r.structuredContent.value, '42')
    })

    if (mode === 'legacy') {
      // The v2 transport closes the connection when over 10 MB arrive
      // without a newline (STDIO_DEFAULT_MAX_BUFFER_SIZE): output is cut.
      it('a 12 MB print comes back cut short, the connection alive', async () => {
        const r = await client.callTool({ name: 'run_python', arguments: { code: "print('y' * 12_000_000); len('z' * 12_000_000)" } })
        assert.ok(JSON.stringify(r).length < 10_000_000, `a result of ${JSON.stringify(r).length} bytes`)
        assert.equal(r.structuredContent.value, '12000000')
        const again = await client.callTool({ name: 'run_python', arguments: { code: '1 + 1' } })
        assert.equal(again.structuredContent.value, '2')
      })
    }
  })
}

describe('raw protocol (newline-delimited JSON-RPC)', () => {
  it('server/discover before initialize: -32601 at once, then initialize on the same process', async () => {
    const s = new RawServer()
    try {
      const t0 = Date.now()
      s.send({ jsonrpc: '2.0', id: 'server-discover-probe-1', method: 'server/discover',
        params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } })
      const r = await s.wait((m) => m.id === 'server-discover-probe-1', 10000, 'the answer to server/discover')
      // Probing clients give up after about 0.6 s (GitHub Copilot CLI).
      assert.ok(Date.now() - t0 < 1500, `server/discover answered after ${Date.now() - t0} ms`)
      assert.equal(r.error?.code, -32601, JSON.stringify(r))
      assert.equal(s.proc.exitCode, null, 'the probe ended the server')
      const init = await s.initialize(LATEST)
      assert.equal(init.protocolVersion, LATEST)
      assert.ok(init.capabilities?.tools, JSON.stringify(init))
      assert.match(init.serverInfo?.name ?? '', /corral/)
      const list = await s.request('tools/list', {})
      assert.equal(list.result?.tools?.length, TOOLS.length, JSON.stringify(list))
      assert.deepEqual(s.junk, [])
    } finally {
      await s.close()
    }
  })

  it('parse errors, unknown methods, notifications, ping; nothing but JSON-RPC on stdout', async () => {
    const s = new RawServer()
    try {
      await s.initialize()
      s.send('{"jsonrpc": "2.0", "id": 99, "method": ')
      const parse = await s.wait((m) => m.error?.code === -32700, 10000, 'a parse error')
      assert.equal(parse.id, null)
      assert.ok(!('result' in parse))
      const unknown = await s.request('no/such/method', {})
      assert.equal(unknown.error?.code, -32601, JSON.stringify(unknown))
      // A notification is never answered, known or not.
      s.send({ jsonrpc: '2.0', method: 'notifications/no-such-thing' })
      s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 12345 } })
      assert.deepEqual((await s.request('ping')).result, {})
      // Batches left JSON-RPC with 2025-06-18: whatever the answer, the
      // server goes on.
      s.send('[{"jsonrpc": "2.0", "id": 50, "method": "ping"}]')
      assert.deepEqual((await s.request('ping')).result, {})
      // A string id comes back as it was sent.
      s.send({ jsonrpc: '2.0', id: 'str-1', method: 'ping' })
      assert.deepEqual((await s.wait((m) => m.id === 'str-1')).result, {})
      // Prints of the sandboxed program stay inside the result.
      const r = await s.request('tools/call', {
        name: 'run_python',
        arguments: { code: "import os, sys\nprint('{\"jsonrpc\": \"2.0\"}')\nos.write(1, b'raw fd 1\\n')\nsys.stdout.flush(); 3" },
      }, 60000)
      assert.equal(r.result?.structuredContent?.value, '3', JSON.stringify(r))
      const sh = await s.request('tools/call', { name: 'run_shell', arguments: { command: 'echo shell says hi; echo >&2 err' } }, 60000)
      assert.equal(sh.result?.structuredContent?.stdout, 'shell says hi\n', JSON.stringify(sh))
      const ids = s.messages.filter((m) => m.id != null && !('method' in m)).map((m) => m.id)
      assert.equal(new Set(ids).size, ids.length, `an id answered twice: ${ids}`)
      assert.ok(!ids.includes(12345))
      assert.deepEqual(s.junk, [])
      const { code, signal } = await s.close()
      assert.deepEqual({ code, signal }, { code: 0, signal: null })
      assert.deepEqual(s.junk, [], 'non-JSON on stdout')
    } finally {
      if (s.proc.exitCode === null) await s.close()
    }
  })

  it('protocolVersion: a supported one is echoed, any other gets 2025-11-25', async () => {
    const asks = { '2024-11-05': '2024-11-05', '2025-03-26': '2025-03-26', '2025-06-18': '2025-06-18',
      '2025-11-25': '2025-11-25', '2026-07-28': LATEST, '1999-01-01': LATEST }
    await Promise.all(Object.entries(asks).map(async ([ask, want]) => {
      const s = new RawServer()
      try {
        assert.equal((await s.initialize(ask)).protocolVersion, want, `asked for ${ask}`)
      } finally {
        await s.close()
      }
    }))
  })

  // A server with a workspace in use (a file written, a step run): its
  // temporary workspace on the host (a directory right under the temporary
  // directory, holding the file) and its processes.
  async function busyServer() {
    const s = new RawServer()
    await s.initialize()
    const name = `mcp-exit-${TAG}-${s.proc.pid}.txt`
    const w = await s.request('tools/call', { name: 'write_file', arguments: { path: name, content: 'x' } }, 60000)
    assert.ok(w.result && !w.result.isError, JSON.stringify(w))
    const r = await s.request('tools/call', { name: 'run_python', arguments: { code: '1 + 1' } }, 60000)
    assert.equal(r.result?.structuredContent?.value, '2', JSON.stringify(r))
    let ws = null
    for (const parent of new Set([process.env.TMPDIR || '/tmp', '/tmp'])) {
      for (const d of readdirSync(parent)) {
        if (existsSync(join(parent, d, name))) ws = join(parent, d)
      }
    }
    return { s, ws, kids: descendants(s.proc.pid) }
  }

  async function assertCleanedUp(ws, kids) {
    await until('the server\'s children to end', () => alive(kids).length === 0, 3000)
      .catch(() => assert.fail(`left running: ${alive(kids)}`))
    assert.ok(ws, 'the temporary workspace was not found on the host')
    assert.ok(!existsSync(ws), `${ws} is still there`)
  }

  it('stdin closed: exit 0 within seconds, no child left, temporary workspace removed', async () => {
    const { s, ws, kids } = await busyServer()
    try {
      const t0 = Date.now()
      const { code, signal } = await s.close(10000)
      assert.deepEqual({ code, signal }, { code: 0, signal: null })
      assert.ok(Date.now() - t0 < 5000, `exited ${Date.now() - t0} ms after stdin closed`)
      await assertCleanedUp(ws, kids)
    } finally {
      if (s.proc.exitCode === null) await s.close()
    }
  })

  // The SDKs end a server with SIGTERM: v2's auto mode its probe right
  // after the answer (SIGKILL 1 s later), close() when stdin's end is not
  // enough within 2 s.
  it('SIGTERM: the server ends within a second and cleans up', async () => {
    const { s, ws, kids } = await busyServer()
    try {
      const t0 = Date.now()
      s.proc.kill('SIGTERM')
      const killer = setTimeout(() => s.proc.kill('SIGKILL'), 5000)
      const { signal } = await s.exited
      clearTimeout(killer)
      assert.notEqual(signal, 'SIGKILL', 'it ignored SIGTERM for 5 s')
      assert.ok(Date.now() - t0 < 1000, `ended ${Date.now() - t0} ms after SIGTERM`)
      await assertCleanedUp(ws, kids)
    } finally {
      if (s.proc.exitCode === null && s.proc.signalCode === null) await s.close()
    }
  })

  it('--workspace DIR: files land in DIR, which stays', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-ws-'))
    const s = new RawServer(['--workspace', dir])
    try {
      await s.initialize()
      const w = await s.request('tools/call', { name: 'run_shell', arguments: { command: 'echo from-the-jail > /workspace/out.txt' } }, 60000)
      assert.ok(w.result && !w.result.isError, JSON.stringify(w))
      assert.equal(readFileSync(join(dir, 'out.txt'), 'utf8'), 'from-the-jail\n')
      assert.deepEqual(await s.close(), { code: 0, signal: null })
      assert.ok(existsSync(join(dir, 'out.txt')), 'the workspace was removed')
    } finally {
      if (s.proc.exitCode === null) await s.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('stdin closed during a step: the server still exits', async () => {
    const s = new RawServer()
    await s.initialize()
    s.send({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'run_python', arguments: { code: 'import time; time.sleep(60)' } } })
    await sleep(1000)
    const t0 = Date.now()
    const { code, signal } = await s.close(10000)
    assert.ok(Date.now() - t0 < 5000, `exited ${Date.now() - t0} ms after stdin closed`)
    assert.equal(signal, null, 'killed: it did not exit within 10 s')
    assert.equal(code, 0)
  })
})

describe('MCP Inspector CLI (@modelcontextprotocol/inspector 2.12)', () => {
  const [major, minor] = process.versions.node.split('.').map(Number)
  const skip = major > 22 || (major === 22 && minor >= 19) ? false : `the Inspector needs Node >= 22.19, this is ${process.version}`
  let home
  before(() => { home = mkdtempSync(join(tmpdir(), 'mcp-inspector-home-')) })
  after(() => home && rmSync(home, { recursive: true, force: true }))

  // The Inspector as a user runs it; HOME a scratch directory, since it
  // writes ~/.mcp-inspector.  Its -e flags are the server's environment.
  function inspect(...args) {
    const env = Object.entries(serverEnv()).flatMap(([k, v]) => ['-e', `${k}=${v}`])
    return new Promise((resolve) => {
      execFile(process.execPath, [inspector, '--cli', '--format', 'json', ...args, ...env, '--', CORRAL, ...ARGS],
        { env: { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' }, timeout: 30000 },
        (error, stdout, stderr) => resolve({ code: error ? error.code ?? error.signal : 0, stdout, stderr }))
    })
  }

  it('tools/list', { skip }, async () => {
    const r = await inspect('--method', 'tools/list')
    assert.equal(r.code, 0, r.stderr)
    assert.deepEqual(JSON.parse(r.stdout).result.tools.map((t) => t.name).sort(), TOOLS)
  })

  it('tools/call run_python 6*7', { skip }, async () => {
    const r = await inspect('--method', 'tools/call', '--tool-name', 'run_python', '--tool-args-json', '{"code":"6*7"}')
    assert.equal(r.code, 0, r.stderr)
    const { result } = JSON.parse(r.stdout)
    assert.match(textOf(result), /42/)
    assert.equal(result.structuredContent.value, '42')
  })
})

// ---- Streamable HTTP: corral serve's /mcp ----

// A `corral serve` of this file's: a port of its own on 127.0.0.1 (port 0
// picks one; the URL it prints says which) and a token of its own.
class HttpServer {
  async start() {
    this.dir = mkdtempSync(join(tmpdir(), 'mcp-http-'))
    this.token = randomBytes(24).toString('hex')
    const tokens = join(this.dir, 'tokens')
    writeFileSync(tokens, `${this.token} tests\n`, { mode: 0o600 })
    this.proc = spawn(CORRAL, ['serve', '--listen', '127.0.0.1:0', '--tokens', tokens, '--data', join(this.dir, 'data')],
      { env: { ...serverEnv(), PATH: process.env.PATH, HOME: process.env.HOME || '/' }, stdio: ['ignore', 'pipe', 'inherit'] })
    this.exited = new Promise((resolve) => this.proc.on('exit', (code, signal) => resolve({ code, signal })))
    const first = await new Promise((resolve, reject) => {
      let buf = ''
      this.proc.stdout.setEncoding('utf8')
      this.proc.stdout.on('data', (chunk) => {
        buf += chunk
        if (buf.includes('\n')) resolve(buf.split('\n')[0])
      })
      this.exited.then(({ code, signal }) => reject(new Error(`corral serve exited (${code ?? signal}) before its URL`)))
    })
    this.url = new URL('/mcp', first.trim())
    this.headers = { Authorization: `Bearer ${this.token}` }
    return this
  }

  // A POST of one message with fetch: {status, headers, body (parsed or null)}.
  async post(msg, headers = {}) {
    const r = await fetch(this.url, {
      method: 'POST',
      headers: { ...this.headers, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
      body: typeof msg === 'string' ? msg : JSON.stringify(msg),
    })
    const text = await r.text()
    return { status: r.status, headers: r.headers, body: text ? JSON.parse(text) : null }
  }

  async stop() {
    if (!this.proc || this.proc.exitCode !== null || this.proc.signalCode !== null) return
    this.proc.kill('SIGTERM')
    const t = setTimeout(() => this.proc.kill('SIGKILL'), 20000)
    const r = await this.exited
    clearTimeout(t)
    rmSync(this.dir, { recursive: true, force: true })
    return r
  }
}

describe('over Streamable HTTP (corral serve\'s /mcp)', () => {
  let srv
  before(async () => { srv = await new HttpServer().start() })
  after(async () => {
    const r = await srv?.stop()
    assert.deepEqual(r, { code: 0, signal: null }, 'corral serve did not stop cleanly on SIGTERM')
  })

  describe('v1 SDK client, StreamableHTTPClientTransport', () => {
    let client, transport
    const clientErrors = []
    before(async () => {
      transport = new Http1(srv.url, { requestInit: { headers: srv.headers } })
      client = new Client1({ name: 'corral-tests-http', version: '0' })
      client.onerror = (e) => clientErrors.push(e)
      await client.connect(transport)
    })
    after(() => client?.close())

    const call = (name, args, opts) => client.callTool({ name, arguments: args }, undefined, opts)
    const py = (code, opts) => call('run_python', { code }, opts)

    it('initializes: a session id, protocol 2025-11-25, the tools', async () => {
      assert.match(transport.sessionId ?? '', /^[0-9a-f]{64}$/)
      assert.equal(transport.protocolVersion, LATEST)
      assert.match(client.getServerVersion()?.name ?? '', /corral/)
      const { tools } = await client.listTools()
      assert.deepEqual(tools.map((t) => t.name).sort(), TOOLS)
    })

    it('run_python twice keeps state', async () => {
      assert.ok(!(await py('x = 6')).isError)
      const r = await py('x * 7')
      assert.equal(r.structuredContent.value, '42', textOf(r))
    })

    it('a figure comes back as a PNG image block', async () => {
      const r = await py('import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])')
      const images = r.content.filter((c) => c.type === 'image')
      assert.equal(images.length, 1, JSON.stringify(r.content.map((c) => c.type)))
      assert.deepEqual(Buffer.from(images[0].data, 'base64').subarray(0, 8), PNG)
    })

    it('a failing step is a result with isError', async () => {
      const r = await py('1/0')
      assert.equal(r.isError, true)
      assert.equal(r.structuredContent.error?.name, 'ZeroDivisionError')
      await assert.rejects(call('no_such_tool', {}), (e) => e.code === -32602)
    })

    it('a long step streams progress notifications', async () => {
      const progress = []
      const r = await py('import time; time.sleep(6.5); 5', { onprogress: (p) => progress.push(p) })
      assert.equal(r.structuredContent.value, '5')
      assert.ok(progress.length >= 1, 'no notifications/progress during a 6.5 s step')
    })

    it('a cancelled step is stopped; the next call runs at once, state kept', async () => {
      await py('kept = 1234')
      const ac = new AbortController()
      setTimeout(() => ac.abort(), 1000)
      await assert.rejects(py('import time; time.sleep(60)', { signal: ac.signal }))
      const t1 = Date.now()
      const r = await py('kept + 1')
      assert.equal(r.structuredContent.value, '1235', textOf(r))
      assert.ok(Date.now() - t1 < 5000, `the next call took ${Date.now() - t1} ms: the cancelled step went on`)
      await sleep(300)
      assert.deepEqual(clientErrors.map(String), [])
    })

    it('terminateSession() ends it: its id is then unknown (404)', async () => {
      const sid = transport.sessionId
      await transport.terminateSession()
      const r = await srv.post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { 'Mcp-Session-Id': sid })
      assert.equal(r.status, 404)
      assert.equal(r.body?.error?.code, -32001)
    })
  })

  for (const mode of ['legacy', 'auto']) {
    describe(`v2 client in ${mode} mode, StreamableHTTPClientTransport`, () => {
      let client, transport
      before(async () => {
        transport = new Http2(srv.url, { requestInit: { headers: srv.headers } })
        client = new Client2({ name: 'corral-tests-http', version: '0' }, { versionNegotiation: { mode } })
        // auto probes with server/discover on the same transport first.
        await client.connect(transport)
      })
      after(async () => {
        await transport?.terminateSession().catch(() => {})
        await client?.close()
      })

      it('negotiates 2025-11-25, lists the tools, keeps Python\'s state', async () => {
        assert.equal(client.getNegotiatedProtocolVersion(), LATEST)
        const { tools } = await client.listTools()
        assert.deepEqual(tools.map((t) => t.name).sort(), TOOLS)
        await client.callTool({ name: 'run_python', arguments: { code: 'y = 20' } })
        const r = await client.callTool({ name: 'run_python', arguments: { code: 'y + 22' } })
        assert.equal(r.structuredContent.value, '42', textOf(r))
      })

      it('a failing call is isError; a cancelled one stops', async () => {
        const bad = await client.callTool({ name: 'run_python', arguments: { code: 'raise ValueError("no")' } })
        assert.equal(bad.isError, true)
        const ac = new AbortController()
        setTimeout(() => ac.abort(), 1000)
        await assert.rejects(client.callTool({ name: 'run_python', arguments: { code: 'import time; time.sleep(60)' } },
          { signal: ac.signal }))
        const t1 = Date.now()
        const r = await client.callTool({ name: 'run_python', arguments: { code: 'y' } })
        assert.equal(r.structuredContent.value, '20')
        assert.ok(Date.now() - t1 < 5000, `took ${Date.now() - t1} ms`)
      })
    })
  }

  describe('raw HTTP', () => {
    it('server/discover: an error at once, then a normal session', async () => {
      const t0 = Date.now()
      const probe = await srv.post({ jsonrpc: '2.0', id: 'server-discover-probe-1', method: 'server/discover',
        params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } }, { 'MCP-Protocol-Version': '2026-07-28' })
      assert.ok(Date.now() - t0 < 1500, `answered after ${Date.now() - t0} ms`)
      assert.equal(probe.status, 400)
      assert.equal(probe.body?.error?.code, -32601, JSON.stringify(probe.body))
      const init = await srv.post({ jsonrpc: '2.0', id: 1, method: 'initialize',
        params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: 'raw', version: '0' } } })
      assert.equal(init.status, 200)
      assert.equal(init.body.result.protocolVersion, LATEST)
      const sid = init.headers.get('mcp-session-id')
      const list = await srv.post({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, { 'Mcp-Session-Id': sid })
      assert.equal(list.body?.result?.tools?.length, TOOLS.length)
      const r = await fetch(srv.url, { method: 'DELETE', headers: { ...srv.headers, 'Mcp-Session-Id': sid } })
      assert.equal(r.status, 200)
    })

    it('malformed JSON-RPC is answered with the right codes', async () => {
      const parse = await srv.post('{"jsonrpc": "2.0", "id": 1, "method": ')
      assert.deepEqual([parse.status, parse.body?.error?.code, parse.body?.id], [400, -32700, null])
      const batch = await srv.post([{ jsonrpc: '2.0', id: 1, method: 'ping' }])
      assert.deepEqual([batch.status, batch.body?.error?.code], [400, -32600])
      const noToken = await fetch(srv.url, { method: 'POST', body: '{}' })
      assert.equal(noToken.status, 401)
    })
  })

  describe('MCP Inspector CLI, --transport http', () => {
    const [major, minor] = process.versions.node.split('.').map(Number)
    const skip = major > 22 || (major === 22 && minor >= 19) ? false : `the Inspector needs Node >= 22.19, this is ${process.version}`
    let home
    before(() => { home = mkdtempSync(join(tmpdir(), 'mcp-inspector-home-')) })
    after(() => home && rmSync(home, { recursive: true, force: true }))

    function inspect(...args) {
      return new Promise((resolve) => {
        execFile(process.execPath, [inspector, '--cli', '--format', 'json', '--transport', 'http', '--server-url', String(srv.url),
          ...args, '--header', `Authorization: Bearer ${srv.token}`],
        { env: { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' }, timeout: 30000 },
        (error, stdout, stderr) => resolve({ code: error ? error.code ?? error.signal : 0, stdout, stderr }))
      })
    }

    it('tools/list', { skip }, async () => {
      const r = await inspect('--method', 'tools/list')
      assert.equal(r.code, 0, r.stderr)
      assert.deepEqual(JSON.parse(r.stdout).result.tools.map((t) => t.name).sort(), TOOLS)
    })

    it('tools/call run_python 6*7', { skip }, async () => {
      const r = await inspect('--method', 'tools/call', '--tool-name', 'run_python', '--tool-args-json', '{"code":"6*7"}')
      assert.equal(r.code, 0, r.stderr)
      assert.equal(JSON.parse(r.stdout).result.structuredContent.value, '42')
    })
  })
})
