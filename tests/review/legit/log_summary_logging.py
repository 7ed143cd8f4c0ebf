import logging
import os
import re

os.makedirs("output", exist_ok=True)
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s",
                    handlers=[logging.FileHandler("output/analysis.log", mode="w"), logging.StreamHandler()])
log = logging.getLogger("log-summary")

errors = []
with open("data/app.log") as f:
    for n, line in enumerate(f, 1):
        if " ERROR " in line:
            errors.append((n, line.strip()))
log.info("read %d lines, %d errors", n, len(errors))
paths = {re.sub(r"/\d+", "/N", line.split()[5]) for _, line in errors}
for p in sorted(paths):
    log.warning("server errors on %s", p)
log.info("first error at line %d", errors[0][0] if errors else -1)
