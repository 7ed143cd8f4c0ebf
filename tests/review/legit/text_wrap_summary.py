import textwrap
from string import Template

with open("data/notes.txt") as f:
    first = f.read().split("\n\n")[0]
summary = textwrap.shorten(first, width=160, placeholder=" [...]")
page = Template("Summary of $name\n$rule\n$body\n").substitute(
    name="notes.txt", rule="=" * 20, body=textwrap.fill(summary, width=60))
with open("summary.txt", "w") as f:
    f.write(page)
print(page)
