// corral's web view (docs/webview.md): the runs list, a run followed live over
// its server-sent events, the sandboxes.  Everything a run, a model or a file
// says is put in the page as text (textContent, createTextNode), never as
// markup: this file never assigns innerHTML or calls eval, and the server's
// Content-Security-Policy would refuse inline script if it did.
'use strict';

// ---- small helpers ----

// el('td', {class: 'num'}, 'text', child...): an element with attributes and
// children; strings become text nodes.
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const k of kids) add(e, k);
  return e;
}
// add(parent, kid...): appends each kid (a node, text, or an array of them).
function add(parent, ...kids) {
  for (const kid of kids) {
    if (kid === undefined || kid === null || kid === false) continue;
    if (Array.isArray(kid)) add(parent, ...kid);
    else parent.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
}
function clear(node) { while (node.firstChild) node.firstChild.remove(); }
const main = () => document.getElementById('main');
const params = new URLSearchParams(location.search);

function fmtMs(ms) {
  if (ms === undefined || ms === null) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}
function fmtBytes(n) {
  if (n === undefined || n === null) return '';
  const u = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return `${i ? n.toFixed(1) : n} ${u[i]}`;
}
function fmtTime(sec) {
  if (!sec) return '';
  const d = new Date(sec * 1000);
  return d.toLocaleString();
}
function badge(status) {
  const s = String(status || '');
  return el('span', { class: `badge s-${s.replace(/[^a-z_]/g, '')}` }, s);
}
function tokens(u) {
  if (!u) return '';
  return (u.prompt_tokens || 0) + (u.completion_tokens || 0);
}

// The API, with the login cookie (same origin).  Throws an Error whose
// message is the server's.
async function api(method, path, body) {
  const init = { method, credentials: 'same-origin', headers: {} };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers['Content-Type'] = 'application/json';
  }
  const r = await fetch(path, init);
  const text = await r.text();
  let j = null;
  try { j = text ? JSON.parse(text) : null; } catch (e) { j = null; }
  if (!r.ok) {
    const err = new Error(j && j.error ? j.error.message : `${r.status} ${r.statusText}`);
    err.status = r.status;
    throw err;
  }
  return j;
}

function showError(where, e) {
  if (e.status === 401) {
    clear(where);
    add(where, el('div', { class: 'card', role: 'alert' },
      el('h1', {}, 'Log in'),
      el('p', {}, 'Open the address that corral serve printed when it started (it ends in ?token=…). ',
        'The token is kept in a cookie of this browser only.')));
    return;
  }
  add(where, el('p', { class: 'error', role: 'alert' }, e.message));
}

function setConn(text) { document.getElementById('conn').textContent = text; }

// ---- syntax highlighting (Python and shell) ----

const PY_KW = new Set(('False None True and as assert async await break class continue def del elif else except ' +
  'finally for from global if import in is lambda nonlocal not or pass raise return try while with yield match case')
  .split(' '));
const PY_BUILTIN = new Set(('print len range open int float str list dict set tuple sorted sum min max abs enumerate ' +
  'zip map filter isinstance type round any all repr super object Exception').split(' '));
const SH_KW = new Set(('if then else elif fi for in do done while until case esac function return select time ' +
  'export local readonly set unset shift exit').split(' '));

