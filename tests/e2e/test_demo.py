"""The demos, end to end: `make demo` (examples/energy/run.sh) and `make
demo-sales` (examples/sales/run.sh) with MODEL=replay against the built
corral: fresh seeded data, the scripted transcript replayed, its code run in
real jails, and every artifact checked against the data it came from; then
the real-model path (a configured endpoint, played by the scripted model
server) and how examples/choose-model.sh picks the model (a fake Ollama
server on 127.0.0.1:11434 when that port is free).

The floors: precision and recall >= 0.9, no kind of anomaly mostly missed,
and each event found flagged mostly as its own kind.  The transcript's
detection scores precision 0.96-1.00 and recall 1.00 on seeds 1-10 and 2025
(examples/energy/README.md), labelling every event right, so 0.9 leaves
room.  Its parts back each other up (without the drift test a drift shows
as spikes; without the dropout rule zeros show as a stuck sensor), so a
broken rule shows in the kinds rather than in recall; a broken threshold or
baseline in recall or precision (flagging at random or everything scores
precision under 0.5: test_score_catches_bad_detections); a broken corral in
the run's exit status, the trace or the artifacts.
"""
import importlib.util
import json
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import zlib
from http.server import BaseHTTPRequestHandler, HTTPServer

import pandas as pd
import pytest

from conftest import CORRAL

