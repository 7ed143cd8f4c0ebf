import pandas as pd
import matplotlib.pyplot as plt

df = pd.read_csv('input/sales.csv', parse_dates=['Date'])
top5 = df.groupby('Product')['Revenue'].sum().nlargest(5).round(2)
top5.to_csv('output/top5.csv')

monthly = df.set_index('Date').groupby('Product')['Revenue'].resample('MS').sum().unstack(0)[top5.index]
ax = monthly.plot(figsize=(9, 4.5), title='Monthly revenue, top 5 products')
ax.set_ylabel('revenue')
plt.tight_layout()
plt.savefig('output/trend.png', dpi=110)

# Anomalies per product: each day against the median of the same weekday in
# the surrounding nine weeks, then a robust z-score of that ratio.
daily = df.groupby(['Product', 'Date'])['Revenue'].sum().reset_index()
daily['weekday'] = daily['Date'].dt.weekday
base = daily.groupby(['Product', 'weekday'])['Revenue'].transform(
    lambda s: s.rolling(9, center=True, min_periods=4).median())
daily['ratio'] = (daily['Revenue'] + 1) / (base + 1)
g = daily.groupby('Product')['ratio']
mad = g.transform(lambda s: (s - s.median()).abs().median())
daily['z'] = (daily['ratio'] - g.transform('median')) / (1.4826 * mad)
flagged = daily[daily['z'].abs() > 6].sort_values('z', key=abs, ascending=False)
flagged[['Date', 'Product', 'Revenue', 'z']].round(2).to_csv('output/anomalies.csv', index=False)

with open('output/report.md', 'w') as f:
    f.write('# Sales analysis\n\n## Top 5 products by revenue\n\n| product | revenue |\n|---|---:|\n')
    for name, rev in top5.items():
        f.write(f'| {name} | {rev:,.2f} |\n')
    f.write('\n## Monthly trend\n\n![trend](trend.png)\n\n## Anomalous days\n\n')
    for r in flagged.itertuples():
        f.write(f'- {r.Date:%Y-%m-%d} {r.Product}: revenue {r.Revenue:,.2f} (robust z {r.z:+.1f})\n')

print(top5.to_string())
print(f'{len(flagged)} anomalous days:')
print(flagged[['Date', 'Product', 'Revenue', 'z']].round(1).to_string(index=False))
