#!/bin/bash
# run.sh [TARGET...]: what `make fuzz` runs.  Builds the libFuzzer targets
# with clang in build-fuzz/ and fuzzes each (default: all) for
# FUZZ_SECONDS (default 60), starting from its committed corpus.
#
#   FUZZ_SECONDS=N  seconds per target
#   FUZZ_BUILD=DIR  build directory (default build-fuzz; /build*/ is ignored
#                   by git)
#   FUZZ_MERGE=1    afterwards, add the inputs that reach new coverage to
#                   tests/fuzz/corpus/<target>/ (libFuzzer -merge=1 names
#                   them by SHA-1); off by default, so findings stay out of
#                   the repository unless copied in deliberately
#
# New inputs go to $FUZZ_BUILD/corpus/<target>/ and crashes, leaks and
# timeouts to $FUZZ_BUILD/artifacts/<target>/; the committed corpus is only
# read.  Exits non-zero when a target found a failure.
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${FUZZ_BUILD:-build-fuzz}
seconds=${FUZZ_SECONDS:-60}
targets=("$@")
# Default: every target (each has a committed corpus of its own).
if [ ${#targets[@]} -eq 0 ]; then
        for c in tests/fuzz/corpus/fuzz-*/; do
                t=$(basename "$c")
                [ -f "tests/fuzz/$t.c" ] && targets+=("$t")
        done
fi

if ! command -v clang >/dev/null; then
        echo "fuzzing needs clang and its libFuzzer runtime: apt-get install clang libclang-rt-14-dev" >&2
        exit 1
fi
if [ ! -f "$build/build.ninja" ]; then
        # Instrument all of libcorral for coverage (fuzzer-no-link); only the
        # fuzz targets link libFuzzer itself (tests/meson.build).  clang,
        # unlike gcc, counts vasprintf(fmt) in a helper without a format
        # attribute (src/lib/error.c) against -Werror=format=2.
        CC=clang meson setup "$build" --buildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false \
                -Dc_args="-fsanitize=fuzzer-no-link -Wno-format-nonliteral" >/dev/null || exit 1
fi
ninja -C "$build" "${targets[@]/#/tests/}" || exit 1

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
failed=()
for t in "${targets[@]}"; do
        corpus=tests/fuzz/corpus/$t
        scratch=$build/corpus/$t
        artifacts=$build/artifacts/$t
        mkdir -p "$scratch" "$artifacts" "$corpus"
        dict=()
        [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
        printf '\n=== %s for %s s\n' "$t" "$seconds"
        # The first corpus directory receives new inputs: the scratch one.
        if ! "$build/tests/$t" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
                -artifact_prefix="$artifacts/" "${dict[@]}" "$scratch" "$corpus"; then
                failed+=("$t")
                continue
        fi
        if [ "${FUZZ_MERGE:-0}" = 1 ]; then
                "$build/tests/$t" -merge=1 "$corpus" "$scratch" 2>&1 | grep -E '^MERGE-OUTER: [0-9]+ new files'
        fi
done

if [ ${#failed[@]} -gt 0 ]; then
        echo
        echo "failures in: ${failed[*]} (inputs in $build/artifacts/<target>/; replay one with"
        echo "  $build/tests/<target> FILE)"
        exit 1
fi
