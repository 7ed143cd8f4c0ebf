"""--secret HOST=HEADER:ENV: brokered credentials (docs/network.md, "Brokered credentials").

The proxy adds the header on the host side; the value must never be inside the jail (environment, files,
/proc), in the result or on the terminal, also when the upstream echoes it back.  Servers listen on 127.0.0.2
only; certificates are made here with the openssl CLI (a test CA given to corral with --upstream-ca)."""
import http.server
import json
import os
import pathlib
import secrets
import shutil
import ssl
import subprocess
import tempfile
import threading
import time

import pytest

from conftest import CORRAL, loaded_libraries

HOST_ADDR = "127.0.0.2"
HEADER = "X-Api-Key"


class Echo(http.server.BaseHTTPRequestHandler):
    """Answers with the request's headers, in the body and in a response header: the worst upstream."""
    protocol_version = "HTTP/1.0"
    seen = []
    all_keys = []

    def do_GET(self):
        Echo.seen.append((self.server.server_address[1], dict(self.headers)))
        Echo.all_keys.append(self.headers.get_all(HEADER))
        body = "".join(f"{k}: {v}\n" for k, v in self.headers.items()).encode()
        if self.path == "/drip":  # the echo in 3-byte pieces: the masker must join them
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.flush()
            for i in range(0, len(body), 3):
                self.wfile.write(body[i:i + 3])
                self.wfile.flush()
                time.sleep(0.002)
            return
        self.send_response(200)
        self.send_header("X-Echo-Key", self.headers.get(HEADER, "none"))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def start(server):
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def open_dir():
    """A directory an ordinary user can reach too (pytest's own are root's, 0700)."""
    return pathlib.Path(tempfile.mkdtemp(prefix="corral-net-secrets-"))


@pytest.fixture(scope="module")
def pki():
    """A test CA and a server certificate it signed for api.test and other.test."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make the test certificates")
    d = open_dir()
    os.chmod(d, 0o755)

    def ossl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d)
    ossl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
         "-subj", "/CN=corral test CA", "-keyout", "ca.key", "-out", "ca.pem")
    ossl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj",
         "/CN=api.test", "-keyout", "srv.key", "-out", "srv.csr")
    (d / "ext").write_text("subjectAltName=DNS:api.test,DNS:other.test\n")
    ossl("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "1",
         "-extfile", "ext", "-out", "srv.pem")
    for f in d.iterdir():
        os.chmod(f, 0o644)
    yield d
    shutil.rmtree(d)


@pytest.fixture(scope="module")
def servers(pki):
    """(http port, https port): both echo the request headers."""
    plain = start(http.server.ThreadingHTTPServer((HOST_ADDR, 0), Echo))
    tls = http.server.ThreadingHTTPServer((HOST_ADDR, 0), Echo)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pki / "srv.pem", pki / "srv.key")
    tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
    start(tls)
    yield plain.server_address[1], tls.server_address[1]
    plain.shutdown()
    tls.shutdown()


@pytest.fixture
def token():
    return "tok-" + secrets.token_hex(16)


# Inside the jail: fetch, then look for the token everywhere the program can read.
PROBE = r"""
import os, ssl, sys, urllib.request
tok = sys.argv[1] if len(sys.argv) > 1 else None
url = {url!r}
try:
    r = urllib.request.urlopen(url, timeout=10, context={ctx})
    print("status", r.status)
    print("echo-header", r.headers.get("X-Echo-Key"))
    print(r.read().decode(), end="")
except Exception as e:
    print("error", e)
print("env", "X_TOKEN" in os.environ, len(os.environ))
found = []
for top in ("/etc", "/tmp", "/workspace", "/run", "/proc/self/environ", "/proc/1/environ", "/proc/1/cmdline"):
    for dirpath, dirs, files in os.walk(top) if os.path.isdir(top) else [(os.path.dirname(top), [], [os.path.basename(top)])]:
        for f in files:
            path = os.path.join(dirpath, f)
            if os.path.islink(path) and not path.startswith("/proc"):  # /etc/alternatives: host programs
                continue
            try:
                with open(path, "rb") as fh:
                    found.append(fh.read(1 << 20))
            except OSError:
                pass
