/* test-records.c: the runs' records read back (src/agent/records.h) over a
 * temporary directory of fake runs: which are listed and in what order, a
 * run's summary from its trace's first and last events, and the trace an
 * ID or "last" resolves to. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/agent/records.h"
#include "harness.h"

static char tmpdir[256];

static void make_run(const char *id, const char *trace)
{
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", tmpdir, id);
        if (mkdir(path, 0700) < 0)
                abort();
        if (trace == NULL)
                return;
        snprintf(path, sizeof(path), "%s/%s/trace.jsonl", tmpdir, id);
        FILE *f = fopen(path, "w");
        if (f == NULL)
                abort();
        fputs(trace, f);
        fclose(f);
}

TEST(run_ids)
{
        CHECK(records_is_run_id("20261129-164512-3fa9c1"));
        CHECK(!records_is_run_id("20261129-164512-3FA9C1"));
        CHECK(!records_is_run_id("20261129-164512-3fa9c"));
        CHECK(!records_is_run_id("2026112x-164512-3fa9c1"));
        CHECK(!records_is_run_id("last"));
        CHECK(!records_is_run_id(""));
}

TEST(empty_or_missing_directory)
{
        corral_error *err = NULL;
        json_t *rows = records_list(tmpdir, -1, &err);
        CHECK(json_is_array(rows) && json_array_size(rows) == 0);
        json_decref(rows);
        char missing[300];
        snprintf(missing, sizeof(missing), "%s/none", tmpdir);
        rows = records_list(missing, -1, &err);
        CHECK(json_is_array(rows) && json_array_size(rows) == 0);
        json_decref(rows);
        char *p = records_trace_path(tmpdir, "last", &err);
        CHECK(p == NULL && err && err->kind == CORRAL_ERR_USAGE && strstr(err->msg, "no run with a trace"));
        corral_error_free(err);
}

TEST(listing)
{
        make_run("20260101-101010-aaaaaa",
                 "{\"type\":\"run_start\",\"ts\":\"2026-01-01T10:10:10.123Z\",\"task\":\"sum\",\"model\":\"m1\","
                 "\"cwd\":\"/x\",\"workspace\":\"/w\"}\n"
                 "{\"type\":\"step\"}\n"
                 "{\"type\":\"run_end\",\"status\":\"answered\",\"iterations\":3,\"output_dir\":\"/o\","
                 "\"artifacts\":[{\"path\":\"output/a.csv\"},{\"kind\":\"no path\"},{\"path\":\"output/b.png\"}]}\n");
        make_run("20260102-101010-bbbbbb", "{\"type\":\"run_start\",\"task\":\"killed\",\"model\":7}\n"
                                           "{\"type\":\"step\"}\n");
        make_run("20260103-101010-cccccc", NULL); /* no trace */
        make_run("not-a-run", "{}\n");

        corral_error *err = NULL;
        json_t *rows = records_list(tmpdir, -1, &err);
        CHECK_INT(json_array_size(rows), 3);
        CHECK_STR(json_string_value(json_object_get(json_array_get(rows, 0), "run_id")), "20260103-101010-cccccc");
        CHECK_INT(json_object_size(json_array_get(rows, 0)), 1);

        json_t *b = json_array_get(rows, 1);
        CHECK_STR(json_string_value(json_object_get(b, "status")), "unfinished");
        CHECK_STR(json_string_value(json_object_get(b, "task")), "killed");
        CHECK(json_object_get(b, "model") == NULL); /* not a string */
        CHECK(json_object_get(b, "artifacts") == NULL);

        json_t *a = json_array_get(rows, 2);
        CHECK_STR(json_string_value(json_object_get(a, "started")), "2026-01-01T10:10:10.123Z");
        CHECK_STR(json_string_value(json_object_get(a, "status")), "answered");
        CHECK_INT(json_integer_value(json_object_get(a, "iterations")), 3);
        CHECK_STR(json_string_value(json_object_get(a, "cwd")), "/x");
        CHECK_STR(json_string_value(json_object_get(a, "output_dir")), "/o");
        json_t *arts = json_object_get(a, "artifacts");
        CHECK_INT(json_array_size(arts), 2);
        CHECK_STR(json_string_value(json_array_get(arts, 1)), "output/b.png");
        const char *trace = json_string_value(json_object_get(a, "trace"));
        CHECK(trace && strncmp(trace, tmpdir, strlen(tmpdir)) == 0 &&
              strcmp(trace + strlen(tmpdir), "/20260101-101010-aaaaaa/trace.jsonl") == 0);
        json_decref(rows);

        rows = records_list(tmpdir, 1, &err);
        CHECK_INT(json_array_size(rows), 1);
        json_decref(rows);
        CHECK(err == NULL);
}

TEST(trace_paths)
{
        corral_error *err = NULL;
        char want[512];
        /* the newest run with a trace: not the one without */
        char *p = records_trace_path(tmpdir, "last", &err);
        snprintf(want, sizeof(want), "%s/20260102-101010-bbbbbb/trace.jsonl", tmpdir);
        CHECK_STR(p, want);
        free(p);
        /* an ID: its trace's path, whether or not there is one */
        p = records_trace_path(tmpdir, "20260103-101010-cccccc", &err);
        snprintf(want, sizeof(want), "%s/20260103-101010-cccccc/trace.jsonl", tmpdir);
        CHECK_STR(p, want);
        free(p);
        p = records_trace_path(tmpdir, "../etc", &err);
        CHECK(p == NULL && err && err->kind == CORRAL_ERR_USAGE);
        corral_error_free(err);
}

TEST(default_directory)
{
        char state[300];
        snprintf(state, sizeof(state), "%s/state", tmpdir);
        setenv("XDG_STATE_HOME", state, 1);
        corral_error *err = NULL;
        json_t *rows = records_list(NULL, -1, &err);
        CHECK(json_is_array(rows) && json_array_size(rows) == 0);
        json_decref(rows);
        char *p = records_trace_path(NULL, "last", &err);
        CHECK(p == NULL && err && strstr(err->msg, "/state/corral/runs'"));
        corral_error_free(err);
}

int main(void)
{
        snprintf(tmpdir, sizeof(tmpdir), "/tmp/corral-test-records-XXXXXX");
        if (mkdtemp(tmpdir) == NULL)
                return 1;
        RUN(run_ids);
        RUN(empty_or_missing_directory);
        RUN(listing);
        RUN(trace_paths);
        RUN(default_directory);
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
                return 1;
        return DONE();
}
