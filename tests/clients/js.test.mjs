// clients/js (corral-client, docs/clients.md) against a live `corral serve`
// that tests/e2e/test_js_client.py started: CORRAL_TEST_URL and
// CORRAL_TEST_TOKEN name it, CORRAL_TEST_CAPPED_URL a second one started
// with --max-per-token 1 (the 429 path), CORRAL_TEST_DOWN_URL an address
// nothing listens on, CORRAL_JS_CLIENT the package's directory.
import {test, before, after} from 'node:test'
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import path from 'node:path'

const pkg = process.env.CORRAL_JS_CLIENT
const {Corral, Conflict, ConnectionFailed, NotFound, RateLimited, Sandbox, Unauthorized, CorralError} =
  await import(path.join(pkg, 'src', 'index.js'))

const URL_ = process.env.CORRAL_TEST_URL
const TOKEN = process.env.CORRAL_TEST_TOKEN
const client = new Corral({baseUrl: URL_, token: TOKEN})
let sb

before(async () => { sb = await client.sandboxes.create({metadata: {test: 'js-client'}}) })
after(async () => { await sb?.kill().catch(() => {}) })

// A ustar archive of {name: text}.
function tarOf(files) {
  const enc = new TextEncoder()
  const blocks = []
  const field = (h, off, len, s) => h.set(enc.encode(s).subarray(0, len), off)
  for (const [name, text] of Object.entries(files)) {
    const data = enc.encode(text)
    const h = new Uint8Array(512)
    field(h, 0, 100, name)
    field(h, 100, 8, '0000644\0')
    field(h, 108, 8, '0000000\0')
    field(h, 116, 8, '0000000\0')
    field(h, 124, 12, data.length.toString(8).padStart(11, '0') + '\0')
    field(h, 136, 12, '00000000000\0')
    field(h, 148, 8, '        ')
    h[156] = '0'.charCodeAt(0)
    field(h, 257, 6, 'ustar\0')
    field(h, 263, 2, '00')
    const sum = h.reduce((a, b) => a + b, 0)
    field(h, 148, 8, sum.toString(8).padStart(6, '0') + '\0 ')
    blocks.push(h, data, new Uint8Array((512 - (data.length % 512)) % 512))
  }
  blocks.push(new Uint8Array(1024))
  const out = new Uint8Array(blocks.reduce((a, b) => a + b.length, 0))
  let o = 0
  for (const b of blocks) { out.set(b, o); o += b.length }
  return out
}