print("files-read", len(found))
with open("/workspace/dump", "wb") as fh:  # for the host to search
    fh.write(b"\0".join(found) + os.environb.get(b"NOTHING", b""))
"""


def run(corral_bin_args, token, env_extra=None, preexec=None, timeout=60):
    env = dict(os.environ, X_TOKEN=token, **(env_extra or {}))
    return subprocess.run([CORRAL, *corral_bin_args], capture_output=True, env=env, timeout=timeout,
                          preexec_fn=preexec)


def exec_args(pki, ws, url, ctx="None", *extra):
    return ["exec", "--json", "-w", str(ws), "--net", f"allow=api.test:{url[1]},other.test:{url[1]}",
            "--resolve", f"api.test:{HOST_ADDR}", "--resolve", f"other.test:{HOST_ADDR}",
            "--secret", f"api.test={HEADER}:X_TOKEN", "--upstream-ca", str(pki / "ca.pem"), *extra,
            "--lang", "python", "-c", PROBE.format(url=url[0], ctx=ctx)]


def check_clean(p, token, ws):
    """Nothing corral printed, and nothing the jail could read, holds the token."""
    assert token.encode() not in p.stdout and token.encode() not in p.stderr
    dump = (ws / "dump").read_bytes()
    assert b"ca-certificates.crt" in dump and len(dump) > 100_000  # it did read /etc and /proc
    assert token.encode() not in dump


def upstream_saw(port):
    return [h for p, h in Echo.seen if p == port][-1]


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_brokered_header_added_upstream_and_masked_in_the_echo(servers, pki, token, tmp_path, scheme):
    port = servers[0] if scheme == "http" else servers[1]
    p = run(exec_args(pki, tmp_path, (f"{scheme}://api.test:{port}/echo", port)), token)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    out = r["stdout"]
    assert "status 200" in out, r
    # the upstream got it, from the proxy, with the Host it connects to
    seen = upstream_saw(port)
    assert seen[HEADER] == token and seen["Host"] == f"api.test:{port}"
    assert seen["Accept-Encoding"] == "identity"
    # the echo, in the body and in a response header, comes back masked
    assert f"echo-header {'*' * len(token)}\n" in out and f"{HEADER}: {'*' * len(token)}\n" in out
    assert "env False" in out
    check_clean(p, token, tmp_path)
    [c] = r["network"]
    assert c["allowed"] and c["brokered"] and c["method"] == ("GET" if scheme == "http" else "CONNECT")


def test_echo_in_pieces_and_the_programs_own_header(servers, pki, token, tmp_path):
    """The program's own X-Api-Key is replaced, not added to; an echo split over many reads is still masked."""
    port = servers[1]
    code = f"""
import urllib.request
rq = urllib.request.Request("https://api.test:{port}/drip", headers={{"{HEADER}": "mine", "Host": "evil.test"}})
print(urllib.request.urlopen(rq, timeout=10).read().decode(), end="")
"""
    p = run(["exec", "--json", "--net", f"allow=api.test:{port}", "--resolve", f"api.test:{HOST_ADDR}",
             "--secret", f"api.test={HEADER}:X_TOKEN", "--upstream-ca", str(pki / "ca.pem"), "-c", code], token)
    r = json.loads(p.stdout)
    assert f"{HEADER}: {'*' * len(token)}\n" in r["stdout"], r
    assert f"Host: api.test:{port}\n" in r["stdout"]
    assert Echo.all_keys[-1] == [token]
    assert token.encode() not in p.stdout and token.encode() not in p.stderr


def test_https_brokered_host_is_served_by_the_jail_ca(servers, pki, token, tmp_path):
    """The jail sees a certificate from corral's CA for the brokered host; the bundle and variables are set."""
    port = servers[1]
    code = f"""
import os, socket, ssl
print(os.environ["SSL_CERT_FILE"], os.environ["REQUESTS_CA_BUNDLE"], os.environ["PIP_CERT"])
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT api.test:{port} HTTP/1.1\\r\\n\\r\\n")
assert s.recv(100).startswith(b"HTTP/1.1 200")
t = ssl.create_default_context().wrap_socket(s, server_hostname="api.test")
print(dict(x[0] for x in t.getpeercert()["issuer"])["commonName"])
"""
    p = run(["exec", "--json", "--net", f"allow=api.test:{port}", "--resolve", f"api.test:{HOST_ADDR}",
             "--secret", f"api.test={HEADER}:X_TOKEN", "--upstream-ca", str(pki / "ca.pem"), "-c", code], token)
    r = json.loads(p.stdout)
    assert r["stdout"].splitlines() == ["/etc/ssl/certs/ca-certificates.crt"] * 3 + [
        "corral jail CA (brokered hosts only)"] or r["stdout"].splitlines()[1:] == [
        "corral jail CA (brokered hosts only)"], r


