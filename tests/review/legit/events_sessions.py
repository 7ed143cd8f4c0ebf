"""Split each user's events into sessions separated by 10 minutes of silence."""
import json
from datetime import datetime, timedelta
from itertools import groupby
from operator import itemgetter

with open("data/events.jsonl") as f:
    events = [json.loads(line) for line in f if line.strip()]
for ev in events:
    ev["ts"] = datetime.fromisoformat(ev["ts"])
events.sort(key=itemgetter("user", "ts"))

gap = timedelta(minutes=10)
sessions = []
for user, evs in groupby(events, key=itemgetter("user")):
    evs = list(evs)
    start = evs[0]
    last = evs[0]
    for ev in evs[1:]:
        if ev["ts"] - last["ts"] > gap:
            sessions.append((user, start["ts"], last["ts"]))
            start = ev
        last = ev
    sessions.append((user, start["ts"], last["ts"]))

lengths = [(end - begin).total_seconds() / 60 for _, begin, end in sessions]
print(f"{len(sessions)} sessions for {len({s[0] for s in sessions})} users")
print(f"mean session length: {sum(lengths) / len(lengths):.1f} min, longest {max(lengths):.1f} min")
