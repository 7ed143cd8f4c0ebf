#!/bin/bash
# run-tests.sh: the whole test run behind `make test`.
#
#  1. builds corral with ASan+UBSan and -Werror in build-asan/;
#  2. runs every suite (unit, fuzz corpus replay, stress, e2e, attack, review, compat) with meson, as the
#     current user (root in CI: the cgroup path);
#  3. when root, runs the e2e, attack and compat suites again as an ordinary user
#     made for the purpose (the rlimit path on hosts where users cannot make
#     cgroups), from a copy in a temp dir that user can read;
#     the review suite, two of the server's files over a ThreadSanitizer
#     build and the ordinary user's pass run in a second lane beside the
#     first (their output is printed when both are done), the server's other
#     two files over that build at the end of the first lane;
#  4. prints one summary line counting test cases (TAP subtests and pytest
#     cases): "tests: N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=${ASAN_BUILD:-build-asan}
passed=0
failed=0
skipped=0
bad_suites=0
log=$(mktemp /tmp/corral-testlog.XXXXXX)

note() { printf '\n=== %s\n' "$*"; }

# Add up the cases a suite reported in $log; a suite that failed without a
# count (a crash, a build error) still counts as one failure.
count() {
        local rc=$1 p f s
        p=$(grep -oE '[0-9]+ (subtests )?passed' "$log" | awk '{n += $1} END {print n + 0}')
        f=$(grep -oE '[0-9]+ (subtests )?failed|[0-9]+ error' "$log" | awk '{n += $1} END {print n + 0}')
        s=$(grep -oE '[0-9]+ skipped' "$log" | awk '{n += $1} END {print n + 0}')
        if [ "$rc" -ne 0 ]; then
                bad_suites=$((bad_suites + 1))
                [ "$f" -eq 0 ] && f=1
        elif [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
                p=1 # a suite that passed without itemising (the stress test)
        fi
        passed=$((passed + p))
        failed=$((failed + f))
        skipped=$((skipped + s))
}

# The review's grammar sources (fetched from npm once, checksums pinned).
"$(dirname "$0")/fetch-grammars.sh" || exit 1
if [ ! -f "$build/build.ninja" ]; then
        meson setup "$build" -Db_sanitize=address,undefined -Db_lundef=false -Dwerror=true \
                --buildtype=debug >/dev/null || exit 1
fi
ninja -C "$build" || exit 1
# The engine's threads under ThreadSanitizer (tests/e2e/test_engine.py): the
# test program and the parts it starts, in a build of their own.
tsan=${TSAN_BUILD:-build-tsan}
if [ ! -f "$tsan/build.ninja" ]; then
        meson setup "$tsan" -Db_sanitize=thread -Db_lundef=false --buildtype=debug >/dev/null || exit 1
fi
ninja -C "$tsan" tests/engine-threads corral corral-init corral-zygote || exit 1
export CORRAL_ENGINE_THREADS_TSAN=$root/$tsan/tests/engine-threads

# Sanitizer reports go to files, and any file fails the run: a background
# process (the session daemon) has its stderr on /dev/null, where a report
# would be lost.  Writable by the ordinary user's run too.
sanlog=$(mktemp -d /tmp/sanitizer-reports.XXXXXX)
chmod 1777 "$sanlog"
trap 'rm -rf "$sanlog"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}:log_path=$sanlog/asan
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}:log_path=$sanlog/ubsan
export TSAN_OPTIONS="halt_on_error=1 suppressions=$root/tests/tsan.supp log_path=$sanlog/tsan"

