#!/bin/sh
# fetch-grammars.sh [DEST]: put the C sources of the tree-sitter Python and
# Bash grammars that src/review/ compiles into DEST (default
# src/review/grammars/ of this tree; not committed, see .gitignore).
#
# The grammars come from their npm packages, fetched with `npm pack` (a
# download of the published tarball: no dependency resolution, no install
# scripts run) into a cache ($CORRAL_GRAMMAR_CACHE, default
# ~/.cache/corral/grammars), checked against the sha512 pinned below, and
# only src/parser.c, src/scanner.c and src/tree_sitter/*.h are extracted.
# The versions are the newest whose parsers are ABI 14, the most Debian 12's
# libtree-sitter 0.20 loads (the 0.25 releases are ABI 15).
#
# Meson runs this at configure time (meson.build); it does nothing when the
# sources are already in place.  Needs npm only when the cache is empty.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/src/review/grammars}
cache=${CORRAL_GRAMMAR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/corral/grammars}

# name version sha512-of-the-tarball (npm's "integrity", in hex)
grammars="
python 0.23.6 c8833dcf4a31288c53edb02d3ce860a1597a8135e59a5221b9eee58854f8a013c5fe585aec76b8750052f3602fea130c459a159c5248f0cea62fe4b05a82c3dc
bash 0.23.3 dfa720fc643662621b7a205ea9eba1e1f049ea2e24815a2e0daa93c6a8a1e72b0f6a0fb31ee7f221ac4c38578cf027a997000afcbba3d68e571ea81d01fa0266
"

die() {
        echo "fetch-grammars: $*" >&2
        exit 1
}

checksum_ok() { # file sha512
        [ -f "$1" ] && [ "$(sha512sum "$1" | cut -d' ' -f1)" = "$2" ]
}

echo "$grammars" | while read -r lang ver sum; do
        [ -n "$lang" ] || continue
        out="$dest/$lang"
        stamp="tree-sitter-$lang@$ver $sum"
        if [ -f "$out/parser.c" ] && [ "$(cat "$out/.stamp" 2>/dev/null)" = "$stamp" ]; then
                continue
        fi
        tgz="$cache/tree-sitter-$lang-$ver.tgz"
        if ! checksum_ok "$tgz" "$sum"; then
                command -v npm >/dev/null 2>&1 ||
                        die "npm is needed to download tree-sitter-$lang@$ver (apt-get install npm, or run scripts/install-deps.sh build)"
                mkdir -p "$cache"
                rm -f "$tgz"
                (cd "$cache" && npm pack "tree-sitter-$lang@$ver" --ignore-scripts --silent >/dev/null) ||
                        die "npm pack tree-sitter-$lang@$ver failed (is the npm registry reachable?)"
                checksum_ok "$tgz" "$sum" || {
                        rm -f "$tgz"
                        die "tree-sitter-$lang-$ver.tgz does not match its pinned sha512; refusing to use it"
                }
        fi
        # Extract into a fresh directory and rename it into place, so that a
        # concurrent configure never sees half a grammar.
        mkdir -p "$dest"
        tmp=$(mktemp -d "$dest/.tmp-$lang.XXXXXX")
        tar -xzf "$tgz" -C "$tmp" package/src/parser.c package/src/scanner.c package/src/tree_sitter ||
                { rm -rf "$tmp"; die "cannot extract $tgz"; }
        mkdir -p "$tmp/out/tree_sitter"
        mv "$tmp/package/src/parser.c" "$tmp/package/src/scanner.c" "$tmp/out/"
        mv "$tmp/package/src/tree_sitter/"*.h "$tmp/out/tree_sitter/"
        echo "$stamp" >"$tmp/out/.stamp"
        rm -rf "$out.old"
        [ -e "$out" ] && mv "$out" "$out.old"
        mv "$tmp/out" "$out"
        rm -rf "$tmp" "$out.old"
done
