"""The README and `--help` agree: every long option a command's --help lists
is documented in the README, and every option the README names for a
command exists in its --help (a renamed or dropped flag fails here)."""
import os
import re
import subprocess

import pytest

from conftest import CORRAL

ROOT = os.environ.get("CORRAL_SOURCE_ROOT") or os.path.join(os.path.dirname(__file__), "..", "..")
OPT = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
# Spellings that are aliases of a documented option, and --help itself;
# other programs' options in the README's examples (llama-server, vLLM).
ALIASES = {"--help", "--no-colour", "--jinja", "--enable-auto-tool-choice", "--tool-call-parser"}


def readme_section(title):
    text = open(os.path.join(ROOT, "README.md")).read()
    start = text.index(f"## `{title}`")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def help_options(*cmd):
    r = subprocess.run([CORRAL, *cmd, "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return set(OPT.findall(r.stdout)) - ALIASES


@pytest.mark.parametrize("cmd, sections", [
    (("run",), ["corral run", "corral exec"]),       # run's jail options are exec's, documented there
    (("exec",), ["corral exec"]),
    (("session",), ["corral session", "corral exec"]),
    (("review",), ["corral review"]),
    (("workspace",), ["corral workspace"]),
    (("doctor",), ["corral doctor"]),
    (("serve",), ["corral serve", "corral exec"]),
    (("mcp",), ["corral mcp", "corral run", "corral exec"]),  # --review-policy is run's too
    (("mcp-jail",), ["corral mcp-jail", "corral exec"]),
])
def test_help_and_readme_name_the_same_options(cmd, sections):
    helped = help_options(*cmd)
    documented = set()
    for s in sections:
        documented |= set(OPT.findall(readme_section(s)))
    missing = sorted(helped - documented)
    assert not missing, f"corral {' '.join(cmd)} --help has options the README does not document: {missing}"
    # what the section names exists in some command's --help (a section may
    # point at another command's options: "corral run --review-policy")
    every = set()
    for c in ("run", "exec", "session", "review", "workspace", "trace", "runs", "serve", "mcp", "mcp-jail"):
        every |= help_options(c)
    stale = sorted(set(OPT.findall(readme_section(sections[0]))) - ALIASES - every)
    assert not stale, f"the README's `{sections[0]}` names options no --help has: {stale}"


def test_completion_and_man_page_come_from_the_same_help(tmp_path):
    r = subprocess.run([CORRAL, "completion", "bash"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "complete -o filenames -F _corral corral" in r.stdout
    words = re.search(r'words="([^"]*)"', r.stdout).group(1).split()
    for name in ("exec", "run", "runs", "session", "trace", "completion"):
        assert name in words, words
    # the completion asks the command's own --help: the options it offers are those
    script = tmp_path / "c.bash"
    script.write_text(r.stdout)
    out = subprocess.run(["bash", "-c", f"source {script}; COMP_WORDS=({CORRAL} run --no-col); COMP_CWORD=2; "
                                        "_corral; echo ${COMPREPLY[@]}"], capture_output=True, text=True).stdout
    assert out.split() == ["--no-color"], out
    r = subprocess.run(["sh", os.path.join(ROOT, "scripts", "gen-man.sh"), CORRAL, str(tmp_path / "corral.1")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    page = (tmp_path / "corral.1").read_text()
    assert page.startswith(".TH CORRAL 1") and '.SH "CORRAL RUN"' in page and "\\-\\-max\\-iterations" not in page
    assert "--max-iterations" in page and "--context-tokens" in page
