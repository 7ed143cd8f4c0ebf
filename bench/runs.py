#!/usr/bin/python3
"""`corral serve`'s agent runs (POST /v1/runs, docs/api.md "Runs") under
load, against the scripted model server on 127.0.0.1 (tests/model-server):

1. --runs runs (default 20) started one after the other, each a two-turn
   scenario (one run_python step, then the answer): POST's answer time, and
   the run's wall time to its end;
2. event latency: a follower on .../events of a live run, over server-sent
   events and (alongside) over a WebSocket; for each event, the time from
   its "ts" (written by the run) to its arrival at the client (the same
   clock: both on this machine): p50, p99, max;
3. replay: a finished run's whole event stream, --replays times, over SSE
   and over a WebSocket: p50;
4. wrk on GET /v1/runs (the list of --runs runs) and GET /v1/runs/{id} with
   --clients keep-alive connections for --duration seconds each: requests a
   second and wrk's latency percentiles.

Benchmarks print numbers; they do not pass or fail.
"""
import argparse
import datetime
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "model-server"))
from benchlib import find_corral, find_tool, md_table, pct, table, write_md  # noqa: E402
from modelserver import ScriptedServer, text, tool_call  # noqa: E402


class Serve:
    def __init__(self, corral, tmp, *args):
        self.data = os.path.join(tmp, "data")
        env = dict(os.environ, TMPDIR=tmp, XDG_CONFIG_HOME=os.path.join(tmp, "config"),
                   OPENAI_API_KEY="sk-bench-not-a-real-key-000000")
        self.proc = subprocess.Popen([corral, "serve", "--listen", "127.0.0.1:0", "--data", self.data,
                                      "--max-rate", "100000", "--model-url", "any", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
        url = self.proc.stdout.readline().strip()
        self.port = int(url.split(":")[2].split("/")[0])
        self.token = open(os.path.join(self.data, "token")).read().strip()

    def json(self, method, path, body=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        c.request(method, path, body=json.dumps(body) if body is not None else None,
                  headers={"Authorization": f"Bearer {self.token}"})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, json.loads(data)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(60)


def follow(s, rid, on_event=None):
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=120)
    c.request("GET", f"/v1/runs/{rid}/events", headers={"Authorization": f"Bearer {s.token}"})
    r = c.getresponse()
    n, data = 0, None
    while True:
        line = r.readline()
        if not line:
            break
        if line.startswith(b"data: "):
            data = line[6:]
        elif line == b"\n" and data is not None:
            n += 1
            if on_event:
                on_event(json.loads(data), time.time())
            data = None
    c.close()
    return n


def follow_ws(s, rid, on_event=None):
    """The same over a WebSocket (python3-websocket), to its close."""
    import websocket
    ws = websocket.create_connection(f"ws://127.0.0.1:{s.port}/v1/runs/{rid}/events",
                                     header=[f"Authorization: Bearer {s.token}"], timeout=120)
    n = 0
    while True:
        op, frame = ws.recv_data(control_frame=True)
        if op == websocket.ABNF.OPCODE_CLOSE:
            break
        if op == websocket.ABNF.OPCODE_TEXT:
            n += 1
            if on_event:
                on_event(json.loads(frame)["data"], time.time())
    ws.close()
    return n


def have_websocket():
    try:
        import websocket  # noqa: F401
        return True
    except ImportError:
        print("runs: the WebSocket figures skipped: no python3-websocket")
        return False


def turns():
    return [tool_call("run_python", code="print(sum(range(1000)))"), text("499500")]


def wrk(tool, s, path, clients, duration):
    out = subprocess.run([tool, f"-t{min(clients, 4)}", f"-c{clients}", f"-d{duration}s", "--latency",
                          "-H", f"Authorization: Bearer {s.token}", f"http://127.0.0.1:{s.port}{path}"],
                         capture_output=True, text=True, timeout=duration + 60).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    lat = dict(re.findall(r"^\s+(50|99)%\s+(\S+)", out, re.M))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": rps, "p50": lat.get("50"), "p99": lat.get("99"), "non_2xx": int(bad.group(1)) if bad else 0}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--replays", type=int, default=50)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--json")
    ap.add_argument("--md")
    a = ap.parse_args()
    corral, why = find_corral()
    if corral is None:
        sys.exit(f"runs: {why}")
    res = {}
    ws = have_websocket()
    with tempfile.TemporaryDirectory(prefix="corral-bench-runs.") as tmp:
        s = Serve(corral, tmp)
        try:
            post_ms, wall_ms, ids = [], [], []
            for _ in range(a.runs):
                with ScriptedServer(turns()) as srv:
                    t0 = time.perf_counter()
                    status, j = s.json("POST", "/v1/runs", {"task": "sum", "model": {"base_url": srv.base_url,
                                                                                     "model": "gpt-test"}})
                    post_ms.append((time.perf_counter() - t0) * 1000)
                    assert status == 201, j
                    lags, ws_lags = [], []

                    def seen(ev, now, into=lags):
                        ts = datetime.datetime.fromisoformat(ev["ts"].replace("Z", "+00:00")).timestamp()
                        into.append((now - ts) * 1000)
                    t = threading.Thread(target=follow_ws, args=(s, j["id"], lambda ev, now: seen(ev, now, ws_lags)))
                    if ws:
                        t.start()
                    follow(s, j["id"], seen)
                    wall_ms.append((time.perf_counter() - t0) * 1000)
                    if ws:
                        t.join(120)
                    ids.append(j["id"])
                    res.setdefault("event_lag_ms", []).extend(lags)
                    res.setdefault("ws_event_lag_ms", []).extend(ws_lags)
            lags = res.pop("event_lag_ms")
            ws_lags = res.pop("ws_event_lag_ms")
            if ws_lags:
                res["ws_event_lag_ms"] = {"n": len(ws_lags), "p50": pct(ws_lags, 50), "p99": pct(ws_lags, 99),
                                          "max": max(ws_lags)}
            res["post_ms"] = {"p50": pct(post_ms, 50), "p90": pct(post_ms, 90)}
            res["run_wall_ms"] = {"p50": pct(wall_ms, 50), "p90": pct(wall_ms, 90)}
            res["event_lag_ms"] = {"n": len(lags), "p50": pct(lags, 50), "p99": pct(lags, 99), "max": max(lags)}
            replay = []
            for _ in range(a.replays):
                t0 = time.perf_counter()
                n = follow(s, ids[0])
                replay.append((time.perf_counter() - t0) * 1000)
            res["replay_ms"] = {"events": n, "p50": pct(replay, 50), "p90": pct(replay, 90)}
            if ws:
                replay = []
                for _ in range(a.replays):
                    t0 = time.perf_counter()
                    n = follow_ws(s, ids[0])
                    replay.append((time.perf_counter() - t0) * 1000)
                res["ws_replay_ms"] = {"events": n, "p50": pct(replay, 50), "p90": pct(replay, 90)}
            tool, why = find_tool("wrk")
            if tool:
                res["wrk_list"] = wrk(tool, s, "/v1/runs", a.clients, a.duration)
                res["wrk_one"] = wrk(tool, s, f"/v1/runs/{ids[0]}", a.clients, a.duration)
            else:
                print(f"runs: wrk skipped: {why}")
        finally:
            s.stop()
    rows = [
        ["POST /v1/runs (201)", f"{res['post_ms']['p50']:.1f} ms", f"p90 {res['post_ms']['p90']:.1f} ms"],
        ["a two-turn run, start to run_end", f"{res['run_wall_ms']['p50']:.0f} ms",
         f"p90 {res['run_wall_ms']['p90']:.0f} ms"],
        [f"event latency, emitted to received ({res['event_lag_ms']['n']} events)",
         f"{res['event_lag_ms']['p50']:.2f} ms", f"p99 {res['event_lag_ms']['p99']:.2f} ms"],
        [f"replay of a finished run ({res['replay_ms']['events']} events)", f"{res['replay_ms']['p50']:.1f} ms",
         f"p90 {res['replay_ms']['p90']:.1f} ms"],
    ]
    if "ws_event_lag_ms" in res:
        w = res["ws_event_lag_ms"]
        rows.append([f"... over a WebSocket ({w['n']} events)", f"{w['p50']:.2f} ms", f"p99 {w['p99']:.2f} ms"])
    if "ws_replay_ms" in res:
        w = res["ws_replay_ms"]
        rows.append([f"replay over a WebSocket ({w['events']} events)", f"{w['p50']:.1f} ms", f"p90 {w['p90']:.1f} ms"])
    for key, what in (("wrk_list", f"GET /v1/runs ({a.runs} runs), wrk -c{a.clients}"),
                      ("wrk_one", f"GET /v1/runs/ID, wrk -c{a.clients}")):
        if key in res:
            w = res[key]
            rows.append([what, f"{w['rps']:.0f} req/s", f"p50 {w['p50']}, p99 {w['p99']}, non-2xx {w['non_2xx']}"])
    header = ["measure", "median / rate", "spread"]
    print(table(header, rows))
    write_md(a.md, md_table(header, rows, text_cols=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
