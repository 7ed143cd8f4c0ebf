// Human approval in the web view (docs/modes.md, "Human approval"; issue 18's
// Approvals): started by tests/e2e/test_webview.py (test_webview_approvals),
// which runs `corral serve` and a scripted model server and passes:
//   CORRAL_WEBVIEW_MODULES  where node_modules/playwright-core is
//   CORRAL_TEST_URL, CORRAL_TEST_TOKEN  the server and its token
//   CORRAL_TEST_MODEL       the model server: a shell step to deny, one to
//                           edit, then the answer
//   CORRAL_TEST_HOSTILE     a string in the first step's code that must show
//                           as text (it would set window.__pwned)
// Prints "ok - STEP" for each step; exits 1 at the first that fails.
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(path.join(process.env.CORRAL_WEBVIEW_MODULES, 'node_modules', 'x.js'));
const { chromium } = require('playwright-core');

const URL0 = process.env.CORRAL_TEST_URL;
const TOKEN = process.env.CORRAL_TEST_TOKEN;
const HOSTILE = process.env.CORRAL_TEST_HOSTILE;
const T = 30000;

function check(cond, what) {
  if (!cond) throw new Error(what);
}

let page;
async function step(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
  } catch (e) {
    console.log(`not ok - ${name}: ${e.stack || e}`);
    const text = await page.evaluate(() => document.body.innerText).catch(() => '(gone)');
    console.log(`# ${page.errors.join('; ')}\n${text.slice(0, 4000).replace(/^/gm, '#   ')}`);
    throw e;
  }
  console.log(`ok - ${name} (${Date.now() - t0} ms)`);
}

const browser = await chromium.launch({
  executablePath: process.env.CORRAL_CHROMIUM || '/usr/bin/chromium',
  args: process.getuid() === 0 ? ['--no-sandbox'] : [],
});
let failed = false;
try {
  const ctx = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  page = await ctx.newPage();
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) page.errors.push(`console: ${m.text()}`);
  });
  const r = await page.goto(`${URL0}/?token=${TOKEN}`);
  check(r.ok(), `login: ${r.status()}`);
  let runId;

  await step('a run that asks before each step waits on its page', async () => {
    runId = await page.evaluate(async (base) => {
      const res = await fetch('/v1/runs', {
        method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ task: 'approve me', model: { base_url: base, model: 'gpt-test' }, approve: 'always', verify: false }),
      });
      return (await res.json()).id;
    }, process.env.CORRAL_TEST_MODEL);
    check(runId, 'no run started');
    await page.goto(`${URL0}/?run=${runId}`);
    await page.waitForSelector('#approval-1 button.approve', { timeout: T });
    // The code (in the step above it) and the review's findings are shown, as text.
    const code = await page.$eval('#step-1 pre.code', (e) => e.innerText);
    check(code.includes(HOSTILE), `the step's code: ${code}`);
    const box = await page.$eval('#approval-1', (e) => e.innerText);
    check(box.includes('SH-NET-004'), `the findings in the question: ${box}`);
    check(await page.evaluate(() => window.__pwned) === undefined, 'the code ran in the page');
  });

  await step('deny with a reason: the run goes on to the next step', async () => {
    await page.fill('#approval-1 input.reason', 'no network here, use the input');
    await page.click('#approval-1 button.deny');
    await page.waitForSelector('#approval-1.answered', { timeout: T });
    const box = await page.$eval('#approval-1', (e) => e.innerText);
    check(/denied by api/.test(box) && box.includes('no network here, use the input'), `answered box: ${box}`);
    await page.waitForSelector('#approval-2 button.edit-open', { timeout: T });
  });

  await step('edit: the edited code runs', async () => {
    await page.click('#approval-2 button.edit-open');
    await page.fill('#approval-2 textarea.code-edit', 'echo edited-in-the-browser');
    await page.click('#approval-2 button.run-edit');
    await page.waitForSelector('#approval-2.answered', { timeout: T });
    await page.waitForSelector('#answer', { timeout: T });
    const out = await page.$eval('#step-2 pre.stdout', (e) => e.innerText);
    check(out.includes('edited-in-the-browser'), `step 2's output: ${out}`);
    const s = await page.$eval('#run-status', (e) => e.innerText);
    check(s === 'answered', `status ${s}`);
  });

  await step('a late joiner sees the questions answered', async () => {
    const p2 = await ctx.newPage();
    await p2.goto(`${URL0}/?run=${runId}`);
    await p2.waitForSelector('#answer', { timeout: T });
    check((await p2.$$('.approval.answered')).length === 2, 'two answered questions');
    check((await p2.$$('.approval button')).length === 0, 'buttons left on answered questions');
    check(page.errors.length === 0, page.errors.join('; '));
  });
} catch (e) {
  failed = true;
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
