/* cli.h: the subcommands of the corral CLI.
 *
 * To add one: write src/cli/<name>.c with `int cmd_<name>(int argc, char **argv)`,
 * declare it here, add it to the table in main.c and to the help text, and
 * document its options and exit statuses in the README.  Only the CLI prints;
 * the library reports through corral_error.
 */
#ifndef CORRAL_CLI_H
#define CORRAL_CLI_H

#include <corral/error.h>

/* The CLI-wide exit statuses (README, `corral --help`). */
enum {
        EXIT_OK = 0,
        EXIT_USAGE_SUBCOMMAND = 2, /* usage errors of subcommands that do not pass a status through */
        EXIT_TIMEOUT = 124,        /* the wall-clock limit stopped the program */
        EXIT_CORRAL = 125,         /* corral failed: usage error, or the jail could not be set up */
        EXIT_NOT_EXECUTABLE = 126,
        EXIT_NOT_FOUND = 127,
        /* 128+N: killed by signal N (137 also for the memory limit, 159 for a blocked system call) */
};

int cmd_exec(int argc, char **argv);
int cmd_doctor(int argc, char **argv);

/* Print "corral <cmd>: <message>" to stderr. */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_error_obj(const char *cmd, const corral_error *err);

#endif
