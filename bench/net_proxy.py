#!/usr/bin/python3
"""The --net allow= proxy: added latency per request and throughput against direct loopback.

One loopback server on 127.0.0.2 (plain HTTP and HTTPS with a certificate from a CA made here with the
openssl CLI) serves a 2-byte object, 1 MB and 100 MB.  The same client runs on the host straight to the
server ("direct") and inside one jail through corral's proxy: plain HTTP, HTTPS as a CONNECT tunnel, and
HTTPS to a host with a --secret credential (TLS ended by the proxy, the header added, the answer masked).
Jail start-up is not in the figures: each variant is one jail that does all its requests.  Skipped when
corral or openssl is missing.  Nothing leaves 127.0.0.0/8.
"""

import argparse
import http.server
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading

import benchlib as bl

ADDR = "127.0.0.2"
SIZES = {"/tiny": 2, "/1m": 1 << 20, "/100m": 100 << 20}
CHUNK = memoryview(b"x" * (1 << 20))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_GET(self):
        n = SIZES.get(self.path.split("?")[0], 0)
        self.send_response(200)
        self.send_header("Content-Length", str(n))
        self.end_headers()
        while n > 0:
            k = min(n, len(CHUNK))
            self.wfile.write(CHUNK[:k])
            n -= k

    def log_message(self, *args):
        pass


# Runs on the host (direct) and in the jail (proxy): one connection per request, read to the end.
CLIENT = r"""
import json, os, socket, ssl, time
cfg = json.loads(os.environ["BENCH"])
ctx = ssl.create_default_context(cadata=cfg["ca"]) if cfg["ca"] else ssl.create_default_context()
buf = bytearray(1 << 20)

def fetch(path):
    t = time.perf_counter()
    host, port = cfg["host"], cfg["port"]
    if cfg["proxy"]:
        s = socket.create_connection(("127.0.0.1", 3128))
        if cfg["tls"]:
            s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
            head = b""
            while b"\r\n\r\n" not in head:
                head += s.recv(4096)
            assert head.startswith(b"HTTP/1.1 200"), head
            target = path
        else:
            target = f"http://{host}:{port}{path}"
    else:
        s = socket.create_connection((cfg["addr"], port))
        target = path
    if cfg["tls"]:
        s = ctx.wrap_socket(s, server_hostname=host)
    s.sendall(f"GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
    n = 0
    while True:
        k = s.recv_into(buf)
        if not k:
            break
        n += k
    s.close()
    return n, time.perf_counter() - t

out = {}
for path, count in cfg["plan"]:
    samples = []
    for _ in range(count):
        n, dt = fetch(path)
        samples.append([n, dt])
    out[path] = samples
print(json.dumps(out))
"""


def make_pki(d):
    def ossl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d)
    ossl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
         "-subj", "/CN=bench CA", "-keyout", "ca.key", "-out", "ca.pem")
    ossl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj",
         "/CN=bench.test", "-keyout", "srv.key", "-out", "srv.csr")
    with open(os.path.join(d, "ext"), "w") as f:
        f.write("subjectAltName=DNS:bench.test\n")
    ossl("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "1",
         "-extfile", "ext", "-out", "srv.pem")


def start(tls_dir=None):
    s = http.server.ThreadingHTTPServer((ADDR, 0), Handler)
    if tls_dir:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(tls_dir, "srv.pem"), os.path.join(tls_dir, "srv.key"))
        s.socket = ctx.wrap_socket(s.socket, server_side=True)
    threading.Thread(target=s.serve_forever, daemon=True).start()
    return s


