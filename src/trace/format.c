/* format.c: how the terminal view and the exports write numbers and read
 * events (see format.h). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../workspace/artifact.h"
#include "format.h"

const char *trace_jstr(const json_t *o, const char *key)
{
        return json_string_value(json_object_get(o, key));
}

bool trace_jnum(const json_t *o, const char *key, double *ret)
{
        json_t *v = json_object_get(o, key);
        if (!json_is_number(v))
                return false;
        *ret = json_number_value(v);
        return true;
}

bool trace_is_answer_tool(const char *name)
{
        return name && (strcmp(name, "final_answer") == 0 || strcmp(name, "answer") == 0);
}

void trace_fmt_size(char *buf, size_t size, double bytes)
{
        static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
        unsigned u = 0;
        while (bytes >= 1024 && u + 1 < ARRAY_SIZE(units)) {
                bytes /= 1024;
                u++;
        }
        if (u == 0 || bytes >= 100 || fabs(bytes - round_half_away(bytes)) < 0.05)
                snprintf(buf, size, "%.0f %s", bytes, units[u]);
        else
                snprintf(buf, size, "%.1f %s", bytes, units[u]);
}

void trace_fmt_ms(char *buf, size_t size, double ms)
{
        if (ms < 0)
                ms = 0;
        if (ms < 1000)
                snprintf(buf, size, "%.0f ms", ms);
        else if (ms < 60000)
                snprintf(buf, size, fmod_positive(ms, 1000) < 0.5 ? "%.0f s" : "%.1f s", ms / 1000);
        else if (ms < 3600000)
                snprintf(buf, size, "%d min %02d s", (int)(ms / 60000), (int)fmod_positive(ms / 1000, 60));
        else
                snprintf(buf, size, "%d h %02d min", (int)(ms / 3600000), (int)fmod_positive(ms / 60000, 60));
}

void trace_fmt_count(char *buf, size_t size, unsigned long long n)
{
        char digits[32];
        int len = snprintf(digits, sizeof(digits), "%llu", n);
        size_t o = 0;
        for (int i = 0; i < len && o + 2 < size; i++) {
                if (i > 0 && (len - i) % 3 == 0)
                        buf[o++] = ',';
                buf[o++] = digits[i];
        }
        buf[o] = '\0';
}

char *trace_artifact_line(const json_t *a, const char **ret_change)
{
        const char *path = json_is_string(a) ? json_string_value(a) : trace_jstr(a, "path");
        if (path == NULL)
                return NULL;
        const char *change = trace_jstr(a, "change"), *sign = "+", *cls = "created";
        if (change && strcmp(change, "modified") == 0) {
                sign = "~";
                cls = "modified";
        } else if (change && strcmp(change, "deleted") == 0) {
                sign = "-";
                cls = "deleted";
        }
        if (ret_change)
                *ret_change = cls;
        char sz[160] = "", what[112] = "";
        double size;
        if (strcmp(cls, "deleted") != 0 && (trace_jnum(a, "size", &size) || trace_jnum(a, "bytes", &size))) {
                char h[32];
                trace_fmt_size(h, sizeof(h), size);
                if (json_is_object(a)) /* typed by content: "PNG 1200×600" */
                        artifact_describe(a, what, sizeof(what));
                snprintf(sz, sizeof(sz), " (%s%s%s)", h, what[0] ? ", " : "", what);
        }
        const char *type = trace_jstr(a, "type");
        bool odd = type && strcmp(type, "file") != 0;
        char *line = NULL;
        if (asprintf(&line, "%s %s%s%s%s%s", sign, path, sz, odd ? " [" : "", odd ? type : "", odd ? "]" : "") < 0)
                return NULL;
        return line;
}
