"""`corral exec --json -w DIR`: the "artifacts" a program leaves in DIR, typed
by content (src/workspace/artifact.c), and what a hostile program cannot make
corral do while it looks: follow a symlink out, open a FIFO or a device, or
read a huge file to the end."""
import csv
import json
import os
import stat
import struct
import subprocess
import time

import pytest

from conftest import CORRAL


def exec_json(ws, code, *opts, timeout=120):
    proc = subprocess.run([CORRAL, "exec", "--json", "-w", str(ws), *opts, "-c", code],
                          capture_output=True, timeout=timeout)
    assert proc.stdout, f"no JSON (rc={proc.returncode}, stderr={proc.stderr!r})"
    res = json.loads(proc.stdout)
    assert res["status"] == "ok", res["stderr"]
    return res


def by_path(res):
    return {a["path"]: a for a in res["artifacts"]}


def png_size(path):
    """Width and height from the file's IHDR, read here on the host."""
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


def test_matplotlib_png_and_pandas_csv(tmp_path):
    code = """
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import os
os.makedirs("output", exist_ok=True)
fig, ax = plt.subplots(figsize=(12, 6), dpi=100)
ax.plot(np.arange(100), np.sin(np.arange(100) / 10))
fig.savefig("output/energy_anomalies.png")
df = pd.DataFrame({"timestamp": pd.date_range("2024-01-01", periods=42, freq="h").astype(str),
                   "kwh": np.linspace(1, 2, 42), "z": np.zeros(42),
                   "note": ["spike, large" if i % 7 == 0 else "ok" for i in range(42)],
                   "kind": ["multi\\nline" if i == 3 else "x" for i in range(42)]})
df.to_csv("output/anomalies.csv", index=False)
open("output/report.md", "w").write("# Anomaly report\\n\\n42 anomalies.\\n")
"""
    res = exec_json(tmp_path, code, "--memory", "1G", "--disk", "64M")
    arts = by_path(res)
    png = arts["output/energy_anomalies.png"]
    assert png["change"] == "created" and png["type"] == "file" and png["format"] == "png"
    assert (png["width"], png["height"]) == png_size(tmp_path / "output/energy_anomalies.png") == (1200, 600)
    assert png["size"] == os.path.getsize(tmp_path / "output/energy_anomalies.png")

    table = arts["output/anomalies.csv"]
    with open(tmp_path / "output/anomalies.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert table["format"] == "csv"
    assert table["rows"] == len(rows) - 1 == 42  # a quoted newline is not a row
    assert table["columns"] == len(rows[0]) == 5
    assert table["header"] == rows[0] == ["timestamp", "kwh", "z", "note", "kind"]

    md = arts["output/report.md"]
    assert md["format"] == "markdown" and md["title"] == "Anomaly report" and md["lines"] == 3


def test_formats_from_real_libraries(tmp_path):
    code = """
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import gzip, sqlite3
from PIL import Image
fig = plt.figure(figsize=(4, 3), dpi=100)
plt.plot([1, 2, 3])
fig.savefig("plot.svg")
fig.savefig("plot.jpg")
fig.savefig("plot.pdf")
exif = Image.Exif()
exif[0x010e] = "x" * 60000  # with the ICC profile: a frame header past 64 KiB
Image.new("RGB", (640, 480)).save("exif.jpg", exif=exif.tobytes(), icc_profile=b"\\0" * 100000)
Image.new("RGB", (10, 20)).save("progressive.jpg", progressive=True)
Image.new("RGB", (33, 17)).save("small.gif")
df = pd.DataFrame({"a": range(10), "b": range(10)})
with pd.ExcelWriter("book.xlsx") as w:
    df.to_excel(w, sheet_name="one")
    df.to_excel(w, sheet_name="two")
df.to_json("rows.jsonl", orient="records", lines=True)
df.to_json("records.json", orient="records")
df.to_html("table.html")
df.to_csv("table.tsv", sep="\\t")
np.save("zeros.npy", np.zeros(3))
gzip.open("data.csv.gz", "wb").write(b"a,b\\n")
sqlite3.connect("db.sqlite").execute("create table t(x)").connection.commit()
"""
    res = exec_json(tmp_path, code, "--memory", "1G")
    arts = by_path(res)
    from PIL import Image  # the host's own reading of the same files
    for name in ["plot.jpg", "exif.jpg", "progressive.jpg", "small.gif"]:
        with Image.open(tmp_path / name) as im:
            assert (arts[name]["width"], arts[name]["height"]) == im.size, name
        assert arts[name]["format"] == ("gif" if name.endswith(".gif") else "jpeg")
    assert os.path.getsize(tmp_path / "exif.jpg") > 160000
    assert arts["plot.svg"]["format"] == "svg"
    assert arts["plot.pdf"]["format"] == "pdf" and arts["plot.pdf"]["pages"] == 1
    assert arts["book.xlsx"]["format"] == "xlsx" and arts["book.xlsx"]["sheets"] == 2
    assert arts["rows.jsonl"]["format"] == "jsonl" and arts["rows.jsonl"]["rows"] == 10
    assert arts["records.json"]["length"] == 10 and arts["records.json"]["valid"] is True
    assert arts["table.html"]["format"] == "html"
    tsv = arts["table.tsv"]
    assert (tsv["format"], tsv["rows"], tsv["columns"], tsv["delimiter"]) == ("tsv", 10, 3, "\t")
    assert [arts[n]["format"] for n in ["zeros.npy", "data.csv.gz", "db.sqlite"]] == ["npy", "gzip", "sqlite"]


def test_symlinks_are_reported_never_followed(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    # Outside the workspace on the host: a CSV and a FIFO that would block
    # whoever opened it for reading.
    secret = tmp_path / "secret.csv"
    secret.write_text("user,password\nroot,hunter2\n")
    fifo = tmp_path / "outside.fifo"
    os.mkfifo(fifo)
    code = f"""
import os
os.symlink("/etc/passwd", "out.csv")
os.symlink({str(secret)!r}, "secret.csv")
os.symlink({str(fifo)!r}, "pipe.csv")
os.symlink("../../../../../../etc/shadow", "climb.csv")
os.mkdir("d")
os.symlink("/etc", "d/etc")
"""
    t0 = time.monotonic()
    res = exec_json(ws, code)
    assert time.monotonic() - t0 < 60
    arts = by_path(res)
    assert set(arts) == {"out.csv", "secret.csv", "pipe.csv", "climb.csv", "d/etc"}
    for path, a in arts.items():
        assert a["type"] == "symlink", a
        assert "format" not in a and "rows" not in a, a
        assert a["size"] == len(os.readlink(ws / path))  # the link itself, lstat'ed
    # The outside files are as they were.
    assert secret.read_text() == "user,password\nroot,hunter2\n"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_fifo_and_device_are_not_opened(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    # The jail cannot make device nodes; it can rename one that is there.
    os.mknod(tmp_path / "null0", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    code = """
import os
os.mkfifo("data.csv")
os.rename("null0", "dev.csv")
"""
    t0 = time.monotonic()
    res = exec_json(tmp_path, code)
    assert time.monotonic() - t0 < 60  # a FIFO opened for reading would hang here
    arts = by_path(res)
    assert arts["data.csv"]["type"] == "fifo" and "format" not in arts["data.csv"]
    assert arts["dev.csv"]["type"] == "device" and "format" not in arts["dev.csv"]
    assert arts["null0"]["change"] == "deleted"


def test_changes_deletions_and_a_file_turned_directory(tmp_path):
    (tmp_path / "result.csv").write_text("a,b\n1,2\n")
    (tmp_path / "old.txt").write_text("old\n")
    (tmp_path / "data.json").write_text("[1, 2]")
    (tmp_path / "same.txt").write_text("unchanged\n")
    code = """
import os, json
os.unlink("result.csv")
os.mkdir("result.csv")
open("result.csv/part-0.csv", "w").write("a,b\\n1,2\\n3,4\\n")
os.unlink("old.txt")
json.dump([1, 2, 3, 4], open("data.json", "w"))
open("broken.json", "w").write('{"a": [1, 2}')
open("empty.bin", "w").close()
"""
    res = exec_json(tmp_path, code)
    arts = by_path(res)
    assert set(arts) == {"result.csv", "result.csv/part-0.csv", "old.txt", "data.json", "broken.json", "empty.bin"}
    assert arts["result.csv"] == {"path": "result.csv", "change": "deleted", "type": "file", "size": 8}
    assert arts["old.txt"] == {"path": "old.txt", "change": "deleted", "type": "file", "size": 4}
    part = arts["result.csv/part-0.csv"]
    assert part["change"] == "created" and part["rows"] == 2 and part["columns"] == 2
    data = arts["data.json"]
    assert data["change"] == "modified" and data["format"] == "json" and data["valid"] is True
    assert data["json_type"] == "array" and data["length"] == 4
    assert arts["broken.json"]["format"] == "json" and arts["broken.json"]["valid"] is False
    assert arts["empty.bin"]["format"] == "empty"


def test_huge_csv_is_counted_up_to_the_cap(tmp_path):
    # 80 MiB of rows: counted to 64 MiB, then a lower bound.
    code = """
row = b"1,2\\n"
with open("big.csv", "wb") as f:
    f.write(b"a,b\\n")
    block = row * 262144
    for _ in range(80):
        f.write(block)
"""
    t0 = time.monotonic()
    res = exec_json(tmp_path, code, "--disk", "128M")
    elapsed = time.monotonic() - t0
    big = by_path(res)["big.csv"]
    assert big["format"] == "csv" and big["columns"] == 2
    assert "rows" not in big
    assert (64 << 20) // 4 - 2 <= big["rows_at_least"] < 80 * 262144
    assert elapsed < 60
    (tmp_path / "big.csv").unlink()  # pytest keeps its last temporary directories


def test_no_workspace_no_artifacts(corral):
    r = corral("exec", "--json", "-c", "open('x.csv', 'w').write('a,b\\n')")
    assert r.rc == 0, r.err
    assert "artifacts" not in r.json
