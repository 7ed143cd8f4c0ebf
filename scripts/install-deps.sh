#!/bin/sh
# install-deps.sh [build|test|demo|bench]: make sure Debian's packages for a
# job are installed.  As root, installs what is missing with apt-get (with
# retries); otherwise lists what is missing and how to install it.
set -eu

build="meson ninja-build pkg-config gcc libc6-dev libseccomp-dev libjansson-dev libcurl4-openssl-dev libarchive-dev nettle-dev libcmark-dev libmicrohttpd-dev libwslay-dev libssl-dev"
# The review's parser; its grammars come from the npm registry (scripts/fetch-grammars.sh).
build="$build libtree-sitter-dev"
# corral-zygote (warm sessions) embeds Debian's Python: python3-embed.pc.
build="$build libpython3-dev"
# The jail's Python runtime: Debian's python3 with the data libraries.
runtime="python3 python3-numpy python3-pandas python3-matplotlib python3-scipy"
# python3-openpyxl: pandas writes the .xlsx that tests/e2e/test_artifacts.py types.
test="python3-pytest python3-nbformat python3-openpyxl procps util-linux passwd"
# A real WebSocket client for corral serve (tests/e2e/test_serve.py).
test="$test python3-websocket"
# A short load test of corral serve's GET /v1/runs (tests/e2e/test_serve_runs.py; skipped without it).
test="$test wrk"
# CPython's own regression suite, run bare and in the jail (tests/compat/, docs/compatibility.md).
test="$test libpython3.11-testsuite"
# --net allow= (tests/e2e/test_net_allow.py): a test certificate, and a proxy client.
test="$test openssl curl"
# The system trust store allow-list jails get (tests/e2e/trustcheck.py, corral doctor's `net trust store`).
test="$test ca-certificates"
# The web view in a headless browser (tests/e2e/test_webview.py; playwright-core, its driver, comes
# from npm: tests/webview/setup.sh).
test="$test chromium"
# clang's parser over every source (tests/clang-syntax.sh).
test="$test clang"
# Legitimate code for the review's corpus (tests/review/test_docs.py): the examples in Debian's
# documentation packages; 134 MB to download, 730 MB installed.
test="$test python-pandas-doc python-scipy-doc python-statsmodels-doc python-sklearn-doc"
bench="bubblewrap firejail hyperfine time"
# bench/serve.py: wrk drives corral serve over keep-alive HTTP (one sandbox per connection, its Lua
# scripts); a stock Jupyter kernel (ipykernel, driven by jupyter_client) is the side-by-side reference.
bench="$bench wrk python3-ipykernel python3-jupyter-client"
# bench/runs.py: a run's events followed over a WebSocket too.
bench="$bench python3-websocket"

case "${1:-build}" in
build) want="$build" ;;
demo) want="$build $runtime" ;;
test) want="$build $runtime $test" ;;
bench) want="$build $runtime $bench" ;;
*) echo "usage: $0 [build|test|demo|bench]" >&2; exit 2 ;;
esac

missing=""
for p in $want; do
        status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
        case "$status" in
        *"install ok installed"*) ;;
        *) missing="$missing $p" ;;
        esac
done
# The tree-sitter grammars (sources from npm, checksums pinned) after the packages.
grammars() {
        "$(dirname "$0")/fetch-grammars.sh"
}
# npm fetches them: Debian's, unless an npm (e.g. with NodeSource's node) is there.
command -v npm >/dev/null 2>&1 || missing="$missing npm"
[ -z "$missing" ] && { grammars; exit 0; }

if [ "$(id -u)" -ne 0 ]; then
        echo "corral needs these Debian packages:$missing" >&2
        echo "install them with: sudo apt-get install -y$missing" >&2
        exit 1
fi

echo "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
for attempt in 1 2 3 4 5; do
        if apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends $missing >/dev/null; then
                grammars
                exit 0
        fi
        echo "apt-get failed (attempt $attempt of 5); retrying in $((attempt * 5)) s" >&2
        sleep $((attempt * 5))
done
echo "could not install:$missing" >&2
exit 1
