/* policy.c: the rules of the review and the JSON policy that tunes them.
 *
 * The default policy is this file's rule table (docs/review.md documents it
 * rule by rule; ids are stable).  A policy file picks a level, changes the
 * severity of single rules and adds allow/deny lists:
 *   {"level":"standard","allow":{"modules":[],"calls":[],"attributes":[],
 *    "commands":[]},"deny":{...},"rules":{"PY-NET-002":"reject"}}
 * Unknown keys, rules and levels are errors: a typo must not silently
 * weaken (or strengthen) a review.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "review-internal.h"

#define R REVIEW_SEV_REJECT
#define W REVIEW_SEV_WARN
#define OFF REVIEW_SEV_OFF

static const struct review_rule rules[] = {
        { "PY-PROC-001", R, R, "starting processes is not allowed here; use Python libraries instead" },
        { "PY-PROC-002", R, R, "running shell commands is not allowed here; use Python libraries instead" },
        { "PY-PROC-003", R, R, "replacing or spawning processes is not allowed here; do the work in this Python program" },
        { "PY-PROC-004", R, R, "terminals are not allowed here (they make a shell interactive); print results instead" },
        { "PY-PROC-005", R, W, "forking is not needed here; do the work in one process" },
        { "PY-PROC-006", R, R, "forking in a loop exhausts the process limit; do the work in one process" },
        { "PY-DYN-001", R, R, "running code built at run time is not allowed here; write the code out directly" },
        { "PY-DYN-002", R, R, "importing modules by computed names is not allowed here; write a plain import statement" },
        { "PY-DYN-003", R, R,
          "looking up module attributes by computed names is not allowed here; use the attribute directly" },
        { "PY-DYN-004", R, R,
          "reaching the interpreter's builtins this way is not allowed here; call the functions directly" },
        { "PY-DYN-005", R, R, "reaching interpreter internals is not allowed here; write ordinary code" },
        { "PY-DYN-006", R, OFF,
          "the review cannot follow this value (a name, module or directory known only at run time); under this "
          "policy name modules, functions and paths directly" },
        { "PY-FFI-001", R, R, "loading native code is not allowed here; use Python and the installed libraries" },
        { "PY-FFI-002", R, R, "loading native code is not allowed here; use Python and the installed libraries" },
        { "PY-NET-001", R, R, "there is no network here; work with the files in the workspace" },
        { "PY-NET-002", R, W, "there is no network here; work with the files in the workspace" },
        { "PY-FS-001", R, R,
          "writing outside the workspace is not allowed here; write under /workspace/output/ (or /tmp) instead" },
        { "PY-FS-002", R, R,
          "deleting system directories or the whole workspace is not allowed here; delete only files your program "
          "created" },
        { "PY-POL-001", R, R, "this is denied by the policy of this run; do it another way" },
        { "PY-SYN-001", R, W, "the code has a syntax error near here; Python will report it precisely when it runs" },
        { "PY-SYN-002", R, R, "the code is nested too deeply to review; write it flatter" },
        { "SH-RM-001", R, R,
          "deleting system directories or the whole workspace is not allowed here; delete only files you created" },
        { "SH-NET-001", R, R,
          "running downloaded code is not allowed here (and there is no network); write the code yourself" },
        { "SH-NET-002", R, R, "there is no network here; work with the files in the workspace" },
        { "SH-NET-003", R, R, "there is no network here; work with the files in the workspace" },
        { "SH-NET-004", R, W, "there is no network here; work with the files in the workspace" },
        { "SH-PROC-001", R, R, "fork bombs are not allowed here" },
        { "SH-PERM-001", R, R,
          "setuid and setgid files are not allowed here; use ordinary permissions (chmod 644/755)" },
        { "SH-FS-001", R, R,
          "writing outside the workspace is not allowed here; write under /workspace/output/ (or /tmp) instead" },
        { "SH-PRIV-001", R, W, "there are no privileges to gain here; run the command without them" },
        { "SH-DYN-001", R, W,
          "running a command built at run time hides what it does; write the command out directly" },
        { "SH-DYN-002", R, OFF,
          "the review cannot follow where this goes (a directory or file known only at run time); under this policy "
          "use literal paths under /workspace" },
        { "SH-POL-001", R, R, "this command is denied by the policy of this run; do it another way" },
        { "SH-SYN-001", R, W, "the script has a syntax error near here; bash will report it precisely when it runs" },
        { "SH-SYN-002", R, R, "the script is nested too deeply to review; write it flatter" },
};

#undef R
#undef W
#undef OFF

const struct review_rule *review_rule_find(const char *id)
{
        for (size_t i = 0; i < ARRAY_SIZE(rules); i++)
                if (strcmp(rules[i].id, id) == 0)
                        return &rules[i];
        return NULL;
}

const char *review_severity_to_string(enum review_severity s)
{
        switch (s) {
        case REVIEW_SEV_OFF:
                return "off";
        case REVIEW_SEV_WARN:
                return "warn";
        case REVIEW_SEV_REJECT:
                return "reject";
        default:
                return "?";
        }
}

const char *review_level_to_string(enum review_level l)
{
        switch (l) {
        case REVIEW_LEVEL_OFF:
                return "off";
        case REVIEW_LEVEL_STANDARD:
                return "standard";
        case REVIEW_LEVEL_STRICT:
                return "strict";
        default:
                return "?";
        }
}

static int level_from_string(const char *s)
{
        if (strcmp(s, "off") == 0)
                return REVIEW_LEVEL_OFF;
        if (strcmp(s, "standard") == 0)
                return REVIEW_LEVEL_STANDARD;
        if (strcmp(s, "strict") == 0)
                return REVIEW_LEVEL_STRICT;
        return -1;
}

static void strv_free(char **v)
{
        for (size_t i = 0; v && v[i]; i++)
                free(v[i]);
        free(v);
}

static void lists_release(struct review_lists *l)
{
        strv_free(l->modules);
        strv_free(l->calls);
        strv_free(l->attributes);
        strv_free(l->commands);
}

void review_policy_free(struct review_policy *p)
{
        if (p == NULL)
                return;
        lists_release(&p->allow);
        lists_release(&p->deny);
        free(p->override);
        free(p);
}

struct review_policy *review_policy_new(enum review_level level)
{
        struct review_policy *p = calloc(1, sizeof(*p));
        if (p == NULL)
                return NULL;
        p->level = level;
        p->override = malloc(ARRAY_SIZE(rules));
        if (p->override == NULL) {
                free(p);
                return NULL;
        }
        memset(p->override, -1, ARRAY_SIZE(rules));
        return p;
}

enum review_level review_policy_level(const struct review_policy *p)
{
        return p->level;
}

/* "builtins.eval" is matched as "eval". */
static const char *plain(const char *name)
{
        return strncmp(name, "builtins.", 9) == 0 ? name + 9 : name;
}

