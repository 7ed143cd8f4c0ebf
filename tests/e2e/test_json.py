"""The --json result object."""
import json


SCHEMA_KEYS = {"schema", "status", "exit_code", "signal", "reason", "limit", "stdout", "stderr",
               "stdout_truncated", "stderr_truncated", "wall_ms", "cpu_ms", "memory_peak_bytes",
               "limits_backend"}


def test_schema_fields(jail):
    r = jail("print('hi')")
    assert SCHEMA_KEYS <= set(r)
    assert r["schema"] == 1 and r["status"] == "ok" and r["signal"] is None and r["reason"] is None
    assert r["limit"] is None and r["stdout"] == "hi\n" and r["stderr"] == ""
    assert r["limits_backend"] in ("cgroup-v2", "cgroup-v1", "rlimit")
    assert r["wall_ms"] > 0 and r["memory_peak_bytes"] > 0
    assert set(r["phases"]) >= {"clone", "mounts", "seccomp", "exec", "teardown"}


def test_invalid_utf8_and_nul_in_output_still_valid_json(corral):
    r = corral("exec", "--json", "-c", "import sys; sys.stdout.buffer.write(b'a\\xff\\x00b\\xc3'); "
                                        "sys.stderr.buffer.write(b'\\xed\\xa0\\x80')")
    assert r.rc == 0
    obj = json.loads(r.out)
    assert obj["stdout"] == "a\ufffd\ufffdb\ufffd"
    assert "\ufffd" in obj["stderr"]


def test_output_limit_truncates_and_marks(corral):
    r = corral("exec", "--json", "--output-limit", "10K", "-c", "print('x' * 100000); print('e' * 50, file=__import__('sys').stderr)")
    obj = json.loads(r.out)
    assert obj["status"] == "ok"
    assert obj["stdout_truncated"] is True and len(obj["stdout"]) == 10240
    assert obj["stdout_bytes"] == 100001
    assert obj["stderr_truncated"] is False and obj["stderr"] == "e" * 50 + "\n"


def test_streaming_mode_marks_truncation(corral):
    r = corral("exec", "--output-limit", "1K", "-c", "print('y' * 5000)")
    assert r.rc == 0
    assert r.out == b"y" * 1024
    assert b"stdout truncated at the output limit" in r.err
