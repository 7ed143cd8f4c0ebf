/* main.c: the corral command: dispatch to one subcommand. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/util.h"

#include "../lib/termsafe.h"
#include "cli.h"

#ifndef CORRAL_VERSION
#define CORRAL_VERSION "0.1.0"
#endif

static const struct {
        const char *name;
        int (*fn)(int argc, char **argv);
        const char *summary;
} commands[] = {
        { "exec", cmd_exec, "run a file, code or program in a jail" },
        { "run", cmd_run, "give an agent a task: a model writes code, corral runs it in jails" },
        { "runs", cmd_runs, "list the recent runs of corral run (their IDs, status and task)" },
        { "trace", cmd_trace, "show or export the trace of a run (a file, a run ID or last)" },
        { "session", cmd_session, "start, use and stop persistent Python sessions" },
        { "workspace", cmd_workspace, "list or extract a workspace archive (tar)" },
        { "review", cmd_review, "check code against the safety review's policy, without running it" },
        { "serve", cmd_serve, "serve sandboxes over HTTP (docs/api.md)" },
        { "mcp", cmd_mcp, "be the sandbox of an MCP client, on stdin and stdout (docs/mcp.md)" },
        { "mcp-jail", cmd_mcp_jail, "run a third-party stdio MCP server inside a jail (docs/mcp.md)" },
        { "doctor", cmd_doctor, "show which isolation and limit mechanisms this host offers" },
};

/* Every message goes through term_sanitize(): it may quote an archive's
 * entry name, a path in a workspace or a model's error text. */
static void print_message(const char *cmd, const char *fmt, va_list ap, const char *tail) CORRAL_PRINTF(2, 0);
static void print_message(const char *cmd, const char *fmt, va_list ap, const char *tail)
{
        char *msg = NULL;
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        cleanup_free char *clean = msg ? term_sanitize(msg, strlen(msg), NULL) : NULL;
        free(msg);
        fprintf(stderr, "corral %s: %s%s\n", cmd, clean ? clean : "(out of memory)", tail);
}

void cli_error(const char *cmd, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        print_message(cmd, fmt, ap, "");
        va_end(ap);
}

char *cli_read_code(const char *path, size_t *ret_len, corral_error **err)
{
        enum { MAX = 16 << 20 };
        bool std_in = strcmp(path, "-") == 0;
        cleanup_close int fd = std_in ? dup(STDIN_FILENO) : open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0) {
                corral_make_error(err, CORRAL_ERR_USAGE, errno, "cannot open '%s'", path);
                return NULL;
        }
        if (!std_in && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
                corral_usage(err, "'%s' is not a regular file", path);
                return NULL;
        }
        cleanup_free char *buf = malloc(MAX + 1);
        size_t got = 0;
        ssize_t n = 1;
        while (buf && got <= MAX && n > 0) {
                n = read(fd, buf + got, MAX + 1 - got);
                if (n < 0 && errno == EINTR)
                        n = 1;
                else if (n > 0)
                        got += (size_t)n;
        }
        if (buf == NULL || n < 0) {
                corral_make_error(err, CORRAL_ERR_USAGE, buf ? errno : ENOMEM, "cannot read '%s'", path);
                return NULL;
        }
        if (got > MAX) {
                corral_usage(err, "'%s' is larger than 16 MiB", path);
                return NULL;
        }
        buf[got] = '\0';
        if (ret_len)
                *ret_len = got;
        return TAKE_PTR(buf);
}

int cli_print_json(FILE *f, const json_t *j, bool indent)
{
        size_t flags = JSON_ENCODE_ANY | JSON_REAL_PRECISION(15) | (indent ? JSON_INDENT(2) | JSON_PRESERVE_ORDER
                                                                           : JSON_COMPACT);
        char *text = json_dumps(j ? j : json_null(), flags);
        if (text == NULL)
                return -1;
        fprintf(f, "%s\n", text);
        free(text);
        return 0;
}

int cli_usage_error(const char *cmd, int status, const char *fmt, ...)
{
        char tail[64];
        snprintf(tail, sizeof(tail), " (see 'corral %s --help')", cmd);
        va_list ap;
        va_start(ap, fmt);
        print_message(cmd, fmt, ap, tail);
        va_end(ap);
        return status;
}

void cli_print_untrusted(FILE *f, const char *s, size_t len)
{
        if (!isatty(fileno(f))) {
                fwrite(s, 1, len, f);
                return;
        }
        size_t n = 0;
        cleanup_free char *clean = term_sanitize(s, len, &n);
        if (clean)
                fwrite(clean, 1, n, f);
}

void cli_output_init(struct cli_output *o, int fd)
{
        *o = (struct cli_output){ .fd = fd, .tty = isatty(fd) == 1 };
}

void cli_output_write(struct cli_output *o, const char *data, size_t len)
{
        if (o->tty)
                (void)term_filter_write(&o->filter, o->fd, data, len);
        else
                (void)write_all(o->fd, data, len);
}

