// sdk.test.mjs: the official E2B JavaScript SDK (@e2b/code-interpreter and
// e2b from npm, unmodified) against corral serve's E2B-compatible API, and
// checks that what it gets is a jail: no network, no host files or
// environment, one sandbox invisible to another and to another token.
//
// Run by tests/e2e/test_e2b.py, which starts the server.  By hand:
//   node=$(tests/e2b/setup.sh | head -1)
//   E2B_API_KEY=<token> E2B_API_URL=http://127.0.0.1:PORT E2B_SANDBOX_URL=http://127.0.0.1:PORT \
//     $node --test tests/e2b/sdk.test.mjs
// Optional: CORRAL_TEST_SECRET (a value in the server's environment, which
// must not reach a sandbox), CORRAL_E2B_OTHER_KEY (a second token),
// CORRAL_E2B_HOST_FILE (a host file a sandbox must not see),
// CORRAL_E2B_MODULES (where setup.sh put node_modules, if not here).
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
// The SDK's own entry point, imported by path: a read-only copy of the tree
// has its node_modules elsewhere (tests/e2b/setup.sh), out of reach of a
// plain `import ... from '@e2b/code-interpreter'`.
const sdkDir = process.env.CORRAL_E2B_MODULES || here
const sdkEntry = createRequire(join(sdkDir, 'package.json')).resolve('@e2b/code-interpreter')
const { Sandbox, AuthenticationError, CommandExitError, NotFoundError } = await import(pathToFileURL(sdkEntry).href)

for (const v of ['E2B_API_KEY', 'E2B_API_URL', 'E2B_SANDBOX_URL']) {
  if (!process.env[v]) throw new Error(`${v} is not set: see the top of ${fileURLToPath(import.meta.url)}`)
}
const apiKey = process.env.E2B_API_KEY
const apiUrl = process.env.E2B_API_URL.replace(/\/$/, '')
const secret = process.env.CORRAL_TEST_SECRET
const otherKey = process.env.CORRAL_E2B_OTHER_KEY
const hostFile = process.env.CORRAL_E2B_HOST_FILE

// For a runCode that is to fail: the SDK leaves its request timer (60 s by
// default) running when the server refuses, which holds node up that long.
const refused = { requestTimeoutMs: 5_000 }

const sleep = (ms, value) => new Promise((resolve) => setTimeout(() => resolve(value), ms))

// Prints go to stdout as lines; the test wants their text.
const joined = (lines) => lines.join('')

// The JSON of a Python expression, printed: independent of how the server
// renders a main result's text.
async function pyJSON(sbx, code, expr, opts) {
  const e = await sbx.runCode(`${code}\nimport json as _json\nprint(_json.dumps(${expr}))`, opts)
  assert.equal(e.error, undefined, `python failed: ${e.error?.name}: ${e.error?.value}`)
  return JSON.parse(joined(e.logs.stdout).trim().split('\n').pop())
}

// Python that polls url (a server just started in the sandbox) for up to
// 10 s; `body` is its body, or None.
function waitForServer(url) {
  return 'import time, urllib.request\nbody = None\nfor i in range(100):\n' +
    `    try:\n        body = urllib.request.urlopen('${url}', timeout=2).read().decode()\n        break\n` +
    '    except OSError:\n        time.sleep(0.1)'
}

// A request to the sandbox plane made by hand, as a caller without the
// sandbox's access token would: the SDK always sends the token it got.
async function forged(sandboxId, path, init = {}) {
  const res = await fetch(`${process.env.E2B_SANDBOX_URL.replace(/\/$/, '')}${path}`, {
    ...init,
    headers: { 'E2b-Sandbox-Id': sandboxId, ...(init.headers ?? {}) },
  })
  await res.arrayBuffer()
  return res.status
}

