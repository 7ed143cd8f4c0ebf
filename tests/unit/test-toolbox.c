/* test-toolbox: the agent's tools called without the loop (toolbox.h), as
 * a server or MCP front end calls them: run_python keeps one session across
 * calls, run_shell and the file tools work over the same workspace, bad
 * calls become observations, and freeing the toolbox ends the session. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "../../src/agent/toolbox.h"
#include "../../src/workspace/workspace.h"
#include "harness.h"

static struct workspace *ws;
static corral_jail_config jail;
static struct agent_config cfg;
static struct toolbox *tb;

/* One call; its observation (malloc'd) and whether it was ok. */
static char *call(const char *name, const char *args, bool *ret_ok)
{
        struct tool_result r = { 0 };
        toolbox_call(tb, name, args, &r);
        char *content = r.content ? strdup(r.content) : NULL;
        if (ret_ok)
                *ret_ok = r.ok && !r.fatal;
        if (r.fatal)
                printf("# fatal: %s\n", r.err ? r.err->msg : "?");
        tool_result_release(&r);
        return content;
}

TEST(python_keeps_its_state_across_calls)
{
        bool ok = false;
        char *a = call("run_python", "{\"code\": \"x = 6 * 7\\nprint('set', x)\"}", &ok);
        CHECK(ok && a && strstr(a, "set 42"));
        free(a);
        char *b = call("run_python", "{\"code\": \"x + 1\"}", &ok);
        CHECK(ok && b && strstr(b, "43"));
        free(b);
}

TEST(shell_and_file_tools_share_the_workspace)
{
        bool ok = false;
        char *w = call("write_file", "{\"path\": \"output/note.txt\", \"content\": \"from the host\"}", &ok);
        CHECK(ok && w && strstr(w, "wrote 13 bytes"));
        free(w);
        char *s = call("run_shell", "{\"command\": \"cat output/note.txt; echo ' and the jail' > output/more.txt\"}",
                       &ok);
        CHECK(ok && s && strstr(s, "from the host"));
        free(s);
        char *r = call("read_file", "{\"path\": \"output/more.txt\"}", &ok);
        CHECK(ok && r && strstr(r, "and the jail"));
        free(r);
        char *l = call("list_files", NULL, &ok);
        CHECK(ok && l && strstr(l, "output/more.txt") && strstr(l, "output/note.txt"));
        free(l);
        /* input/ is read-only for both. */
        char *ro = call("write_file", "{\"path\": \"input/x\", \"content\": \"no\"}", &ok);
        CHECK(!ok && ro && strstr(ro, "error"));
        free(ro);
}

TEST(bad_calls_are_observations)
{
        bool ok = true;
        char *u = call("rm_rf", "{}", &ok);
        CHECK(!ok && u && strstr(u, "there is no tool named 'rm_rf'"));
        free(u);
        char *j = call("run_python", "{not json", &ok);
        CHECK(!ok && j && strstr(j, "not valid JSON"));
        free(j);
        char *m = call("run_python", "{}", &ok);
        CHECK(!ok && m && strstr(m, "needs the argument \"code\""));
        free(m);
        char *e = call("run_python", "{\"code\": \"1/0\"}", &ok);
        CHECK(!ok && e && strstr(e, "ZeroDivisionError"));
        free(e);
        struct tool_result r = { 0 };
        toolbox_call(tb, "final_answer", "{\"answer\": \"done\"}", &r);
        CHECK(r.ok && r.final_answer && strcmp(r.final_answer, "done") == 0);
        tool_result_release(&r);
}

TEST(schemas_name_every_tool)
{
        json_t *s = toolbox_schemas();
        CHECK(json_is_array(s) && json_array_size(s) == 6);
        size_t i;
        json_t *t;
        json_array_foreach(s, i, t) {
                const char *name = json_string_value(json_object_get(json_object_get(t, "function"), "name"));
                CHECK(name && strstr(toolbox_names(), name));
        }
        json_decref(s);
}

int main(void)
{
        corral_error *err = NULL;
        if (workspace_open(NULL, &ws, &err) < 0) {
                printf("Bail out! no workspace: %s\n", err ? err->msg : "?");
                return 1;
        }
        corral_jail_config_init(&jail);
        agent_config_init(&cfg);
        cfg.ws = ws;
        cfg.jail = &jail;
        if (toolbox_new(&cfg, &tb, &err) < 0) {
                printf("Bail out! %s\n", err ? err->msg : "no toolbox");
                return 1;
        }
        RUN(python_keeps_its_state_across_calls);
        RUN(shell_and_file_tools_share_the_workspace);
        RUN(bad_calls_are_observations);
        RUN(schemas_name_every_tool);
        toolbox_free(tb);
        workspace_close(ws, true);
        corral_jail_config_release(&jail);
        return DONE();
}
