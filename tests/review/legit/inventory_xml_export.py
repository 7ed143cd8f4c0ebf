import json
import xml.etree.ElementTree as ET

with open("data/inventory.json") as f:
    doc = json.load(f)

root = ET.Element("inventory", generated=doc["generated"])
for wh in doc["warehouses"]:
    w = ET.SubElement(root, "warehouse", name=wh["name"], city=wh["city"])
    for item in wh["items"]:
        ET.SubElement(w, "item", sku=item["sku"], qty=str(item["qty"]), price=f"{item['price']:.2f}")
ET.indent(root)
ET.ElementTree(root).write("inventory.xml", encoding="utf-8", xml_declaration=True)

parsed = ET.parse("inventory.xml").getroot()
print(len(parsed.findall(".//item")), "items written to inventory.xml")
