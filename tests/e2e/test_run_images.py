"""Figures for the model (docs/sessions.md, "Figures for the model"):
`corral run` against the scripted server, with a real session drawing real
matplotlib figures.  What the model's next request carries is decoded
here: a user message after the tool results with PNG image parts no larger
than the budget, or nothing when images are off."""
import base64
import json
import os
import struct
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "model-server"))
from modelserver import ScriptedServer, text, tool_call  # noqa: E402

from conftest import CORRAL  # noqa: E402

PNG_SIG = b"\x89PNG\r\n\x1a\n"

# No savefig: the session saves every open figure after the step.
DRAW = ("import matplotlib.pyplot as plt\n"
        "fig = plt.figure(figsize=(12, 6), dpi=100)\n"
        "plt.plot([1, 2, 3], [3, 1, 2])\n"
        "print('drawn')\n")
DRAW3 = ("import matplotlib.pyplot as plt\n"
         "for i in range(3):\n"
         "    plt.figure(figsize=(4, 3), dpi=100)\n"
         "    plt.plot([0, i])\n")


def env():
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("OPENAI_", "CORRAL_MODEL", "XDG_CONFIG"))}
    e["NO_COLOR"] = "1"
    return e


@pytest.fixture
def run(tmp_path):
    """run(srv, *args, model=...) -> (returncode, stdout, stderr, trace events, trace text)."""
    def go(srv, *args, model="gpt-test"):
        cmd = [CORRAL, "run", "--base-url", srv.base_url, "--model", model, "--json",
               "--trace", str(tmp_path / "trace.jsonl"), *args]
        p = subprocess.run(cmd, capture_output=True, timeout=180, cwd=tmp_path, env=env())
        raw = (tmp_path / "trace.jsonl").read_text() if (tmp_path / "trace.jsonl").exists() else ""
        events = [json.loads(line) for line in raw.splitlines() if line.strip()]
        return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace"), events, raw
    return go


@pytest.fixture
def vision_config(tmp_path):
    """A config file whose model takes images, as opencode.json says it."""
    p = tmp_path / "config.json"
    p.write_text(json.dumps({"provider": {"lab": {"models": {
        "gpt-test": {"modalities": {"input": ["text", "image"], "output": ["text"]}}}}}}))
    return str(p)


def image_parts(messages):
    """[(message index, part)] of every image part in a request."""
    return [(i, part) for i, m in enumerate(messages) if isinstance(m.get("content"), list)
            for part in m["content"] if part.get("type") == "image_url"]


def decode_png(part):
    url = part["image_url"]["url"]
    prefix = "data:image/png;base64,"
    assert url.startswith(prefix), url[:40]
    png = base64.b64decode(url[len(prefix):], validate=True)
    assert png[:8] == PNG_SIG
    assert png[12:16] == b"IHDR"
    return png, struct.unpack(">II", png[16:24])


def test_figure_sent_as_image_when_the_config_says_so(run, vision_config):
    turns = [tool_call("run_python", code=DRAW),
             text("a line going down then up")
             | {"expect": {"contains": ["output/figures/step1-1.png (1200x600 px)",
                                        "figures from the step above"]}}]
    with ScriptedServer(turns) as srv:
        rc, out, err, events, raw = run(srv, "--config", vision_config, "describe the plot",
                                        model="lab/gpt-test")
    srv.assert_ok()
    assert rc == 0, err
    msgs = srv.requests[1]["messages"]
    roles = [m["role"] for m in msgs]
    # assistant call, its tool result, then the user message with the image
    assert roles[-3:] == ["assistant", "tool", "user"], roles
    call_id = msgs[-3]["tool_calls"][0]["id"]
    assert msgs[-2]["tool_call_id"] == call_id
    assert isinstance(msgs[-2]["content"], str) and "output/figures/step1-1.png" in msgs[-2]["content"]
    parts = msgs[-1]["content"]
    assert parts[0]["type"] == "text" and "output/figures/step1-1.png" in parts[0]["text"]
    imgs = image_parts(msgs)
    assert len(imgs) == 1 and imgs[0][0] == len(msgs) - 1
    assert imgs[0][1]["image_url"]["detail"] == "low"
    png, (w, h) = decode_png(imgs[0][1])
    assert max(w, h) <= 768 and (w, h) == (768, 384), (w, h)
    assert len(png) <= 300 * 1024
    # the file itself is full size and in the workspace's output
    start = next(e for e in events if e["type"] == "run_start")
    assert start["images"]["per_step"] == 2
    # the trace says what was sent, never the bytes
    (ev,) = [e for e in events if e["type"] == "images"]
    assert ev["images"] == [{"path": "output/figures/step1-1.png", "bytes": len(png), "width": 768,
                             "height": 384}]
    assert "iVBORw0KGgo" not in raw and "base64" not in raw
    (res,) = [e for e in events if e["type"] == "tool_result"]
    (fig,) = res["exec"]["figures"]
    assert fig["sent_to_model"] is True and "preview" not in fig
    assert (fig["width"], fig["height"]) == (1200, 600)