describe('one sandbox through the SDK', { timeout: 90_000 }, () => {
  let sbx
  before(async () => {
    sbx = await Sandbox.create()
    assert.ok(sbx.sandboxId)
  })
  after(async () => {
    await sbx?.kill().catch(() => {})
  })

  describe('runCode', () => {
    it('keeps state across calls', async () => {
      const first = await sbx.runCode('x = 1')
      assert.equal(first.error, undefined)
      assert.equal(first.text, undefined, 'an assignment has no value')
      const e = await sbx.runCode('x + 1')
      assert.equal(e.text, '2')
      const main = e.results.filter((r) => r.isMainResult)
      assert.equal(main.length, 1)
      assert.equal(main[0].text, '2')
    })

    it('strips the quotes of a string value as E2B does', async () => {
      assert.equal((await sbx.runCode("'abc'")).text, 'abc')
    })

    it('streams print to onStdout and stderr to onStderr', async () => {
      const out = []
      const err = []
      const e = await sbx.runCode("import sys\nprint('hello from corral')\nprint('oops', file=sys.stderr)", {
        onStdout: (m) => out.push(m),
        onStderr: (m) => err.push(m),
      })
      assert.equal(joined(out.map((m) => m.line)), 'hello from corral\n')
      assert.equal(joined(err.map((m) => m.line)), 'oops\n')
      assert.ok(out.every((m) => m.error === false) && err.every((m) => m.error === true))
      assert.equal(joined(e.logs.stdout), 'hello from corral\n')
      assert.equal(joined(e.logs.stderr), 'oops\n')
    })

    it('gives a matplotlib figure as a png result beside the main one', async () => {
      const results = []
      const e = await sbx.runCode(
        "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('corral')\nplt.show()",
        { onResult: (r) => results.push(r) },
      )
      assert.equal(e.error, undefined, e.error?.traceback)
      const figs = e.results.filter((r) => r.png)
      assert.equal(figs.length, 1, `results: ${JSON.stringify(e.results.map((r) => r.formats()))}`)
      assert.equal(figs[0].isMainResult, false)
      assert.ok(figs[0].formats().includes('png'))
      const png = Buffer.from(figs[0].png, 'base64')
      assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
      assert.ok(png.length > 1000, `a ${png.length}-byte PNG`)
      assert.equal(results.length, e.results.length, 'onResult saw every result')
      assert.equal(e.text, undefined, 'plt.show() has no value')
    })

    it('reports an exception as execution.error', async () => {
      const errors = []
      const e = await sbx.runCode('1/0', { onError: (x) => errors.push(x) })
      assert.equal(e.error.name, 'ZeroDivisionError')
      assert.match(e.error.value, /division by zero/)
      assert.equal(typeof e.error.traceback, 'string')
      assert.match(e.error.traceback, /ZeroDivisionError/)
      assert.equal(errors.length, 1)
      assert.equal(e.text, undefined)
      // The sandbox goes on.
      assert.equal((await sbx.runCode('x')).text, '1')
    })

    it('gives a DataFrame as a main result with text and html', async () => {
      const e = await sbx.runCode("import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': [3, 4]})")
      assert.equal(e.error, undefined, e.error?.traceback)
      const main = e.results.find((r) => r.isMainResult)
      assert.ok(main, `results: ${JSON.stringify(e.results)}`)
      assert.match(main.text, /a\s+b/)
      assert.match(main.html, /<table/)
      assert.ok(main.formats().includes('html'))
      assert.equal(e.text, main.text)
    })

    it('runs a second code context apart from the default one', async () => {
      const ctx = await sbx.createCodeContext()
      assert.ok(ctx.id)
      assert.equal(ctx.language, 'python')
      assert.equal(ctx.cwd, '/home/user')
      await sbx.runCode('only_here = 5', { context: ctx })
      await sbx.runCode('only_default = 6')
      assert.equal((await sbx.runCode('only_here', { context: ctx })).text, '5')
      assert.equal((await sbx.runCode('only_here')).error?.name, 'NameError')
      assert.equal((await sbx.runCode('only_default', { context: ctx })).error?.name, 'NameError')
      assert.equal((await sbx.runCode('only_default')).text, '6')
      // The context works in /home/user (a link to /workspace, so getcwd()
      // names /workspace: docs/e2b.md).
      assert.equal(await pyJSON(sbx, 'import os', "os.path.samefile(os.getcwd(), '/home/user')", { context: ctx }),
        true)

      const listed = await sbx.listCodeContexts()
      assert.ok(listed.some((c) => c.id === ctx.id && c.language === 'python'), JSON.stringify(listed))

      await sbx.restartCodeContext(ctx)
      assert.equal((await sbx.runCode('only_here', { context: ctx })).error?.name, 'NameError',
        'the state outlived a restart')
      assert.equal((await sbx.runCode('only_default')).text, '6', 'a restart reached the default context')

      await sbx.removeCodeContext(ctx)
      assert.ok(!(await sbx.listCodeContexts()).some((c) => c.id === ctx.id))
      await assert.rejects(sbx.runCode('1', { context: ctx, ...refused }), NotFoundError)
    })
  })

  describe('files', () => {
    it('writes, reads and lists', async () => {
      const info = await sbx.files.write('/home/user/hello.txt', 'hello')
      assert.equal(info.path, '/home/user/hello.txt')
      assert.equal(info.name, 'hello.txt')
      assert.equal(await sbx.files.read('/home/user/hello.txt'), 'hello')
      const entries = await sbx.files.list('/home/user')
      const e = entries.find((x) => x.name === 'hello.txt')
      assert.ok(e, JSON.stringify(entries))
      assert.equal(e.type, 'file')
      assert.equal(e.path, '/home/user/hello.txt')
      assert.equal(e.size, 5)
    })

    it('resolves a relative path against /home/user', async () => {
      const info = await sbx.files.write('relative.txt', 'rel')
      assert.equal(info.path, '/home/user/relative.txt')
      assert.equal(await sbx.files.read('/home/user/relative.txt'), 'rel')
      assert.equal(await sbx.files.read('relative.txt'), 'rel')
    })

    it('keeps bytes as they are', async () => {
      const bytes = new Uint8Array(256).map((_, i) => i)
      await sbx.files.write('/home/user/bytes.bin', bytes.buffer)
      const back = await sbx.files.read('/home/user/bytes.bin', { format: 'bytes' })
      assert.deepEqual([...back], [...bytes])
    })

    it('has exists, makeDir and remove', async () => {
      assert.equal(await sbx.files.exists('/home/user/hello.txt'), true)
      assert.equal(await sbx.files.exists('/home/user/not-there'), false)
      assert.equal(await sbx.files.makeDir('/home/user/made/deeper'), true)
      assert.equal(await sbx.files.makeDir('/home/user/made/deeper'), false, 'made twice')
      const made = (await sbx.files.list('/home/user')).find((x) => x.name === 'made')
      assert.equal(made?.type, 'dir')
      await sbx.files.write('/home/user/made/deeper/f.txt', 'f')
      await sbx.files.remove('/home/user/hello.txt')
      assert.equal(await sbx.files.exists('/home/user/hello.txt'), false)
      await sbx.files.remove('/home/user/made')
      assert.equal(await sbx.files.exists('/home/user/made'), false)
    })

    it('shares its files with runCode', async () => {
      await sbx.files.write('/home/user/data.csv', 'a,b\n1,2\n')
      assert.equal(await pyJSON(sbx, '', "open('/home/user/data.csv').read()"), 'a,b\n1,2\n')
      await sbx.runCode("open('/home/user/from-code.txt', 'w').write('made by code')")
      assert.equal(await sbx.files.read('/home/user/from-code.txt'), 'made by code')
    })

    it('refuses a missing file with NotFoundError', async () => {
      await assert.rejects(sbx.files.read('/home/user/missing.txt'), NotFoundError)
    })
  })

  describe('commands', () => {
    it('runs a command', async () => {
      const r = await sbx.commands.run('echo hi')
      assert.equal(r.exitCode, 0)
      assert.equal(r.stdout, 'hi\n')
      assert.equal(r.stderr, '')
    })

    it('throws CommandExitError for a non-zero exit', async () => {
      await assert.rejects(sbx.commands.run('echo oops >&2; exit 3'), (err) => {
        assert.ok(err instanceof CommandExitError, `${err}`)
        assert.equal(err.exitCode, 3)
        assert.equal(err.stderr, 'oops\n')
        return true
      })
    })

    it('streams to onStdout and takes envs and cwd', async () => {
      const chunks = []
      await sbx.commands.run('for i in 1 2 3; do echo $i; done', { onStdout: (d) => chunks.push(d) })
      assert.equal(joined(chunks), '1\n2\n3\n')
      const env = await sbx.commands.run('echo "$GREETING"', { envs: { GREETING: 'hey' } })
      assert.equal(env.stdout, 'hey\n')
      assert.equal((await sbx.commands.run('pwd', { cwd: '/tmp' })).stdout, '/tmp\n')
      assert.equal((await sbx.commands.run('pwd')).stdout, '/home/user\n')
      await sbx.files.write('/home/user/for-cat.txt', 'seen by bash')
      assert.equal((await sbx.commands.run('cat for-cat.txt')).stdout, 'seen by bash')
    })

    it('keeps a background server that runCode can call', async () => {
      await sbx.files.write('/home/user/served.txt', 'served by corral')
      const handle = await sbx.commands.run('exec python3 -m http.server 8000 --bind 127.0.0.1', {
        background: true,
        cwd: '/home/user',
      })
      assert.ok(handle.pid > 0)
      try {
        const body = await pyJSON(sbx, waitForServer('http://127.0.0.1:8000/served.txt'), 'body')
        assert.equal(body, 'served by corral')
        assert.equal(await handle.kill(), true)
        await assert.rejects(handle.wait(), 'a killed command ended well')
        const after = await pyJSON(sbx, "import urllib.request\ntry:\n" +
          "    urllib.request.urlopen('http://127.0.0.1:8000/served.txt', timeout=2)\n    up = True\n" +
          'except OSError:\n    up = False', 'up')
        assert.equal(after, false, 'the server outlived its kill')
      } finally {
        await handle.kill().catch(() => {}) // else its stream holds node up
      }
    })
  })

  describe('a jail', () => {
    it('has no network', async () => {
      // TEST-NET-1 (never routed) with a 1 s timeout: an empty network
      // namespace has no route, so connect fails at once.
      const r = await pyJSON(sbx, 'import socket, time\n' +
        's = socket.socket()\ns.settimeout(1)\nt = time.monotonic()\n' +
        "try:\n    s.connect(('192.0.2.1', 9))\n    got = 'connected'\n" +
        'except OSError as e:\n    got = type(e).__name__\n' +
        'took = time.monotonic() - t\nnames = [n for _, n in socket.if_nameindex()]',
        '[got, took, names]')
      const [got, took, names] = r
      assert.notEqual(got, 'connected')
      assert.ok(took < 0.9, `connect took ${took} s: there is a route out`)
      assert.deepEqual(names.filter((n) => n !== 'lo'), [], `interfaces: ${names}`)
    })

    it('sees no host files', async () => {
      const paths = [fileURLToPath(import.meta.url), join(here, 'package.json')]
      if (hostFile) paths.push(hostFile)
      for (const p of paths) assert.ok(existsSync(p), `${p} is not on the host`)
      const seen = await pyJSON(sbx, 'import os', `[p for p in ${JSON.stringify(paths)} if os.path.exists(p)]`)
      assert.deepEqual(seen, [])
      const shadow = await pyJSON(sbx, "try:\n    open('/etc/shadow').read()\n    got = 'read'\n" +
        'except OSError as e:\n    got = type(e).__name__', 'got')
      assert.notEqual(shadow, 'read')
      if (hostFile) {
        const words = readFileSync(hostFile, 'utf8').trim()
        const hits = await sbx.commands.run(`grep -rlsF -- '${words}' /home /tmp /etc 2>/dev/null || true`)
        assert.equal(hits.stdout, '')
      }
    })

    it('has none of the host environment', async () => {
      const env = await pyJSON(sbx, 'import os', 'dict(os.environ)')
      const shell = (await sbx.commands.run('env')).stdout
      const both = JSON.stringify(env) + shell
      assert.ok(!('CORRAL_TEST_SECRET' in env) && !shell.includes('CORRAL_TEST_SECRET'))
      if (secret) assert.ok(!both.includes(secret), 'the server\'s environment reached the sandbox')
      assert.ok(!both.includes(apiKey), 'the API key reached the sandbox')
      assert.ok(!Object.keys(env).some((k) => k.startsWith('E2B_')))
    })
  })

  describe('its lifecycle', () => {
    it('has getInfo and setTimeout', async () => {
      await sbx.setTimeout(120_000)
      const info = await sbx.getInfo()
      assert.equal(info.sandboxId, sbx.sandboxId)
      assert.ok(!Number.isNaN(info.startedAt.getTime()), `startedAt: ${info.startedAt}`)
      const left = info.endAt.getTime() - Date.now()
      assert.ok(left > 100_000 && left < 140_000, `ends in ${left} ms after setTimeout(120 s)`)
      assert.equal(await sbx.isRunning(), true)
    })

    it('is killed: kill() is true and every call after fails', async () => {
      const id = sbx.sandboxId
      const running = await sbx.commands.run('sleep 600', { background: true })
      assert.equal(await sbx.kill(), true)
      // The stream of a command the kill ended ends too (not at its 60 s deadline).
      const settled = await Promise.race([running.wait().then(() => 'ended', () => 'ended'), sleep(5_000, 'open')])
      if (settled === 'open') await running.disconnect()
      assert.equal(settled, 'ended', 'a command\'s stream outlived its sandbox by 5 s')
      await assert.rejects(sbx.runCode('1', refused))
      await assert.rejects(sbx.files.read('/home/user/data.csv'))
      await assert.rejects(sbx.commands.run('true'))
      assert.equal(await Sandbox.kill(id), false, 'a second kill found it')
      // envd's /health answers 502 for a sandbox that is gone.
      assert.equal(await sbx.isRunning(), false)
    })
  })
})