// [[class or null, text], ...] covering the whole of code.
function tokenize(code, lang) {
  const out = [];
  const push = (cls, t) => { if (t) out.push([cls, t]); };
  const py = lang !== 'bash';
  let i = 0;
  const n = code.length;
  let plain = '';
  const flush = () => { push(null, plain); plain = ''; };
  while (i < n) {
    const c = code[i];
    const rest = code.slice(i);
    let m;
    if (c === '#' && (py || i === 0 || /\s/.test(code[i - 1]))) {
      const end = code.indexOf('\n', i);
      flush(); push('tok-com', code.slice(i, end < 0 ? n : end)); i = end < 0 ? n : end; continue;
    }
    if (py && (m = /^(?:[rRbBfFuU]{0,2})("""|''')/.exec(rest))) {
      const q = m[1];
      const end = code.indexOf(q, i + m[0].length);
      const stop = end < 0 ? n : end + 3;
      flush(); push('tok-str', code.slice(i, stop)); i = stop; continue;
    }
    if ((m = (py ? /^(?:[rRbBfFuU]{0,2})(["'])/ : /^(["'])/).exec(rest)) &&
        (m[0].length === 1 || !/[\w]/.test(code[i - 1] || ''))) {
      const q = m[1];
      let j = i + m[0].length;
      while (j < n && code[j] !== q && !(py && code[j] === '\n')) j += code[j] === '\\' && q === '"' || (py && code[j] === '\\') ? 2 : 1;
      const stop = Math.min(n, j + 1);
      flush(); push('tok-str', code.slice(i, stop)); i = stop; continue;
    }
    if (!py && c === '$' && (m = /^\$(?:\{[^}\n]*\}|[A-Za-z_][A-Za-z0-9_]*|[0-9@#?$!*-])/.exec(rest))) {
      flush(); push('tok-var', m[0]); i += m[0].length; continue;
    }
    if (py && c === '@' && (m = /^@[A-Za-z_][\w.]*/.exec(rest)) && /(^|\n)\s*$/.test(code.slice(0, i))) {
      flush(); push('tok-dec', m[0]); i += m[0].length; continue;
    }
    if (/[0-9]/.test(c) && !/[\w]/.test(code[i - 1] || '') && (m = /^(?:0[xX][0-9a-fA-F_]+|[0-9][0-9_]*\.?[0-9_]*(?:[eE][+-]?[0-9]+)?j?)/.exec(rest))) {
      flush(); push('tok-num', m[0]); i += m[0].length; continue;
    }
    if (/[A-Za-z_]/.test(c) && !/[\w$]/.test(code[i - 1] || '') && (m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(rest))) {
      const w = m[0];
      const after = code.slice(i + w.length);
      let cls = null;
      if (py ? PY_KW.has(w) : SH_KW.has(w)) cls = 'tok-kw';
      else if (py && (PY_BUILTIN.has(w) || /^\s*\(/.test(after))) cls = 'tok-fn';
      flush(); push(cls, w); i += w.length; continue;
    }
    plain += c; i++;
  }
  flush();
  return out;
}

function codeBlock(code, lang) {
  const pre = el('pre', { class: `code lang-${lang}` });
  const c = el('code');
  for (const [cls, t] of tokenize(code, lang)) add(c, cls ? el('span', { class: cls }, t) : t);
  pre.append(c);
  return pre;
}

// ---- markdown, rendered as DOM nodes ----
// A small subset (headings, paragraphs, lists, quotes, fenced code, tables,
// emphasis, code spans, links to http(s) and relative addresses).  Raw HTML
// is not markdown here: it stays text.

function inline(text) {
  const out = [];
  // Emphasis only at word edges (CommonMark's rule for "_"; "a__b__c" stays text).
  const re = /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)|(?<!\w)\*\*([^*]+)\*\*(?!\w)|(?<!\w)__([^_]+)__(?!\w)|(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])|\[([^\]]+)\]\(([^)\s]+)\)/g;
  let last = 0;
  let m;
  while ((m = re.exec(text))) {
    if (m.index > last) out.push(text.slice(last, m.index));
    if (m[1]) out.push(el('code', {}, m[2]));
    else if (m[3] || m[4]) out.push(el('strong', {}, inline(m[3] || m[4])));
    else if (m[5]) out.push(el('em', {}, inline(m[5])));
    else {
      let href = m[7];
      // Only web addresses and the page's own: no javascript:, data: or other schemes.
      const ok = /^https?:\/\//i.test(href) || /^[#./A-Za-z0-9_-][^:]*$/.test(href);
      out.push(ok ? el('a', { href, rel: 'noopener noreferrer', target: '_blank' }, inline(m[6])) : m[0]);
    }
    last = re.lastIndex;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

function markdown(src) {
  const root = el('div', { class: 'md' });
  const lines = String(src || '').replace(/\r\n?/g, '\n').split('\n');
  let i = 0;
  const isBlockStart = (l) => /^(#{1,6}\s|```|~~~|>\s?|\s*([-*+]|\d+[.)])\s+|\|)/.test(l);
  while (i < lines.length) {
    const l = lines[i];
    let m;
    if (/^\s*$/.test(l)) { i++; continue; }
    if ((m = /^(```|~~~)\s*([\w+-]*)/.exec(l))) {
      const fence = m[1];
      const body = [];
      i++;
      while (i < lines.length && !lines[i].startsWith(fence)) body.push(lines[i++]);
      i++;
      const lang = /^(sh|bash|shell|console)$/.test(m[2]) ? 'bash' : m[2] === 'python' || m[2] === 'py' ? 'python' : null;
      root.append(lang ? codeBlock(body.join('\n'), lang) : el('pre', {}, el('code', {}, body.join('\n'))));
      continue;
    }
    if ((m = /^(#{1,6})\s+(.*)$/.exec(l))) {
      root.append(el(`h${Math.min(6, m[1].length + 2)}`, {}, inline(m[2])));
      i++;
      continue;
    }
    if (/^>\s?/.test(l)) {
      const body = [];
      while (i < lines.length && /^>\s?/.test(lines[i])) body.push(lines[i++].replace(/^>\s?/, ''));
      root.append(el('blockquote', {}, markdown(body.join('\n'))));
      continue;
    }
    if (/^\|/.test(l) && i + 1 < lines.length && /^\|?\s*:?-+/.test(lines[i + 1])) {
      const cells = (s) => s.trim().replace(/^\|/, '').replace(/\|$/, '').split('|').map((c) => c.trim());
      const head = cells(l);
      i += 2;
      const rows = [];
      while (i < lines.length && /^\|/.test(lines[i])) rows.push(cells(lines[i++]));
      root.append(el('div', { class: 'scroll' }, el('table', {},
        el('thead', {}, el('tr', {}, head.map((h) => el('th', {}, inline(h))))),
        el('tbody', {}, rows.map((r) => el('tr', {}, r.map((c) => el('td', {}, inline(c)))))))));
      continue;
    }
    if ((m = /^\s*([-*+]|\d+[.)])\s+/.exec(l))) {
      const ordered = /\d/.test(m[1]);
      const list = el(ordered ? 'ol' : 'ul');
      while (i < lines.length && (m = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(lines[i]))) {
        list.append(el('li', {}, inline(m[2])));
        i++;
      }
      root.append(list);
      continue;
    }
    const para = [];
    while (i < lines.length && !/^\s*$/.test(lines[i]) && !(para.length && isBlockStart(lines[i]))) para.push(lines[i++]);
    const p = el('p');
    para.forEach((t, k) => { if (k) p.append(el('br')); add(p, inline(t)); });
    root.append(p);
  }
  return root;
}

// ---- CSV preview: a sortable table ----

function parseCsv(text, maxRows) {
  const rows = [];
  let row = [], field = '', q = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (q) {
      if (c === '"' && text[i + 1] === '"') { field += '"'; i++; }
      else if (c === '"') q = false;
      else field += c;
    } else if (c === '"' && field === '') q = true;
    else if (c === ',') { row.push(field); field = ''; }
    else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field); field = '';
      rows.push(row); row = [];
      if (rows.length > maxRows) break;
    } else field += c;
  }
  if (field !== '' || row.length) { row.push(field); rows.push(row); }
  return rows;
}

const MAX_CSV_ROWS = 500;

function csvTable(text, name) {
  const rows = parseCsv(text, MAX_CSV_ROWS + 1);
  if (!rows.length) return el('p', { class: 'muted' }, 'empty');
  const head = rows[0];
  let body = rows.slice(1, MAX_CSV_ROWS + 1);
  const more = rows.length > MAX_CSV_ROWS + 1;
  const tbody = el('tbody');
  const numeric = head.map((_, k) => body.every((r) => r[k] === undefined || r[k] === '' || !isNaN(Number(r[k]))));
  const fill = () => {
    clear(tbody);
    for (const r of body) tbody.append(el('tr', {}, head.map((_, k) => el('td', { class: numeric[k] ? 'num' : null }, r[k] ?? ''))));
  };
  const ths = head.map((h, k) => el('th', { scope: 'col', class: numeric[k] ? 'num' : null },
    el('button', { type: 'button', title: `sort by ${h}`, onclick: () => sortBy(k) }, h)));
  function sortBy(k) {
    const asc = ths[k].getAttribute('aria-sort') !== 'ascending';
    ths.forEach((t) => t.removeAttribute('aria-sort'));
    ths[k].setAttribute('aria-sort', asc ? 'ascending' : 'descending');
    const key = (r) => (numeric[k] ? Number(r[k] || 0) : String(r[k] ?? ''));
    body = body.slice().sort((a, b) => {
      const x = key(a), y = key(b);
      const c = numeric[k] ? x - y : x.localeCompare(y);
      return asc ? c : -c;
    });
    fill();
  }
  fill();
  return el('div', {},
    el('div', { class: 'scroll' }, el('table', { class: 'csv', 'data-path': name },
      el('thead', {}, el('tr', {}, ths)), tbody)),
    el('p', { class: 'muted' }, `${body.length} row${body.length === 1 ? '' : 's'}${more ? ` (the first ${MAX_CSV_ROWS})` : ''}`));
}

// ---- the runs list ----

async function runsPage() {
  document.getElementById('nav-runs').setAttribute('aria-current', 'page');
  const m = main();
  const list = el('div', { class: 'scroll' });
  const status = el('p', { class: 'muted', role: 'status' });
  add(m, el('h1', {}, 'Runs'), status, list);
  let form = null;
  let timer = null;
  async function refresh() {
    let j;
    try {
      j = await api('GET', '/v1/runs');
    } catch (e) {
      clear(list);
      showError(e.status === 401 ? m : list, e);
      if (timer) clearInterval(timer);
      return;
    }
    if (!form) { form = startForm(); m.append(form); }
    const runs = j.runs || [];
    status.textContent = `${runs.length} run${runs.length === 1 ? '' : 's'}, ${runs.filter((r) => r.status === 'running').length} going · updated ${new Date().toLocaleTimeString()}`;
    const now = Date.now() / 1000;
    const table = el('table', { id: 'runs' },
      el('thead', {}, el('tr', {},
        el('th', { scope: 'col' }, 'Task'), el('th', { scope: 'col' }, 'Status'),
        el('th', { scope: 'col', class: 'hide-narrow' }, 'Model'), el('th', { scope: 'col', class: 'num' }, 'Steps'),
        el('th', { scope: 'col', class: 'num' }, 'Tokens'), el('th', { scope: 'col', class: 'num' }, 'Duration'),
        el('th', { scope: 'col', class: 'hide-narrow' }, 'Started'))),
      el('tbody', {}, runs.map((r) => el('tr', { 'data-id': r.id },
        el('td', { class: 'task' }, el('a', { href: `/?run=${encodeURIComponent(r.id)}` }, r.task || r.id)),
        el('td', {}, badge(r.status)),
        el('td', { class: 'hide-narrow' }, r.model || ''),
        el('td', { class: 'num' }, r.iterations ?? ''),
        el('td', { class: 'num' }, tokens(r.usage)),
        el('td', { class: 'num' }, r.wall_ms !== undefined ? fmtMs(r.wall_ms)
          : r.status === 'running' && r.created ? fmtMs((now - r.created) * 1000) : ''),
        el('td', { class: 'hide-narrow' }, fmtTime(r.created))))));
    clear(list);
    list.append(runs.length ? table : el('p', { class: 'muted' }, 'No runs yet: start one below.'));
  }
  await refresh();
  timer = setInterval(refresh, 2000);
}

function b64(buf) {
  const bytes = new Uint8Array(buf);
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

function startForm() {
  const err = el('p', { class: 'error', role: 'alert' });
  const f = el('form', { class: 'start card', id: 'start' },
    el('h2', { class: 'wide' }, 'Start a run'),
    el('label', { class: 'wide' }, 'Task', el('textarea', { name: 'task', required: true, placeholder: 'the top 5 products by sales in sales.csv' })),
    el('label', { class: 'wide' }, 'Input files (staged read-only under input/)', el('input', { type: 'file', name: 'inputs', multiple: true })),
    el('label', {}, 'Model endpoint (empty: the server\'s)', el('input', { name: 'base_url', placeholder: 'http://127.0.0.1:11434/v1' })),
    el('label', {}, 'Model (empty: the server\'s)', el('input', { name: 'model' })),
    el('label', {}, 'Review', el('select', { name: 'review' },
      el('option', { value: 'standard' }, 'standard'), el('option', { value: 'strict' }, 'strict'), el('option', { value: 'off' }, 'off'))),
    el('label', {}, 'Most iterations', el('input', { name: 'max_iterations', type: 'number', min: 1, max: 1000, placeholder: 'the server\'s' })),
    el('div', { class: 'wide actions' }, el('button', { type: 'submit', class: 'primary' }, 'Start'), err));
  f.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    err.textContent = '';
    const fd = new FormData(f);
    const body = { task: fd.get('task') };
    const model = {};
    if (fd.get('base_url')) model.base_url = fd.get('base_url');
    if (fd.get('model')) model.model = fd.get('model');
    if (Object.keys(model).length) body.model = model;
    body.review = fd.get('review');
    if (fd.get('max_iterations')) body.max_iterations = Number(fd.get('max_iterations'));
    const files = f.elements.inputs.files;
    if (files.length) {
      body.inputs = [];
      for (const file of files) body.inputs.push({ path: file.name, content_base64: b64(await file.arrayBuffer()) });
    }
    const button = f.querySelector('button[type=submit]');
    button.disabled = true;
    try {
      const r = await api('POST', '/v1/runs', body);
      location.assign(`/?run=${encodeURIComponent(r.id)}`);
    } catch (e) {
      err.textContent = e.message;
      button.disabled = false;
    }
  });
  return f;
}

// ---- human approval (docs/modes.md, "Human approval") ----

// A run that waits for a human (approve: risky or always) shows the question
// in the step it is about, under the step's code and review: the findings,
// and approve / deny with a reason / edit (the code in a text box).  The
// answer goes to POST /v1/runs/{id}/approvals/{n}; the approval event (from
// this page, another browser, the API or the timeout) closes the question.
// The handlers of the run page's approval_request and approval events, and
// end() for run_end (a question still open is closed).
function approvalHandlers(id, stepCard, tag, steps) {
  const open = new Map(); // n -> the box's parts
  const wait = (e) => `${e.timeout_s} s, then ${e.default || 'deny'}`;
  function answer(q, body) {
    for (const b of q.buttons) b.disabled = true;
    q.note.textContent = 'sending…';
    api('POST', `/v1/runs/${encodeURIComponent(id)}/approvals/${q.n}`, body).then(() => {
      q.note.textContent = 'answered; the run goes on';
    }).catch((err) => {
      q.note.textContent = err.message;
      if (err.status !== 409) for (const b of q.buttons) b.disabled = false;
    });
  }
  function close(q, parts) {
    open.delete(q.n);
    clear(q.box);
    q.box.classList.add('answered');
    add(q.box, parts);
  }
  return {
    approval_request(e) {
      const n = e.n;
      const s = stepCard();
      const box = tag(el('section', { class: 'card approval', id: `approval-${n}`, role: 'region', 'aria-label': `approval ${n}` }));
      const q = { n, box, lang: e.lang === 'bash' ? 'bash' : 'python', buttons: [], note: el('p', { class: 'note', role: 'status' }) };
      const findings = (e.review && e.review.findings) || [];
      const reason = el('input', { type: 'text', class: 'reason', name: 'reason', maxlength: 4096, 'aria-label': 'why not (told to the model)', placeholder: 'why not (told to the model)' });
      const code = el('textarea', { class: 'code-edit', name: 'code', rows: 8, spellcheck: 'false', 'aria-label': 'the code to run instead' });
      code.value = e.code || '';
      const editor = el('div', { class: 'edit hidden' }, code,
        el('button', { type: 'button', class: 'run-edit', onclick: () => answer(q, { decision: 'edit', code: code.value }) }, 'Run the edited code'));
      const approve = el('button', { type: 'button', class: 'primary approve', onclick: () => answer(q, { decision: 'approve' }) }, 'Approve');
      const deny = el('button', { type: 'button', class: 'danger deny', onclick: () => answer(q, reason.value ? { decision: 'deny', reason: reason.value } : { decision: 'deny' }) }, 'Deny');
      const edit = el('button', { type: 'button', class: 'edit-open', onclick: () => { editor.classList.toggle('hidden'); code.focus(); } }, 'Edit…');
      q.buttons = [approve, deny, edit, editor.querySelector('button')];
      add(box, el('div', { class: 'step-head' }, el('h3', {}, e.unattended ? `Approval ${n} (a replay: approved by itself)` : `Approval ${n}: the run waits for you`),
        el('span', { class: 'muted' }, `${e.lang || ''} · review ${(e.review && e.review.verdict) || 'none'} · ${wait(e)}`)),
        findings.length ? el('ul', { class: 'findings' }, findings.map((f) =>
          el('li', {}, el('strong', {}, `line ${f.line}`), ` ${f.rule} `, badge(f.severity), ' ', f.message))) : el('p', { class: 'muted' }, 'the review found nothing'),
        el('div', { class: 'approval-actions' }, approve, reason, deny, edit), editor, q.note);
      open.set(n, q);
      if (s) s.result.before(box); else steps.append(box);
      if (!e.unattended) setConn(`approval ${n} waits for an answer`);
    },
    approval(e) {
      const q = open.get(e.n);
      if (!q) return;
      const by = `by ${e.who}${e.wait_ms !== undefined ? ` after ${fmtMs(e.wait_ms)}` : ''}`;
      const what = e.cancelled ? 'not answered: the run was cancelled' : e.decision === 'approve' ? 'approved' : e.decision === 'deny' ? 'denied' : 'edited';
      close(q, [el('div', { class: 'facts' }, `approval ${e.n}: `, badge(e.cancelled ? 'cancelled' : e.decision), ` ${what} ${by}`),
        e.reason ? el('p', {}, 'reason: ', el('q', {}, e.reason)) : null,
        e.code ? [el('div', { class: 'label' }, 'the code that ran instead (reviewed again)'), codeBlock(e.code, q.lang)] : null]);
      setConn('');
    },
    end() {
      for (const q of [...open.values()]) close(q, el('p', { class: 'muted' }, `approval ${q.n}: not answered before the run ended`));
    },
  };
}

// ---- a run ----

const EVENT_TYPES = ['run_start', 'model_request', 'model_retry', 'model_reply', 'tool_call', 'review', 'tool_result',
  'images', 'notice', 'run_end', 'dropped', 'approval_request', 'approval'];

function runPage(id) {
  const m = main();
  const head = el('div', {});
  const turns = el('tbody');
  const usageCard = el('details', { class: 'card', id: 'usage' }, el('summary', {}, 'Token usage per turn'),
    el('div', { class: 'scroll' }, el('table', {}, el('thead', {}, el('tr', {},
      el('th', { scope: 'col', class: 'num' }, 'Turn'), el('th', { scope: 'col', class: 'num' }, 'Prompt'),
      el('th', { scope: 'col', class: 'num' }, 'Completion'), el('th', { scope: 'col', class: 'num' }, 'Wait'),
      el('th', { scope: 'col' }, 'Finish'))), turns)));
  const steps = el('div', { id: 'steps' });
  const end = el('div', { id: 'end' });
  const files = el('div', { id: 'files' });
  const replay = el('div', { class: 'card replay hidden', id: 'replay' });
  const cancel = el('button', { type: 'button', class: 'danger', id: 'cancel', disabled: true }, 'Cancel');
  const state = el('span', { id: 'run-status' });
  add(m, el('div', { class: 'actions' }, el('a', { href: '/' }, '← Runs'), state, cancel), head, replay, steps, end, usageCard, files);

  const run = { id, steps: new Map(), nStep: 0, lastId: 0, ended: false, status: null, iteration: 0 };
  let es = null;
  const setStatus = (s) => { run.status = s; clear(state); state.append(badge(s)); cancel.disabled = s !== 'running'; };

  cancel.addEventListener('click', async () => {
    cancel.disabled = true;
    try {
      await api('POST', `/v1/runs/${encodeURIComponent(id)}/cancel`);
      setConn('cancelling…');
    } catch (e) {
      add(end, el('p', { class: 'error', role: 'alert' }, e.message));
    }
  });

  // Everything shown is tagged with the step it came with, for the scrubber.
  const tag = (node) => { node.dataset.step = String(run.nStep); return node; };
  const stepCard = (callId) => run.steps.get(callId) || [...run.steps.values()].pop();
  const approvals = approvalHandlers(id, stepCard, tag, steps);

  const on = {
    run_start(e) {
      clear(head);
      add(head, el('h1', { id: 'task' }, e.task || ''),
        el('div', { class: 'facts' },
          el('span', {}, 'model ', el('strong', {}, e.model || '')),
          e.provider && el('span', {}, 'provider ', el('strong', {}, e.provider)),
          el('span', {}, 'run ', el('strong', {}, e.run_id || id)),
          e.limits && el('span', {}, 'limits ', el('strong', {}, `${e.limits.timeout_s} s · ${fmtBytes(e.limits.memory_bytes)} · net ${e.limits.net}`)),
          e.ts && el('span', {}, 'started ', el('strong', {}, new Date(e.ts).toLocaleString()))),
        (e.inputs || []).length ? el('div', { class: 'facts' }, 'inputs: ', (e.inputs || []).map((x) => el('strong', {}, `${x.dest} (${fmtBytes(x.bytes)}) `))) : null);
    },
    model_request(e) { run.iteration = e.iteration; setConn(`waiting for the model (turn ${e.iteration})…`); },
    model_retry(e) { steps.append(tag(el('p', { class: 'muted' }, `retrying the model in ${e.delay_s} s: ${e.reason}`))); },
    model_reply(e) {
      const u = e.usage || {};
      turns.append(tag(el('tr', {}, el('td', { class: 'num' }, e.iteration), el('td', { class: 'num' }, u.prompt_tokens ?? ''),
        el('td', { class: 'num' }, u.completion_tokens ?? ''), el('td', { class: 'num' }, fmtMs(e.wait_ms)),
        el('td', {}, `${e.finish_reason || ''}${u.estimated ? ' (estimated)' : ''}`))));
      // The last reply's text is the answer, shown at the end; the text of
      // one that calls tools is the model thinking aloud between steps.
      if (e.content && (e.tool_calls || []).length) steps.append(tag(el('div', { class: 'card turn' }, el('div', { class: 'label' }, `model, turn ${e.iteration}`), el('div', { class: 'reply' }, e.content))));
      setConn('');
    },
    tool_call(e) {
      run.nStep++;
      const n = run.nStep;
      const lang = e.name === 'run_shell' ? 'bash' : 'python';
      const body = el('div', { class: 'step-body' });
      const status = el('span', { class: 'step-status' }, badge('running'));
      const card = tag(el('section', { class: 'card step', id: `step-${n}`, 'aria-labelledby': `step-${n}-h` },
        el('div', { class: 'step-head' }, el('h2', { id: `step-${n}-h` }, `Step ${n}`),
          el('span', { class: 'muted' }, `${e.name} · turn ${e.iteration}`), status,
          el('a', { class: 'link', href: `#step-${n}`, title: 'a link to this step' }, '#')),
        body));
      if (e.name === 'run_python' || e.name === 'run_shell') {
        const code = e.code ?? e.command ?? (e.arguments && (e.arguments.code ?? e.arguments.command)) ?? '';
        body.append(codeBlock(String(code), lang));
      } else {
        body.append(el('pre', {}, typeof e.arguments === 'string' ? e.arguments : JSON.stringify(e.arguments, null, 2)));
      }
      const review = el('div', { class: 'review' });
      const result = el('div', { class: 'result' });
      body.append(review, result);
      run.steps.set(e.id, { card, status, review, result, n });
      steps.append(card);
      setConn(`step ${n} running…`);
      if (location.hash === `#step-${n}`) card.scrollIntoView();
    },
    review(e) {
      const s = stepCard(e.tool_call_id || e.id);
      if (!s) return;
      clear(s.review);
      add(s.review, el('div', { class: 'facts' }, 'review: ', badge(e.verdict), ` ${e.lang || ''} · ${(e.policy && e.policy.level) || ''} · ${fmtMs(e.ms)}`));
      if ((e.findings || []).length) {
        s.review.append(el('ul', { class: 'findings' }, e.findings.map((f) =>
          el('li', {}, el('strong', {}, `line ${f.line}`), ` ${f.rule} `, badge(f.severity), ' ', f.message))));
      }
      if (e.verdict === 'reject') { clear(s.status); s.status.append(badge('reject')); }
    },
    tool_result(e) {
      const s = run.steps.get(e.id);
      if (!s) return;
      clear(s.status);
      const x = e.exec;
      s.status.append(badge(x ? x.status : e.ok ? 'ok' : 'error'));
      clear(s.result);
      if (x) {
        add(s.result, el('div', { class: 'facts' },
          el('span', {}, 'exit ', el('strong', {}, x.exit_code ?? '')), el('span', {}, 'wall ', el('strong', {}, fmtMs(x.wall_ms))),
          el('span', {}, 'cpu ', el('strong', {}, fmtMs(x.cpu_ms))), el('span', {}, 'memory ', el('strong', {}, fmtBytes(x.memory_peak_bytes))),
          x.limit && el('span', {}, 'limit ', el('strong', {}, x.limit)), x.reason && el('span', {}, x.reason)));
        if (x.stdout) add(s.result, el('div', { class: 'label' }, 'stdout'), el('pre', { class: 'stdout' }, x.stdout + (x.stdout_truncated ? '\n[… truncated]' : '')));
        if (x.stderr) add(s.result, el('div', { class: 'label' }, 'stderr'), el('pre', { class: 'stderr' }, x.stderr + (x.stderr_truncated ? '\n[… truncated]' : '')));
      } else {
        add(s.result, el('div', { class: 'label' }, 'result'), el('pre', {}, e.content || ''));
      }
      if ((e.artifacts || []).length) {
        add(s.result, el('div', { class: 'label' }, 'files'), el('ul', {}, e.artifacts.map((a) =>
          el('li', {}, `${a.change} `, el('code', {}, a.path), a.size !== undefined ? ` (${fmtBytes(a.size)})` : ''))));
      }
      setConn('');
    },
    images(e) {
      steps.append(tag(el('p', { class: 'muted' }, `figures sent to the model: ${(e.images || []).map((x) => x.path).join(', ')}`)));
    },
    notice(e) {
      steps.append(tag(el('p', { class: e.severity === 'error' ? 'error' : 'muted', role: 'note' }, `notice: ${e.message}`)));
    },
    approval_request: approvals.approval_request,
    approval: approvals.approval,
    run_end(e) {
      approvals.end();
      run.ended = true;
      setStatus(e.status);
      clear(end);
      const u = e.usage || {};
      add(end, el('section', { class: 'card', id: 'answer', 'aria-label': 'the answer' },
        el('div', { class: 'step-head' }, el('h2', {}, 'Answer'), badge(e.status)),
        e.answer ? markdown(e.answer) : null,
        e.reason ? el('p', { class: 'muted' }, e.reason) : null,
        el('div', { class: 'facts' }, el('span', {}, 'turns ', el('strong', {}, e.iterations)),
          el('span', {}, 'tokens ', el('strong', {}, `${u.prompt_tokens || 0} + ${u.completion_tokens || 0}`)),
          el('span', {}, 'model wait ', el('strong', {}, fmtMs(u.wait_ms))), el('span', {}, 'wall ', el('strong', {}, fmtMs(e.wall_ms))))));
      setConn('');
      if (es) { es.close(); es = null; }
      showFiles(id, files);
      setupReplay(replay, run);
    },
  };

  function follow() {
    setConn('connecting…');
    es = new EventSource(`/v1/runs/${encodeURIComponent(id)}/events${run.lastId ? `?after=${run.lastId}` : ''}`);
    for (const t of EVENT_TYPES) {
      es.addEventListener(t, (msg) => {
        const n = Number(msg.lastEventId);
        if (n && n <= run.lastId) return; // seen already (a reconnection)
        if (n) run.lastId = n;
        let ev;
        try { ev = JSON.parse(msg.data); } catch (err) { return; }
        if (t === 'dropped') { es.close(); es = null; setTimeout(follow, 200); return; }
        try { on[t](ev); } catch (err) { add(steps, el('p', { class: 'error' }, `could not show a ${t} event: ${err.message}`)); }
      });
    }
    es.onopen = () => setConn(run.ended ? '' : 'live');
    es.onerror = () => {
      // A run that had ended when the page opened sends nothing more (an
      // interrupted one ends its events without run_end): no reconnecting.
      if (run.ended || run.over) { if (es) es.close(); es = null; setConn(''); return; }
      setConn('reconnecting…'); // EventSource retries with Last-Event-ID
    };
  }

  api('GET', `/v1/runs/${encodeURIComponent(id)}`).then((r) => {
    setStatus(r.status);
    run.over = r.status !== 'running';
    if (!head.firstChild) add(head, el('h1', { id: 'task' }, r.task || ''));
    follow();
    if (r.status === 'interrupted') showFiles(id, files); // its events end without run_end
  }).catch((e) => showError(m, e));
}

async function showFiles(id, where) {
  clear(where);
  let j;
  // run_end comes a moment before the server has put the run's files away
  // (409 until then): ask again for a few seconds.
  for (let tries = 0; ; tries++) {
    try {
      j = await api('GET', `/v1/runs/${encodeURIComponent(id)}/artifacts`);
      break;
    } catch (e) {
      if (e.status === 409 && tries < 40) { await new Promise((ok) => setTimeout(ok, 250)); continue; }
      if (e.status !== 404) add(where, el('p', { class: 'error' }, `the run's files: ${e.message}`));
      return;
    }
  }
  const arts = (j.artifacts || []).filter((a) => a.type !== 'dir');
  if (!arts.length) return;
  const card = el('section', { class: 'card', id: 'artifacts', 'aria-label': 'files' }, el('h2', {}, 'Files'));
  where.append(card);
  const list = el('ul');
  card.append(list);
  for (const a of arts) {
    const rel = a.path.replace(/^output\//, '');
    const url = `/v1/runs/${encodeURIComponent(id)}/artifacts/${rel.split('/').map(encodeURIComponent).join('/')}`;
    list.append(el('li', {}, el('a', { href: url, download: rel.split('/').pop() }, rel), ` ${fmtBytes(a.size ?? a.bytes)}`));
    const ext = (rel.split('.').pop() || '').toLowerCase();
    if (ext === 'png' || ext === 'jpg' || ext === 'jpeg') {
      // From a Blob of the declared type: the server sends files as
      // application/octet-stream and the page's policy allows blob: images.
      try {
        const r = await fetch(url, { credentials: 'same-origin' });
        if (!r.ok) continue;
        const blob = new Blob([await r.arrayBuffer()], { type: ext === 'png' ? 'image/png' : 'image/jpeg' });
        card.append(el('figure', {}, el('img', { src: URL.createObjectURL(blob), alt: rel, 'data-path': rel }), el('figcaption', {}, rel)));
      } catch (e) { /* the link stays */ }
    } else if (ext === 'csv') {
      try {
        const r = await fetch(url, { credentials: 'same-origin' });
        if (!r.ok) continue;
        const text = await r.text();
        card.append(el('h3', {}, rel), csvTable(text.slice(0, 2 << 20), rel));
      } catch (e) { /* the link stays */ }
    }
  }
}

// The scrubber of a finished run: show the run as it was after step N.
function setupReplay(box, run) {
  if (!run.nStep) return;
  clear(box);
  box.classList.remove('hidden');
  const label = el('label', { for: 'scrub' }, 'Replay');
  const range = el('input', { type: 'range', id: 'scrub', min: 0, max: run.nStep, value: run.nStep, step: 1 });
  const out = el('output', { for: 'scrub', id: 'scrub-out' });
  const play = el('button', { type: 'button', id: 'play' }, 'Play');
  let timer = null;
  const show = () => {
    const v = Number(range.value);
    out.textContent = v === run.nStep ? `all ${run.nStep} steps` : `after step ${v} of ${run.nStep}`;
    for (const n of document.querySelectorAll('[data-step]')) n.classList.toggle('hidden', Number(n.dataset.step) > v);
    for (const id of ['end', 'files']) document.getElementById(id).classList.toggle('hidden', v < run.nStep);
  };
  const stop = () => { clearInterval(timer); timer = null; play.textContent = 'Play'; };
  range.addEventListener('input', () => { stop(); show(); });
  play.addEventListener('click', () => {
    if (timer) { stop(); return; }
    if (Number(range.value) >= run.nStep) range.value = 0;
    show();
    play.textContent = 'Pause';
    timer = setInterval(() => {
      range.value = Number(range.value) + 1;
      show();
      if (Number(range.value) >= run.nStep) stop();
    }, 900);
  });
  add(box, label, range, out, play);
  show();
}

// ---- sandboxes ----

async function sandboxesPage() {
  document.getElementById('nav-sandboxes').setAttribute('aria-current', 'page');
  const m = main();
  const list = el('div', { class: 'scroll' });
  const status = el('p', { class: 'muted', role: 'status' });
  add(m, el('h1', {}, 'Sandboxes'), status, list);
  let timer = null;
  async function refresh() {
    let j;
    try { j = await api('GET', '/v1/sandboxes'); } catch (e) {
      clear(list); showError(e.status === 401 ? m : list, e); if (timer) clearInterval(timer); return;
    }
    const sbs = j.sandboxes || [];
    status.textContent = `${sbs.length} sandbox${sbs.length === 1 ? '' : 'es'} · updated ${new Date().toLocaleTimeString()}`;
    clear(list);
    if (!sbs.length) { list.append(el('p', { class: 'muted' }, 'No sandboxes of this token.')); return; }
    list.append(el('table', { id: 'sandboxes' },
      el('thead', {}, el('tr', {}, ['Id', 'State', 'Steps', 'Memory', 'Step timeout', 'Processes', 'Disk', 'Expires in', 'Created', '']
        .map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody', {}, sbs.map((s) => {
        const l = s.limits || {};
        const kill = el('button', { type: 'button', class: 'danger', 'aria-label': `kill sandbox ${s.id}` }, 'Kill');
        kill.addEventListener('click', async () => {
          kill.disabled = true;
          try { await api('DELETE', `/v1/sandboxes/${encodeURIComponent(s.id)}`); } catch (e) { status.textContent = e.message; }
          refresh();
        });
        return el('tr', { 'data-id': s.id }, el('td', {}, el('code', {}, s.id)),
          el('td', {}, badge(s.busy ? 'running' : s.state)), el('td', { class: 'num' }, s.steps ?? ''),
          el('td', { class: 'num' }, fmtBytes(l.memory)), el('td', { class: 'num' }, l.timeout !== undefined ? `${l.timeout} s` : ''),
          el('td', { class: 'num' }, l.pids ?? ''), el('td', { class: 'num' }, fmtBytes(l.disk)),
          el('td', { class: 'num' }, s.expires_in_s !== undefined ? fmtMs(s.expires_in_s * 1000) : ''),
          el('td', {}, fmtTime(s.created_at)), el('td', {}, kill));
      }))));
  }
  await refresh();
  timer = setInterval(refresh, 2000);
}

// ---- start ----

document.addEventListener('DOMContentLoaded', () => {
  const id = params.get('run');
  if (id) runPage(id);
  else if (params.get('view') === 'sandboxes') sandboxesPage();
  else runsPage();
});
