"""Helpers shared by the review corpus tests: reading snippet headers and
running `corral review`.

Everything here runs on the host.  Jails are run with the attack suite's
helpers (tests/attack/corral_attack.py), imported by conftest.py.
"""
import json
import os
import re
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
UNSAFE = HERE / "unsafe"
LEGIT = HERE / "legit"
CORRAL = os.environ.get("CORRAL") or str(HERE.parents[1] / "build" / "corral")

HEADER_KEYS = ("rule", "attempts", "creates", "policy", "jail", "gap")
# Lines for the terminal summary (conftest.py prints them).
SUMMARY = []

RULE_ID = re.compile(r"^(PY|SH)-[A-Z]+-\d{3}$")


def lang_of(path):
    return "bash" if Path(path).suffix == ".sh" else "python"


def snippet_files(directory):
    """The corpus files of DIRECTORY (.py and .sh), sorted by name."""
    return sorted(p for p in Path(directory).iterdir() if p.suffix in (".py", ".sh") and p.is_file())


class Snippet:
    """An unsafe snippet and what its header comments promise:

    # rule: PY-PROC-001        the rule `corral review` must reject it with
    # attempts: REGEX          found in stdout+stderr when it runs in the jail
    # creates: PATH            (optional) a file it leaves in the workspace
    # policy: strict|FILE      (optional) the policy to review with; FILE is
    #                          relative to unsafe/ (default: standard)
    # jail: ARGS               (optional) extra `corral exec` options
    # gap: WHY                 (optional) the review misses it today: its
    #                          review test is a strict xfail, so it fails
    #                          as soon as the review catches it (then
    #                          delete this line)
    """

    def __init__(self, path):
        self.path = Path(path)
        self.name = self.path.name
        self.lang = lang_of(path)
        self.text = self.path.read_text()
        self.header = {}
        for line in self.text.splitlines():
            m = re.match(r"#\s*([a-z]+):\s*(.*?)\s*$", line)
            if m and m.group(1) in HEADER_KEYS and m.group(1) not in self.header:
                self.header[m.group(1)] = m.group(2)
        self.rule = self.header.get("rule")
        self.attempts = self.header.get("attempts")
        self.creates = self.header.get("creates")
        self.jail_args = self.header.get("jail", "").split()
        self.gap = self.header.get("gap")
        policy = self.header.get("policy", "standard")
        if policy not in ("standard", "strict", "off"):
            policy = str(UNSAFE / policy)
        self.policy = policy

    def problems(self):
        """What is wrong with the header, as a list of sentences."""
        out = []
        if not self.rule or not RULE_ID.match(self.rule):
            out.append(f"no valid '# rule: ID' header (got {self.rule!r})")
        if not self.attempts and not self.creates:
            out.append("neither '# attempts: REGEX' nor '# creates: PATH'")
        if self.attempts:
            try:
                re.compile(self.attempts)
            except re.error as e:
                out.append(f"'# attempts:' is not a regular expression: {e}")
        if "gap" in self.header and not self.gap:
            out.append("'# gap:' needs a reason")
        if self.policy not in ("standard", "strict", "off") and not os.path.isfile(self.policy):
            out.append(f"policy file {self.policy} does not exist")
        return out


class Review:
    """The outcome of one `corral review` run."""

    def __init__(self, argv, proc):
        self.argv = argv
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.json = None
        if "--json" in argv and proc.stdout.strip():
            try:
                self.json = json.loads(proc.stdout)
            except ValueError:
                pass

    @property
    def findings(self):
        return (self.json or {}).get("findings", [])

    def rules(self, severity=None):
        return [f.get("rule") for f in self.findings if severity is None or f.get("severity") == severity]

    def __repr__(self):
        return (f"Review(rc={self.rc}, argv={' '.join(self.argv[1:])!r}, stdout={self.stdout[-1500:]!r}, "
                f"stderr={self.stderr[-800:]!r})")


def review(path, policy="standard", lang=None, json_out=True, timeout=30):
    """Run `corral review [--json] --policy POLICY --lang LANG PATH`."""
    argv = [CORRAL, "review"]
    if json_out:
        argv.append("--json")
    argv += ["--policy", policy, "--lang", lang or lang_of(path), str(path)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    return Review(argv, proc)


def check_finding_shape(f):
    """Each finding carries a position, a rule id, a severity and a message
    written for a model."""
    assert isinstance(f.get("line"), int) and f["line"] >= 1, f
    assert isinstance(f.get("column"), int) and f["column"] >= 1, f
    assert RULE_ID.match(f.get("rule", "")), f
    assert f.get("severity") in ("reject", "warn"), f
    prefix = "rejected by safety review: " if f["severity"] == "reject" else "warning from safety review: "
    assert f.get("message", "").startswith(prefix), f
    assert f"(rule {f['rule']})" in f["message"], f


def documented_rules():
    """{rule id: standard-level severity} from docs/review.md, or None when the
    document is not readable (the copy of tests/ an ordinary user runs)."""
    root = os.environ.get("CORRAL_SOURCE_ROOT") or str(HERE.parents[1])
    try:
        text = Path(root, "docs", "review.md").read_text()
    except OSError:
        return None
    rules = {}
    row = re.compile(r"^\|\s*((?:PY|SH)-[A-Z]+-\d{3})\s*\|(?:[^|\\]|\\.)*\|\s*(\S+)\s*\|\s*(\S+)\s*\|", re.M)
    for m in row.finditer(text):
        rules[m.group(1)] = m.group(3)
    return rules


def note(line):
    """Add a line to the terminal summary."""
    if line not in SUMMARY:
        SUMMARY.append(line)
