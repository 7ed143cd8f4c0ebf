import csv

closes = []
with open("data/stock.csv", newline="") as f:
    for row in csv.DictReader(f):
        closes.append((row["date"], float(row["close"])))

peak_date, peak = closes[0]
worst = (0.0, None, None)
for day, price in closes:
    if price > peak:
        peak, peak_date = price, day
    dd = price / peak - 1
    if dd < worst[0]:
        worst = (dd, peak_date, day)
print(f"max drawdown {worst[0]:.2%} from {worst[1]} to {worst[2]}")
