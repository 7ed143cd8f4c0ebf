"""corral trace show / export on a handcrafted trace: the view, the notebook, the page, bad input."""
import html.parser
import json
import re
import shutil
import subprocess
import os
import stat

import pytest

from conftest import CORRAL


def event(type_, **fields):
    return {"v": 1, "type": type_, "t_ms": 0.0, "ts": "2025-01-31T12:00:00.000Z", **fields}


EVENTS = [
    event("run_start", run_id="r-1", task="Find the top 5 products by revenue", model="test-model",
          base_url="http://127.0.0.1:9/v1", provider="openai", protocol="tools",
          inputs=[{"source": "data/sales.csv", "dest": "input/sales.csv", "type": "file", "bytes": 2048}],
          limits={"timeout_s": 30, "memory_bytes": 536870912}, workspace="/tmp/ws", version="0.1.0"),
    event("model_request", iteration=1, messages=2, est_prompt_tokens=500, trimmed=0),
    event("model_reply", iteration=1, content="I will read the CSV first.", reasoning=None,
          tool_calls=[{"id": "c1", "name": "run_python", "arguments": "{}"}], finish_reason="tool_calls",
          usage={"prompt_tokens": 500, "completion_tokens": 40, "estimated": False}, wait_ms=900),
    event("tool_call", iteration=1, id="c1", name="run_python", arguments={"code": "print('hi')"},
          code="import csv\nprint('<script>alert(1)</script>')\nprint('\x1b[2J cleared?')\n"),
    event("tool_result", iteration=1, id="c1", name="run_python", ok=True, content="...", ms=420,
          exec={"status": "ok", "exit_code": 0, "stdout": "<script>alert(1)</script>\n\x1b[2J cleared?\n",
                "stderr": "", "stdout_truncated": False, "stderr_truncated": False, "wall_ms": 412.0},
          artifacts=[{"path": "output/top5.csv", "change": "created", "type": "file", "size": 312}]),
    event("tool_call", iteration=2, id="c2", name="run_shell", arguments={"command": "wc -l input/sales.csv"},
          command="wc -l input/sales.csv"),
    event("tool_result", iteration=2, id="c2", name="run_shell", ok=False, content="...", ms=30,
          exec={"status": "error", "exit_code": 1, "stdout": "", "stderr": "wc: oops\n", "wall_ms": 25.0}),
    event("tool_call", iteration=2, id="c3", name="write_file",
          arguments={"path": "output/notes.md", "content": "hello"}),
    event("tool_result", iteration=2, id="c3", name="write_file", ok=True, content="wrote 5 bytes", ms=1),
    event("notice", message="the conversation was trimmed to fit the context"),
    event("run_end", status="answered", answer="The top product is A.", reason=None, iterations=3,
          usage={"prompt_tokens": 1500, "completion_tokens": 120, "requests": 3, "retries": 0, "wait_ms": 2500,
                 "estimated": False},
          artifacts=[{"path": "output/top5.csv", "bytes": 312}], output_dir="/tmp/out", wall_ms=5000),
]


@pytest.fixture
def trace_file(tmp_path):
    p = tmp_path / "run.jsonl"
    p.write_text("".join(json.dumps(e) + "\n" for e in EVENTS))
    return p


def test_show_renders_the_steps(corral, trace_file):
    r = corral("trace", "show", str(trace_file))
    assert r.rc == 0, r.err
    out = r.out.decode()
    assert "\x1b" not in out  # not a terminal: no colour, and program output is neutralised
    assert "Find the top 5 products by revenue" in out
    assert "test-model" in out and "http://127.0.0.1:9/v1" in out
    assert "I will read the CSV first." in out
    assert "step 1 · run_python" in out
    assert "1 │ import csv" in out
    assert "✓ ok · exit 0 · 412 ms" in out
    assert "out │ <script>alert(1)</script>" in out
    assert "^[[2J cleared?" in out
    assert "+ output/top5.csv (312 B)" in out
    assert "step 2 · run_shell" in out and "$ wc -l input/sales.csv" in out
    assert "✗ error · exit 1" in out and "err │ wc: oops" in out
    assert "step 3 · write_file output/notes.md (5 B)" in out
    assert "! the conversation was trimmed" in out
    assert "answered" in out and "The top product is A." in out
    assert "1,500 prompt · 120 completion" in out
    assert "/tmp/out" in out


