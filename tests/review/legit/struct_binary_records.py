import csv
import struct

RECORD = struct.Struct("<I H f")  # order id, units, unit price
with open("data/sales.csv", newline="") as src, open("sales.bin", "wb") as dst:
    n = 0
    for row in csv.DictReader(src):
        if row["units"]:
            dst.write(RECORD.pack(int(row["order_id"]), int(row["units"]), float(row["unit_price"])))
            n += 1
with open("sales.bin", "rb") as f:
    records = list(RECORD.iter_unpack(f.read()))
assert len(records) == n
print(n, "records of", RECORD.size, "bytes; first:", records[0])
