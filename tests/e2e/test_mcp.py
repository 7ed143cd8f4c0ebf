"""`corral mcp` driven by the official MCP clients from npm, unmodified
(tests/mcp/client.test.mjs under `node --test`): the v1 SDK that most hosts
embed, the v2 client in its legacy and auto modes, the Inspector's CLI, and
a raw newline-JSON client for the probe before initialize, parse errors,
version echoes, a stdout of protocol only and the exit when stdin closes;
then the same clients over Streamable HTTP against the /mcp of a `corral
serve` the test file starts.

tests/mcp/setup.sh provides Node and the clients (from the npm registry);
the test is skipped only when neither Node nor npm can be had."""
import os
import subprocess

import pytest

from conftest import CORRAL

MCP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mcp")
NO_NODE = 77  # setup.sh's exit status when no Node or npm can be had


def test_the_official_mcp_clients():
    setup = subprocess.run([os.path.join(MCP, "setup.sh")], capture_output=True, text=True, timeout=900)
    if setup.returncode == NO_NODE:
        pytest.skip(setup.stderr.strip())
    assert setup.returncode == 0, setup.stderr
    node, modules = setup.stdout.split("\n")[:2]

    # The test file hands CORRAL_*, XDG_* and the sanitizers' options on to
    # each server it starts: the MCP transports pass on little else.
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("CORRAL_", "XDG_")) or k.endswith("SAN_OPTIONS")}
    env.update({
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/"),
        "LANG": "C.UTF-8",
        "CORRAL": os.path.abspath(CORRAL),
        "CORRAL_MCP_MODULES": modules,
    })
    r = subprocess.run([node, "--test", "--test-reporter=spec", os.path.join(MCP, "client.test.mjs")],
                       env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        pytest.fail(f"node --test exited {r.returncode}:\n{r.stdout}\n{r.stderr}", pytrace=False)
