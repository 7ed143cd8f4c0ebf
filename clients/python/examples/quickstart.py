"""quickstart.py: a sandbox from corral serve, Python in it streamed, a file, a tar.

    corral serve &                                   # prints http://127.0.0.1:8745/?token=...
    export CORRAL_URL=http://127.0.0.1:8745 CORRAL_TOKEN=$(cat ~/.local/state/corral/serve/token)
    python3 clients/python/examples/quickstart.py
"""
import io
import sys
import tarfile

from corral_client import Corral, NotFound

client = Corral()  # $CORRAL_URL and $CORRAL_TOKEN
with client.sandboxes.create(limits={"timeout": 20}, metadata={"example": "quickstart"}) as sb:
    # State persists from step to step.
    sb.run_code("import pandas as pd\ndf = pd.DataFrame({'x': [1, 2, 3]})")
    # Stream a step: output as it comes, then the result.
    r = sb.run_code("for i in range(3): print('tick', i)\ndf.x.sum() * 7",
                    on_stdout=lambda chunk: print(chunk, end="", flush=True),
                    on_result=lambda r: print("result:", r.text))
    assert r.text == "42"

    # An exception comes back as a result, not a Python exception of ours.
    r = sb.run_code("1 / 0")
    print("error:", r.error.name, r.error.value)

    # Files in, files out.
    sb.files.write("data/in.csv", "a,b\n1,2\n3,4\n")
    print(sb.run_shell("wc -l data/in.csv").stdout, end="")
    sb.run_code("pd.read_csv('data/in.csv').sum().to_csv('data/out.csv')")
    print(sb.files.read("data/out.csv", text=True), end="")
    tar = tarfile.open(fileobj=io.BytesIO(sb.files.download_tar()))
    print("in the workspace:", sorted(n for n in tar.getnames() if n.startswith("data/")))
    sandbox_id = sb.id

try:  # the `with` killed it
    client.sandboxes.get(sandbox_id)
except NotFound as e:
    print("gone:", e.message)
    sys.exit(0)
sys.exit(1)
