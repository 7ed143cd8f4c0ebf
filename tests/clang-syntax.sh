#!/bin/sh
# clang-syntax.sh SRCDIR: every C source of corral through clang's parser
# (TAP).  clang refuses what gcc lets through silently: a goto that jumps
# over a __attribute__((cleanup)) variable, which then frees garbage when
# the function leaves (twice found in the session host and corral run).
set -u
src=$1
flags="-fsyntax-only -std=gnu11 -I$src/include -I$src/src/lib -DCORRAL_PREBUILT_BPF -DCORRAL_VERSION_STRING=\"0\" -DCORRAL_VERSION=\"0\""
flags="$flags $(pkg-config --cflags jansson libcurl libarchive python3-embed 2>/dev/null)"
n=0
bad=0
for f in "$src"/src/*/*.c "$src"/tests/e2e/*.c "$src"/tests/unit/*.c; do
        n=$((n + 1))
        # shellcheck disable=SC2086
        if out=$(clang $flags "$f" 2>&1 | grep -E 'error:'); [ -z "$out" ]; then
                echo "ok $n - ${f#"$src"/}"
        else
                echo "not ok $n - ${f#"$src"/}"
                echo "$out" | sed 's/^/# /'
                bad=$((bad + 1))
        fi
done
echo "1..$n"
[ "$bad" -eq 0 ]
