// runs.mjs: an agent run on corral serve, followed as it goes, its files and archive.
//
//   corral serve --model-url http://127.0.0.1:11434/v1 &      # a model endpoint runs may name
//   export CORRAL_URL=http://127.0.0.1:8745 CORRAL_TOKEN=$(cat ~/.local/state/corral/serve/token)
//   export MODEL_BASE_URL=http://127.0.0.1:11434/v1 MODEL=qwen2.5-coder:7b MODEL_API_KEY=...
//   node clients/js/examples/runs.mjs
import {Corral} from '../src/index.js'

const env = process.env
const client = new Corral()
const run = await client.runs.create('the total sales per product in sales.csv; write output/report.txt', {
  model: env.MODEL, baseUrl: env.MODEL_BASE_URL,
  apiKey: env.MODEL_API_KEY,                            // sent as X-Model-Api-Key, never kept
  inputs: {'sales.csv': 'product,sales\nwidget,3\n'},   // staged read-only at input/sales.csv
  maxIterations: 8,
})
console.log('run', run.id)
for await (const ev of run.events()) {                  // resumes by itself if the stream breaks
  console.log(`  [${ev.id}] ${ev.type}`)
  if (ev.type === 'tool_result') process.stdout.write(ev.exec?.stdout ?? '')
}
await run.wait()                                        // the run as it ended (answer, usage, artifacts)
console.log('status:', run.status)
console.log('answer:', run.answer)
for (const a of await run.artifacts()) console.log('artifact:', a.path, a.size)
process.stdout.write(new TextDecoder().decode(await run.artifact('report.txt')))
console.log('archive:', (await run.archive()).length, 'bytes')