def test_non_brokered_https_host_stays_a_tunnel(servers, pki, token, tmp_path):
    """other.test has no credential: the jail talks TLS to the upstream itself and sees its certificate."""
    port = servers[1]
    ca = (pki / "ca.pem").read_text()
    ctx = f"ssl.create_default_context(cadata={ca!r})"
    p = run(exec_args(pki, tmp_path, (f"https://other.test:{port}/echo", port), ctx), token)
    r = json.loads(p.stdout)
    assert "status 200" in r["stdout"], r
    assert HEADER not in upstream_saw(port) and "echo-header none" in r["stdout"]
    [c] = r["network"]
    assert c["method"] == "CONNECT" and c["brokered"] is False
    check_clean(p, token, tmp_path)


def test_upstream_certificate_is_verified(servers, pki, token, tmp_path):
    """Without the test CA the proxy cannot verify api.test: the program gets a 502 with the reason."""
    port = servers[1]
    p = run(["exec", "--json", "--net", f"allow=api.test:{port}", "--resolve", f"api.test:{HOST_ADDR}",
             "--secret", f"api.test={HEADER}:X_TOKEN", "--lang", "python", "-c",
             f"import urllib.request\ntry:\n    urllib.request.urlopen('https://api.test:{port}/', timeout=10)\n"
             f"except Exception as e:\n    print(e.code, e.headers['X-Corral-Reason'])\n"], token)
    r = json.loads(p.stdout)
    assert r["stdout"].startswith("502 the host's TLS certificate does not verify"), r
    assert token.encode() not in p.stdout


def test_secret_usage_errors(corral, servers, pki):
    """corral exec's usage errors exit 125 (README, exit statuses); the value is never quoted."""
    port = servers[0]
    env = {k: v for k, v in os.environ.items() if k != "X_UNSET"}
    base = ["exec", "--net", f"allow=api.test:{port}", "--resolve", f"api.test:{HOST_ADDR}"]
    cases = [
        (["--secret", f"api.test={HEADER}:X_UNSET"], "--secret: the environment variable 'X_UNSET' is not set"),
        (["--secret", "api.test"], "--secret: invalid 'api.test': expected HOST=HEADER:ENV"),
        (["--secret", f"elsewhere.test={HEADER}:HOME"], "host 'elsewhere.test' is not in the network allow-list"),
        (["--secret", "api.test=Host:HOME"], "the credential header 'Host' is one the proxy sets itself"),
        (["--secret", "api.test=Bad Name:HOME"], "invalid credential header name 'Bad Name'"),
    ]
    for extra, message in cases:
        r = corral(*base, *extra, "--", "true", env=env)
        assert r.rc == 125 and message in r.err.decode(), (extra, r.err)
    r = corral("exec", "--secret", f"api.test={HEADER}:HOME", "--", "true")
    assert r.rc == 125 and "needs a network allow-list" in r.err.decode()


BROKERED = ["exec", "--net", "allow=api.test", "--secret", f"api.test={HEADER}:X_OSSL_TOKEN", "--", "true"]


def test_openssl_is_loaded_only_for_tls(corral):
    """OpenSSL is not linked into corral (2.4 ms a start): loaded when a jail's proxy first needs TLS
    (src/lib/ssl-dl.h); a plain allow-list does not."""
    ssl = {"libssl.so.3", "libcrypto.so.3"}
    for args in (["--version"], ["exec", "--", "true"], ["exec", "--net", "allow=api.test", "--", "true"]):
        names, r = loaded_libraries(corral, *args)
        assert r.rc == 0 and not names & ssl, (args, sorted(names))
    names, r = loaded_libraries(corral, *BROKERED, env=dict(os.environ, X_OSSL_TOKEN="tok-" + "0" * 16))
    assert r.rc == 0 and ssl <= names, (r.err[-2000:], sorted(names))


