// quickstart.mjs: a sandbox from corral serve, Python in it streamed, a file, a tar.
//
//   corral serve &                                   # prints http://127.0.0.1:8745/?token=...
//   export CORRAL_URL=http://127.0.0.1:8745 CORRAL_TOKEN=$(cat ~/.local/state/corral/serve/token)
//   node clients/js/examples/quickstart.mjs
import {Corral, NotFound} from '../src/index.js' // in a project: from 'corral-client'

const client = new Corral() // $CORRAL_URL and $CORRAL_TOKEN
const sb = await client.sandboxes.create({limits: {timeout: 20}, metadata: {example: 'quickstart'}})
try {
  // State persists from step to step.
  await sb.runCode("import pandas as pd\ndf = pd.DataFrame({'x': [1, 2, 3]})")
  // Stream a step: output as it comes, then the result.
  const r = await sb.runCode("for i in range(3): print('tick', i)\ndf.x.sum() * 7", {
    onStdout: (chunk) => process.stdout.write(chunk),
    onResult: (res) => console.log('result:', res.text),
  })
  if (r.text !== '42') throw new Error(`unexpected ${r.text}`)

  // An exception comes back as a result, not a thrown error.
  const e = await sb.runCode('1 / 0')
  console.log('error:', e.error.name, e.error.value)

  // Files in, files out.
  await sb.files.write('data/in.csv', 'a,b\n1,2\n3,4\n')
  process.stdout.write((await sb.runShell('wc -l data/in.csv')).stdout)
  await sb.runCode("pd.read_csv('data/in.csv').sum().to_csv('data/out.csv')")
  process.stdout.write(await sb.files.readText('data/out.csv'))
  const tar = await sb.files.downloadTar()
  console.log('workspace tar:', tar.length, 'bytes')
} finally {
  await sb.kill()
}
try {
  await client.sandboxes.get(sb.id)
  process.exitCode = 1
} catch (err) {
  if (!(err instanceof NotFound)) throw err
  console.log('gone:', err.message)
}
