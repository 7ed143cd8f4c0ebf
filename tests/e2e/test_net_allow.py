"""--net allow=: the jail reaches allowed hosts only, through corral's proxy (docs/network.md).

Every server here listens on 127.0.0.2 (the host's loopback); test host names are mapped to it with
--resolve.  Nothing is sent to any address outside 127.0.0.0/8."""
import http.server
import json
import os
import shutil
import socket
import ssl
import subprocess
import threading
import time

import pytest

import trustcheck

HOST_ADDR = "127.0.0.2"
BIG = 200_000


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_GET(self):
        if self.path == "/huge":  # more than every socket buffer on the way holds
            self.send_response(200)
            self.end_headers()
            try:
                for _ in range(64):
                    self.wfile.write(b"y" * (1 << 20))
            except OSError:
                pass
            return
        body = b"x" * BIG if self.path == "/big" else f"hello from {self.headers.get('Host')}\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def serve(server):
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    return server


@pytest.fixture(scope="module")
def http_server():
    s = serve(http.server.ThreadingHTTPServer((HOST_ADDR, 0), Handler))
    yield s.server_address[1]
    s.shutdown()


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make the test certificate")
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=secure.test", "-addext", "subjectAltName=DNS:secure.test", "-keyout", str(key),
                    "-out", str(cert)], check=True, capture_output=True)
    s = http.server.ThreadingHTTPServer((HOST_ADDR, 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    s.socket = ctx.wrap_socket(s.socket, server_side=True)
    serve(s)
    yield s.server_address[1], cert.read_text()
    s.shutdown()


def allow(spec, *resolve):
    opts = ["--net", "allow=" + spec]
    for r in resolve:
        opts += ["--resolve", r]
    return opts


def test_allowed_http_through_the_proxy(jail, http_server):
    r = jail(f"""
import os, urllib.request
print(os.environ["HTTP_PROXY"], os.environ["https_proxy"], os.environ["NO_PROXY"])
print(urllib.request.urlopen("http://api.test:{http_server}/hi", timeout=10).read().decode(), end="")
""", *allow(f"api.test:{http_server}", f"api.test:{HOST_ADDR}"))
    assert r["status"] == "ok", r
    assert r["stdout"].splitlines() == ["http://127.0.0.1:3128 http://127.0.0.1:3128 localhost,127.0.0.1,::1",
                                        f"hello from api.test:{http_server}"]
    [c] = r["network"]
    assert c["host"] == "api.test" and c["port"] == http_server and c["method"] == "GET"
    assert c["allowed"] is True and c["reason"] is None and c["address"] == HOST_ADDR
    assert c["bytes_up"] > 0 and c["bytes_down"] > 0 and c["ms"] >= 0


def test_wildcard_and_curl(corral, http_server):
    if shutil.which("curl") is None:
        pytest.skip("no curl")
    r = corral("exec", *allow(f"*.svc.test:{http_server}", f"a.b.svc.test:{HOST_ADDR}", f"svc.test:{HOST_ADDR}"),
               "--lang", "bash", "-c",
               f"curl -sS http://a.b.svc.test:{http_server}/ ; curl -sS http://svc.test:{http_server}/")
    assert r.out.decode() == (f"hello from a.b.svc.test:{http_server}\n"
                              "corral proxy: the host is not in the jail's allow-list\n"), r.err


def test_https_through_connect(jail, tls_server):
    port, cert = tls_server
    r = jail(f"""
import ssl, urllib.request
ctx = ssl.create_default_context(cadata={cert!r})
print(urllib.request.urlopen("https://secure.test:{port}/s", context=ctx, timeout=10).read().decode(), end="")
""", *allow(f"secure.test:{port}", f"secure.test:{HOST_ADDR}"))
    assert r["status"] == "ok", r
    assert r["stdout"] == f"hello from secure.test:{port}\n"
    [c] = r["network"]
    assert c["method"] == "CONNECT" and c["allowed"] and c["bytes_down"] > 500


def test_sni_must_match_the_connect_host(jail, tls_server):
    port, cert = tls_server
    r = jail(f"""
import socket, ssl
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT secure.test:{port} HTTP/1.1\\r\\nHost: secure.test:{port}\\r\\n\\r\\n")
print(s.recv(100).split(b"\\r\\n")[0].decode())
ctx = ssl.create_default_context(cadata={cert!r})
ctx.check_hostname = False
try:
    ctx.wrap_socket(s, server_hostname="elsewhere.test")
    print("handshake done")
except (OSError, ssl.SSLError) as e:
    print("refused")
""", *allow(f"secure.test:{port}", f"secure.test:{HOST_ADDR}"))
    assert r["stdout"] == "HTTP/1.1 200 Connection established\nrefused\n", r
    [c] = r["network"]
    assert c["reason"] == "the TLS server name does not match the CONNECT host"
    assert c["bytes_down"] == 0


def test_connect_carries_tls_only(jail, http_server):
    r = jail(f"""
import socket
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT api.test:{http_server} HTTP/1.1\\r\\n\\r\\n")
s.recv(100)
s.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
print(repr(s.recv(100)))
""", *allow(f"api.test:{http_server}", f"api.test:{HOST_ADDR}"))
    assert r["stdout"] == "b''\n", r
    assert r["network"][0]["reason"] == "not TLS: the tunnel carries TLS only"


DENIED = """
import urllib.request, urllib.error
try:
    urllib.request.urlopen("{url}", timeout=10)
    print("reached")
except urllib.error.HTTPError as e:
    print(e.code, e.headers["X-Corral-Reason"])
"""


def test_denied_host_gets_403_with_reason(jail, http_server):
    r = jail(DENIED.format(url=f"http://other.test:{http_server}/"),
             *allow(f"api.test:{http_server}", f"api.test:{HOST_ADDR}", f"other.test:{HOST_ADDR}"))
    assert r["stdout"] == "403 the host is not in the jail's allow-list\n", r
    [c] = r["network"]
    assert c["allowed"] is False and c["host"] == "other.test" and c["address"] is None


def test_wrong_port_is_denied(jail, http_server):
    r = jail(DENIED.format(url=f"http://api.test:{http_server + 1}/"),
             *allow(f"api.test:{http_server}", f"api.test:{HOST_ADDR}"))
    assert r["stdout"] == "403 the host is not in the jail's allow-list\n", r


def test_ip_literal_refused_unless_allowed_as_such(jail, http_server):
    url = f"http://{HOST_ADDR}:{http_server}/"
    r = jail(DENIED.format(url=url), *allow(f"api.test:{http_server}", f"api.test:{HOST_ADDR}"))
    assert r["stdout"] == "403 the address is not in the jail's allow-list\n", r
    # Allowed by address, a loopback one too: the caller asked for exactly it.
    r = jail(DENIED.format(url=url), *allow(f"{HOST_ADDR}:{http_server}"))
    assert r["stdout"] == "reached\n", r


def test_loopback_destination_refused_by_name(jail, http_server):
    # localhost resolves to loopback on the host: refused unless mapped with --resolve.  (NO_PROXY
    # names it, so ask the proxy directly.)
    r = jail(f"""
import socket
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"GET http://localhost:{http_server}/ HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n")
print(s.recv(1000).split(b"\\r\\n")[2].decode())
""", *allow(f"localhost:{http_server}"))
    assert r["stdout"] == "X-Corral-Reason: the host resolves to a loopback, private or reserved address\n", r
    assert r["network"][0]["allowed"] is False


def test_no_way_around_the_proxy(jail, http_server):
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind((HOST_ADDR, 0))
    udp.settimeout(0.5)
    r = jail(f"""
import socket
for what, f in [
    ("dns", lambda: socket.getaddrinfo("api.test", 80)),
    ("dns-public", lambda: socket.getaddrinfo("localhost.localdomain.invalid", 80)),
    ("tcp", lambda: socket.create_connection(("{HOST_ADDR}", {http_server}), timeout=3)),
    ("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("{HOST_ADDR}", {udp.getsockname()[1]}))),
]:
    try:
        f()
        print(what, "ok")
    except OSError as e:
        print(what, "failed")
""", *allow(f"api.test:{http_server}", f"api.test:{HOST_ADDR}"))
    # UDP to the jail's own loopback "succeeds" in that namespace; it must not reach the host's.
    assert r["stdout"].splitlines()[:3] == ["dns failed", "dns-public failed", "tcp failed"], r
    with pytest.raises(socket.timeout):
        udp.recvfrom(10)
    assert r["network"] == []


def test_byte_limit(jail, http_server):
    r = jail(f"""
import urllib.request
try:
    print(len(urllib.request.urlopen("http://api.test:{http_server}/big", timeout=10).read()))
except Exception as e:
    print("cut", type(e).__name__)
""", *allow(f"api.test:{http_server}", f"api.test:{HOST_ADDR}"), "--net-bytes", "64K")
    assert r["stdout"].startswith("cut") or int(r["stdout"]) < BIG, r
    c = r["network"][0]
    assert c["reason"] == "the jail's network byte limit was reached"
    assert c["bytes_down"] <= 64 * 1024


def test_connection_limit(jail, http_server):
    t0 = time.monotonic()
    r = jail("""
import socket, time
held = [socket.create_connection(("127.0.0.1", 3128)) for _ in range(2)]
time.sleep(0.3)
s = socket.create_connection(("127.0.0.1", 3128))
print(s.recv(200).split(b"\\r\\n")[0].decode())
""", *allow(f"api.test:{http_server}", f"api.test:{HOST_ADDR}"), "--net-conns", "2")
    assert r["stdout"] == "HTTP/1.1 503 Service Unavailable\n", r
    reasons = sorted(c["reason"] for c in r["network"])
    assert reasons == ["no request", "no request", "too many connections at once"]
    # The two held connections did not keep the jail's teardown waiting.
    assert time.monotonic() - t0 < 10


def test_bad_requests_and_options(corral, jail, http_server):
    r = jail("""
import socket
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"GET /relative HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
print(s.recv(300).split(b"\\r\\n")[0].decode())
""", *allow(f"api.test:{http_server}"))
    assert r["stdout"] == "HTTP/1.1 400 Bad Request\n", r
    for bad in (["--net", "allow="], ["--net", "allow=*.com"], ["--net", "allow=a.test:99999"],
                ["--net", "allow=a.test", "--resolve", "a.test"], ["--net", "allow=a b"]):
        r = corral("exec", *bad, "true")
        assert r.rc == 125 and b"corral exec: " in r.err, (bad, r.err)
    # corral run, session, serve (test_net_sessions.py) and mcp (test_net_secrets.py) take it.


def test_proxy_port_is_the_proxys(jail, http_server):
    # The listening socket is held by the host: the program cannot take the port over.
    r = jail("""
import socket
s = socket.socket()
try:
    s.bind(("127.0.0.1", 3128))
    print("bound")
except OSError:
    print("in use")
""", *allow(f"api.test:{http_server}"))
    assert r["stdout"] == "in use\n"


def test_a_program_that_stops_reading_does_not_hold_the_teardown(jail, http_server):
    t0 = time.monotonic()
    r = jail(f"""
import socket, time
s = socket.create_connection(("127.0.0.1", 3128))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.sendall(b"GET http://api.test:{http_server}/huge HTTP/1.0\\r\\n\\r\\n")
time.sleep(1)
print("left")
""", *allow(f"api.test:{http_server}", f"api.test:{HOST_ADDR}"))
    assert r["stdout"] == "left\n", r
    [c] = r["network"]
    assert c["allowed"] and 0 < c["bytes_down"] < 64 << 20, c
    assert time.monotonic() - t0 < 10


def test_system_trust_store_without_a_credential(jail, tmp_path):
    """The host's bundle at Debian's path, byte for byte, and real verification: the test CA is refused
    until the program adds it (docs/network.md, "Trust")."""
    server, port, cert = trustcheck.tls_server(str(tmp_path))
    try:
        r = jail(trustcheck.script(port, cert), *trustcheck.opts(port))
    finally:
        server.shutdown()
    assert r["status"] == "ok", r
    assert r["stdout"] == trustcheck.expected(), r


def test_no_network_no_trust_store(jail):
    r = jail("import os\nprint(os.path.exists('/etc/ssl'))")
    assert r["status"] == "ok" and r["stdout"] == "False\n", r


def test_rootfs_trust_store_is_the_rootfs_own(corral, tmp_path):
    """Under --rootfs the bundle is the rootfs's, resolved inside it: a symlink there that names a host
    file (absolute, or by '..') gives no trust store rather than the host's file, nor does a file over
    4 MiB (not a bundle).  With a brokered credential the bundle is the rootfs's followed by the jail's
    CA, not the host's roots."""
    cc = shutil.which("gcc")
    if cc is None:
        pytest.skip("gcc is not installed")
    src = tmp_path / "cat.c"
    src.write_text('#include <stdio.h>\nint main(void) {\n'
                   '  FILE *f = fopen("/etc/ssl/certs/ca-certificates.crt", "r"); char b[64] = "";\n'
                   '  if (!f) { puts("missing"); return 0; }\n'
                   '  fgets(b, sizeof b, f); fputs(b, stdout); return 0;\n}\n')
    os.chmod(tmp_path, 0o755)
    outs = []
    for i, target in enumerate([None, "/etc/passwd", "../../../../../../../../etc/passwd", "huge"]):
        root = tmp_path / f"rootfs{i}"
        (root / "usr/bin").mkdir(parents=True)
        (root / "etc/ssl/certs").mkdir(parents=True)
        if i == 0:
            subprocess.run([cc, "-static", "-O2", "-o", str(root / "usr/bin/cat-bundle"), str(src)], check=True)
        else:
            shutil.copy(tmp_path / "rootfs0/usr/bin/cat-bundle", root / "usr/bin/cat-bundle")
        bundle = root / "etc/ssl/certs/ca-certificates.crt"
        if target is None:
            bundle.write_text("# the rootfs's own bundle\n")
        elif target == "huge":
            bundle.write_text("# too large\n" + "x" * (4 << 20))
        else:
            bundle.symlink_to(target)
        r = corral("exec", "--rootfs", str(root), "--net", "allow=x.test", "--", "/usr/bin/cat-bundle")
        assert r.rc == 0, r.err
        outs.append(r.out.decode())
    assert outs == ["# the rootfs's own bundle\n", "missing\n", "missing\n", "missing\n"]
    r = corral("exec", "--rootfs", str(tmp_path / "rootfs0"), "--net", "allow=x.test", "--secret",
               "x.test=X-Key:CORRAL_TEST_KEY", "--", "/usr/bin/cat-bundle",
               env=dict(os.environ, CORRAL_TEST_KEY="k" * 20))
    assert r.rc == 0 and r.out.decode() == "# the rootfs's own bundle\n", (r.out, r.err)


def test_a_name_server_that_does_not_answer_does_not_hold_the_teardown(tmp_path):
    """The proxy resolves an allowed name with the host's resolver, which
    cannot be interrupted: a name server that never answers held corral's
    exit for the resolver's timeouts.  Here the resolver asks 127.0.0.77:53,
    a socket that reads nothing (set up in a mount namespace of this test's
    own, so the host's /etc/resolv.conf is untouched), with a 20 s timeout;
    the program gives up after a second and corral ends soon after, the
    connection's record saying why it was refused."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root (a name server on port 53, a mount namespace) and unshare")
    from conftest import CORRAL
    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        silent.bind(("127.0.0.77", 53))
    except OSError as e:
        pytest.skip(f"cannot listen on 127.0.0.77:53: {e}")
    conf = tmp_path / "resolv.conf"
    conf.write_text("nameserver 127.0.0.77\noptions timeout:20 attempts:1\n")
    code = ("import socket, time\n"
            "s = socket.create_connection(('127.0.0.1', 3128))\n"
            "s.sendall(b'GET http://slow.test/ HTTP/1.0\\r\\n\\r\\n')\n"
            "time.sleep(1)\n"
            "print('gave up')\n")
    script = ('mount --make-rprivate / && mount --bind "$1" /etc/resolv.conf && shift && exec "$@"')
    t0 = time.monotonic()
    try:
        r = subprocess.run(["unshare", "-m", "--", "sh", "-c", script, "sh", str(conf), CORRAL, "exec", "--json",
                            "--net", "allow=slow.test:80", "-c", code], capture_output=True, text=True, timeout=60)
    finally:
        silent.close()
    took = time.monotonic() - t0
    res = json.loads(r.stdout)
    assert res["stdout"] == "gave up\n", (res, r.stderr)
    assert took < 10, f"corral waited {took:.1f} s for the resolver"
    [c] = res["network"]
    assert c["host"] == "slow.test" and c["allowed"] is False, c
    assert c["reason"] == "the sandbox ended while its host name was being resolved", c