def test_secret_without_openssl_refuses(corral, tmp_path):
    """Without a loadable libssl.so.3 a jail with a brokered credential does not run (exit 125, saying which
    package to install); one with a plain allow-list does, and `corral doctor` says what is missing."""
    (tmp_path / "libssl.so.3").write_bytes(b"")  # found first on LD_LIBRARY_PATH, not a library
    env = dict(os.environ, LD_LIBRARY_PATH=str(tmp_path), X_OSSL_TOKEN="tok-" + "0" * 16)
    r = corral(*BROKERED, env=env)
    err = r.err.decode()
    assert r.rc == 125 and "a brokered credential needs TLS: cannot load OpenSSL (" in err, err
    assert "install the libssl3 package" in err and r.out == b"", err
    r = corral("exec", "--net", "allow=api.test", "--", "true", env=env)
    assert r.rc == 0, r.err
    r = corral("doctor", "--json", env=env)
    checks = {c["name"]: c for c in json.loads(r.out)["checks"]}
    assert checks["libssl"]["ok"] is False and "cannot load OpenSSL" in checks["libssl"]["detail"], checks["libssl"]
    assert "libssl3" in checks["libssl"]["advice"], checks["libssl"]
    assert checks["net brokered TLS"]["ok"] is False and checks["net allow proxy"]["ok"] is True, checks


@pytest.fixture
def nobody_dir():
    d = open_dir()
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_as_an_ordinary_user(servers, pki, token, nobody_dir):
    if os.getuid() != 0:
        pytest.skip("runs as root and drops to nobody")
    port = servers[1]
    tmp_path = nobody_dir
    os.chmod(tmp_path, 0o755)
    ws = tmp_path / "ws"
    ws.mkdir()
    state = tmp_path / "state"
    state.mkdir()
    for d in (tmp_path, ws, state):
        os.chown(d, 65534, 65534)

    def drop():
        os.setgroups([])
        os.setresgid(65534, 65534, 65534)
        os.setresuid(65534, 65534, 65534)
    p = run(exec_args(pki, ws, (f"https://api.test:{port}/echo", port)), token,
            env_extra={"XDG_STATE_HOME": str(state), "HOME": str(tmp_path)}, preexec=drop)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert "status 200" in r["stdout"] and upstream_saw(port)[HEADER] == token
    check_clean(p, token, ws)


def test_mcp_jail_brokers_too(servers, token):
    """corral mcp-jail takes --secret as corral exec does."""
    port = servers[0]
    code = f"import urllib.request; print(urllib.request.urlopen('http://api.test:{port}/e', timeout=10).read().decode())"
    p = run(["mcp-jail", "--net", f"allow=api.test:{port}", "--resolve", f"api.test:{HOST_ADDR}",
             "--secret", f"api.test={HEADER}:X_TOKEN", "--", "python3", "-c", code], token)
    assert p.returncode == 0, p.stderr
    assert f"{HEADER}: {'*' * len(token)}".encode() in p.stdout
    assert upstream_saw(port)[HEADER] == token and token.encode() not in p.stdout + p.stderr


# ---- sessions, warm and cold (docs/network.md, "Sessions") ----