describe('two sandboxes and two tokens', { timeout: 60_000 }, () => {
  let a, b, server
  before(async () => {
    ;[a, b] = await Promise.all([Sandbox.create(), Sandbox.create()])
    assert.notEqual(a.sandboxId, b.sandboxId)
  })
  after(async () => {
    await server?.kill().catch(() => {})
    await Promise.all([a?.kill().catch(() => {}), b?.kill().catch(() => {})])
    await server?.disconnect() // its stream, should the server leave it open
  })

  it('keeps files, processes and loopback apart', async () => {
    await a.files.write('/home/user/only-in-a.txt', 'a')
    assert.equal(await b.files.exists('/home/user/only-in-a.txt'), false)
    await assert.rejects(b.files.read('/home/user/only-in-a.txt'), NotFoundError)
    await a.runCode('in_a = 1')
    assert.equal((await b.runCode('in_a')).error?.name, 'NameError')

    server = await a.commands.run('exec python3 -m http.server 8001 --bind 127.0.0.1', {
      background: true,
      cwd: '/home/user',
    })
    await a.files.write('/home/user/a.txt', 'from a')
    assert.equal(await pyJSON(a, waitForServer('http://127.0.0.1:8001/a.txt'), 'body'), 'from a')
    const fromB = await pyJSON(b, 'import os, socket\n' +
      'cmds = []\nfor p in os.listdir("/proc"):\n    if p.isdigit():\n        try:\n' +
      '            cmds.append(open(f"/proc/{p}/cmdline", "rb").read().replace(b"\\0", b" ").decode())\n' +
      '        except OSError:\n            pass\n' +
      "s = socket.socket()\ns.settimeout(2)\ntry:\n    s.connect(('127.0.0.1', 8001))\n    reached = True\n" +
      'except OSError:\n    reached = False', '[[c for c in cmds if "http.server" in c], reached]')
    assert.deepEqual(fromB, [[], false], 'b sees a\'s server')
  })

  it('maps each sandbox to host uids of its own (as root)', async (t) => {
    if (process.getuid() !== 0) {
      t.skip('as an ordinary user, sandboxes share the one uid the user has')
      return
    }
    const read = "open('/proc/self/uid_map').read()"
    const [ma, mb] = await Promise.all([pyJSON(a, '', read), pyJSON(b, '', read)])
    assert.notEqual(ma, mb, `both: ${ma}`)
  })

  it('refuses a wrong API key', async () => {
    await assert.rejects(Sandbox.create({ apiKey: 'e2b_' + '0'.repeat(40) }), AuthenticationError)
    await assert.rejects(Sandbox.kill(a.sandboxId, { apiKey: 'e2b_' + '1'.repeat(40) }), AuthenticationError)
  })

  it('keeps a sandbox from a caller without its access token', async () => {
    // The sandbox plane carries no API key: the access token from create is
    // all that tells the owner apart.
    const code = JSON.stringify({ code: "open('/home/user/only-in-a.txt').read()" })
    const statuses = [
      await forged(a.sandboxId, '/execute', { method: 'POST', body: code,
        headers: { 'Content-Type': 'application/json', 'E2b-Sandbox-Port': '49999' } }),
      await forged(a.sandboxId, '/execute', { method: 'POST', body: code,
        headers: { 'Content-Type': 'application/json', 'E2b-Sandbox-Port': '49999', 'X-API-KEY': apiKey } }),
      await forged(a.sandboxId, '/contexts', { headers: { 'E2b-Sandbox-Port': '49999' } }),
      await forged(a.sandboxId, '/files?path=%2Fhome%2Fuser%2Fonly-in-a.txt', { headers: { 'E2b-Sandbox-Port': '49983' } }),
      await forged(a.sandboxId, '/files?path=%2Fhome%2Fuser%2Fonly-in-a.txt',
        { headers: { 'E2b-Sandbox-Port': '49983', 'X-Access-Token': 'not-the-token' } }),
      await forged(a.sandboxId, '/process.Process/List', { method: 'POST', body: '{}',
        headers: { 'Content-Type': 'application/json', 'Connect-Protocol-Version': '1', 'E2b-Sandbox-Port': '49983' } }),
    ]
    assert.ok(statuses.every((s) => s >= 400 && s < 500), `statuses: ${statuses}`)
  })

  it('keeps a sandbox from another token', async (t) => {
    if (!otherKey) {
      t.skip('CORRAL_E2B_OTHER_KEY is not set')
      return
    }
    const opts = { apiKey: otherKey }
    await assert.rejects(Sandbox.connect(a.sandboxId, opts))
    await assert.rejects(Sandbox.getInfo(a.sandboxId, opts))
    await assert.rejects(Sandbox.setTimeout(a.sandboxId, 60_000, opts))
    const killed = await Sandbox.kill(a.sandboxId, opts).catch(() => false)
    assert.equal(killed, false)
    // Its own sandboxes are another matter.
    const mine = await Sandbox.create(opts)
    try {
      assert.equal((await mine.runCode('6 * 7')).text, '42')
      assert.equal(await Sandbox.kill(mine.sandboxId).catch(() => false), false)
      assert.equal((await mine.runCode('1 + 1')).text, '2', 'the first token killed the other\'s sandbox')
    } finally {
      await mine.kill()
    }
    assert.equal((await a.runCode('in_a + 1')).text, '2', 'the other token hurt a')
  })
})

// The control plane: an unknown sandbox is a 404 with E2B's error body.
describe('the control plane', () => {
  it('answers 404 {code, message} for an unknown sandbox', async () => {
    const res = await fetch(`${apiUrl}/sandboxes/does-not-exist`, { method: 'DELETE', headers: { 'X-API-KEY': apiKey } })
    assert.equal(res.status, 404)
    const body = await res.json()
    assert.equal(body.code, 404)
    assert.equal(typeof body.message, 'string')
  })
})
