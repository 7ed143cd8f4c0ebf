#!/bin/sh
# install-deps.sh [build|test|demo|bench]: make sure Debian's packages for a
# job are installed.  As root, installs what is missing with apt-get (with
# retries); otherwise lists what is missing and how to install it.
set -eu

build="meson ninja-build pkg-config gcc libc6-dev libseccomp-dev libjansson-dev libcurl4-openssl-dev"
# The jail's Python runtime: Debian's python3 with the data libraries.
runtime="python3 python3-numpy python3-pandas python3-matplotlib python3-scipy"
test="python3-pytest python3-nbformat procps util-linux passwd"
bench="bubblewrap firejail hyperfine time"

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
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
        echo "corral needs these Debian packages:$missing" >&2
        echo "install them with: sudo apt-get install -y$missing" >&2
        exit 1
fi

echo "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
for attempt in 1 2 3 4 5; do
        if apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends $missing >/dev/null; then
                exit 0
        fi
        echo "apt-get failed (attempt $attempt of 5); retrying in $((attempt * 5)) s" >&2
        sleep $((attempt * 5))
done
echo "could not install:$missing" >&2
exit 1