def test_show_quiet_and_no_color(corral, trace_file):
    r = corral("trace", "show", "--quiet", "--no-color", str(trace_file))
    assert r.rc == 0
    out = r.out.decode()
    assert "step 1" not in out and "I will read" not in out
    assert "! the conversation was trimmed" in out and "answered" in out
    # NO_COLOR and a non-terminal both mean no colour
    env = dict(os.environ, NO_COLOR="1")
    assert b"\x1b" not in corral("trace", "show", str(trace_file), env=env).out


def test_export_ipynb_validates(corral, trace_file, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    r = corral("trace", "export", "--ipynb", str(trace_file))
    assert r.rc == 0, r.err
    out = tmp_path / "run.ipynb"
    assert out.exists()
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    nb = nbformat.read(str(out), as_version=4)
    nbformat.validate(nb)
    assert nb.nbformat == 4 and nb.nbformat_minor == 5
    assert nb.metadata.kernelspec.name == "python3"
    assert nb.metadata.corral.status == "answered"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert len(code) == 2
    assert code[0].source.startswith("import csv\n")
    assert code[0].execution_count == 1
    assert code[0].outputs[0].name == "stdout" and "<script>" in code[0].outputs[0].text
    assert code[1].source.startswith("%%bash\nwc -l")
    assert any(o.name == "stderr" and "exit 1" in o.text for o in code[1].outputs)
    md = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "Find the top 5 products by revenue" in md
    assert "I will read the CSV first." in md
    assert "**write\\_file** `output/notes.md (5 B)`" in md
    assert "The top product is A." in md
    assert len({c.id for c in nb.cells}) == len(nb.cells)


class Collect(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []
        self.text = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def test_export_html_escapes_everything(corral, trace_file, tmp_path):
    out = tmp_path / "page.html"
    r = corral("trace", "export", "--html", "-o", str(out), str(trace_file))
    assert r.rc == 0, r.err
    page = out.read_text()
    p = Collect()
    p.feed(page)
    p.close()
    tags = [t for t, _ in p.tags]
    assert "script" not in tags and "link" not in tags and "img" not in tags and "iframe" not in tags
    assert not any("src" in a or "href" in a for _, a in p.tags)
    text = "".join(p.text)
    assert "<script>alert(1)</script>" in text  # shown as text, after unescaping
    assert "&lt;script&gt;" in page
    assert "\x1b" not in page and "^[[2J cleared?" in text
    assert "Find the top 5 products by revenue" in text
    assert "The top product is A." in text
    assert [f for f in os.listdir(tmp_path) if f.startswith(".")] == []


def test_bad_input(corral, tmp_path, trace_file):
    missing = tmp_path / "missing.jsonl"
    r = corral("trace", "show", str(missing))
    assert r.rc == 1 and b"corral trace: cannot open the trace" in r.err and b"missing.jsonl" in r.err

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(EVENTS[0]) + "\n\n{not json\n")
    r = corral("trace", "show", str(bad))
    assert r.rc == 1 and b"line 3" in r.err
    r = corral("trace", "export", "--ipynb", str(bad))
    assert r.rc == 1 and b"line 3" in r.err
    assert not (tmp_path / "bad.ipynb").exists()

    r = corral("trace", "show", "--bogus", str(trace_file))
    assert r.rc == 2 and b"corral trace: " in r.err and b"--bogus" in r.err
    r = corral("trace", "export", str(trace_file))
    assert r.rc == 2 and b"--ipynb or --html" in r.err
    r = corral("trace", "export", "--ipynb", "--html", str(trace_file))
    assert r.rc == 2
    r = corral("trace", "show")
    assert r.rc == 2 and b"FILE" in r.err
    r = corral("trace", "frobnicate")
    assert r.rc == 2 and b"unknown subcommand 'frobnicate'" in r.err
    r = corral("trace")
    assert r.rc == 2
    # missing directories are made; a file where one is needed is not
    r = corral("trace", "export", "--html", "-o", str(tmp_path / "no" / "dir" / "x.html"), str(trace_file))
    assert r.rc == 0 and (tmp_path / "no" / "dir" / "x.html").is_file(), r.err
    (tmp_path / "afile").write_text("")
    r = corral("trace", "export", "--html", "-o", str(tmp_path / "afile" / "x.html"), str(trace_file))
    assert r.rc == 1 and b"'afile' is a regular file, not a directory" in r.err, r.err
    before = trace_file.read_bytes()
    r = corral("trace", "export", "--html", "-o", str(tmp_path / "." / "run.jsonl"), str(trace_file))
    assert r.rc == 2 and b"would replace the trace" in r.err
    assert trace_file.read_bytes() == before


def test_help(corral):
    r = corral("trace", "--help")
    assert r.rc == 0
    text = r.out.decode()
    for word in ["show", "export", "--quiet", "--no-color", "--ipynb", "--html", "-o", "exit statuses"]:
        assert word in text, word
    assert corral("trace", "show", "--help").rc == 0


def test_exports_show_the_figures_tables_and_report(tmp_path):
    """The point of a data-analysis run: its figures inline (within limits,
    CSP allowing data: images only), a CSV as a table of its first rows, the
    markdown report rendered (no raw HTML from it), in the page and in the
    notebook; a missing output directory is said, not an error."""
    import base64
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "model-server"))
    from modelserver import ScriptedServer, text, tool_call
    code = ("import matplotlib.pyplot as plt, pandas as pd\n"
            "pd.DataFrame({'product': ['A', 'B'], 'revenue': [3, 1]}).to_csv('output/top.csv', index=False)\n"
            "open('output/report.md', 'w').write('# Report\\n\\nA is **first**.\\n\\n<script>alert(1)</script>\\n"
            "[x](javascript:alert(2))\\n')\n"
            "plt.plot([1, 2, 3])\n"
            "plt.figure(); plt.bar(['a'], [1]); plt.savefig('output/bars.png')\n"
            "plt.close()\n")
    trace = tmp_path / "t.jsonl"
    out = tmp_path / "out"
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"))
    with ScriptedServer([tool_call("run_python", code=code), text("done")]) as srv:
        r = subprocess.run([CORRAL, "run", "--base-url", srv.base_url, "--model", "m", "--cold", "-q", "--trace",
                            str(trace), "-o", str(out), "go"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    html_path, nb_path = tmp_path / "t.html", tmp_path / "t.ipynb"
    for fmt, path in (("--html", html_path), ("--ipynb", nb_path)):
        r = subprocess.run([CORRAL, "trace", "export", fmt, "-o", str(path), str(trace)], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, r.stderr
    html = html_path.read_text()
    assert "img-src data:" in html and "default-src 'none'" in html
    imgs = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(imgs) == 2, len(imgs)  # the step's open figure, then at the end the file it saved (bars.png)
    assert all(base64.b64decode(i)[:8] == b"\x89PNG\r\n\x1a\n" for i in imgs)
    assert '<table class="csv">' in html and "<th>product</th>" in html and "<td>A</td>" in html
    assert "<h1>Report</h1>" in html and "<strong>first</strong>" in html
    report = html[html.index('<div class="report">'):]
    report = report[:report.index("</div>")]
    assert "<script>" not in html and "javascript:" not in report and "raw HTML omitted" in report, report
    nb = json.loads(nb_path.read_text())
    shown = [o for c in nb["cells"] for o in c.get("outputs", []) if o["output_type"] == "display_data"]
    assert len(shown) == 1 and shown[0]["data"]["image/png"], shown
    attached = [c for c in nb["cells"] if c.get("attachments")]
    assert len(attached) == 1 and "output/bars.png" in "".join(attached[0]["source"]), attached
    (png,) = [v["image/png"] for v in attached[0]["attachments"].values()]
    assert base64.b64decode(png)[:8] == b"\x89PNG\r\n\x1a\n"
    md = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]
    assert any("| product | revenue |" in m and "| A | 3 |" in m for m in md), md
    assert any(m.startswith("`output/report.md`") and "# Report" in m and "&lt;script>" in m for m in md), md
    # Without libcmark (loaded when a report is first rendered, src/trace/cmark-dl.h): the report as escaped
    # text, and why. As root, in a mount namespace where the library is an empty file.
    lib = next((os.path.join(d, f) for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib")
                if os.path.isdir(d) for f in sorted(os.listdir(d)) if f.startswith("libcmark.so.0.")), None)
    if os.geteuid() == 0 and lib and shutil.which("unshare"):
        plain = tmp_path / "plain.html"
        r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                            'mount --bind /dev/null "$1" && shift && exec "$@"', "sh", lib, CORRAL, "trace",
                            "export", "--html", "-o", str(plain), str(trace)], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        page = plain.read_text()
        assert '<div class="report">' not in page and "# Report" in page and "&lt;script&gt;" in page, page
        assert "(not rendered: cannot load libcmark" in page, page
    # the output directory gone: the export says so
    shutil.rmtree(out)
    r = subprocess.run([CORRAL, "trace", "export", "--html", "-o", str(html_path), str(trace)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "not embedded (the output directory is not there any more)" in html_path.read_text()