@pytest.fixture(scope="module")
def session_rundir():
    """One session host for the module's sessions (its zygote kept between tests)."""
    d = tempfile.mkdtemp(prefix="corral-test-run-")
    os.chmod(d, 0o700)
    yield d
    subprocess.run([CORRAL, "session", "shutdown"], capture_output=True, timeout=90,
                   env=dict(os.environ, XDG_RUNTIME_DIR=d))
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("kind", ["warm", "cold"])
def test_session_brokers_over_https(servers, pki, token, tmp_path, session_rundir, kind):
    """A session started with --secret: each step's HTTPS request to api.test gets the header, from the
    session's own CA (for a warm one: mounted at the cold jail's path over the zygote's empty directory);
    the value is nowhere in the session, its results or what corral printed."""
    port = servers[1]
    env = dict(os.environ, XDG_RUNTIME_DIR=session_rundir, X_TOKEN=token)

    def corral(*args):
        return subprocess.run([CORRAL, "session", *args], capture_output=True, timeout=90, env=env)
    p = corral("start", "--json", f"--{kind}", "-w", str(tmp_path), "--net", f"allow=api.test:{port}",
               "--resolve", f"api.test:{HOST_ADDR}", "--secret", f"api.test={HEADER}:X_TOKEN",
               "--upstream-ca", str(pki / "ca.pem"))
    assert p.returncode == 0, p.stderr
    sid = json.loads(p.stdout)["id"]
    printed = [p.stdout, p.stderr]
    try:
        for _ in range(2):  # the proxy and its CA serve the session's life
            s = corral("exec", sid, "--json", "-c", PROBE.format(url=f"https://api.test:{port}/echo", ctx="None")
                       .replace("sys.argv[1] if len(sys.argv) > 1 else None", "None") + "\nimport time\n"
                       "time.sleep(0.3)\n")
            printed += [s.stdout, s.stderr]
            r = json.loads(s.stdout)
            assert "status 200" in r["stdout"], r
            assert upstream_saw(port)[HEADER] == token
            assert f"echo-header {'*' * len(token)}\n" in r["stdout"]
            assert any(c["brokered"] and c["allowed"] for c in r["network"]), r
        c = corral("exec", sid, "--json", "-c",
                   "import os\nb = open('/etc/ssl/certs/ca-certificates.crt').read()\n"
                   "print(os.environ['SSL_CERT_FILE'], b.count('BEGIN CERTIFICATE') > 10, "
                   "\"this jail's CA\" in b)")
        printed += [c.stdout, c.stderr]
        assert json.loads(c.stdout)["stdout"] == "/etc/ssl/certs/ca-certificates.crt True True\n", c.stdout
        lst = corral("list", "--json")
        printed += [lst.stdout, lst.stderr]
    finally:
        st = corral("stop", sid)
        printed += [st.stdout, st.stderr]
    for b in printed:
        assert token.encode() not in b
    check_clean(subprocess.CompletedProcess([], 0, b"", b""), token, tmp_path)


def test_warm_session_without_credentials_has_no_bundle(session_rundir):
    """The zygote's /etc/ssl/certs is empty: only a session with credentials gets a bundle there."""
    env = dict(os.environ, XDG_RUNTIME_DIR=session_rundir)
    p = subprocess.run([CORRAL, "session", "start", "--json", "--warm"], capture_output=True, text=True,
                       timeout=90, env=env)
    assert p.returncode == 0, p.stderr
    sid = json.loads(p.stdout)["id"]
    try:
        s = subprocess.run([CORRAL, "session", "exec", sid, "--json", "-c",
                            "import os\nprint(os.listdir('/etc/ssl/certs'), 'SSL_CERT_FILE' in os.environ)"],
                           capture_output=True, text=True, timeout=90, env=env)
        assert json.loads(s.stdout)["stdout"] == "[] False\n", s.stdout
    finally:
        subprocess.run([CORRAL, "session", "stop", sid], capture_output=True, timeout=90, env=env)


# ---- corral run's own steps, corral serve's sandboxes, profiles ----