void cli_output_end(struct cli_output *o)
{
        if (o->tty)
                (void)term_filter_flush(&o->filter, o->fd);
}

void cli_error_obj(const char *cmd, const corral_error *err)
{
        cleanup_free char *text = err ? cli_field_text(err->msg, err->field) : NULL;
        cli_error(cmd, "%s", text ? text : err ? err->msg : "unknown error");
}

/* `corral completion bash|zsh`: a completion script built from the table
 * above; each command's options come from its own --help when completing,
 * so the script never goes stale. */
static int cmd_completion(int argc, char **argv)
{
        if (argc != 2 || (strcmp(argv[1], "bash") != 0 && strcmp(argv[1], "zsh") != 0)) {
                fputs("usage: corral completion bash|zsh\n"
                      "  bash: eval \"$(corral completion bash)\" (or save it in\n"
                      "        ~/.local/share/bash-completion/completions/corral)\n"
                      "  zsh:  eval \"$(corral completion zsh)\"\n",
                      argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) ? stdout : stderr);
                return argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)
                               ? EXIT_OK
                               : EXIT_USAGE_SUBCOMMAND;
        }
        if (strcmp(argv[1], "zsh") == 0)
                puts("autoload -U +X bashcompinit && bashcompinit");
        fputs("_corral() {\n"
              "    local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]} words\n"
              "    if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
              "        words=\"",
              stdout);
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                printf("%s ", commands[i].name);
        fputs("completion --help --version\"\n"
              "    elif [[ $cur == -* ]]; then\n"
              "        words=$(\"${COMP_WORDS[0]}\" \"$cmd\" --help 2>/dev/null | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)\n"
              "    elif [ \"$COMP_CWORD\" -eq 2 ] && [ \"$cmd\" = completion ]; then\n"
              "        words=\"bash zsh\"\n"
              "    elif [ \"$COMP_CWORD\" -eq 2 ]; then\n"
              "        words=$(\"${COMP_WORDS[0]}\" \"$cmd\" --help 2>/dev/null | grep -oE \"corral $cmd [a-z]+\" | "
              "awk '{print $3}' | sort -u)\n"
              "    fi\n"
              "    if [ -n \"$words\" ]; then\n"
              "        COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
              "    else\n"
              "        COMPREPLY=($(compgen -f -- \"$cur\"))\n"
              "    fi\n"
              "}\n"
              "complete -o filenames -F _corral corral\n",
              stdout);
        return EXIT_OK;
}

static void usage(FILE *f)
{
        fprintf(f, "usage: corral COMMAND [OPTIONS] ...\n\ncommands:\n");
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
        fprintf(f, "\nRun 'corral COMMAND --help' for a command's options; 'corral --version' prints the version;\n"
                   "'corral completion bash|zsh' prints a shell completion script; 'man corral' has it all.\n\n"
                   "exit statuses (all commands):\n"
                   "  0        success (corral run: the agent answered)\n"
                   "  1        corral run: the agent gave up (iterations, token or wall budget)\n"
                   "           corral trace: the trace could not be read or the export written\n"
                   "           corral doctor: corral cannot run code on this host\n"
                   "           corral session start --from: the archive was refused\n"
                   "           corral workspace: the archive was refused or could not be read\n"
                   "           corral review: the code is rejected\n"
                   "  1-123    corral exec: the program's own exit status; corral mcp-jail: the server's\n"
                   "  123      corral exec --review: the safety review rejected the code; nothing ran\n"
                   "  2        usage error of a command that does not pass a status through\n"
                   "  3        corral run: the model could not be reached or refused\n"
                   "  124      the wall-clock limit stopped the program\n"
                   "  125      corral failed: a usage error of corral exec, or a jail could not be set up\n"
                   "  126      the program is not executable\n"
                   "  127      the program was not found\n"
                   "  128+N    the program was killed by signal N; 137 also when the memory\n"
                   "           limit stopped it, 159 for a blocked system call; corral run: 130\n"
                   "           interrupted (128+N for signal N)\n");
}

int main(int argc, char **argv)
{
        /* jansson's hash seed from one system call, not its own open, read
         * and close of /dev/urandom (on every corral exec's path). */
        size_t seed;
        if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == (ssize_t)sizeof(seed))
                json_object_seed(seed);
        if (argc < 2) {
                usage(stderr);
                return EXIT_USAGE_SUBCOMMAND;
        }
        const char *cmd = argv[1];
        if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
                usage(stdout);
                return EXIT_OK;
        }
        if (strcmp(cmd, "--version") == 0) {
                printf("corral %s\n", CORRAL_VERSION);
                return EXIT_OK;
        }
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                if (strcmp(cmd, commands[i].name) == 0)
                        return commands[i].fn(argc - 1, argv + 1);
        if (strcmp(cmd, "completion") == 0)
                return cmd_completion(argc - 1, argv + 1);
        fprintf(stderr, "corral: unknown command '%s' (see 'corral --help')\n", cmd);
        return EXIT_USAGE_SUBCOMMAND;
}
