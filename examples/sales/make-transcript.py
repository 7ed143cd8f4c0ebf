#!/usr/bin/env python3
"""Write examples/sales/transcript.jsonl, the model's side of the sales
example that `make demo-sales` replays when no model is configured.

    examples/sales/make-transcript.py [CORRAL]     (default: build/corral)

The turns are scripted: a look at the data (steps/explore.py), the analysis
(steps/analyse.py) first written with pandas' to_markdown, which needs the
tabulate package the jail does not have, then again with the tables
formatted by hand, and the answer.  Nothing in the code comes from the list
of injected outliers.

The script replays the transcript through corral on freshly generated data
(the default seed), checks that each step saw what the next one reacts to,
and takes the figures of the final answer from what the analysis printed.
The output is the same on every run.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
import scripted  # noqa: E402

TASK = ("find the top 5 products by revenue in sales.csv, plot the trend, and flag anomalies beyond 3 standard "
        "deviations; save top5.csv, trend.png, anomalies.csv and report.md")


def source(name):
    with open(os.path.join(HERE, "steps", name)) as f:
        return f.read()


def first_try(code):
    """steps/analyse.py as first written: pandas' to_markdown, no helper."""
    code, n = re.subn(r"\n\ndef markdown\(frame\):\n.*?\n\n\n", "\n", code, flags=re.S)
    assert n == 1
    return re.sub(r"markdown\(([^()]*(?:\([^()]*\))?)\)", r"\1.to_markdown(index=False)", code)


def turns(answer):
    analyse = source("analyse.py")
    return [
        scripted.call("First a look at the data: columns, types, the date range, and revenue per product.",
                      "run_python", code=source("explore.py")),
        scripted.call("10,000 transactions over 2025, ten products in four regions, no missing values. Prices "
                      "differ by a factor of 40 between products, so anomalies must be judged against each "
                      "product's own distribution, not one global mean. Now the analysis: totals per product, "
                      "a monthly trend plot, and transactions more than 3 standard deviations from their "
                      "product's mean.",
                      "run_python", code=first_try(analyse)),
        scripted.call("pandas' to_markdown needs the tabulate package, which is not installed (and there is no "
                      "network to install it). top5.csv and trend.png were written; I'll format the report's "
                      "tables myself and run the whole analysis again.",
                      "run_python", code=analyse),
        scripted.call(None, "final_answer", answer=answer),
    ]


def summary(stdout):
    """The final answer, from what the analysis printed."""
    lines = stdout.strip().splitlines()
    top = [line.rsplit(None, 1) for line in lines[1:6]]
    count = next(i for i, line in enumerate(lines) if "beyond 3 sd" in line)
    head = lines[count].removesuffix("; largest:")
    far = [line.split() for line in lines[count + 2:] if float(line.split()[-1]) > 5]
    return ("Top 5 products by revenue:\n"
            + "\n".join(f"{i}. {name.strip()}: {float(rev):,.2f}" for i, (name, rev) in enumerate(top, 1))
            + f"\n\n{head}. The transactions far beyond the rest, each many times its product's usual "
              "order:\n"
            + "\n".join(f"- {d} {p} ({r}): {float(v):,.2f}, z = {z}" for p, v, d, r, z in far)
            + "\nThe others are large but ordinary baskets at the top of the normal range (3 sd flags some of "
              "those in every 10,000 rows).\n\n"
              "Files: output/top5.csv, output/trend.png (monthly revenue, all products and the top 5), "
              "output/anomalies.csv (with each transaction's z-score within its product) and output/report.md.")


def main():
    corral = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "corral"))
    out = os.path.join(HERE, "transcript.jsonl")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, os.path.join(HERE, "generate.py"), "--out", tmp], check=True)
        data = [os.path.join(tmp, "sales.csv")]
        draft = os.path.join(tmp, "draft.jsonl")
        scripted.write(draft, "examples/sales/make-transcript.py", turns("(draft)"))
        _, results = scripted.replay(corral, draft, data, TASK)
        scripted.expect(results, 0, "Revenue", "Whatsit")
        scripted.expect(results, 1, "Missing optional dependency 'tabulate'", ok=False)
        final = scripted.expect(results, 2, "beyond 3 sd")
        scripted.write(out, "examples/sales/make-transcript.py", turns(summary(final["exec"]["stdout"])), data)
        end, _ = scripted.replay(corral, out, data, TASK)
    if end["status"] != "answered":
        raise SystemExit(f"the replay ended '{end['status']}': {end.get('reason')}")
    print(f"wrote {out}; replayed: {json.dumps(end['answer'][:200])}...")


if __name__ == "__main__":
    main()
