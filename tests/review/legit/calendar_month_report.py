import calendar
from collections import Counter
from datetime import date

import csv

with open("data/sales.csv", newline="") as f:
    days = Counter(date.fromisoformat(r["date"]) for r in csv.DictReader(f))
cal = calendar.TextCalendar(calendar.MONDAY)
lines = []
for month in range(1, 7):
    lines.append(cal.formatmonth(2024, month))
    busiest = max((d for d in days if d.month == month), key=days.get)
    lines.append(f"busiest day: {busiest} ({days[busiest]} orders)\n")
with open("calendar.txt", "w") as f:
    f.write("\n".join(lines))
print(lines[0])
print(lines[1])
