import asyncio
import json
import statistics

# asyncio for concurrency inside the process: no subprocesses, no connections


async def summarize(field, values):
    await asyncio.sleep(0)
    return field, {"mean": round(statistics.mean(values), 2), "max": max(values)}


async def main():
    with open("data/events.jsonl") as f:
        events = [json.loads(line) for line in f]
    durations = [e["duration_ms"] for e in events]
    queue = asyncio.Queue()
    for e in events:
        queue.put_nowait(e["event"])
    counts = {}
    while not queue.empty():
        kind = queue.get_nowait()
        counts[kind] = counts.get(kind, 0) + 1
    results = await asyncio.gather(summarize("duration_ms", durations),
                                   summarize("per_kind", list(counts.values())))
    loop = asyncio.get_running_loop()
    total = await loop.run_in_executor(None, sum, durations)
    print(dict(results), counts, total)


asyncio.run(main())
