import pandas as pd

df = pd.read_csv("input/sales.csv", parse_dates=["Date"])
print(df.dtypes, "\n")
print(df.head(), "\n")
print(len(df), "rows,", df.Date.min().date(), "to", df.Date.max().date(), "| missing:", int(df.isna().sum().sum()))
print("products:", df.Product.nunique(), "| regions:", sorted(df.Region.unique()))
print(df.groupby("Product").Revenue.describe().round(2))
