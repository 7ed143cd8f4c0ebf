import json

import pandas as pd

survey = pd.read_csv("data/survey.csv")
long = survey.melt(id_vars=["respondent", "group"], value_vars=["score_before", "score_after"],
                   var_name="when", value_name="score")
print(long.groupby(["group", "when"])["score"].mean().unstack().round(2))

with open("data/inventory.json") as f:
    items = pd.DataFrame([i for wh in json.load(f)["warehouses"] for i in wh["items"]])
tags = items.explode("tags")
print(tags.groupby("tags")["qty"].sum())