static bool under_module(const char *name, const char *m)
{
        size_t n = strlen(m);
        return strncmp(name, m, n) == 0 && (name[n] == '\0' || name[n] == '.');
}

static bool strv_has(char **v, const char *s)
{
        for (size_t i = 0; v && v[i]; i++)
                if (strcmp(v[i], s) == 0)
                        return true;
        return false;
}

static bool listed(const struct review_lists *l, char kind, const char *name)
{
        if (name == NULL)
                return false;
        switch (kind) {
        case 'a':
                return strv_has(l->attributes, name);
        case 'c':
                return strv_has(l->commands, name);
        default:
                break;
        }
        for (size_t i = 0; l->modules && l->modules[i]; i++)
                if (under_module(plain(name), l->modules[i]))
                        return true;
        if (strv_has(l->calls, plain(name)))
                return true;
        /* An attribute on the allow list: the last part of a dotted name. */
        const char *dot = strrchr(name, '.');
        return strv_has(l->attributes, dot ? dot + 1 : name);
}

bool review_policy_denied(const struct review_policy *p, char kind, const char *name)
{
        /* Denied attributes are matched where they are accessed (kind 'a'), not again by name. */
        if (kind == 'n') {
                for (size_t i = 0; p->deny.modules && p->deny.modules[i]; i++)
                        if (under_module(plain(name), p->deny.modules[i]))
                                return true;
                return strv_has(p->deny.calls, plain(name));
        }
        return listed(&p->deny, kind, name);
}