ROOT = os.environ.get("CORRAL_SOURCE_ROOT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
EXAMPLES = os.path.join(ROOT, "examples")
FLOOR = 0.9
STAMP = re.compile(r"\b\d{4}-\d\d-\d\d \d\d:\d\d\b")


def run_demo(name, out, **env):
    """Run examples/NAME/run.sh into out: the scripted transcript unless env says otherwise."""
    e = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CORRAL_MODEL"))}
    e.update({"CORRAL": os.path.abspath(CORRAL), "MODEL": "replay", "DEMO_OUT": str(out), "PYTHON": sys.executable,
              "XDG_CONFIG_HOME": str(out / "config"), **env})
    r = subprocess.run(["sh", os.path.join(EXAMPLES, name, "run.sh")], env=e, cwd=str(out),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"run.sh exited {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr[-4000:]}"
    return r


def png_pixels(path):
    """Decode a PNG fully: signature, every chunk's CRC, IHDR, the zlib
    stream of the IDAT chunks and its size. Returns (width, height, data)."""
    with open(path, "rb") as f:
        blob = f.read()
    assert blob[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
    pos, idat, ihdr, end = 8, b"", None, False
    while pos < len(blob):
        length, kind = struct.unpack(">I4s", blob[pos:pos + 8])
        body = blob[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", blob[pos + 8 + length:pos + 12 + length])
        assert len(body) == length and zlib.crc32(kind + body) == crc, f"bad CRC in chunk {kind!r}"
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            end = True
            break
        pos += 12 + length
    assert ihdr and idat and end, "IHDR, IDAT or IEND missing"
    width, height, depth, color, _, _, interlace = ihdr
    assert depth == 8 and interlace == 0, f"unexpected PNG layout {ihdr}"
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[color]
    raw = zlib.decompress(idat)
    assert len(raw) == height * (1 + width * channels), "pixel data of the wrong size"
    return width, height, raw


def check_png(path, min_w=400, min_h=200):
    w, h, raw = png_pixels(path)
    assert w >= min_w and h >= min_h, f"{path}: {w}x{h} is too small for a plot"
    assert len(set(raw[::97])) > 16, f"{path}: an almost blank image"


@pytest.fixture(scope="module")
def energy(tmp_path_factory):
    out = tmp_path_factory.mktemp("energy-demo")
    os.chmod(out, 0o755)
    r = run_demo("energy", out)
    return out, r


def test_energy_artifacts(energy):
    out, _ = energy
    data = pd.read_csv(out / "energy-data" / "building_energy.csv", parse_dates=["timestamp"])
    anomalies = pd.read_csv(out / "energy" / "anomalies.csv", parse_dates=["timestamp"])
    assert list(anomalies.columns) == ["timestamp", "kwh", "expected", "robust_z", "kind"]
    # A year has 24 injected events, several of them many hours long; a
    # detector flagging a quarter of the year is not detecting anything.
    assert 24 <= len(anomalies) <= len(data) // 4, f"{len(anomalies)} rows flagged"
    assert set(anomalies.kind) <= {"spike", "dip", "dropout", "stuck", "drift"}
    # Each flagged row is a real reading of the dataset.
    merged = anomalies.merge(data, on="timestamp", how="left", suffixes=("", "_data"))
    assert merged.kwh_data.notna().all(), "anomalies.csv names hours the dataset does not have"
    assert (merged.kwh - merged.kwh_data).abs().max() < 0.006
    check_png(out / "energy" / "energy_anomalies.png")


def test_energy_report_names_the_anomalies(energy):
    out, _ = energy
    anomalies = pd.read_csv(out / "energy" / "anomalies.csv")
    flagged = set(anomalies.timestamp)
    report = (out / "energy" / "report.md").read_text()
    named = STAMP.findall(report.split("## Largest", 1)[1])
    assert len(named) >= 10, "the report lists too few anomalies"
    assert set(named) <= flagged, f"the report names hours not in anomalies.csv: {set(named) - flagged}"
    # The summary's hours per kind are the CSV's.
    table = dict(re.findall(r"^\| (\w+) \| \d+ \| (\d+) \|$", report, re.M))
    assert table == {k: str(n) for k, n in anomalies.kind.value_counts().items()}


def score(anomalies, truth):
    """Run score.py --by-kind: (precision, recall, {kind: (found, events)}, the first line)."""
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, "energy", "score.py"), "--by-kind", str(anomalies),
                        str(truth)], capture_output=True, text=True, check=True)
    m = re.match(r"precision (\S+)  recall (\S+)", r.stdout)
    kinds = {k: (int(a), int(b)) for k, a, b in re.findall(r"(\w+) (\d+)/(\d+)", r.stdout.splitlines()[1])}
    return float(m[1]), float(m[2]), kinds, r.stdout.splitlines()[0]


def test_energy_precision_recall(energy):
    out, r = energy
    m = re.search(r"^precision (\d\.\d\d)  recall (\d\.\d\d)  F1 \d\.\d\d  \(flagged \d+, true 24;", r.stdout, re.M)
    assert m, f"no precision/recall line in:\n{r.stdout}"
    precision, recall = float(m[1]), float(m[2])
    assert precision >= FLOOR and recall >= FLOOR, m[0]
    _, _, kinds, _ = score(out / "energy" / "anomalies.csv", out / "energy-data" / "ground_truth.csv")
    assert set(kinds) == {"spike", "dropout", "stuck", "drift"}
    missed = {k: v for k, v in kinds.items() if v[0] * 2 < v[1]}
    assert not missed, f"kinds mostly missed (found/events): {missed}"
    # The transcript's code names the kinds as the generator does: each
    # event found is mostly flagged as its own kind.
    anomalies = pd.read_csv(out / "energy" / "anomalies.csv", parse_dates=["timestamp"])
    truth = pd.read_csv(out / "energy-data" / "ground_truth.csv", parse_dates=["start", "end"])
    tol = pd.Timedelta(hours=2)
    wrong = []
    for e in truth.itertuples():
        inside = anomalies[(anomalies.timestamp >= e.start - tol) & (anomalies.timestamp <= e.end + tol)]
        if len(inside) and inside.kind.mode()[0] != e.kind:
            wrong.append(f"{e.kind} at {e.start}: flagged {inside.kind.value_counts().to_dict()}")
    assert not wrong, "events flagged as another kind:\n" + "\n".join(wrong)


def test_energy_run_in_the_jail(energy):
    """The trace shows the run: only the dataset staged, the first attempt
    failing in the jail and the fix succeeding, an answer, the HTML page."""
    out, _ = energy
    with open(out / "energy-trace.jsonl") as f:
        events = [json.loads(line) for line in f]
    start = events[0]
    assert start["type"] == "run_start"
    assert [i["dest"] for i in start["inputs"]] == ["input/building_energy.csv"]
    runs = [e for e in events if e["type"] == "tool_result" and "exec" in e]
    assert any(not e["ok"] and "AttributeError" in e["exec"]["stderr"] for e in runs)
    assert runs[-1]["ok"] or runs[-2]["ok"]
    assert events[-1]["type"] == "run_end" and events[-1]["status"] == "answered"
    assert (out / "energy-trace.html").stat().st_size > 1000
    assert "Flagged" in (out / "energy-answer.txt").read_text()


def test_score_catches_bad_detections(tmp_path):
    """score.py's measures on doctored detections: the truth scores 1, a kind
    missed or flags at random or everywhere score low."""
    spec = importlib.util.spec_from_file_location("energy_score", os.path.join(EXAMPLES, "energy", "score.py"))
    scoring = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scoring)
    subprocess.run([sys.executable, os.path.join(EXAMPLES, "energy", "generate.py"), "--seed", "7", "--out",
                    str(tmp_path)], check=True)
    truth = pd.read_csv(tmp_path / "ground_truth.csv", parse_dates=["start", "end"])
    hours = pd.date_range("2025-01-01", periods=8760, freq="h")

    def flags(stamps):
        path = tmp_path / "flags.csv"
        pd.DataFrame({"timestamp": pd.DatetimeIndex(stamps).strftime("%Y-%m-%d %H:%M")}).to_csv(path, index=False)
        p, r, _, by_kind = scoring.score(scoring.load_flags(path), truth, 2)
        return p, r, {k: (row["sum"], row["size"]) for k, row in by_kind.iterrows()}

    def hours_of(kinds):
        return [t for s, e, k in zip(truth.start, truth.end, truth.kind) if k in kinds
                for t in pd.date_range(s, e, freq="h")]

    kinds = set(truth.kind)
    p, r, by_kind = flags(hours_of(kinds))
    assert (p, r) == (1.0, 1.0) and all(a == b for a, b in by_kind.values())
    for kind in kinds:  # a kind missed entirely
        p, r, by_kind = flags(hours_of(kinds - {kind}))
        assert p == 1.0 and by_kind[kind][0] == 0 and r < 1.0, (kind, p, r)
    assert flags(hours_of(kinds - {"dropout"}))[1] < FLOOR
    assert flags(hours_of(kinds) + list(pd.Series(hours).sample(300, random_state=1)))[0] < 0.5
    assert flags(pd.Series(hours).sample(300, random_state=1))[0] < 0.5
    assert flags(hours)[0] < 0.5  # everything flagged: one run, mostly wrong