def test_images_off_sends_no_image_part(run, vision_config):
    turns = [tool_call("run_python", code=DRAW),
             text("done") | {"expect": {"contains": ["output/figures/step1-1.png (1200x600 px)"],
                                        "not_contains": ["image_url", "data:image/png"]}}]
    with ScriptedServer(turns) as srv:
        rc, out, err, events, raw = run(srv, "--config", vision_config, "--images", "off", "plot",
                                        model="lab/gpt-test")
    srv.assert_ok()
    assert rc == 0, err
    msgs = srv.requests[1]["messages"]
    assert image_parts(msgs) == []
    assert msgs[-1]["role"] == "tool"
    assert not any(e["type"] == "images" for e in events)


def test_auto_without_config_is_off(run):
    turns = [tool_call("run_python", code=DRAW),
             text("done") | {"expect": {"not_contains": ["image_url"], "last_role": "tool"}}]
    with ScriptedServer(turns) as srv:
        rc, out, err, events, raw = run(srv, "plot")
    srv.assert_ok()
    assert rc == 0, err


REJECTIONS = [
    # OpenAI, a model without vision
    (400, {"error": {"message": "Invalid content type. image_url is only supported by certain models.",
                     "type": "invalid_request_error", "param": "messages.[3].content.[1].type", "code": None}}),
    # llama.cpp without --mmproj: a 500, which must not be retried as a server hiccup
    (500, {"error": {"code": 500, "message": "image input is not supported - hint: if this is unexpected, "
                     "you may need to provide the mmproj", "type": "server_error"}}),
    # vLLM serving a text-only model
    (400, {"error": {"message": "At most 0 image(s) may be provided in one prompt.", "type": "BadRequestError",
                     "param": None, "code": 400}}),
]


@pytest.mark.parametrize("status,rejection", REJECTIONS, ids=["openai", "llamacpp", "vllm"])
def test_endpoint_rejecting_images_turns_them_off(run, status, rejection):
    turns = [tool_call("run_python", code=DRAW),
             {"status": status, "body": json.dumps(rejection)},
             tool_call("run_python", code=DRAW)
             | {"expect": {"not_contains": ["data:image/png"],
                           "contains": ["[image omitted: the endpoint does not accept images"]}},
             text("done") | {"expect": {"not_contains": ["data:image/png"],
                                        "contains": ["output/figures/step2-1.png (1200x600 px)"]}}]
    with ScriptedServer(turns) as srv:
        rc, out, err, events, raw = run(srv, "--images", "on", "plot twice")
    srv.assert_ok()
    assert rc == 0, err
    assert json.loads(out)["status"] == "answered"
    assert len(image_parts(srv.requests[1]["messages"])) == 1   # sent once, rejected
    for r in srv.requests[2:]:
        assert image_parts(r["messages"]) == []
    notices = [e["message"] for e in events if e["type"] == "notice"]
    assert any("does not accept images" in n for n in notices), notices
    assert [e["type"] for e in events].count("images") == 1