enum review_severity review_policy_severity(const struct review_policy *p, const char *rule, const char *name)
{
        const struct review_rule *r = review_rule_find(rule);
        if (r == NULL || p->level == REVIEW_LEVEL_OFF)
                return REVIEW_SEV_OFF;
        /* Denials and syntax are not subject to the allow lists. */
        bool shell = rule[0] == 'S';
        if (strstr(rule, "-POL-") == NULL && strstr(rule, "-SYN-") == NULL && listed(&p->allow, shell ? 'c' : 'n', name))
                return REVIEW_SEV_OFF;
        signed char o = p->override[r - rules];
        if (o >= 0)
                return (enum review_severity)o;
        return p->level == REVIEW_LEVEL_STRICT ? r->strict : r->standard;
}

/* Parsing a policy file. */

static int parse_strv(json_t *arr, const char *origin, const char *what, char ***ret, corral_error **ret_err)
{
        if (!json_is_array(arr))
                return corral_usage(ret_err, "policy %s: \"%s\" must be an array of strings", origin, what);
        size_t n = json_array_size(arr), i;
        char **v = calloc(n + 1, sizeof(*v));
        if (v == NULL)
                return corral_fail(ret_err, ENOMEM, "policy %s", origin);
        json_t *e;
        json_array_foreach(arr, i, e) {
                const char *s = json_string_value(e);
                if (s == NULL || *s == '\0' || strlen(s) != json_string_length(e)) {
                        strv_free(v);
                        return corral_usage(ret_err, "policy %s: \"%s\" item %zu must be a non-empty string", origin,
                                            what, i + 1);
                }
                v[i] = strdup(s);
                if (v[i] == NULL) {
                        strv_free(v);
                        return corral_fail(ret_err, ENOMEM, "policy %s", origin);
                }
        }
        *ret = v;
        return 0;
}

static int parse_lists(json_t *obj, const char *origin, const char *key, struct review_lists *l,
                       corral_error **ret_err)
{
        if (!json_is_object(obj))
                return corral_usage(ret_err, "policy %s: \"%s\" must be an object with \"modules\", \"calls\", "
                                             "\"attributes\" and \"commands\" lists", origin, key);
        const char *k;
        json_t *v;
        char what[64];
        json_object_foreach(obj, k, v) {
                char ***dst = strcmp(k, "modules") == 0      ? &l->modules
                              : strcmp(k, "calls") == 0      ? &l->calls
                              : strcmp(k, "attributes") == 0 ? &l->attributes
                              : strcmp(k, "commands") == 0   ? &l->commands
                                                             : NULL;
                if (dst == NULL)
                        return corral_usage(ret_err, "policy %s: unknown key \"%s\" in \"%s\"; the keys are modules, "
                                                     "calls, attributes and commands", origin, k, key);
                snprintf(what, sizeof(what), "%s.%s", key, k);
                if (parse_strv(v, origin, what, dst, ret_err) < 0)
                        return -1;
        }
        return 0;
}

