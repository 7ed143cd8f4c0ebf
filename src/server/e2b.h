/* e2b.h: E2B's protocol over corral serve's sandboxes (docs/e2b.md), so
 * that programs written for E2B's SDKs run unchanged against a local
 * server: its control plane (create, kill, timeout, info, list), the code
 * interpreter's /execute and /contexts (e2b.c), and envd's files and
 * Connect RPCs for the file system and processes (e2b-envd.c).
 *
 * An E2B sandbox is a corral sandbox: one jail, its Python contexts the
 * session's contexts, its commands background bash commands in the same
 * jail, /home/user its workspace.  The SDK names the sandbox of an
 * in-sandbox call only in the E2b-Sandbox-Id header, so calls are routed
 * on it; they are authorised by the sandbox's own access token (returned
 * by create), the control plane by X-API-KEY, one of the server's tokens.
 * Internal to src/server/. */
#ifndef CORRAL_SERVER_E2B_H
#define CORRAL_SERVER_E2B_H

#include "server-internal.h"

/* What E2B's SDK is told the sandbox's daemon is: below 0.5.7 it uploads
 * files as multipart only (never gzip or raw streams). */
#define E2B_ENVD_VERSION "0.5.6"
/* The workspace's name in E2B's world. */
#define E2B_HOME "/home/user"

struct e2b_context {
        struct e2b_context *next;
        char id[37];             /* a UUID, as E2B's */
        char name[24];           /* the session's context ("e2b-N") */
        bool bash;               /* language bash: its steps are bash steps */
        char *cwd;
        unsigned count;          /* execution_count */
};

/* A command started with Process.Start, for List and Connect. */
struct e2b_command {
        struct e2b_command *next;
        long pid;
        json_t *config;          /* {"cmd", "args", "envs", "cwd"} as asked */
        char *tag;
};

struct e2b_sandbox {
        char token[65];          /* envdAccessToken and trafficAccessToken */
        char template_id[65];
        json_t *env;             /* envVars: every step's and command's */
        double started, end_at;  /* CLOCK_REALTIME s */
        pthread_mutex_t lock;    /* the fields below */
        unsigned count;          /* the default context's execution_count */
        unsigned next_context;
        struct e2b_context *contexts;
        struct e2b_command *commands;
};
void e2b_sandbox_free(struct e2b_sandbox *e);

/* ---- the gate (e2b.c) ---- */
/* The request is E2B's: a control-plane path, or the E2b-Sandbox-Id header. */
bool e2b_claims(struct request *rq, const char *path);
/* Its principal: from X-API-KEY, or (an in-sandbox call) from the named
 * sandbox's access token, the sandbox then held in rq->e2b_sb; -1 when
 * neither is right, *ret_why saying what was wrong. */
int e2b_principal(struct request *rq, const char *path, const char **ret_why);
enum MHD_Result route_e2b(struct request *rq, const char *method, const char *path);

/* ---- shared by e2b.c and e2b-envd.c ---- */
/* An E2B path ("/home/user/a", "/workspace/a" or relative to /home/user)
 * as a path in the workspace ("a"); a usage error for any other place. */
int e2b_path(const char *path, char **ret_rel, corral_error **ret_err);
/* A workspace path as E2B shows it ("/home/user/a"). */
char *e2b_shown_path(const char *rel);
/* text as one bash word ('...', quotes escaped); malloc'd. */
char *e2b_shell_word(const char *text);
/* The variables of a step or command: the sandbox's envVars, HOME, then
 * extra's (may be NULL).  A new object. */
json_t *e2b_env(struct sandbox *sb, json_t *extra);
/* A bash step, waited for: 0 with its result, or -1 with err. */
int e2b_bash(struct server *s, struct sandbox *sb, const char *code, json_t *env, bool background, json_t **ret_result,
             corral_error **ret_err);

/* ---- envd (e2b-envd.c) ---- */
/* GET and POST /files. */
enum MHD_Result e2b_files(struct request *rq, const char *method, struct sandbox *sb);
/* POST /filesystem.Filesystem/M and /process.Process/M. */
enum MHD_Result e2b_connect(struct request *rq, const char *path, struct sandbox *sb);
/* A POST /files: the body streamed into the workspace (1), not one (0),
 * or answered already (-1). */
int e2b_upload_begin(struct request *rq, const char *method, const char *path);
void e2b_upload_take(struct request *rq, const char *data, size_t len);
void e2b_upload_free(struct request *rq);

#endif
