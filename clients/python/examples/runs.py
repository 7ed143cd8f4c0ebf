"""runs.py: an agent run on corral serve, followed as it goes, its files and archive.

    corral serve --model-url http://127.0.0.1:11434/v1 &      # a model endpoint runs may name
    export CORRAL_URL=http://127.0.0.1:8745 CORRAL_TOKEN=$(cat ~/.local/state/corral/serve/token)
    export MODEL_BASE_URL=http://127.0.0.1:11434/v1 MODEL=qwen2.5-coder:7b MODEL_API_KEY=...
    python3 clients/python/examples/runs.py
"""
import io
import os
import tarfile

from corral_client import Corral

client = Corral()
run = client.runs.create(
    "the total sales per product in sales.csv; write output/report.txt",
    model=os.environ.get("MODEL"), base_url=os.environ.get("MODEL_BASE_URL"),
    api_key=os.environ.get("MODEL_API_KEY"),              # sent as X-Model-Api-Key, never kept
    inputs={"sales.csv": "product,sales\nwidget,3\n"},    # staged read-only at input/sales.csv
    max_iterations=8)
print("run", run.id)
run.wait(on_event=lambda ev: print(f"  [{ev['id']}] {ev['type']}"),
         on_stdout=lambda out: print(out, end=""))        # resumes by itself if the stream breaks
print("status:", run.status)
print("answer:", run.answer)
for a in run.artifacts():                                 # the run's output/
    print("artifact:", a["path"], a.get("size"))
print(run.artifact("report.txt").decode(), end="")
with tarfile.open(fileobj=io.BytesIO(run.archive())) as tar:   # the whole workspace
    print("archive:", len(tar.getnames()), "entries")
