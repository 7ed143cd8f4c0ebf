"""The system trust store in --net allow= jails (docs/network.md, "Trust"): what a jail, a warm and a
cold session are checked for, by tests/e2e/test_net_allow.py and test_net_sessions.py.

The TLS server is on 127.0.0.2 with a certificate of its own (a test CA no system trusts), reached as
trust.test through the proxy's CONNECT tunnel; nothing is sent outside 127.0.0.0/8."""
import hashlib
import http.server
import os
import shutil
import ssl
import subprocess
import threading

import pytest

HOST_ADDR = "127.0.0.2"
HOST_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


class _Hello(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_GET(self):
        body = b"trusted\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def tls_server(tmp_dir):
    """(server, port, certificate PEM) of a TLS server on HOST_ADDR for trust.test; shutdown() it."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make the test certificate")
    if not os.path.isfile(HOST_BUNDLE):
        pytest.skip(f"the host has no {HOST_BUNDLE}")
    cert, key = os.path.join(tmp_dir, "trust-cert.pem"), os.path.join(tmp_dir, "trust-key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", "1", "-subj", "/CN=corral trust test CA", "-addext",
                    "subjectAltName=DNS:trust.test", "-keyout", key, "-out", cert], check=True, capture_output=True)
    s = http.server.ThreadingHTTPServer((HOST_ADDR, 0), _Hello)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    s.socket = ctx.wrap_socket(s.socket, server_side=True)
    threading.Thread(target=s.serve_forever, daemon=True).start()
    with open(cert) as f:
        return s, s.server_address[1], f.read()


def opts(port):
    return ["--net", f"allow=trust.test:{port}", "--resolve", f"trust.test:{HOST_ADDR}"]


def script(port, cert):
    """Python for the jail: the default context's roots, the bundle read-only and its hash, a request
    that the system's roots must refuse (the server's CA is in none), curl's verdict, then the same with the test CA added
    to the defaults."""
    return f"""
import hashlib, os, shutil, ssl, subprocess, urllib.request, urllib.error
print(ssl.create_default_context().cert_store_stats()['x509_ca'] > 0)
print('read-only', os.statvfs({HOST_BUNDLE!r}).f_flag & os.ST_RDONLY != 0)
print(hashlib.sha256(open({HOST_BUNDLE!r}, 'rb').read()).hexdigest())
url = "https://trust.test:{port}/"
try:
    urllib.request.urlopen(url, timeout=10)
    print('not verified')
except urllib.error.URLError as e:
    print(type(e.reason).__name__)
if shutil.which('curl'):
    print('curl', subprocess.run(['curl', '-sS', '-o', '/dev/null', url], capture_output=True).returncode)
else:
    print('curl 60')
ctx = ssl.create_default_context()
ctx.load_verify_locations(cadata={cert!r})
print(urllib.request.urlopen(url, context=ctx, timeout=10).read().decode(), end="")
"""


def expected():
    with open(HOST_BUNDLE, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    # curl 60: "SSL certificate problem" (the peer's certificate could not be verified)
    return f"True\nread-only True\n{digest}\nSSLCertVerificationError\ncurl 60\ntrusted\n"