@pytest.fixture(scope="module")
def sales(tmp_path_factory):
    out = tmp_path_factory.mktemp("sales-demo")
    os.chmod(out, 0o755)
    r = run_demo("sales", out)
    return out, r


def test_sales_artifacts(sales):
    out, r = sales
    data = pd.read_csv(out / "sales-data" / "sales.csv")
    assert len(data) == 10000 and list(data.columns) == ["Product", "Revenue", "Date", "Region"]
    top5 = pd.read_csv(out / "sales" / "top5.csv")
    want = data.groupby("Product").Revenue.sum().sort_values(ascending=False).head(5)
    assert top5.Product.tolist() == want.index.tolist()
    assert (top5.revenue - want.to_numpy()).abs().max() < 0.01
    check_png(out / "sales" / "trend.png")

    # The anomalies are exactly the rows beyond 3 standard deviations of
    # their product, and every injected outlier is among them.
    anomalies = pd.read_csv(out / "sales" / "anomalies.csv")
    g = data.groupby("Product").Revenue
    beyond = data[((data.Revenue - g.transform("mean")) / g.transform("std")).abs() > 3]
    key = lambda df: sorted(zip(df.Product, df.Date, df.Revenue.round(2)))
    assert key(anomalies) == key(beyond)
    injected = pd.read_csv(out / "sales-data" / "outliers.csv")
    assert set(key(injected)) <= set(key(anomalies))
    report = (out / "sales" / "report.md").read_text()
    for product in want.index:
        assert product in report
    assert "matches the data" in r.stdout and f"{len(injected)} of the {len(injected)} injected" in r.stdout


@pytest.mark.parametrize("name", ["energy", "sales"])
def test_transcripts_are_labelled(name):
    """A scripted transcript says so on its first line, then what data it was
    made on (a replay on other data says so: docs/providers.md, "Replay"),
    and holds replies only."""
    with open(os.path.join(EXAMPLES, name, "transcript.jsonl")) as f:
        lines = [json.loads(line) for line in f]
    assert list(lines[0]) == ["comment"] and lines[0]["comment"].startswith("Scripted for the demo, not recorded")
    assert list(lines[1]) == ["run"] and lines[1]["run"]["inputs"][0]["sha256"]
    assert len(lines) >= 6 and all(list(line) == ["reply"] for line in lines[2:])