def test_budget_three_figures_two_sent(run):
    turns = [tool_call("run_python", code=DRAW3),
             text("done") | {"expect": {"contains": ["output/figures/step1-3.png (400x300 px)",
                                                     "over the image budget"]}}]
    with ScriptedServer(turns) as srv:
        rc, out, err, events, raw = run(srv, "--images", "on", "--images-per-step", "2", "three plots")
    srv.assert_ok()
    assert rc == 0, err
    msgs = srv.requests[1]["messages"]
    imgs = image_parts(msgs)
    assert len(imgs) == 2
    for _, part in imgs:
        png, (w, h) = decode_png(part)
        assert (w, h) == (400, 300)   # smaller than the budget's side: never enlarged
    tool_text = msgs[-2]["content"]
    for k in (1, 2, 3):
        assert f"output/figures/step1-{k}.png" in tool_text
    note = msgs[-1]["content"][0]["text"]
    assert "step1-3.png (400x300, not shown: over the image budget)" in note
    (ev,) = [e for e in events if e["type"] == "images"]
    assert [i["path"] for i in ev["images"]] == ["output/figures/step1-1.png", "output/figures/step1-2.png"]


def test_run_budget_and_old_images_dropped(run):
    """--images-per-run 3 over four steps of one figure each: the fourth is
    only named; and only the two newest messages with images keep them."""
    turns = [tool_call("run_python", code=DRAW) for _ in range(4)] + [text("done")]
    with ScriptedServer(turns) as srv:
        rc, out, err, events, raw = run(srv, "--images", "on", "--images-per-run", "3", "plots")
    srv.assert_ok()
    assert rc == 0, err
    counts = [len(image_parts(r["messages"])) for r in srv.requests]
    assert counts == [0, 1, 2, 2, 2], counts
    third = json.dumps(srv.requests[3]["messages"])
    assert "[image omitted: an older figure" in third and "step1-1.png" in third
    last = srv.requests[4]["messages"]
    assert last[-1]["role"] == "tool" and "output/figures/step4-1.png" in last[-1]["content"]
    assert [e["type"] for e in events].count("images") == 3


def test_text_protocol_observation_carries_the_image(run):
    """Without tool calls the observation is a user message already: the
    image parts join it (no second user message in a row)."""
    turns = [text("```python\n" + DRAW + "```"),
             text("done") | {"expect": {"last_role": "user"}}]
    with ScriptedServer(turns) as srv:
        rc, out, err, events, raw = run(srv, "--no-tools", "--images", "on", "plot")
    srv.assert_ok()
    assert rc == 0, err
    msgs = srv.requests[1]["messages"]
    assert [m["role"] for m in msgs][-2:] == ["assistant", "user"]
    parts = msgs[-1]["content"]
    assert parts[0]["type"] == "text" and parts[0]["text"].startswith("Result of your python block")
    assert "drawn" in parts[0]["text"]
    assert parts[1]["type"] == "text" and "figures from the step above" in parts[1]["text"]
    (img,) = [p for p in parts if p["type"] == "image_url"]
    assert decode_png(img)[1] == (768, 384)


def test_images_go_first_when_the_context_is_tight(run):
    """Over the context target, an image older than the newest four
    messages is dropped before any text is shortened."""
    turns = [tool_call("run_python", code=DRAW),
             tool_call("run_python", code="print('a' * 5000)"),
             tool_call("run_python", code="print('b' * 5000)"),
             text("done")]
    with ScriptedServer(turns) as srv:
        # shortening, not compaction (test_modes.py)
        rc, out, err, events, raw = run(srv, "--images", "on", "--no-compact", "--context-tokens", "4096", "plots")
    srv.assert_ok()
    assert rc == 0, err
    assert len(image_parts(srv.requests[1]["messages"])) == 1
    last = json.dumps(srv.requests[3]["messages"])
    assert image_parts(srv.requests[3]["messages"]) == []
    assert "[image omitted: dropped to save context" in last


def test_image_flag_errors(run):
    with ScriptedServer([]) as srv:
        for args, msg in ((["--images", "maybe"], "expected auto, on or off"),
                          (["--images-per-step", "9"], "out of range"),
                          (["--image-bytes", "10"], "out of range")):
            rc, out, err, events, raw = run(srv, *args, "x")
            assert rc == 2 and msg in err, (args, err)
