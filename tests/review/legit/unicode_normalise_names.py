import unicodedata

names = ["Zoë Ångström", "Élodie Müller", "Łukasz Żółw", "José Núñez", "  Chloé  "]


def slug(name):
    decomposed = unicodedata.normalize("NFKD", name.strip())
    ascii_only = "".join(c for c in decomposed if not unicodedata.combining(c))
    return "-".join(ascii_only.lower().split())


with open("names.csv", "w", encoding="utf-8") as f:
    f.write("name,slug,category_of_first\n")
    for n in names:
        f.write(f"{n.strip()},{slug(n)},{unicodedata.category(n.strip()[0])}\n")
print(open("names.csv", encoding="utf-8").read())