def run_variant(corral, name, port, tls, proxy, secret, ca_pem, pki, plan):
    cfg = {"host": "bench.test", "addr": ADDR, "port": port, "tls": tls, "proxy": proxy, "plan": plan,
           "ca": None if (secret and proxy) else (ca_pem if tls else None)}
    env = dict(bl.ENV, BENCH_KEY="bench-" + "k" * 24)
    for v in ("CORRAL_CACHE_DIR", "XDG_STATE_HOME"):  # where the caller keeps corral's state
        if v in os.environ:
            env[v] = os.environ[v]
    if not proxy:
        p = subprocess.run([sys.executable, "-c", CLIENT], env=dict(env, BENCH=json.dumps(cfg)),
                           capture_output=True, text=True, timeout=600)
    else:
        argv = [corral, "exec", "--timeout", "600", "--memory", "512M", "--net-bytes", "8G",
                "--net", f"allow=bench.test:{port}", "--resolve", f"bench.test:{ADDR}",
                "-e", "BENCH=" + json.dumps(cfg)]
        if secret:
            argv += ["--secret", "bench.test=X-Bench-Key:BENCH_KEY", "--upstream-ca", os.path.join(pki, "ca.pem")]
        argv += ["--lang", "python", "-c", CLIENT]
        p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise RuntimeError(f"{name}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=200, help="requests of the 2-byte object (default 200)")
    ap.add_argument("--mb", type=int, default=20, help="1 MB downloads (default 20)")
    ap.add_argument("--big", type=int, default=3, help="100 MB downloads (default 3)")
    ap.add_argument("--md", help="also write a markdown section to this file")
    args = ap.parse_args()
    title = "### Network proxy: latency and throughput (`bench/net_proxy.py`)"
    corral, why = bl.find_corral()
    if not corral or not shutil.which("openssl"):
        why = why or "openssl not on PATH"
        print(f"skip net_proxy benchmark: {why}")
        bl.write_md(args.md, f"{title}\n\nSkipped: {why}.")
        return
    pki = tempfile.mkdtemp(prefix="corral-bench-net-")
    try:
        make_pki(pki)
        with open(os.path.join(pki, "ca.pem")) as f:
            ca_pem = f.read()
        plain, secure = start(), start(pki)
        plan = [["/tiny", args.small], ["/1m", args.mb], ["/100m", args.big]]
        variants = [
            ("HTTP, direct", plain, False, False, False),
            ("HTTP, through the proxy", plain, False, True, False),
            ("HTTP, proxy + --secret", plain, False, True, True),
            ("HTTPS, direct", secure, True, False, False),
            ("HTTPS, proxy tunnel (CONNECT)", secure, True, True, False),
            ("HTTPS, proxy + --secret (TLS ended)", secure, True, True, True),
        ]
        rows, base = [], {}
        for name, srv, tls, proxy, secret in variants:
            res = run_variant(corral, name, srv.server_address[1], tls, proxy, secret, ca_pem, pki, plan)
            lat = [dt * 1000 for _, dt in res["/tiny"]]
            mbps = {p: [n / dt / 1e6 for n, dt in res[p]] for p in ("/1m", "/100m")}
            for p in ("/1m", "/100m"):
                assert all(n >= SIZES[p] for n, _ in res[p]), (name, p)
            p50 = bl.pct(lat, 50)
            key = "https" if tls else "http"
            if not proxy:
                base[key] = p50
            rows.append([name, f"{p50:.3f}", f"{bl.pct(lat, 90):.3f}", f"{p50 - base[key]:+.3f}",
                         f"{bl.pct(mbps['/1m'], 50):.0f}", f"{bl.pct(mbps['/100m'], 50):.0f}"])
            print(f"{name}: p50 {p50:.3f} ms, 1 MB {bl.pct(mbps['/1m'], 50):.0f} MB/s, "
                  f"100 MB {bl.pct(mbps['/100m'], 50):.0f} MB/s", flush=True)
        header = ["path", "request p50 ms", "p90 ms", "added ms (p50)", "1 MB MB/s (p50)", "100 MB MB/s (p50)"]
        print(bl.table(header, rows))
        bl.write_md(args.md, f"""{title}

A new connection per request, the body read to its end; {args.small} requests of a 2-byte object, {args.mb}
downloads of 1 MB, {args.big} of 100 MB, from a Python server on 127.0.0.2.  "Direct" is the same client on the
host; the others run in one jail (`--net allow=`) and go through corral's proxy.  "Added" is the request's p50
less direct's, same scheme.  Throughput is bytes over the whole request, connection set-up included.

{bl.md_table(header, rows)}""")
        plain.shutdown()
        secure.shutdown()
    finally:
        shutil.rmtree(pki, ignore_errors=True)


if __name__ == "__main__":
    main()
