import json
import re

EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")
PHONE = re.compile(r"\+\d{1,3}(?:[ -]?\d{1,4}){3,5}")
with open("data/notes.txt") as f:
    text = f.read()
found = {"emails": sorted(set(EMAIL.findall(text))), "phones": PHONE.findall(text)}
with open("contacts.json", "w") as f:
    json.dump(found, f, indent=2)
print(json.dumps(found))
