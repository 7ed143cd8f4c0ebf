// The web view (docs/webview.md) in headless Chromium (Debian's chromium,
// driven by playwright-core): started by tests/e2e/test_webview.py, which
// runs `corral serve` and the scripted model servers and passes:
//   CORRAL_WEBVIEW_MODULES  where node_modules/playwright-core is
//   CORRAL_TEST_URL         http://127.0.0.1:PORT (the server)
//   CORRAL_TEST_TOKEN       its token
//   CORRAL_TEST_MODEL       the model server of the main run (three turns, the
//                           second slow enough for a second browser to join)
//   CORRAL_TEST_MODEL_CANCEL a model server that answers after 30 s
//   CORRAL_TEST_HOSTILE     a JSON list of strings that must show as text
//   CORRAL_TEST_CSV_ROWS    a JSON list of the CSV preview's rows (no header)
//   CORRAL_TEST_TRACE       a trace file to upload (every mode's event, hostile text)
//   CORRAL_TEST_TRACE_HOSTILE a JSON list of its strings that must show as text
//   CORRAL_TEST_BIG_TRACE   a file a byte over the page's cap for a trace
//   CORRAL_WEBVIEW_SHOTS    a directory: screenshots of the runs list and the
//                           run page are written there (docs/img/)
// Prints "ok - STEP" for each step; exits 1 at the first that fails.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const require = createRequire(path.join(process.env.CORRAL_WEBVIEW_MODULES, 'node_modules', 'x.js'));
const { chromium } = require('playwright-core');

const URL0 = process.env.CORRAL_TEST_URL;
const TOKEN = process.env.CORRAL_TEST_TOKEN;
const HOSTILE = JSON.parse(process.env.CORRAL_TEST_HOSTILE);
const CSV_ROWS = JSON.parse(process.env.CORRAL_TEST_CSV_ROWS);
const SHOTS = process.env.CORRAL_WEBVIEW_SHOTS;
const TRACE_HOSTILE = JSON.parse(process.env.CORRAL_TEST_TRACE_HOSTILE);
const T = 30000; // the longest wait for anything to appear

function check(cond, what) {
  if (!cond) throw new Error(what);
}

async function step(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
  } catch (e) {
    console.log(`not ok - ${name}: ${e.stack || e}`);
    for (const p of PAGES) {
      // what the page showed, for the log
      const text = await p.evaluate(() => document.body.innerText).catch(() => '(gone)');
      console.log(`# ${p.url()}: ${p.errors.join('; ')}\n${text.slice(0, 4000).replace(/^/gm, '#   ')}`);
    }
    throw e;
  }
  console.log(`ok - ${name} (${Date.now() - t0} ms)`);
}

// A page whose script errors and policy violations fail the test, and that
// shouts if anything hostile ran (each payload sets window.__pwned).
const PAGES = [];
async function newPage(browser, scheme = 'light') {
  const ctx = await browser.newContext({ colorScheme: scheme, viewport: { width: 1100, height: 900 } });
  const page = await ctx.newPage();
  PAGES.push(page);
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) page.errors.push(`console: ${m.text()}`);
  });
  page.on('dialog', (d) => { page.errors.push(`a dialog opened: ${d.message()}`); d.dismiss(); });
  // The login: the token URL sets the cookie and redirects to /.
  const r = await page.goto(`${URL0}/?token=${TOKEN}`);
  check(r.ok(), `login: ${r.status()}`);
  check(new URL(page.url()).search === '', `the token left the address bar: ${page.url()}`);
  return page;
}

async function noHarm(page, where) {
  const pwned = await page.evaluate(() => window.__pwned);
  check(pwned === undefined, `${where}: hostile code ran (window.__pwned = ${pwned})`);
  const bad = await page.evaluate(() => ({
    scripts: [...document.scripts].map((s) => s.src).filter((s) => !s.endsWith('/ui/app.js')),
    handlers: [...document.querySelectorAll('*')].filter((e) => [...e.attributes].some((a) => a.name.startsWith('on'))).length,
    imgs: [...document.querySelectorAll('img')].filter((i) => !i.src.startsWith('blob:')).length,
    js: [...document.querySelectorAll('a')].filter((a) => /^javascript:/i.test(a.getAttribute('href') || '')).length,
    markup: [...document.querySelectorAll('#main b, #main i, #main u, #main iframe, #main object, #main embed, #main style')].length,
  }));
  check(bad.scripts.length === 0, `${where}: scripts other than app.js: ${bad.scripts}`);
  check(bad.handlers === 0, `${where}: ${bad.handlers} elements with on* attributes`);
  check(bad.imgs === 0, `${where}: ${bad.imgs} images not from the page's own blobs`);
  check(bad.js === 0, `${where}: javascript: links`);
  check(bad.markup === 0, `${where}: ${bad.markup} elements of markup from the run (b, i, iframe, ...)`);
  check(page.errors.length === 0, `${where}: ${page.errors.join('; ')}`);
}