if [ "$(id -u)" -eq 0 ]; then
        user=corraltest
        id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/sh "$user"
        tmp=$(mktemp -d /tmp/corral-usertest.XXXXXX)
        trap 'rm -rf "$tmp" "$sanlog"' EXIT
        mkdir -p "$tmp/bin" "$tmp/src/lib"
        cp "$build/corral" "$build/corral-init" "$build/corral-zygote" src/session/driver.py "$tmp/bin/"
        # warm sessions over one zygote (tests/e2e/warmhost.py looks beside corral)
        mkdir -p "$tmp/bin/tests"
        cp "$build/tests/warm-sessions" "$build/tests/engine-threads" "$build/tests/mcp-jail-threads" "$build/tests/premade-jails" \
           "$tmp/bin/tests/"
        cp "$tsan/tests/engine-threads" "$tmp/bin/tests/engine-threads-tsan"
        cp tests/tsan.supp "$tmp/"
        cp -r tests "$tmp/tests"
        cp -r examples "$tmp/examples" # the demos' scripts, for tests/e2e/test_demo.py
        # the client libraries, for tests/e2e/test_python_client.py and test_js_client.py
        mkdir -p "$tmp/clients"
        cp -r clients/python clients/js "$tmp/clients/"
        rm -rf "$tmp/clients/python/build" "$tmp/clients/python/"*.egg-info
        cp README.md "$tmp/" # tests/e2e/test_docs_options.py compares it with --help
        mkdir -p "$tmp/docs"
        cp docs/api.md "$tmp/docs/" # tests/e2e/test_serve.py compares its routes with the OpenAPI file
        mkdir -p "$tmp/scripts"
        cp scripts/gen-man.sh "$tmp/scripts/"
        mkdir -p "$tmp/src/session"
        cp src/lib/seccomp.c "$tmp/src/lib/"
        cp src/session/driver.py "$tmp/src/session/"
        chmod -R a+rX "$tmp"
        # The protocol suites run once, as root: what they test (the E2B and MCP
        # SDKs, the HTTP clients, the runs API, the web view in Chromium, the
        # docs' option lists, the agent's modes and views, the archive
        # parser, the demo's scripts) is the same code above the jail whoever
        # runs it, and their jails are the same jails the other files drive
        # as this user.  test_serve.py, test_session.py, test_run.py, the
        # attack suite and the rest run again here: the rlimit path.
        root_only=()
        for f in test_e2b.py test_e2b_protocol.py test_mcp.py test_mcp_http.py test_js_client.py \
                test_js_client_runs.py test_python_client.py test_python_client_runs.py test_serve_runs.py \
                test_webview.py test_docs_options.py test_messages.py test_modes.py test_team.py \
                test_approve.py test_run_output.py test_trace.py test_review_agent.py test_run_images.py \
                test_archive.py test_demo.py; do
                root_only+=(--ignore "$tmp/tests/e2e/$f")
        done
fi

# Two lanes at once: both mostly wait (on jails, timeouts, servers), and
# they share no state a test looks at.  The first, here, runs the unit,
# fuzz, stress, model-server, e2e, attack and compat suites as the current
# user, then test_e2b_protocol.py and test_mcp_http.py over the
# ThreadSanitizer build; the second, in the background, runs the review
# suite, test_serve.py and test_serve_runs.py over that build and, when
# root, the ordinary user's pass (it has no cgroups; its session host, temp
# files and jails' uids are its own).  The server's four files are split to
# bring the lanes' ends together: once the session tests shared a session
# host per module and the kill race through sessions ran 20 jails, the
# root's pass (first lane) took ~4 minutes less and the user's (second
# lane) ~2 (measured file by file on the 2-core machine), so two files
# (~40 s under TSan there) moved to the first lane.  Each TSan run
# has its own state directory, its servers their own ports.  The second
# lane's output goes to files, printed and counted after the first lane.
lanelogs=$(mktemp -d /tmp/corral-testlogs.XXXXXX)
trap '[ -n "${lane:-}" ] && kill -TERM -- "-$lane" 2>/dev/null; rm -rf "${tmp:-}" "$sanlog" "$lanelogs"' EXIT
trap 'exit 130' INT TERM
lane_n=0
# logged TITLE COMMAND...: COMMAND's output to the lane's next log file.
logged() {
        local title=$1 f
        shift
        lane_n=$((lane_n + 1))
        f=$(printf '%s/%02d' "$lanelogs" "$lane_n")
        printf '%s\n' "$title" >"$f.title"
        "$@" >"$f.log" 2>&1
        echo $? >"$f.rc"
}
# tsan_pass STATE FILE...: tests/e2e's FILEs over the ThreadSanitizer build,
# with run records in $tsan/tests/STATE.
tsan_pass() {
        local state=$1 files=() f
        shift
        for f in "$@"; do
                files+=("$root/tests/e2e/$f")
        done
        env CORRAL="$root/$tsan/corral" CORRAL_INIT="$root/$tsan/corral-init" CORRAL_SOURCE_ROOT="$root" \
                CORRAL_UNDER_TSAN=1 CORRAL_ZYGOTE="$root/$tsan/corral-zygote" XDG_STATE_HOME="$root/$tsan/tests/$state" \
                /usr/bin/python3 -m pytest -q -p no:cacheprovider "${files[@]}"
}
user_pass() {
        local suite=$1 ignore=()
        [ "$suite" = e2e ] && ignore=("${root_only[@]}")
        runuser -u "$user" -- env -i PATH=/usr/bin:/bin HOME="/home/$user" LANG=C.UTF-8 \
                ASAN_OPTIONS="$ASAN_OPTIONS" UBSAN_OPTIONS="$UBSAN_OPTIONS" \
                TSAN_OPTIONS="halt_on_error=1 suppressions=$tmp/tsan.supp log_path=$sanlog/tsan" \
                CORRAL_ENGINE_THREADS_TSAN="$tmp/bin/tests/engine-threads-tsan" \
                CORRAL_REVIEW_LEGIT_SAMPLE=20 \
                CORRAL="$tmp/bin/corral" CORRAL_INIT="$tmp/bin/corral-init" CORRAL_SOURCE_ROOT="$tmp" \
                CORRAL_SESSION_DRIVER="$tmp/bin/driver.py" CORRAL_ZYGOTE="$tmp/bin/corral-zygote" \
                python3 -m pytest -q -p no:cacheprovider "${ignore[@]}" "$tmp/tests/$suite"
}
# its own process group (job control on for the fork), so that an
# interrupted make test stops it too
set -m
(
        logged "suite review as $(id -un) (uid $(id -u))" \
                meson test -C "$build" --suite review --print-errorlogs --no-rebuild --verbose --logbase review
        # The server is the most threaded front end: its end-to-end tests
        # once more over a ThreadSanitizer build (any report fails, as above);
        # test_e2b_protocol.py and test_mcp_http.py end the first lane.
        logged "tests/e2e/test_serve.py and test_serve_runs.py over the ThreadSanitizer build" \
                tsan_pass test-state test_serve.py test_serve_runs.py
        # The review suite runs once: it tests the review, whoever runs it;
        # its jails are those the attack suite drives as this user.
        if [ -n "${tmp:-}" ]; then
                for suite in e2e attack compat; do
                        logged "suite $suite as $user (an ordinary user: no cgroups here, so rlimits)" user_pass "$suite"
                done
        fi
) &
lane=$!
set +m