// {name: text} of the regular files of a (pax or ustar) tar.
function untar(buf) {
  const dec = new TextDecoder()
  const str = (a) => dec.decode(a).replace(/\0.*$/s, '')
  const files = {}
  let pathOverride
  for (let o = 0; o + 512 <= buf.length;) {
    const h = buf.subarray(o, o + 512)
    if (h.every((b) => b === 0)) break
    const size = parseInt(str(h.subarray(124, 136)).trim() || '0', 8)
    const type = String.fromCharCode(h[156] || 48)
    const prefix = str(h.subarray(345, 500))
    let name = str(h.subarray(0, 100))
    if (prefix) name = `${prefix}/${name}`
    const data = buf.subarray(o + 512, o + 512 + size)
    if (type === 'x') {
      const m = dec.decode(data).match(/\d+ path=([^\n]*)\n/)
      if (m) pathOverride = m[1]
    } else {
      if (pathOverride) { name = pathOverride; pathOverride = undefined }
      if (type === '0') files[name.replace(/^\.\//, '')] = dec.decode(data)
    }
    o += 512 + Math.ceil(size / 512) * 512
  }
  return files
}

test('the printed URL and the environment', async () => {
  const c = new Corral({baseUrl: `${URL_}/?token=${TOKEN}`})
  assert.equal(c.baseUrl, URL_)
  assert.ok(!JSON.stringify(c).includes(TOKEN))
  assert.equal((await c.health()).status, 'ok')
  process.env.CORRAL_URL = URL_
  process.env.CORRAL_TOKEN = TOKEN
  try { assert.ok(Array.isArray(await new Corral().sandboxes.list())) } finally {
    delete process.env.CORRAL_URL
    delete process.env.CORRAL_TOKEN
  }
})

test('state is kept between steps', async () => {
  assert.deepEqual(sb.info.metadata, {test: 'js-client'})
  let r = await sb.runCode("x = 6 * 7\nprint('set')")
  assert.ok(r.ok)
  assert.equal(r.stdout, 'set\n')
  assert.equal(r.text, null)
  r = await sb.runCode('x')
  assert.equal(r.text, '42')
  assert.equal(r.value.type, 'int')
})

test('streamed callbacks come in order', async () => {
  const seen = []
  const r = await sb.runCode("import sys, time\nfor i in range(3):\n    print('out', i, flush=True)\n    time.sleep(0.05)\n" +
    "print('warn', file=sys.stderr, flush=True)\n'done'", {
    onStdout: (s) => seen.push(['stdout', s]),
    onStderr: (s) => seen.push(['stderr', s]),
    onResult: (res) => seen.push(['result', res.text]),
  })
  assert.equal(r.text, "'done'")
  assert.deepEqual(seen.at(-1), ['result', "'done'"])
  assert.equal(seen.filter(([k]) => k === 'stdout').map(([, s]) => s).join(''), 'out 0\nout 1\nout 2\n')
  assert.ok(seen.some(([k]) => k === 'stderr'))
})

test('an error result', async () => {
  let r = await sb.runCode('def f():\n    return 1 / 0\nf()')
  assert.equal(r.status, 'error')
  assert.equal(r.error.name, 'ZeroDivisionError')
  assert.match(r.error.value, /division by zero/)
  assert.match(r.error.traceback, /1 \/ 0|f\(\)/)
  r = await sb.runShell('echo hi; exit 3')
  assert.equal(r.exitCode, 3)
  assert.equal(r.stdout, 'hi\n')
  assert.equal(r.error.name, 'ExitStatus')
})

test('a figure', async () => {
  const figures = []
  const r = await sb.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()',
    {onFigure: (f) => figures.push(f), timeout: 30})
  assert.ok(r.ok, JSON.stringify(r.raw))
  assert.ok(figures.length >= 1 && figures[0].width > 0 && figures[0].bytes > 0)
  assert.ok(r.figures.length >= 1 && !('host_path' in r.figures[0]))
  const df = await sb.runCode("import pandas as pd\npd.DataFrame({'a': [1, 2]})")
  assert.equal(df.value.type, 'dataframe')
  assert.match(df.html, /<table/)
})

test('interrupting a long step, and an AbortSignal', async () => {
  const t0 = Date.now()
  const r = await sb.runCode("import time\nprint('started', flush=True)\ntime.sleep(60)", {
    onStdout: (s) => { if (s.includes('started')) sb.interrupt() },
  })
  assert.equal(r.status, 'interrupted')
  assert.equal(r.error.name, 'KeyboardInterrupt')
  assert.ok(Date.now() - t0 < 30000)
  assert.equal((await sb.runCode('x')).text, '42')
  await assert.rejects(sb.interrupt(), Conflict)

  // Aborting a stream hangs up, which interrupts the step on the server.
  const ctl = new AbortController()
  await assert.rejects(sb.runCode("import time\nprint('started', flush=True)\ntime.sleep(60)", {
    signal: ctl.signal, onStdout: (s) => { if (s.includes('started')) ctl.abort() },
  }), (e) => e.name === 'AbortError')
  const t1 = Date.now()
  assert.equal((await sb.runCode('x + 1')).text, '43') // the aborted step is gone, the state kept
  assert.ok(Date.now() - t1 < 20000)
})

test('a WebSocket for many steps', {skip: typeof globalThis.WebSocket !== 'function' && 'no global WebSocket (Node < 22)'}, async () => {
  const ws = await sb.connect()
  try {
    const out = []
    const [a, b] = await Promise.all([
      ws.runCode("print('one', flush=True)\n1 + 1", {onStdout: (s) => out.push(s)}),
      ws.runCode('x * 2'),
    ])
    assert.equal(a.text, '2')
    assert.equal(out.join(''), 'one\n')
    assert.equal(b.text, '84')
    const long = ws.runCode("import time\nprint('started', flush=True)\ntime.sleep(60)",
      {onStdout: (s) => { if (s.includes('started')) ws.interrupt() }})
    assert.equal((await long).status, 'interrupted')
    assert.equal((await ws.runShell('echo $((6 * 7))')).stdout, '42\n')
  } finally { ws.close() }

  // An injected implementation (the ws package on Node 20) gets the token as a header.
  const inits = []
  class Recording extends globalThis.WebSocket {
    constructor(url, init) { inits.push([url, init]); super(url, init) }
  }
  const other = await new Corral({baseUrl: URL_, token: TOKEN, WebSocket: Recording}).sandboxes.get(sb.id)
  const ws2 = await other.connect()
  try {
    assert.equal((await ws2.runCode('x')).text, '42')
    assert.equal(inits[0][0], `${URL_.replace('http', 'ws')}/v1/sandboxes/${sb.id}/ws`)
    assert.equal(inits[0][1].headers.Authorization, `Bearer ${TOKEN}`)
  } finally { ws2.close() }
  // A wrong token: the upgrade is refused.
  const bad = new Corral({baseUrl: URL_, token: 'x'.repeat(40)})
  await assert.rejects(new Sandbox(bad._t, {id: sb.id}, bad).connect(), ConnectionFailed)
})

test('a background command', async () => {
  const cmd = await sb.commands.run('echo begun; sleep 30')
  assert.ok(cmd.pid > 0)
  assert.equal((await cmd.status()).running, true)
  const deadline = Date.now() + 10000
  while (!(await cmd.output()).includes('begun') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
  assert.match(await cmd.output(), /begun/)
  await cmd.kill('TERM')
  assert.notEqual(await cmd.wait({timeoutMs: 20000}), 0)
  assert.equal(await (await sb.commands.run('exit 5')).wait({timeoutMs: 20000}), 5)
})

test('files', async () => {
  assert.equal((await sb.files.write('notes/a.txt', 'hello\n')).size, 6)
  const bin = Uint8Array.from({length: 256}, (_, i) => i)
  await sb.files.write('notes/b.bin', bin)
  await sb.files.write('notes/c.txt', new Blob(['from a blob']))
  assert.equal(await sb.files.readText('notes/a.txt'), 'hello\n')
  assert.deepEqual(await sb.files.read('notes/b.bin'), bin)
  assert.equal(await sb.files.readText('notes/c.txt'), 'from a blob')
  const list = Object.fromEntries((await sb.files.list('notes')).map((f) => [f.path, f]))
  assert.equal(list['notes/a.txt'].size, 6)
  assert.equal(list['notes/a.txt'].type, 'file')
  await sb.files.remove('notes/a.txt')
  await assert.rejects(sb.files.read('notes/a.txt'), NotFound)
  await sb.files.remove('notes')
  assert.equal(await sb.files.exists('notes'), false)
})

test('a tar round trip', async () => {
  const put = await sb.files.uploadTar(tarOf({'batch/one.txt': 'one\n', 'batch/deep/two.txt': 'two\n'}))
  assert.equal(put.files, 2)
  assert.equal((await sb.runShell('cat batch/deep/two.txt')).stdout, 'two\n')
  const got = untar(await sb.files.downloadTar())
  assert.equal(got['batch/one.txt'], 'one\n')
  assert.equal(got['batch/deep/two.txt'], 'two\n')
  await sb.files.uploadTar(new Blob([tarOf({'blobbed/x.txt': 'x'})]))
  assert.equal(await sb.files.readText('blobbed/x.txt'), 'x')
})

test('pause, resume and kill', async () => {
  const s = await client.sandboxes.create()
  await s.files.write('kept.txt', 'kept')
  await s.runCode('y = 1')
  assert.equal((await s.pause()).state, 'paused')
  await assert.rejects(s.runCode('1'), (e) => e instanceof Conflict && e.status === 409 && e.message.length > 0)
  assert.equal((await s.resume()).state, 'running')
  assert.equal(await s.files.readText('kept.txt'), 'kept')
  assert.equal((await s.runCode("'y' in dir()")).text, 'False')
  assert.ok((await client.sandboxes.list()).some((x) => x.id === s.id))
  assert.deepEqual(await s.kill(), {deleted: s.id})
  await assert.rejects(s.runCode('1'), (e) => e instanceof NotFound && e.status === 404 && e.kind === 'not_found')
  await assert.rejects(client.sandboxes.get(s.id), NotFound)
  // with(): the sandbox is killed after the function, whatever it did
  let id
  await assert.rejects(client.sandboxes.with({}, async (t) => { id = t.id; throw new Error('boom') }), /boom/)
  await assert.rejects(client.sandboxes.get(id), NotFound)
})

test('a wrong token', async () => {
  const wrong = 'w'.repeat(40) + 'rongtoken'
  for (const c of [new Corral({baseUrl: URL_, token: wrong}), new Corral({baseUrl: `${URL_}/?token=${wrong}`})]) {
    await assert.rejects(c.sandboxes.list(), (e) => {
      assert.ok(e instanceof Unauthorized && e instanceof CorralError)
      assert.equal(e.status, 401)
      assert.equal(e.kind, 'unauthorized')
      assert.ok(!String(e).includes(wrong) && !JSON.stringify(e).includes(wrong) && !e.stack.includes(wrong))
      return true
    })
    assert.ok(!JSON.stringify(c).includes(wrong) && !c.baseUrl.includes(wrong))
  }
})

test('a server that is down', async () => {
  const c = new Corral({baseUrl: process.env.CORRAL_TEST_DOWN_URL, token: 't'.repeat(32), timeoutMs: 5000})
  await assert.rejects(c.sandboxes.list(), (e) => {
    assert.ok(e instanceof ConnectionFailed, String(e))
    assert.ok(e.message.includes(process.env.CORRAL_TEST_DOWN_URL) && !e.message.includes('t'.repeat(32)))
    return true
  })
})

test('429 is retried, then thrown', async () => {
  const base = {baseUrl: process.env.CORRAL_TEST_CAPPED_URL, token: process.env.CORRAL_TEST_CAPPED_TOKEN}
  const c = new Corral({...base, maxRetries: 2, maxRetryWaitMs: 200})
  const first = await c.sandboxes.create()
  const t0 = Date.now()
  await assert.rejects(c.sandboxes.create(), (e) => e instanceof RateLimited && e.status === 429 && e.retryAfter >= 0)
  assert.ok(Date.now() - t0 >= 300)
  const c2 = new Corral({...base, maxRetries: 5, maxRetryWaitMs: 500})
  setTimeout(() => first.kill(), 300)
  await (await c2.sandboxes.create()).kill()
})

test('the example', () => {
  const r = spawnSync(process.execPath, [path.join(pkg, 'examples', 'quickstart.mjs')], {
    env: {...process.env, CORRAL_URL: URL_, CORRAL_TOKEN: TOKEN}, encoding: 'utf8', timeout: 120000,
  })
  assert.equal(r.status, 0, r.stdout + r.stderr)
  assert.match(r.stdout, /tick 0\ntick 1\ntick 2\nresult: 42\n/)
  assert.match(r.stdout, /error: ZeroDivisionError/)
  assert.match(r.stdout, /gone: /)
})
