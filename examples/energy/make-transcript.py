#!/usr/bin/env python3
"""Write examples/energy/transcript.jsonl, the model's side of the energy
case study that `make demo` replays when no model is configured.

    examples/energy/make-transcript.py [CORRAL]     (default: build/corral)

The turns are scripted: a careful analyst's run, written by hand.  It looks
at the data (steps/explore.py), writes its analysis as detect.py but forgets
to parse the timestamps, reads the AttributeError, fixes the load with sed
and reruns, checks the artifacts, and answers.  The code is steps/detect.py;
nothing in it comes from the ground truth.

The script then replays the transcript through corral on freshly generated
data (the default seed), checks that every step saw what the next one reacts
to (the error, the results), and takes the figures of the final answer from
what detect.py printed, as a model would.  The output is the same on every
run: the data and the code are deterministic.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
import scripted  # noqa: E402

TASK = ("ingest the hourly dataset, compute normal baseline behaviour, flag anomalies with robust z-scores, "
        "and save three artifacts: anomalies.csv, energy_anomalies.png, report.md")
LOAD = 'pd.read_csv("input/building_energy.csv", parse_dates=["timestamp"])'
BUGGY_LOAD = 'pd.read_csv("input/building_energy.csv")'


def source(name):
    with open(os.path.join(HERE, "steps", name)) as f:
        return f.read()


def turns(answer):
    detect = source("detect.py")
    assert LOAD in detect
    return [
        scripted.call("I'll look at the data first: columns, types, the time range and gaps, and how consumption "
                      "moves with the hour, the weekday and the outdoor temperature.",
                      "run_python", code=source("explore.py")),
        scripted.call(
            "A full year of hourly readings (8,760 rows, no gaps, no missing values). Consumption follows office "
            "hours (weekdays 07-19, little at weekends) and rises both in cold and in hot weather, so a normal "
            "baseline has to depend on the hour of the week *and* on the temperature. Some readings are near zero: "
            "those are meter dropouts, not consumption.\n\n"
            "Plan:\n"
            "1. Rules for readings that are not consumption: near-zero values (dropouts) and the same value "
            "repeated for hours (a stuck sensor); keep them out of the baseline.\n"
            "2. Baseline: the median of each of the 168 hours of the week plus a heating/cooling response on "
            "degree-hours, fitted with Huber weights so that anomalies cannot pull it.\n"
            "3. Robust z of the residual: (r - median) / (1.4826 MAD) per hour of the week. With 8,760 hours, "
            "|z| >= 5 for a single hour; a 48-hour median z >= 2 marks a slow drift.\n"
            "4. Write anomalies.csv, the plot and the report to output/.\n\n"
            "It is a longer script, so I'll save it as detect.py and run it.",
            "write_file", path="detect.py", content=detect.replace(LOAD, BUGGY_LOAD)),
        scripted.call(None, "run_shell", command="python3 detect.py"),
        scripted.call("The timestamps were read as plain strings (in the first look I converted them separately). "
                      "Parse them when loading, then run again.",
                      "run_shell", command=f"sed -i 's|{BUGGY_LOAD}|{LOAD}|' detect.py && python3 detect.py"),
        scripted.call("Let me check the three artifacts before answering.",
                      "run_shell", command="ls -l output/ && head -4 output/anomalies.csv && "
                                           "sed -n '/^## Summary/,/^## Largest/p' output/report.md"),
        scripted.call(None, "final_answer", answer=answer),
    ]


def summary(stdout):
    """The final answer, from what detect.py printed."""
    lines = stdout.strip().splitlines()
    head = lines[0].replace("flagged", "Flagged", 1)
    largest = lines[1].removeprefix("largest:").strip()
    events = "\n".join("- " + " ".join(line.split()) for line in lines[2:])
    return (f"{head}.\n\n"
            f"Largest single-hour spikes: {largest}.\n\n"
            f"Dropouts, stuck readings and drifts:\n{events}\n\n"
            "Method: baseline = median per hour of the week plus a robust (Huber) heating/cooling response on "
            "degree-hours; robust z = (residual - median) / (1.4826 MAD) per hour of the week; flagged when "
            "|z| >= 5 for one hour, when the 48-hour median z >= 2 (drift), for readings under 5 % of the median "
            "(dropout) and for the same reading 4+ hours in a row (stuck sensor).\n\n"
            "Files: output/anomalies.csv (timestamp, kwh, expected, robust_z, kind), output/energy_anomalies.png "
            "(consumption with the flagged hours, and the robust z), output/report.md.")


def main():
    corral = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "corral"))
    out = os.path.join(HERE, "transcript.jsonl")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, os.path.join(HERE, "generate.py"), "--out", tmp], check=True)
        data = [os.path.join(tmp, "building_energy.csv")]
        draft = os.path.join(tmp, "draft.jsonl")
        scripted.write(draft, "examples/energy/make-transcript.py", turns("(draft)"))
        _, results = scripted.replay(corral, draft, data, TASK)
        scripted.expect(results, 0, "median kWh by outdoor temperature")
        scripted.expect(results, 2, "AttributeError: Can only use .dt accessor with datetimelike values",
                        ok=False)
        final = scripted.expect(results, 3, "flagged ")
        scripted.expect(results, 4, "anomalies.csv", "timestamp,kwh,expected,robust_z,kind", "## Summary")
        scripted.write(out, "examples/energy/make-transcript.py", turns(summary(final["exec"]["stdout"])), data)
        end, _ = scripted.replay(corral, out, data, TASK)
    if end["status"] != "answered":
        raise SystemExit(f"the replay ended '{end['status']}': {end.get('reason')}")
    print(f"wrote {out}; replayed: {json.dumps(end['answer'][:200])}...")


if __name__ == "__main__":
    main()
