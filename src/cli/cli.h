/* cli.h: the subcommands of the corral CLI.
 *
 * To add one: write src/cli/<name>.c with `int cmd_<name>(int argc, char **argv)`,
 * declare it here, add it to the table in main.c and to the help text, and
 * document its options and exit statuses in the README.  Only the CLI prints;
 * the library reports through corral_error.
 *
 * Threads: none of this is thread-safe: the CLI calls it from its main thread
 * (and cancel.c's signal handler only writes to a pipe and stderr).
 *
 * Internal to src/cli/.
 */
#ifndef CORRAL_CLI_H
#define CORRAL_CLI_H

#include <getopt.h>
#include <stdbool.h>

#include <stdio.h>

#include <corral/error.h>
#include <corral/jail.h>
#include <jansson.h>

#include "../lib/termsafe.h"

/* The CLI-wide exit statuses (README, `corral --help`). */
enum {
        EXIT_OK = 0,
        EXIT_USAGE_SUBCOMMAND = 2, /* usage errors of subcommands that do not pass a status through */
        EXIT_REVIEW_REJECTED = 123, /* corral exec --review: the safety review rejected the code; nothing ran */
        EXIT_TIMEOUT = 124,        /* the wall-clock limit stopped the program */
        EXIT_CORRAL = 125,         /* corral failed: usage error, or the jail could not be set up */
        EXIT_NOT_EXECUTABLE = 126,
        EXIT_NOT_FOUND = 127,
        /* 128+N: killed by signal N (137 also for the memory limit, 159 for a blocked system call) */
};

/* `corral run` (same table: 2 is its usage status, 125 a jail that could not be set up). */
enum {
        EXIT_RUN_GAVE_UP = 1,     /* iterations, token or wall budget used up without an answer */
        EXIT_RUN_MODEL = 3,       /* the model could not be reached or refused (connection, 401, 404) */
        EXIT_RUN_INTERRUPTED = 130,
};

/* The jail options shared by exec and run (jail-options.c).  Option values
 * 256-299 are theirs; a command's own long options use 300 and up. */
enum {
        OPT_CPU_TIME = 256,
        OPT_PIDS,
        OPT_CPUS,
        OPT_NOFILE,
        OPT_DISK,
        OPT_OUTPUT_LIMIT,
        OPT_NET,
        OPT_RO_BIND,
        OPT_BIND,
        OPT_ROOTFS,
        OPT_PROFILE,
        OPT_REQUIRE_CGROUPS,
        OPT_UID_RANGE,
        OPT_RESOLVE,
        OPT_NET_BYTES,
        OPT_NET_CONNS,
        OPT_SECRET,
        OPT_UPSTREAM_CA,
};
extern const struct option jail_long_options[];
/* jail_long_options followed by extra (both end with a zeroed entry); free(). */
struct option *cli_merge_options(const struct option *extra);
/* Apply one jail option: 1 when it was one, 0 when not, -1 on error. */
int jail_option_apply(int c, const char *arg, corral_jail_config *cfg, corral_error **err);
/* Two getopt_long passes: --profile first, so explicit options override it,
 * then every option: the jail's onto cfg, the rest through apply.  Returns 1
 * for -h/--help, 0 when parsed, -1 with a usage error. */
int jail_options_parse(int argc, char **argv, const char *shortopts, const struct option *longopts, const char *cmd,
                       corral_jail_config *cfg, int (*apply)(int c, const char *arg, void *userdata, corral_error **err),
                       void *userdata, corral_error **err);

/* The code in the regular file path ("-": standard input), at most 16 MiB,
 * NUL-terminated (its length in *ret_len, optional); NULL with a usage
 * error that names the file. */
char *cli_read_code(const char *path, size_t *ret_len, corral_error **err);

/* j (NULL: null) as one line, or indented in its key order, and a newline
 * on f; -1 when it cannot be formatted (out of memory). */
int cli_print_json(FILE *f, const json_t *j, bool indent);

/* SIGINT, SIGTERM and SIGHUP write to an eventfd (returned) that jails and
 * model requests watch as their cancel fd; SIGPIPE is ignored.
 * cli_cancel_signal() is the signal that arrived, or 0. */
int cli_catch_signals(void);
int cli_cancel_signal(void);
/* What an immediate exit on a second signal leaves behind (a temporary
 * workspace), for its message; NULL: nothing. */
void cli_cancel_leaves(const char *what);
/* "SIGINT (Ctrl-C)", "SIGTERM", ...: for messages. */
const char *cli_signal_name(int sig);

/* corral run --approve on the terminal (approve.c): a sync subscriber of
 * the run's events that asks about each approval_request on stdin. */
struct run;
struct cli_approver {
        struct run *run;
        bool color;
};
void cli_approve_event(void *userdata, const json_t *event);

int cmd_exec(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_mcp(int argc, char **argv);
int cmd_mcp_jail(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_session(int argc, char **argv);
int cmd_workspace(int argc, char **argv);
int cmd_review(int argc, char **argv);
int cmd_runs(int argc, char **argv);

/* A trace argument: a file, else a run's ID or "last" (the newest run with
 * a trace) as that run's trace file in cli_runs_dir(); malloc'd, or NULL
 * with *err (no run with a trace: CORRAL_ERR_USAGE). */
char *cli_trace_path(const char *arg, corral_error **err);

/* Print "corral <cmd>: <message>" to stderr, the message made inert for a
 * terminal (term_sanitize): messages quote paths, entry names and errors
 * that a jail, an archive or a model chose. */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* cli_error() of err's message and the flags of its fields (cli_field_text). */
void cli_error_obj(const char *cmd, const corral_error *err);
/* msg followed by " (--flag, ...)": the flags that set the config fields
 * named in fields (corral_error.field: comma-separated, may be NULL), those
 * msg does not name already; fields without a flag are left out (errors.c).
 * malloc'd; NULL when out of memory. */
char *cli_field_text(const char *msg, const char *fields);
/* "corral CMD: MESSAGE (see 'corral CMD --help')" on stderr; returns status. */
int cli_usage_error(const char *cmd, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Bytes that came from a model, a jail or an archive, printed as text: made
 * inert (term_sanitize) when f is a terminal, exact when it is a file or a
 * pipe. */
void cli_print_untrusted(FILE *f, const char *s, size_t len);
/* A program's output streamed to fd: through a term_filter when fd is a
 * terminal (colours and progress bars kept, every other control made inert),
 * exact otherwise. */
struct cli_output {
        int fd;
        bool tty;
        struct term_filter filter;
};
void cli_output_init(struct cli_output *o, int fd);
void cli_output_write(struct cli_output *o, const char *data, size_t len);
void cli_output_end(struct cli_output *o);

#endif