def test_run_steps_broker_and_nothing_keeps_the_value(servers, pki, token, tmp_path, session_rundir):
    """corral run --secret: run_python (the run's session) and run_shell (a jail per call) both get the
    header added; the value is in no trace event, record, tool result or model request."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "model-server"))
    from modelserver import ScriptedServer, text, tool_call
    port = servers[1]
    url = f"https://api.test:{port}/echo"
    stars = f"{HEADER}: {'*' * len(token)}"
    turns = [tool_call("run_python", code=f"import urllib.request\nprint(urllib.request.urlopen({url!r}, "
                                          "timeout=10).read().decode())"),
             tool_call("run_shell", command=f"python3 -c 'import urllib.request; print(urllib.request.urlopen("
                                            f"\"{url}\", timeout=10).read().decode())'")
             | {"expect": {"contains": [stars]}},
             text("done") | {"expect": {"contains": [stars]}}]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CORRAL_MODEL", "XDG_CONFIG"))}
    env.update(NO_COLOR="1", X_TOKEN=token, XDG_RUNTIME_DIR=session_rundir, CORRAL_SESSION_LINGER="60")
    trace = tmp_path / "trace.jsonl"
    before = len(Echo.seen)
    with ScriptedServer(turns) as srv:
        r = subprocess.run([CORRAL, "run", "--base-url", srv.base_url, "--model", "gpt-test", "--json",
                            "--review-policy", "off", "--trace", str(trace), "--net", f"allow=api.test:{port}",
                            "--resolve", f"api.test:{HOST_ADDR}", "--secret", f"api.test={HEADER}:X_TOKEN",
                            "--upstream-ca", str(pki / "ca.pem"), "fetch it"],
                           capture_output=True, timeout=180, cwd=tmp_path, env=env)
    srv.assert_ok()
    assert r.returncode == 0, r.stderr
    got = [h for _, h in Echo.seen[before:]]
    assert len(got) == 2 and all(h[HEADER] == token for h in got), got
    assert token.encode() not in r.stdout + r.stderr
    assert token not in json.dumps(srv.requests)
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert token.encode() not in f.read_bytes(), f
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert any(e["type"] == "net" and e.get("brokered") for e in events), [e for e in events if e["type"] == "net"]


def test_serve_operator_credentials(servers, pki, token, tmp_path, monkeypatch):
    """corral serve --secret: a sandbox that may reach the host gets the operator's credential; one that
    asks for other hosts only does not, and a request cannot name credentials of its own."""
    import sys
    sys.path.insert(0, os.path.dirname(__file__))
    from test_serve import Server
    port = servers[1]
    monkeypatch.setenv("X_TOKEN", token)
    s = Server(tmp_path, "--net", f"allow=api.test:{port},other.test:{port}", "--resolve",
               f"api.test:{HOST_ADDR}", "--resolve", f"other.test:{HOST_ADDR}", "--secret",
               f"api.test={HEADER}:X_TOKEN", "--upstream-ca", str(pki / "ca.pem"))
    answers = []
    try:
        fetch = ("import urllib.request\nprint(urllib.request.urlopen('https://{h}:%d/echo', timeout=10).read()"
                 ".decode())" % port)
        status, made = s.json("POST", "/v1/sandboxes", {})
        answers.append(made)
        assert status == 201, made
        r = s.exec(made["id"], fetch.format(h="api.test"))
        answers.append(r)
        assert f"{HEADER}: {'*' * len(token)}" in r["stdout"], r
        assert upstream_saw(port)[HEADER] == token
        # a sandbox without api.test: no credential, not refused
        sid = s.create({"limits": {"net": f"allow=other.test:{port}"}})
        r = s.exec(sid, "import os\nprint(os.environ.get('SSL_CERT_FILE'))")
        answers.append(r)
        assert r["stdout"] == "None\n", r
        status, j = s.json("POST", "/v1/sandboxes", {"limits": {"secrets": [f"api.test={HEADER}:HOME"]}})
        answers.append(j)
        assert status == 400 and "secrets" in j["error"]["message"], j
        status, j = s.json("GET", "/v1/sandboxes")
        answers.append(j)
    finally:
        s.stop()
    assert token not in json.dumps(answers)


def test_profile_names_credentials(servers, pki, token, tmp_path):
    """A profile's "secrets" name environment variables, as --secret; "upstream_ca" is --upstream-ca."""
    port = servers[0]
    prof = tmp_path / "p.json"
    prof.write_text(json.dumps({"net": f"allow=api.test:{port}", "resolve": [f"api.test:{HOST_ADDR}"],
                                "secrets": [f"api.test={HEADER}:X_TOKEN"], "upstream_ca": str(pki / "ca.pem")}))
    p = run(["exec", "--json", "--profile", str(prof), "--lang", "python", "-c",
             f"import urllib.request\nprint(urllib.request.urlopen('http://api.test:{port}/e', timeout=10)"
             ".read().decode())"], token)
    assert p.returncode == 0, p.stderr
    assert f"{HEADER}: {'*' * len(token)}" in json.loads(p.stdout)["stdout"]
    assert upstream_saw(port)[HEADER] == token and token.encode() not in p.stdout + p.stderr
    prof.write_text(json.dumps({"net": f"allow=api.test:{port}", "secrets": [f"api.test={HEADER}:X_UNSET_VAR"]}))
    p = run(["exec", "--profile", str(prof), "--", "true"], token)
    assert p.returncode == 125 and b"profile secrets[0]: the environment variable 'X_UNSET_VAR' is not set" \
        in p.stderr, p.stderr


