"""A one-file HTML report with the chart embedded as a base64 data URI."""
import base64
import html
import io

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

df = pd.read_csv("data/sales.csv")
summary = df.groupby("product")["units"].sum().sort_values()
fig, ax = plt.subplots(figsize=(5, 3))
summary.plot.barh(ax=ax)
buf = io.BytesIO()
fig.savefig(buf, format="png")
img = base64.b64encode(buf.getvalue()).decode("ascii")

page = f"""<!doctype html>
<title>{html.escape("Units by product & region")}</title>
<h1>Units by product</h1>
{summary.to_frame().to_html()}
<img src="data:image/png;base64,{img}">
"""
with open("report.html", "w", encoding="utf-8") as f:
    f.write(page)
print(f"report.html: {len(page)} characters, image {len(img)} base64 characters")
