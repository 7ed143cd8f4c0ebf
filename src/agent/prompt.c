/* prompt.c: the system prompt: what the model has and how to use it.
 *
 * It tells the model the workspace layout, the staged inputs (names, sizes,
 * first lines of text files), the runtime (the Python version and the data
 * libraries, read from the installed packages' metadata so no interpreter
 * has to start), the limits of each execution, that there is no network,
 * and how to finish.  The text protocol variant explains fenced blocks in
 * place of tools.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent-internal.h"
#include "tdd.h"

/* The version of package `name` from a "<name>-<version>.{dist,egg}-info"
 * entry in one of Debian's dist-packages directories. */
static char *package_version(const char *sysroot, const char *name)
{
        static const char *const dirs[] = { "/usr/lib/python3/dist-packages", "/usr/local/lib/python3/dist-packages" };
        size_t n = strlen(name);
        for (size_t d = 0; d < ARRAY_SIZE(dirs); d++) {
                char path[4096];
                snprintf(path, sizeof(path), "%s%s", sysroot ? sysroot : "", dirs[d]);
                DIR *dir = opendir(path);
                if (dir == NULL)
                        continue;
                struct dirent *e;
                char *found = NULL;
                while ((e = readdir(dir)) != NULL && found == NULL) {
                        if (strncasecmp(e->d_name, name, n) != 0 || e->d_name[n] != '-')
                                continue;
                        const char *v = e->d_name + n + 1;
                        const char *end = strstr(v, ".dist-info");
                        if (end == NULL)
                                end = strstr(v, ".egg-info");
                        if (end == NULL)
                                continue;
                        /* "1.5.3" of "pandas-1.5.3.egg-info" or "numpy-1.24.2-py3.11.egg-info" */
                        size_t len = strcspn(v, "-");
                        if (v + len > end)
                                len = (size_t)(end - v);
                        found = strndup(v, len);
                }
                closedir(dir);
                if (found)
                        return found;
        }
        return NULL;
}

char *agent_runtime_description(const char *sysroot)
{
        char path[4096], target[64] = "";
        snprintf(path, sizeof(path), "%s/usr/bin/python3", sysroot ? sysroot : "");
        ssize_t n = readlink(path, target, sizeof(target) - 1);
        if (n > 0)
                target[n] = '\0';
        const char *pyver = strncmp(target, "python", 6) == 0 ? target + 6 : "3";
        static const char *const libs[] = { "numpy", "pandas", "matplotlib", "scipy" };
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);
        if (f == NULL)
                return NULL;
        fprintf(f, "Python %s", pyver);
        int shown = 0;
        for (size_t i = 0; i < ARRAY_SIZE(libs); i++) {
                cleanup_free char *v = package_version(sysroot, libs[i]);
                if (v)
                        fprintf(f, "%s%s %s", shown++ ? ", " : " with ", libs[i], v);
        }
        fclose(f);
        return out;
}

static void put_limits(FILE *f, const corral_jail_config *j)
{
        fprintf(f, "Limits of each run: %.0f s wall time, %" PRIu64 " MiB memory, %" PRIu64 " processes, "
                   "%" PRIu64 " MiB per file written, output beyond %" PRIu64 " KiB per stream is dropped.\n",
                j->timeout_s, j->memory_bytes >> 20, j->pids, j->disk_bytes >> 20, j->output_limit >> 10);
        if (j->net == CORRAL_NET_ALLOW) {
                /* The names are the user's own (--net allow=), not the model's. */
                fprintf(f, "The network reaches only these hosts, through a proxy the environment names "
                           "(HTTP_PROXY, HTTPS_PROXY; pip is set up for it and installs for the user, importable in "
                           "the next step): ");
                for (size_t i = 0; j->net_allow && j->net_allow[i]; i++)
                        fprintf(f, "%s%s", i ? ", " : "", j->net_allow[i]);
                fprintf(f, ". Any other host is refused (HTTP 403 from the proxy); DNS does not resolve inside.\n");
        } else if (j->net != CORRAL_NET_HOST)
                fprintf(f, "There is no network: do not pip install, download or call web APIs; use what is "
                           "installed.%s\n",
                        j->net == CORRAL_NET_NONE ? " A server your own code starts on 127.0.0.1 is reachable from it."
                                                  : "");
}

char *agent_system_prompt(const struct agent_config *cfg, bool text_protocol)
{
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);
        if (f == NULL)
                return NULL;
        cleanup_free char *runtime = agent_runtime_description(cfg->jail->rootfs);
        cleanup_free char *inputs = workspace_describe_inputs(cfg->ws, 50, 5);

        fprintf(f, "You are a careful data analyst and programmer working in a Linux sandbox. You solve the user's "
                   "task by writing code, running it, reading the result and fixing what fails, then you give a "
                   "concise final answer.\n\n");
        fprintf(f, "# Workspace\n"
                   "/workspace is the working directory of every run. Relative paths start there.\n"
                   "- /workspace/input/ holds the user's files (read-only):\n");
        if (inputs && *inputs) {
                for (char *line = inputs, *next; line && *line; line = next) {
                        next = strchr(line, '\n');
                        if (next)
                                *next++ = '\0';
                        fprintf(f, "    %s\n", line);
                }
        } else {
                fprintf(f, "    (no input files)\n");
        }
        if (cfg->workspace_note && *cfg->workspace_note)
                fprintf(f, "- %s\n", cfg->workspace_note);
        fprintf(f, "- Write every result the user should get (CSV, PNG plots, a markdown report) to "
                   "/workspace/output/.\n");
        if (cfg->stateless)
                fprintf(f, "- Files persist between runs; nothing else does. Each run starts a fresh process, so "
                           "load the data again in every run.\n\n");
        else
                fprintf(f, "- Python runs share one interpreter: variables, imports and loaded data persist from "
                           "one Python run to the next (shell commands start fresh processes). The value of a "
                           "final expression is shown, and open matplotlib figures are saved to "
                           "/workspace/output/figures/ by themselves. If a result says the interpreter was lost, "
                           "import and load again.\n\n");
        fprintf(f, "# Runtime\n%s; bash with the usual command-line tools.\n"
                   "matplotlib uses the Agg backend: save figures with plt.savefig(...), never plt.show().\n",
                runtime ? runtime : "Python 3");
        put_limits(f, cfg->jail);
        if (text_protocol) {
                fprintf(f, "\n# How to work\n"
                           "To run code, reply with exactly one fenced code block: ```python ... ``` for Python or "
                           "```bash ... ``` for a shell command. You will get its status, stdout, stderr and the "
                           "files it changed.\n"
                           "Work in small steps: look at the data first (columns, types, a few rows), then compute.\n"
                           "When the task is done, reply without any code block: that reply is your final answer. "
                           "Give the key numbers and name the files you wrote.\n");
        } else {
                fprintf(f, "\n# How to work\n"
                           "Use the tools: run_python to run Python code, run_shell for a shell command, read_file, "
                           "write_file and list_files for files in /workspace. Each run returns its status, stdout, "
                           "stderr and the files it changed.\n"
                           "Work in small steps: look at the data first (columns, types, a few rows), then compute. "
                           "When a run fails, read the error and fix the cause; do not repeat code that failed.\n"
                           "When the task is done, call final_answer (or reply with plain text) with a concise "
                           "answer: the key numbers and the files you wrote.\n");
                if (cfg->tools && cfg->tools->prompt)
                        fprintf(f, "\n# More tools\n%s", cfg->tools->prompt);
        }
        if (cfg->mode == AGENT_MODE_TDD)
                tdd_put_prompt(f, text_protocol);
        fclose(f);
        return out;
}
