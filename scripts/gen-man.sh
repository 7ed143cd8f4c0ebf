#!/bin/sh
# gen-man.sh CORRAL OUT: write the corral(1) man page to OUT from the built
# binary's own help: `corral --help` and each command's `--help`, so the
# page says what --help says (the same option tables, never a copy to keep
# in step).  Run by meson at build time; installed by `make install`.
set -eu
corral=$1
out=$2
version=$("$corral" --version | awk '{print $2}')

# Text as roff: backslashes escaped, a line starting with . or ' guarded.
roff() {
        sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
}

{
        printf '.TH CORRAL 1 "" "corral %s" "User Commands"\n' "$version"
        printf '.SH NAME\ncorral \\- a fast, secure runtime for LLM agents that write code and run it\n'
        printf '.SH SYNOPSIS\n.B corral\n.I COMMAND\n[\\fIOPTIONS\\fR] ...\n'
        printf '.SH DESCRIPTION\n.nf\n'
        "$corral" --help | roff
        printf '.fi\n'
        for cmd in $("$corral" --help | awk '/^commands:/ {f = 1; next} /^$/ {f = 0} f {print $1}') completion; do
                printf '.SH "CORRAL %s"\n.nf\n' "$(echo "$cmd" | tr a-z A-Z)"
                "$corral" "$cmd" --help | roff
                printf '.fi\n'
        done
        printf '.SH SEE ALSO\nThe documentation in the source tree: README.md and docs/.\n'
} > "$out.tmp"
mv "$out.tmp" "$out"
