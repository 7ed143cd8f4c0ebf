# shellcheck shell=sh disable=SC2034 # model_opts and model_desc are for the caller
# choose-model.sh: sourced by the examples' run.sh.  choose_model TRANSCRIPT
# sets model_opts (the `corral run` options that name the model; word-split)
# and model_desc (what to tell the user):
#
#   MODEL=replay                 the scripted transcript (CI always says so)
#   MODEL=NAME                   that model, by corral's usual rules (PROVIDER/ID,
#                                $OPENAI_BASE_URL, the config file), or from the
#                                local Ollama server when neither is set and it answers
#   MODEL unset, and $OPENAI_BASE_URL, $CORRAL_MODEL or the config file
#   ($XDG_CONFIG_HOME/corral/config.json) set: the model they name
#   MODEL unset, Ollama answering on localhost:11434 (1 s timeout): its first
#   model (one with "coder" in its name preferred)
#   otherwise                    the scripted transcript
#
# Returns 2, with the reason on stderr, when a model is configured but not named.
# Expects $py (a python3 with the standard library), set by the caller.

# Print the models of a local Ollama server, one a line; fail when none answers.
ollama_models() {
        # shellcheck disable=SC2154 # py is the caller's
        "$py" - <<'EOF'
import json, sys, urllib.request
try:
    with urllib.request.urlopen("http://localhost:11434/api/tags", timeout=1) as r:
        tags = json.load(r)
except Exception:
    sys.exit(1)
names = [m.get("name", "") for m in tags.get("models", []) if m.get("name")]
names.sort(key=lambda n: "coder" not in n)
print("\n".join(names))
EOF
}

choose_model() {
        transcript=$1
        config=${XDG_CONFIG_HOME:-${HOME:-/nonexistent}/.config}/corral/config.json
        configured=
        if [ -n "${OPENAI_BASE_URL:-}" ] || [ -n "${CORRAL_MODEL:-}" ] || [ -f "$config" ]; then
                configured=yes
        fi
        model_opts="--model replay:$transcript"
        model_desc="the scripted transcript $(basename "$transcript") (replayed; its code runs for real)"
        if [ "${MODEL:-}" = replay ]; then
                return 0
        elif [ -n "${MODEL:-}" ]; then
                model_opts="--model $MODEL"
                model_desc="the model $MODEL"
                if [ -z "$configured" ] && ollama_models >/dev/null 2>&1; then
                        model_opts="--provider ollama --model $MODEL"
                        model_desc="the model $MODEL on the local Ollama server"
                fi
        elif [ -n "$configured" ]; then
                # corral takes $CORRAL_MODEL, then the config file's "model".
                if [ -z "${CORRAL_MODEL:-}" ] && ! "$py" -c 'import json, sys; sys.exit(not json.load(open(sys.argv[1])).get("model"))' \
                        "$config" 2>/dev/null; then
                        echo "a model endpoint is configured (\$OPENAI_BASE_URL or $config) but no model is named:" \
                             "run with MODEL=NAME (or MODEL=replay for the scripted transcript)" >&2
                        return 2
                fi
                model_opts=
                model_desc="the configured model (${CORRAL_MODEL:-\"model\" of $config})"
        elif first=$(ollama_models 2>/dev/null | head -n 1) && [ -n "$first" ]; then
                model_opts="--provider ollama --model $first"
                model_desc="the model $first on the local Ollama server (MODEL=NAME picks another, MODEL=replay the transcript)"
        fi
        return 0
}