for suite in unit fuzz stress model-server e2e attack compat; do
        note "suite $suite as $(id -un) (uid $(id -u))"
        meson test -C "$build" --suite "$suite" --print-errorlogs --no-rebuild --verbose 2>&1 |
                tee "$log" | grep -vE '^(ok|not ok) [0-9]+ '
        rc=${PIPESTATUS[0]}
        # meson prints each TAP line and pytest's summary in verbose mode
        grep -qE '^not ok [0-9]+ ' "$log" && grep -E '^not ok [0-9]+ ' "$log"
        count "$rc"
done
note "tests/e2e/test_e2b_protocol.py and test_mcp_http.py over the ThreadSanitizer build"
tsan_pass test-state-2 test_e2b_protocol.py test_mcp_http.py 2>&1 | tee "$log"
count "${PIPESTATUS[0]}"

wait "$lane"
lane=
for f in "$lanelogs"/*.title; do
        f=${f%.title}
        note "$(cat "$f.title")"
        cp "$f.log" "$log"
        grep -vE '^(ok|not ok) [0-9]+ ' "$log"
        grep -qE '^not ok [0-9]+ ' "$log" && grep -E '^not ok [0-9]+ ' "$log"
        count "$(cat "$f.rc" 2>/dev/null || echo 1)"
done

rm -f "$log"
# The session hosts the tests' runs left (each keeps its zygote a while).
"$build/corral" session shutdown >/dev/null 2>&1
if [ "$(id -u)" -eq 0 ] && [ -n "${tmp:-}" ]; then
        runuser -u "$user" -- env -i PATH=/usr/bin:/bin HOME="/home/$user" LANG=C.UTF-8 \
                ASAN_OPTIONS="$ASAN_OPTIONS" "$tmp/bin/corral" session shutdown >/dev/null 2>&1
fi
reports=$(find "$sanlog" -type f | wc -l)
if [ "$reports" -gt 0 ]; then
        note "sanitizer reports: $reports (each one a failure)"
        for f in "$sanlog"/*; do
                printf -- '--- %s\n' "$f"
                head -60 "$f"
        done
        failed=$((failed + reports))
fi
rm -rf "$sanlog"
echo
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$bad_suites" -eq 0 ]
