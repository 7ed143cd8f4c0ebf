// clients/js's runs half (corral-client, docs/clients.md) against a live
// `corral serve --model-url any` that tests/e2e/test_js_client_runs.py
// started (CORRAL_TEST_URL, CORRAL_TEST_TOKEN), with scripted model servers
// of its own: CORRAL_TEST_MODEL_FOLLOW, _RESUME, _CANCEL, _EXAMPLE, _CUT and _APPROVE, one per test
// (each scripted for one run).  CORRAL_TEST_KEY is the API key given to the
// client, CORRAL_JS_CLIENT the package's directory; CORRAL_TEST_CUT_URL a proxy
// that cuts event streams, CORRAL_TEST_DROP_URL a stand-in that drops a follower.
import {test} from 'node:test'
import assert from 'node:assert/strict'
import path from 'node:path'
import {spawnSync} from 'node:child_process'

const pkg = process.env.CORRAL_JS_CLIENT
const {Corral, BadRequest, Conflict} = await import(path.join(pkg, 'src', 'index.js'))

const client = new Corral({baseUrl: process.env.CORRAL_TEST_URL, token: process.env.CORRAL_TEST_TOKEN})
const KEY = process.env.CORRAL_TEST_KEY
const env = process.env
// Node >= 22 has one; test_js_client_runs.py runs Node 20 with --experimental-websocket.
const HAS_WS = typeof globalThis.WebSocket === 'function'
if (!HAS_WS && env.CORRAL_TEST_NEED_WEBSOCKET) throw new Error('no global WebSocket in this Node')
const noKey = (...things) => { for (const t of things) assert.ok(!JSON.stringify(t ?? null).includes(KEY) && !String(t).includes(KEY)) }

// {name: bytes} of the regular files of a (pax or ustar) tar.
function untar(buf) {
  const dec = new TextDecoder()
  const str = (a) => dec.decode(a).replace(/\0.*$/s, '')
  const files = {}
  let longName
  for (let o = 0; o + 512 <= buf.length;) {
    const h = buf.subarray(o, o + 512)
    if (h.every((b) => b === 0)) break
    const size = Number.parseInt(str(h.subarray(124, 136)).trim() || '0', 8)
    const type = String.fromCharCode(h[156] || 48)
    const body = buf.subarray(o + 512, o + 512 + size)
    const prefix = str(h.subarray(345, 500))
    const name = longName ?? (prefix ? prefix + '/' : '') + str(h.subarray(0, 100))
    longName = undefined
    if (type === 'x') {
      const m = /\d+ path=([^\n]*)\n/.exec(dec.decode(body))
      if (m) longName = m[1]
    } else if (type === '0') files[name] = body
    o += 512 + Math.ceil(size / 512) * 512
  }
  return files
}

test('a run followed to its end, artifacts and the archive', async () => {
  const run = await client.runs.create('sum the sales', {model: 'gpt-test', baseUrl: env.CORRAL_TEST_MODEL_FOLLOW,
    apiKey: KEY, inputs: {'sales.csv': 'product,sales\nwidget,3\n'}, maxIterations: 4})
  assert.equal(run.status, 'running')
  noKey(run, client)
  const events = []
  const out = []
  const done = await run.wait({onEvent: (e) => events.push(e), onStdout: (s) => out.push(s), timeoutMs: 60000})
  assert.deepEqual(events.map((e) => e.id), events.map((_, i) => i + 1))
  assert.equal(events[0].type, 'run_start')
  assert.equal(events.at(-1).type, 'run_end')
  assert.equal(done.status, 'answered')
  assert.equal(done.answer, 'Done: widget sold 3.')
  assert.match(out.join(''), /widget,3/)
  noKey(events, done)
  const again = []
  for await (const ev of run.events()) again.push(ev)
  assert.deepEqual(again, events)
  if (HAS_WS) { // the same replayed over a WebSocket, and after an event
    const overWs = []
    for await (const ev of run.events({websocket: true})) overWs.push(ev)
    assert.deepEqual(overWs, events)
    const tail = []
    for await (const ev of run.events({websocket: true, after: 2})) tail.push(ev)
    assert.deepEqual(tail, events.slice(2))
  }
  const page = await client.runs.list({limit: 1})
  assert.deepEqual(page.map((r) => r.id), [run.id])
  assert.equal((await client.runs.list())[0].id, run.id)
  assert.equal((await client.runs.get(run.id)).answer, done.answer)
  const arts = await run.artifacts()
  assert.ok(arts.some((a) => a.path.endsWith('report.txt')), JSON.stringify(arts))
  assert.equal(new TextDecoder().decode(await run.artifact('report.txt')), 'widget 3\n')
  const files = untar(await run.archive())
  const name = Object.keys(files).find((n) => /(^|\/)output\/report\.txt$/.test(n))
  assert.ok(name, Object.keys(files).join(' '))
  assert.equal(new TextDecoder().decode(files[name]), 'widget 3\n')
})