const browser = await chromium.launch({
  executablePath: process.env.CORRAL_CHROMIUM || '/usr/bin/chromium',
  // Chromium's own sandbox cannot run as root; the page is the test's.
  args: process.getuid() === 0 ? ['--no-sandbox'] : [],
});
let failed = false;
try {
  const page = await newPage(browser);
  let runId;

  await step('the page and its policy', async () => {
    const r = await page.request.get(`${URL0}/`, { headers: { Accept: 'text/html' } });
    const csp = r.headers()['content-security-policy'] || '';
    check(/script-src 'self'/.test(csp) && !/unsafe/.test(csp), `CSP: ${csp}`);
    check(r.headers()['content-type'].startsWith('text/html'), 'content type of /');
    const js = await page.request.get(`${URL0}/ui/app.js`);
    check(js.headers()['content-type'].startsWith('text/javascript'), 'content type of app.js');
    check(!/innerHTML\s*=|eval\(|new Function/.test(await js.text()), 'app.js uses innerHTML or eval');
    await page.waitForSelector('h1:text("Runs")', { timeout: T });
    await page.waitForSelector('form#start', { timeout: T });
  });

  await step('start a run from the form, with an input file', async () => {
    await page.fill('textarea[name=task]', HOSTILE[0]);
    await page.fill('input[name=base_url]', process.env.CORRAL_TEST_MODEL);
    await page.fill('input[name=model]', 'gpt-test');
    await page.setInputFiles('input[name=inputs]', {
      name: 'data.csv', mimeType: 'text/csv', buffer: readFileSync(process.env.CORRAL_TEST_INPUT),
    });
    await Promise.all([page.waitForURL(/\?run=/, { timeout: T }), page.click('form#start button[type=submit]')]);
    runId = new URL(page.url()).searchParams.get('run');
    check(runId, 'no run id in the address');
  });

  let second;
  await step('steps appear live; a second browser joining midway sees the earlier ones', async () => {
    // its output as it comes, before the step has ended
    await page.waitForFunction(() => /LIVE-MARKER/.test(document.querySelector('#step-1 pre.stdout.live')?.innerText || ''), null, { timeout: T });
    check(!(await page.$('#step-1 .result .facts')), 'the output came only with the step\'s result');
    await page.waitForSelector('#step-1 .result .facts', { timeout: T });
    check(!(await page.$('#step-1 pre.live')), 'the live output stayed after the result');
    check(!(await page.$('#answer')), 'the run had ended before the second browser joined: the test is too slow');
    // the figure under its step while the run goes (the API serves a going run's output/)
    const fig = await page.waitForSelector('#step-1 .result figure img', { timeout: T });
    await page.waitForFunction((i) => i.complete && i.naturalWidth > 0, fig, { timeout: T });
    check(!(await page.$('#answer')), 'the figure came only after the run had ended');
    check(await page.$eval('#cancel', (b) => !b.disabled), 'cancel is not offered while the run goes');
    second = await newPage(browser, 'dark');
    await second.goto(`${URL0}/?run=${runId}#step-1`);
    await second.waitForSelector('#step-1 pre.code', { timeout: T });
    const code1 = await second.$eval('#step-1 pre.code', (e) => e.innerText);
    check(code1.includes("output/table.csv"), `step 1's code in the second browser: ${code1}`);
    check(await second.$eval('#step-1 pre.code', (e) => e.querySelectorAll('span.tok-kw').length > 0), 'no highlighted keyword');
    await page.waitForSelector('#step-2', { timeout: T });
    await second.waitForSelector('#step-2 pre.code.lang-bash', { timeout: T });
    await page.waitForSelector('#answer', { timeout: T });
    await second.waitForSelector('#answer', { timeout: T });
    for (const p of [page, second]) {
      const s = await p.$eval('#run-status', (e) => e.innerText);
      check(s === 'answered', `status ${s}`);
    }
  });

  await step('the figure is displayed', async () => {
    const img = await page.waitForSelector('#artifacts img', { timeout: T });
    await page.waitForFunction((i) => i.complete && i.naturalWidth > 0, img, { timeout: T });
    const w = await img.evaluate((i) => i.naturalWidth);
    check(w > 0, 'the figure has no size');
  });

  await step('the CSV preview has the right rows, and sorts', async () => {
    await page.waitForSelector('#artifacts table.csv', { timeout: T });
    const rows = await page.$$eval('#artifacts table.csv tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.innerText)));
    check(JSON.stringify(rows) === JSON.stringify(CSV_ROWS), `rows ${JSON.stringify(rows)} != ${JSON.stringify(CSV_ROWS)}`);
    await page.click('#artifacts table.csv thead th:nth-child(2) button'); // "qty": numbers, ascending
    const qty = await page.$$eval('#artifacts table.csv tbody tr td:nth-child(2)', (tds) => tds.map((t) => Number(t.innerText)));
    check(qty.every((v, i) => i === 0 || qty[i - 1] <= v), `not sorted ascending: ${qty}`);
    await page.keyboard.press('Enter'); // the header's button has the focus: descending
    const qty2 = await page.$$eval('#artifacts table.csv tbody tr td:nth-child(2)', (tds) => tds.map((t) => Number(t.innerText)));
    check(qty2.every((v, i) => i === 0 || qty2[i - 1] >= v), `not sorted descending: ${qty2}`);
  });

  await step('hostile text shows verbatim as text and never runs', async () => {
    for (const p of [page, second]) {
      const text = await p.evaluate(() => document.body.innerText);
      for (const h of HOSTILE) check(text.includes(h), `not shown verbatim: ${JSON.stringify(h)}`);
      await noHarm(p, p === page ? 'the first browser' : 'the second browser');
    }
    // the answer's markdown was rendered (its own emphasis), the raw HTML not
    check(await page.$eval('#answer', (a) => a.querySelector('strong') !== null), 'markdown emphasis not rendered');
  });

  await step('dark for a dark system, and a phone-sized screen scrolls no page sideways', async () => {
    const bg = (p) => p.evaluate(() => getComputedStyle(document.body).backgroundColor.match(/\d+/g).slice(0, 3).map(Number));
    const light = await bg(page), dark = await bg(second);
    check(light.reduce((a, b) => a + b) > 600 && dark.reduce((a, b) => a + b) < 150, `backgrounds ${light} / ${dark}`);
    await second.setViewportSize({ width: 390, height: 844 });
    const over = await second.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check(over <= 0, `the run page is ${over} px wider than a phone's screen`);
  });

  await step('token usage per turn', async () => {
    const turns = await page.$$eval('#usage tbody tr', (trs) => trs.length);
    check(turns === 3, `${turns} turns in the usage table`);
  });

  await step('the replay scrubber', async () => {
    await page.waitForSelector('#scrub', { timeout: T });
    await page.fill('#scrub', '1');
    check(await page.$eval('#step-2', (e) => e.classList.contains('hidden')), 'step 2 shown at step 1');
    check(await page.$eval('#step-1', (e) => !e.classList.contains('hidden')), 'step 1 hidden at step 1');
    await page.fill('#scrub', '2');
    check(await page.$eval('#step-2', (e) => !e.classList.contains('hidden')), 'step 2 hidden at the end');
  });

  if (SHOTS) {
    await page.evaluate(() => { document.activeElement?.blur(); window.scrollTo(0, 0); });
    await page.screenshot({ path: path.join(SHOTS, 'webview-run.png'), fullPage: true });
  }

  await step('cancel', async () => {
    await page.goto(`${URL0}/`);
    await page.fill('textarea[name=task]', 'wait for a model that is slow');
    await page.fill('input[name=base_url]', process.env.CORRAL_TEST_MODEL_CANCEL);
    await page.fill('input[name=model]', 'gpt-test');
    await Promise.all([page.waitForURL(/\?run=/, { timeout: T }), page.click('form#start button[type=submit]')]);
    await page.waitForFunction(() => document.querySelector('#cancel') && !document.querySelector('#cancel').disabled, null, { timeout: T });
    await page.click('#cancel');
    await page.waitForFunction(() => document.querySelector('#run-status')?.innerText === 'cancelled', null, { timeout: T });
  });

  await step('the runs list', async () => {
    await page.goto(`${URL0}/`);
    await page.waitForSelector(`#runs tr[data-id="${runId}"]`, { timeout: T });
    const cells = await page.$eval(`#runs tr[data-id="${runId}"]`, (tr) => [...tr.cells].map((c) => c.innerText));
    check(cells[0] === HOSTILE[0], `task cell ${JSON.stringify(cells[0])}`);
    check(cells[1] === 'answered' && cells[3] === '3' && Number(cells[4]) > 0, `row ${JSON.stringify(cells)}`);
    check((await page.$$('#runs tbody tr')).length === 2, 'two runs listed');
    await noHarm(page, 'the runs list');
    if (SHOTS) await page.screenshot({ path: path.join(SHOTS, 'webview-runs.png') });
  });

  await step('keyboard: Tab reaches the first run', async () => {
    let found = false;
    for (let i = 0; i < 12 && !found; i++) {
      await page.keyboard.press('Tab');
      found = await page.evaluate((id) => document.activeElement?.closest('tr')?.dataset.id === id || document.activeElement?.closest('tr') !== null, runId);
    }
    check(found, 'no run link reached with Tab');
  });

  await step('the sandboxes page: a sandbox listed, then killed', async () => {
    const sid = await page.evaluate(async () => {
      const r = await fetch('/v1/sandboxes', { method: 'POST', body: '{}', credentials: 'same-origin' });
      return (await r.json()).id;
    });
    check(sid, 'no sandbox made');
    const ran = await page.evaluate(async (id) => {
      const r = await fetch(`/v1/sandboxes/${id}/exec`, { method: 'POST', body: JSON.stringify({ code: '1/0' }), credentials: 'same-origin' });
      const body = await r.text(); // the step's end
      return `${r.status} ${body.slice(0, 200)}`;
    }, sid);
    check(/^200 /.test(ran), `a step in the sandbox: ${ran}`);
    await page.goto(`${URL0}/?view=sandboxes`);
    await page.waitForSelector(`#sandboxes tr[data-id="${sid}"]`, { timeout: T });
    // its usage and its last step
    const cells = await page.$eval(`#sandboxes tr[data-id="${sid}"]`, (tr) => [...tr.cells].map((c) => c.innerText));
    check(/ms|s$/.test(cells[3]) && /iB$/.test(cells[4]), `usage cells ${JSON.stringify(cells)}`);
    const recent = await page.$$eval(`table.recent[data-id="${sid}"] tbody tr`, (trs) => trs.map((tr) => [...tr.cells].map((c) => c.innerText)));
    check(recent.length === 1 && recent[0][0] === '1' && recent[0][2] === 'error' && recent[0][3] === '1', `recent ${JSON.stringify(recent)}`);
    await page.click(`#sandboxes tr[data-id="${sid}"] button.danger`);
    await page.waitForSelector(`#sandboxes tr[data-id="${sid}"]`, { state: 'detached', timeout: T });
    await noHarm(page, 'the sandboxes page');
  });

  await step('a trace file uploaded plays back: the modes and the network drawn, hostile text as text', async () => {
    await page.goto(`${URL0}/`);
    await page.waitForSelector('#trace-file', { timeout: T });
    // too big: refused unread, with the cap in words
    await page.setInputFiles('#trace-file', process.env.CORRAL_TEST_BIG_TRACE);
    await page.waitForFunction(() => /at most 32\.0 MiB/.test(document.querySelector('#trace-upload .error')?.innerText || ''), null, { timeout: T });
    await page.setInputFiles('#trace-file', { name: 'trace.jsonl', mimeType: 'application/json', buffer: readFileSync(process.env.CORRAL_TEST_TRACE) });
    await page.waitForSelector('#answer', { timeout: T });
    const text = await page.evaluate(() => document.body.innerText);
    for (const h of TRACE_HOSTILE) check(text.includes(h), `not shown verbatim from the trace: ${JSON.stringify(h)}`);
    for (const sel of ['.mode.verify', '.mode.plan', '.mode.compact', '.mode.reproduce', '#step-1 .net.refused', '#step-1 .net.ok', '#step-1 .role'])
      check(await page.$(sel), `nothing drawn for ${sel}`);
    // the cost of a turn and of the run, from the prices the trace's events carry
    const costs = await page.$$eval('#usage td.cost', (tds) => tds.map((e) => e.textContent));
    check(JSON.stringify(costs) === '["$0.001200"]', `the cost of the turn: ${costs}`);
    const total = await page.$eval('#cost', (e) => e.textContent);
    check(total === 'cost $0.0345', `the cost of the run: ${total}`);
    check(/1 lines that are not events skipped/.test(await page.$eval('#trace-source', (e) => e.innerText)), 'the bad line not counted');
    await page.fill('#scrub', '0');
    check(await page.$eval('.mode.reproduce', (e) => e.classList.contains('hidden')), 'reproduce shown at step 0');
    check(await page.$eval('.mode.plan', (e) => !e.classList.contains('hidden')), 'the first plan hidden at step 0');
    await noHarm(page, 'the replayed trace');
  });

  await step('no login, no data: the page says how to log in', async () => {
    const ctx = await browser.newContext();
    const p = await ctx.newPage();
    await p.goto(`${URL0}/`);
    await p.waitForSelector('h1:text("Log in")', { timeout: T });
    await ctx.close();
  });
} catch (e) {
  failed = true;
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
