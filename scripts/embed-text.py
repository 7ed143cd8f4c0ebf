#!/usr/bin/env python3
"""embed-text.py SYMBOL IN OUT: IN's text as `const char SYMBOL[]` in the C
file OUT (for the build: corral serve's OpenAPI file)."""
import sys

symbol, src, out = sys.argv[1:4]
text = open(src, encoding="utf-8").read()
lines = [f"/* Generated from {src.rsplit('/', 1)[-1]} by scripts/embed-text.py: do not edit. */",
         f"extern const char {symbol}[];", f"const char {symbol}[] ="]
for line in text.splitlines(keepends=True):
    esc = line.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    lines.append(f'        "{esc}"')
lines[-1] += ";"
open(out, "w", encoding="utf-8").write("\n".join(lines) + "\n")