test('a follower leaves midway and resumes; an AbortSignal; a WebSocket follower alongside', async () => {
  const run = await client.runs.create('sum the sales', {model: 'gpt-test', baseUrl: env.CORRAL_TEST_MODEL_RESUME,
    inputs: {'sales.csv': new TextEncoder().encode('product,sales\nwidget,3\n')}})
  const live = []
  const following = HAS_WS ? (async () => { for await (const ev of run.events({websocket: true})) live.push(ev) })() : null
  const first = []
  for await (const ev of run.events()) {
    first.push(ev)
    if (ev.type === 'model_request') break
  }
  assert.equal((await run.refresh()).status, 'running')
  // an aborted follower stops with the signal's reason
  const ctl = new AbortController()
  await assert.rejects(async () => {
    for await (const ev of run.events({after: first.at(-1).id, signal: ctl.signal})) ctl.abort(new Error('enough'))
  }, /enough/)
  const rest = []
  for await (const ev of run.events({after: first.at(-1).id})) rest.push(ev)
  const ids = [...first, ...rest].map((e) => e.id)
  assert.deepEqual(ids, ids.map((_, i) => i + 1))
  assert.equal(rest.at(-1).type, 'run_end')
  if (following) {
    await following
    assert.deepEqual(live, [...first, ...rest])
  }
})

test('cancel', async () => {
  const run = await client.runs.create('wait', {model: 'gpt-test', baseUrl: env.CORRAL_TEST_MODEL_CANCEL})
  await run.cancel()
  const done = await run.wait({timeoutMs: 30000})
  assert.equal(done.status, 'cancelled')
  await assert.rejects(run.cancel(), Conflict)
})

test('an approval answered by the client', async () => {
  const run = await client.runs.create('ask first', {model: 'gpt-test', baseUrl: env.CORRAL_TEST_MODEL_APPROVE,
    approve: 'always'})
  let q = null
  for (let i = 0; i < 600 && !q; i++) {
    q = await run.pendingApproval()
    if (!q) await new Promise((r) => setTimeout(r, 50))
  }
  assert.ok(q && q.n === 1 && q.code === 'echo from-the-model', JSON.stringify(q))
  assert.deepEqual(await run.answerApproval(1, 'edit', {code: 'echo from-the-client'}), {n: 1, status: 'answered'})
  await assert.rejects(run.answerApproval(1, 'approve'), Conflict)
  const done = await run.wait({timeoutMs: 60000})
  assert.equal(done.status, 'answered')
  assert.equal(done.info.approval.edited, 1)
})

test('a bad request', async () => {
  const err = await client.runs.create('x', {model: 'gpt-test', baseUrl: 'http://127.0.0.1:9/v1', apiKey: KEY,
    maxIterations: -1}).catch((e) => e)
  assert.ok(err instanceof BadRequest)
  assert.equal(err.field, 'max_iterations')
  assert.equal(err.status, 400)
  noKey(err, err.message, err.stack)
})

test('the runs example', () => {
  const r = spawnSync(process.execPath, [path.join(pkg, 'examples', 'runs.mjs')], {
    env: {...process.env, CORRAL_URL: env.CORRAL_TEST_URL, CORRAL_TOKEN: env.CORRAL_TEST_TOKEN, MODEL: 'gpt-test',
      MODEL_BASE_URL: env.CORRAL_TEST_MODEL_EXAMPLE, MODEL_API_KEY: KEY}, encoding: 'utf8', timeout: 120000,
  })
  assert.equal(r.status, 0, r.stdout + r.stderr)
  assert.match(r.stdout, /\[1\] run_start/)
  assert.match(r.stdout, /widget,3/)
  assert.match(r.stdout, /status: answered\nanswer: Done: widget sold 3\.\n/)
  assert.match(r.stdout, /widget 3\n/)
  assert.ok(!(r.stdout + r.stderr).includes(KEY))
})

test('a stream cut by the network is resumed', async () => {
  // CORRAL_TEST_CUT_URL: a proxy to the server that cuts the first two event streams midway
  const c = new Corral({baseUrl: env.CORRAL_TEST_CUT_URL, token: env.CORRAL_TEST_TOKEN})
  const run = await c.runs.create('sum the sales', {model: 'gpt-test', baseUrl: env.CORRAL_TEST_MODEL_CUT,
    inputs: {'sales.csv': 'product,sales\nwidget,3\n'}})
  const events = []
  for await (const ev of run.events()) events.push(ev)
  assert.deepEqual(events.map((e) => e.id), events.map((_, i) => i + 1))
  assert.equal(events.at(-1).type, 'run_end')
  const again = []
  for await (const ev of (await client.runs.get(run.id)).events()) again.push(ev)
  assert.deepEqual(again, events)
})

test('a dropped follower comes back with Last-Event-ID', async () => {
  // CORRAL_TEST_DROP_URL: a stand-in server that drops the first follower after event 2
  const run = await new Corral({baseUrl: env.CORRAL_TEST_DROP_URL, token: 't'}).runs.get('r1')
  const got = []
  for await (const ev of run.events()) got.push([ev.id, ev.type])
  assert.deepEqual(got, [[1, 'run_start'], [2, 'model_request'], [3, 'model_reply'], [4, 'run_end']])
})