def test_mcp_session_with_allow_list_and_credential(servers, pki, token, tmp_path, session_rundir):
    """corral mcp --net allow= --secret: the tools' descriptions and the instructions name the hosts, and
    run_python reaches the brokered host with the header added; nothing the client reads holds the value."""
    port = servers[1]
    env = dict(os.environ, X_TOKEN=token, XDG_RUNTIME_DIR=session_rundir, CORRAL_SESSION_LINGER="60")
    p = subprocess.Popen([CORRAL, "mcp", "-w", str(tmp_path), "--review-policy", "off", "--net",
                          f"allow=api.test:{port}", "--resolve", f"api.test:{HOST_ADDR}", "--secret",
                          f"api.test={HEADER}:X_TOKEN", "--upstream-ca", str(pki / "ca.pem")],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    lines = []

    def ask(i, method, params):
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}).encode() + b"\n")
        p.stdin.flush()
        while True:
            line = p.stdout.readline()
            assert line, p.stderr.read()
            lines.append(line)
            m = json.loads(line)
            if m.get("id") == i:
                return m["result"]
    try:
        init = ask(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "t", "version": "1"}})
        assert f"network only to api.test:{port}" in init["instructions"], init
        tools = {t["name"]: t for t in ask(2, "tools/list", {})["tools"]}
        assert f"network only to api.test:{port}" in tools["run_python"]["description"]
        assert "no network" not in tools["run_shell"]["description"]
        code = (f"import urllib.request\nprint(urllib.request.urlopen('https://api.test:{port}/echo', "
                "timeout=10).read().decode())")
        r = ask(3, "tools/call", {"name": "run_python", "arguments": {"code": code}})
        assert f"{HEADER}: {'*' * len(token)}" in r["structuredContent"]["stdout"], r
        assert upstream_saw(port)[HEADER] == token
    finally:
        p.stdin.close()  # the server ends when stdin closes
        out, err = p.stdout.read(), p.stderr.read()
        p.wait(timeout=60)
    assert token.encode() not in b"".join(lines) + out + err


@pytest.mark.parametrize("client", ["curl", "http.client"])
def test_connection_reusing_clients_get_every_request_credentialed(servers, pki, token, tmp_path, client):
    """Clients that keep a connection for the next request (curl with two URLs, http.client's one
    connection) work: the proxy answers one request per connection (Connection: close), the client opens
    the next, and each request is credentialed and recorded (docs/network.md, "Not yet": keep-alive)."""
    port = servers[1]
    url = f"https://api.test:{port}/echo"
    if client == "curl":
        cmd = ["--", "curl", "-sS", "--max-time", "10", url, url]
    else:
        cmd = ["--lang", "python", "-c",
               "import http.client, os\n"
               "c = http.client.HTTPSConnection('127.0.0.1', 3128, timeout=10)\n"
               f"c.set_tunnel('api.test', {port})\n"
               "for _ in range(2):\n"
               "    c.request('GET', '/echo')\n"
               "    print(c.getresponse().read().decode())\n"]
    before = len(Echo.seen)
    p = run(["exec", "--json", "--net", f"allow=api.test:{port}", "--resolve", f"api.test:{HOST_ADDR}",
             "--secret", f"api.test={HEADER}:X_TOKEN", "--upstream-ca", str(pki / "ca.pem"), *cmd], token)
    r = json.loads(p.stdout)
    assert r["stdout"].count(f"{HEADER}: {'*' * len(token)}") == 2, r
    got = [h for _, h in Echo.seen[before:]]
    assert [h[HEADER] for h in got] == [token, token], got
    assert [c["brokered"] for c in r["network"]] == [True, True], r["network"]
    assert token.encode() not in p.stdout + p.stderr