def test_energy_demo_with_a_configured_model(tmp_path):
    """With $OPENAI_BASE_URL and $CORRAL_MODEL set and no MODEL, the demo asks
    that endpoint (here the scripted server playing the transcript's turns,
    each checked against what the model was sent), not the transcript."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "model-server"))
    from modelserver import ScriptedServer
    with open(os.path.join(EXAMPLES, "energy", "transcript.jsonl")) as f:
        replies = [json.loads(line)["reply"]["message"] for line in f.read().splitlines()[2:]]
    turns = [{"reply": {"content": m["content"],
                        "tool_calls": [{"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])}
                                       for c in m["tool_calls"]]}} for m in replies]
    turns[3]["expect"] = {"contains": ["Can only use .dt accessor"]}  # the fix follows the real error
    turns[-1]["expect"] = {"contains": ["## Summary"]}  # the answer follows the check of the report
    os.chmod(tmp_path, 0o755)
    with ScriptedServer(turns, models=["energy-test"]) as srv:
        r = run_demo("energy", tmp_path, MODEL="", OPENAI_BASE_URL=srv.base_url, CORRAL_MODEL="energy-test")
    srv.assert_ok()
    assert "the configured model" in r.stdout
    with open(tmp_path / "energy-trace.jsonl") as f:
        start = json.loads(f.readline())
    assert start["model"] == "energy-test" and start["base_url"] == srv.base_url
    m = re.search(r"^precision (\d\.\d\d)  recall (\d\.\d\d)", r.stdout, re.M)
    assert m and float(m[1]) >= FLOOR and float(m[2]) >= FLOOR, r.stdout


# --- choosing the model (examples/choose-model.sh), without running corral ---

def choose(tmp_path, **env):
    e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "py": sys.executable,
         "XDG_CONFIG_HOME": str(tmp_path / "config"), **env}
    r = subprocess.run(["sh", "-c", '. "$1"; choose_model /t.jsonl; rc=$?; echo "opts=$model_opts"; exit $rc',
                        "sh", os.path.join(EXAMPLES, "choose-model.sh")], env=e, capture_output=True, text=True,
                       timeout=30)
    opts = r.stdout.strip().rpartition("opts=")[2]
    return r.returncode, opts, r.stderr


def ollama_port_free():
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as HTTPServer: TIME_WAIT is no listener
        try:
            s.bind(("127.0.0.1", 11434))
        except OSError:
            return False
    return True


def test_choose_model(tmp_path):
    replay = "--model replay:/t.jsonl"
    assert choose(tmp_path, MODEL="replay", OPENAI_BASE_URL="http://x/v1", CORRAL_MODEL="m")[:2] == (0, replay)
    assert choose(tmp_path, OPENAI_BASE_URL="http://x/v1", CORRAL_MODEL="m")[:2] == (0, "")
    assert choose(tmp_path, OPENAI_BASE_URL="http://x/v1", MODEL="gpt-x")[:2] == (0, "--model gpt-x")
    rc, _, err = choose(tmp_path, OPENAI_BASE_URL="http://x/v1")
    assert rc == 2 and "MODEL=NAME" in err
    (tmp_path / "config" / "corral").mkdir(parents=True)
    (tmp_path / "config" / "corral" / "config.json").write_text('{"model": "ollama/qwen"}')
    assert choose(tmp_path)[:2] == (0, "")
    (tmp_path / "config" / "corral" / "config.json").unlink()
    # No Ollama: the port held (bound, not listening: a connect is refused)
    # while choose looks, so that another test's server cannot start there
    # meanwhile (make test runs an ordinary user's pass at the same time).
    with socket.socket() as held:
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            held.bind(("127.0.0.1", 11434))
        except OSError:
            return
        assert choose(tmp_path)[:2] == (0, replay)


def test_choose_model_ollama(tmp_path):
    """A server answering /api/tags on localhost:11434 is used, its coder model first."""
    if not ollama_port_free():
        pytest.skip("something listens on 127.0.0.1:11434")

    class Tags(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"models": [{"name": "llama3.2:3b"}, {"name": "qwen2.5-coder:7b"}]}).encode()
            self.send_response(200 if self.path == "/api/tags" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    srv = HTTPServer(("127.0.0.1", 11434), Tags)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        assert choose(tmp_path)[:2] == (0, "--provider ollama --model qwen2.5-coder:7b")
        assert choose(tmp_path, MODEL="llama3.2:3b")[:2] == (0, "--provider ollama --model llama3.2:3b")
        assert choose(tmp_path, MODEL="replay")[:2] == (0, "--model replay:/t.jsonl")
    finally:
        srv.shutdown()
        srv.server_close()
