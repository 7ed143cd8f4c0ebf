#!/usr/bin/env python3
"""Write the two transcripts of the five-turn sales scenario of
bench/sessions.py: bench/sales5-session.jsonl and bench/sales5-stateless.jsonl.

    bench/make-sales5.py

The same five-step analysis of examples/sales' data (load the CSV, clean
it, the top 5 products, a trend plot, anomalies beyond 3 standard
deviations), written twice, as a model would write it in each mode:

- session: each step uses what the previous ones left in the interpreter
  (df, top5, ...), as `corral run` allows by default;
- stateless: each step must rebuild that state itself, since every
  `run_python` is a fresh process (`corral run --stateless`): it repeats
  the imports and the state-building part of the earlier steps whose
  state it needs (never their prints or files), then does its own part.

A transcript cannot branch on the mode, hence two.  Both write the same
files (output/top5.csv, trend.png, anomalies.csv; no intermediate file,
the state stays in memory) and print the same lines.  The turns are scripted, not recorded from a model (the
first line says so); the output is the same on every run.
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

COMMENT = ("Scripted for the benchmark, not recorded from a model: the model's turns were written by hand "
           "(bench/make-sales5.py, {mode} variant); replayed with --model replay:FILE by bench/sessions.py, the "
           "code in them runs for real in corral's jails on examples/sales' generated data.")

# (what the model says, the state-building code, the code that reports,
#  the earlier steps whose state it needs)
STEPS = [
    ("Load the data.",
     'import pandas as pd\n\ndf = pd.read_csv("input/sales.csv", parse_dates=["Date"])\n',
     'print(df.shape, "|", df.Date.min().date(), "to", df.Date.max().date())\nprint(df.dtypes)\n', []),
    ("Clean it: drop incomplete and duplicate rows and non-positive revenue; add the month.",
     'df = df.dropna().drop_duplicates()\ndf = df[df.Revenue > 0].copy()\n'
     'df["Month"] = df.Date.dt.to_period("M")\n',
     'print(len(df), "rows after cleaning;", df.Product.nunique(), "products,", df.Region.nunique(), "regions")\n',
     [0]),
    ("The top 5 products by revenue.",
     'totals = df.groupby("Product").Revenue.sum().sort_values(ascending=False)\n'
     'top5 = totals.head(5).round(2).rename("revenue").reset_index()\n',
     'import os\n\nos.makedirs("output", exist_ok=True)\ntop5.to_csv("output/top5.csv", index=False)\n'
     'print(top5.to_string(index=False))\n', [0, 1]),
    ("The monthly trend of the top 5.",
     'import matplotlib\n\nmatplotlib.use("Agg")\nimport matplotlib.pyplot as plt\n\n'
     'trend = (df[df.Product.isin(top5.Product)].groupby(["Month", "Product"]).Revenue.sum()\n'
     '         .unstack()[top5.Product])\n',
     'fig, ax = plt.subplots(figsize=(8, 4.5))\ntrend.plot(ax=ax, marker=".")\n'
     'ax.set_title("Monthly revenue, top 5 products")\nax.set_ylabel("revenue")\nfig.tight_layout()\n'
     'fig.savefig("output/trend.png", dpi=100)\nplt.close(fig)\nprint(trend.round(0).tail(3).to_string())\n',
     [0, 1, 2]),
    ("Anomalies: transactions beyond 3 standard deviations of their product's mean.",
     'g = df.groupby("Product").Revenue\n'
     'df["z"] = ((df.Revenue - g.transform("mean")) / g.transform("std")).round(2)\n'
     'anomalies = df[df.z.abs() > 3].sort_values("z", ascending=False)\n',
     'anomalies.drop(columns="Month").to_csv("output/anomalies.csv", index=False, date_format="%Y-%m-%d")\n'
     'print(len(anomalies), "transactions beyond 3 sd of their product; largest:")\n'
     'print(anomalies.head(5).to_string(index=False))\n', [0, 1]),
]

ANSWER = ("Done: output/top5.csv (the top 5 products by revenue), output/trend.png (their monthly revenue) and "
          "output/anomalies.csv (transactions beyond 3 standard deviations of their product's mean).")


def call(n, text, tool, **arguments):
    return {"reply": {"message": {"role": "assistant", "content": text,
                                  "tool_calls": [{"id": f"call_{n}", "type": "function",
                                                  "function": {"name": tool, "arguments": json.dumps(arguments)}}]},
                      "finish_reason": "tool_calls"}}


def steps(mode):
    """The five run_python codes of one mode."""
    out = []
    for _, build, report, needs in STEPS:
        if mode == "session":
            out.append(build + report)
        else:
            # The state of the earlier steps it needs (their imports with it), then its own.
            out.append("".join(STEPS[i][1] for i in needs) + build + report)
    return out


def main():
    for mode in ("session", "stateless"):
        path = os.path.join(HERE, f"sales5-{mode}.jsonl")
        lines = [{"comment": COMMENT.format(mode=mode)}]
        for n, ((text, _, _, _), code) in enumerate(zip(STEPS, steps(mode)), 1):
            lines.append(call(n, text, "run_python", code=code))
        lines.append(call(len(STEPS) + 1, None, "final_answer", answer=ANSWER))
        with open(path, "w") as f:
            f.writelines(json.dumps(x, ensure_ascii=False) + "\n" for x in lines)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
