import os

# Low-level file APIs inside the workspace: os.open with flags, io.FileIO, a relative path after chdir.
os.makedirs("output/raw", exist_ok=True)
flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
fd = os.open("output/raw/header.bin", flags, 0o644)
with open("data/sales.csv", "rb") as f:
    header = f.readline()
os.write(fd, header)
os.close(fd)

import io

with io.FileIO("output/raw/copy.csv", "w") as out, open("data/sales.csv", "rb") as src:
    out.write(src.read())

# reading a system file is fine, whatever the flags say
fd = os.open("/etc/hostname", os.O_RDONLY)
print("hostname bytes:", len(os.read(fd, 256)))
os.close(fd)

here = os.getcwd()
os.chdir("output/raw")
with open("notes.txt", "w") as f:
    f.write("written from inside output/raw\n")
os.chdir(here)
print(sorted(os.listdir("output/raw")))