int review_policy_parse(const char *text, size_t len, const char *origin, struct review_policy **ret,
                        corral_error **ret_err)
{
        json_error_t jerr;
        json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
        if (root == NULL)
                return corral_usage(ret_err, "policy %s: not valid JSON: %s (line %d, column %d)", origin, jerr.text,
                                    jerr.line, jerr.column);
        int rc = -1;
        struct review_policy *p = NULL;
        if (!json_is_object(root)) {
                corral_usage(ret_err, "policy %s: must be a JSON object such as {\"level\": \"standard\"}", origin);
                goto out;
        }
        json_t *lv = json_object_get(root, "level");
        int level = REVIEW_LEVEL_STANDARD;
        if (lv) {
                level = json_is_string(lv) ? level_from_string(json_string_value(lv)) : -1;
                if (level < 0) {
                        corral_usage(ret_err, "policy %s: \"level\" must be \"strict\", \"standard\" or \"off\"",
                                     origin);
                        goto out;
                }
        }
        p = review_policy_new(level);
        if (p == NULL) {
                corral_fail(ret_err, ENOMEM, "policy %s", origin);
                goto out;
        }
        const char *k;
        json_t *v;
        json_object_foreach(root, k, v) {
                if (strcmp(k, "level") == 0)
                        continue;
                if (strcmp(k, "allow") == 0 || strcmp(k, "deny") == 0) {
                        if (parse_lists(v, origin, k, k[0] == 'a' ? &p->allow : &p->deny, ret_err) < 0)
                                goto out;
                } else if (strcmp(k, "rules") == 0) {
                        if (!json_is_object(v)) {
                                corral_usage(ret_err, "policy %s: \"rules\" must be an object such as "
                                                      "{\"PY-NET-002\": \"reject\"}", origin);
                                goto out;
                        }
                        const char *id;
                        json_t *sev;
                        json_object_foreach(v, id, sev) {
                                const struct review_rule *r = review_rule_find(id);
                                if (r == NULL) {
                                        corral_usage(ret_err, "policy %s: unknown rule \"%s\" (docs/review.md lists "
                                                              "the rules)", origin, id);
                                        goto out;
                                }
                                const char *s = json_string_value(sev);
                                int sv = s == NULL                    ? -1
                                         : strcmp(s, "reject") == 0 ? REVIEW_SEV_REJECT
                                         : strcmp(s, "warn") == 0   ? REVIEW_SEV_WARN
                                         : strcmp(s, "off") == 0    ? REVIEW_SEV_OFF
                                                                    : -1;
                                if (sv < 0) {
                                        corral_usage(ret_err, "policy %s: rule \"%s\" must be \"reject\", \"warn\" "
                                                              "or \"off\"", origin, id);
                                        goto out;
                                }
                                p->override[r - rules] = (signed char)sv;
                        }
                } else {
                        corral_usage(ret_err, "policy %s: unknown key \"%s\"; the keys are level, allow, deny and "
                                              "rules", origin, k);
                        goto out;
                }
        }
        *ret = TAKE_PTR(p);
        rc = 0;
out:
        review_policy_free(p);
        json_decref(root);
        return rc;
}

int review_policy_load(const char *spec, struct review_policy **ret, corral_error **ret_err)
{
        int level = level_from_string(spec);
        if (level >= 0) {
                *ret = review_policy_new(level);
                return *ret ? 0 : corral_fail(ret_err, ENOMEM, "policy");
        }
        errno = 0;
        cleanup_free char *text = read_whole_file_at(AT_FDCWD, spec, 1 << 20);
        if (text == NULL) {
                if (errno == EFBIG)
                        return corral_usage(ret_err, "policy '%s' is larger than 1 MiB", spec);
                if (errno == ENOENT)
                        return corral_usage(ret_err, "policy '%s': no such file (give a JSON policy file or one of "
                                                     "strict, standard, off)", spec);
                return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "cannot read policy '%s'", spec);
        }
        char origin[512];
        snprintf(origin, sizeof(origin), "'%s'", spec);
        return review_policy_parse(text, strlen(text), origin, ret, ret_err);
}

static json_t *lists_json(const struct review_lists *l)
{
        json_t *o = json_object();
        char **v[] = { l->modules, l->calls, l->attributes, l->commands };
        const char *names[] = { "modules", "calls", "attributes", "commands" };
        for (size_t i = 0; o && i < ARRAY_SIZE(v); i++) {
                if (v[i] == NULL)
                        continue;
                json_t *a = json_array();
                for (size_t j = 0; a && v[i][j]; j++)
                        json_array_append_new(a, json_string(v[i][j]));
                json_object_set_new(o, names[i], a);
        }
        return o;
}

json_t *review_policy_describe(const struct review_policy *p)
{
        json_t *o = json_pack("{s:s}", "level", review_level_to_string(p->level));
        if (o == NULL)
                return NULL;
        if (p->allow.modules || p->allow.calls || p->allow.attributes || p->allow.commands)
                json_object_set_new(o, "allow", lists_json(&p->allow));
        if (p->deny.modules || p->deny.calls || p->deny.attributes || p->deny.commands)
                json_object_set_new(o, "deny", lists_json(&p->deny));
        json_t *r = NULL;
        for (size_t i = 0; i < ARRAY_SIZE(rules); i++) {
                if (p->override[i] < 0)
                        continue;
                if (r == NULL)
                        r = json_object();
                if (r)
                        json_object_set_new(r, rules[i].id,
                                            json_string(review_severity_to_string((enum review_severity)p->override[i])));
        }
        if (r)
                json_object_set_new(o, "rules", r);
        return o;
}
