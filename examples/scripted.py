"""Helpers for the make-transcript.py scripts of the examples: scripted model
turns written as a transcript that `corral run --model replay:FILE` plays,
and a check that they work on real data in real jails.

A scripted transcript is what a model's side of a run would be, written by
hand: corral replays the replies in order and runs their code for real.  The
first line says so (`{"comment": ...}`, which the replay provider skips).
"""
import hashlib
import json
import os
import subprocess
import tempfile

SCRIPTED = ("Scripted for the demo, not recorded from a model: no model can be reached on the machine it was made "
            "on. The model's turns were written by hand ({script}); replayed with --model replay:FILE, the code in "
            "them runs for real in corral's jails on freshly generated data, and the figures in the final answer "
            "are what that code printed on the default seed.")


def call(text, tool, /, **arguments):
    """One assistant reply that calls tool with arguments."""
    return {"message": {"role": "assistant", "content": text,
                        "tool_calls": [{"id": "", "type": "function",
                                        "function": {"name": tool, "arguments": json.dumps(arguments)}}]},
            "finish_reason": "tool_calls"}


def run_line(inputs):
    """The {"run"} line `corral run --record` writes: the inputs (staged at
    input/NAME) with their sizes and SHA-256, so that a replay on other data
    says so (docs/providers.md, "Replay")."""
    entries = []
    for p in inputs:
        with open(p, "rb") as f:
            data = f.read()
        entries.append({"dest": "input/" + os.path.basename(p), "type": "file", "bytes": len(data),
                        "sha256": hashlib.sha256(data).hexdigest()})
    return {"run": {"inputs": entries}}


def write(path, script, replies, inputs=()):
    """Write the transcript: the comment line, the inputs it was made on,
    then one reply per line (call ids numbered)."""
    with open(path, "w") as f:
        f.write(json.dumps({"comment": SCRIPTED.format(script=script)}) + "\n")
        if inputs:
            f.write(json.dumps(run_line(inputs)) + "\n")
        for i, r in enumerate(replies, 1):
            for c in r["message"].get("tool_calls", []):
                c["id"] = f"call_{i}"
            f.write(json.dumps({"reply": r}, ensure_ascii=False) + "\n")
    os.chmod(path, 0o644)


def replay(corral, transcript, inputs, task):
    """Replay transcript in corral with inputs staged; returns (run_end, tool_results)."""
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.jsonl")
        args = [corral, "run", "-q", "--model", "replay:" + os.path.abspath(transcript), "--trace", trace]
        for i in inputs:
            args += ["-i", i]
        r = subprocess.run(args + ["-o", os.path.join(tmp, "out"), task], cwd=tmp, capture_output=True, text=True)
        events = []
        if os.path.exists(trace):
            with open(trace) as f:
                events = [json.loads(line) for line in f if line.strip()]
    results = [e for e in events if e["type"] == "tool_result"]
    end = next((e for e in events if e["type"] == "run_end"), None)
    if end is None:
        raise SystemExit(f"corral run exited {r.returncode} without a trace: {r.stderr.strip()}")
    return end, results


def expect(results, n, *needles, ok=True):
    """Stop unless tool result n (from 0) exists, succeeded (or failed, ok=False)
    and what the model saw of it holds every needle."""
    if n >= len(results):
        raise SystemExit(f"step {n + 1} never ran ({len(results)} steps)")
    content = results[n]["content"]
    if results[n]["ok"] != ok:
        raise SystemExit(f"step {n + 1}: expected it to {'succeed' if ok else 'fail'}:\n{content}")
    for s in needles:
        if s not in content:
            raise SystemExit(f"step {n + 1}: expected {s!r} in what the model saw:\n{content}")
    return results[n]
