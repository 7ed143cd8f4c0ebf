import pandas as pd
import matplotlib.pyplot as plt

df = pd.read_csv('input/sales.csv', parse_dates=['Date'])
top5 = df.groupby('Product')['Revenue'].sum().nlargest(5).round(2)
top5.to_csv('output/top5.csv')
print(top5.to_string())

monthly = df.set_index('Date').groupby('Product')['Revenue'].resample('MS').sum().unstack(0)[top5.index]
ax = monthly.plot(figsize=(9, 4.5), title='Monthly revenue, top 5 products')
ax.set_ylabel('revenue')
plt.tight_layout()
plt.savefig('output/trend.png', dpi=110)

daily = df.groupby('Date')['Revenue'].sum()
z = (daily - daily.mean()) / daily.std()
anomalies = daily[z.abs() > 3].round(2)
anomalies.to_csv('output/anomalies.csv')
print(f'{len(anomalies)} anomalous days (|z| > 3):')
print(anomalies.to_string())

with open('output/report.md', 'w') as f:
    f.write('# Sales analysis\n\n## Top 5 products by revenue\n\n')
    f.write(top5.to_markdown() + '\n\n')
    f.write('## Monthly trend\n\n![trend](trend.png)\n\n')
    f.write(f'## Anomalous days (|z| > 3 on daily revenue)\n\n{anomalies.to_markdown()}\n')
