/* test-artifact.c: typing files by content (src/workspace/artifact.c) and
 * the snapshots that follow a workspace with inotify (snapshot.c).
 *
 * The detectors get hand-made bytes for every format, each also truncated
 * and corrupted, CSV quoting cases (quoted delimiters, quotes, newlines,
 * CRLF, blank lines) and the scan cap.  The file path is checked against
 * what a jail could plant (symlinks, a FIFO, a hard link, a directory).
 * Incremental snapshots must give the diff a full walk gives, through file
 * edits, renames of whole directories, a directory turned into a symlink
 * and a lost-events fallback. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../src/agent/agent-internal.h"
#include "../../src/workspace/artifact.h"
#include "harness.h"

__attribute__((visibility("default"))) const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
        return "halt_on_error=1:print_stacktrace=1";
}

/* ---- helpers ---- */

/* Type len bytes named name; the fields as a JSON object (caller frees). */
static json_t *typed_n(const void *data, size_t len, const char *name)
{
        json_t *e = json_object();
        if (artifact_detect_mem(data, len, len, name, ARTIFACT_SCAN_MAX, e) < 0) {
                json_decref(e);
                return NULL;
        }
        return e;
}

static json_t *typed(const char *text, const char *name)
{
        return typed_n(text, strlen(text), name);
}

static const char *fmt(const json_t *e)
{
        return json_string_value(json_object_get(e, "format"));
}

static long long num(const json_t *e, const char *key)
{
        json_t *v = json_object_get(e, key);
        return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

static bool has(const json_t *e, const char *key)
{
        return json_object_get(e, key) != NULL;
}

/* The describe() line of an entry, in a static buffer. */
static const char *said(const json_t *e)
{
        static char buf[256];
        return artifact_describe(e, buf, sizeof(buf));
}

#define CHECK_JSON(j, text)                                                                                           \
        do {                                                                                                          \
                char *_s = json_dumps((j), JSON_COMPACT | JSON_ENCODE_ANY);                                           \
                CHECK_STR(_s, (text));                                                                                \
                free(_s);                                                                                             \
        } while (0)

static void be32put(unsigned char *p, uint32_t v)
{
        p[0] = (unsigned char)(v >> 24);
        p[1] = (unsigned char)(v >> 16);
        p[2] = (unsigned char)(v >> 8);
        p[3] = (unsigned char)v;
}

static void le16put(unsigned char *p, unsigned v)
{
        p[0] = (unsigned char)v;
        p[1] = (unsigned char)(v >> 8);
}

static void le32put(unsigned char *p, uint32_t v)
{
        le16put(p, v & 0xFFFF);
        le16put(p + 2, v >> 16);
}

/* ---- images ---- */

static size_t make_png(unsigned char *b, uint32_t w, uint32_t h)
{
        memcpy(b, "\x89PNG\r\n\x1a\n", 8);
        be32put(b + 8, 13);
        memcpy(b + 12, "IHDR", 4);
        be32put(b + 16, w);
        be32put(b + 20, h);
        memcpy(b + 24, "\x08\x06\x00\x00\x00", 5);
        memset(b + 29, 0, 4); /* CRC: not checked */
        return 33;
}

TEST(png)
{
        unsigned char b[64];
        size_t n = make_png(b, 1200, 600);
        json_t *e = typed_n(b, n, "output/plot.png");
        CHECK_STR(fmt(e), "png");
        CHECK_INT(num(e, "width"), 1200);
        CHECK_INT(num(e, "height"), 600);
        CHECK_STR(said(e), "PNG 1200×600");
        json_decref(e);
        /* By content, not by name: a PNG called .csv is a PNG. */
        e = typed_n(b, n, "data.csv");
        CHECK_STR(fmt(e), "png");
        json_decref(e);
        /* Truncated inside the header: a PNG without a size. */
        e = typed_n(b, 20, "a.png");
        CHECK_STR(fmt(e), "png");
        CHECK(!has(e, "width"));
        CHECK(json_is_false(json_object_get(e, "valid")));
        CHECK_STR(said(e), "PNG, unreadable header");
        json_decref(e);
        /* Corrupt: a chunk other than IHDR first, a zero width, a huge one. */
        memcpy(b + 12, "IDAT", 4);
        e = typed_n(b, n, NULL);
        CHECK(json_is_false(json_object_get(e, "valid")) && !has(e, "width"));
        json_decref(e);
        make_png(b, 0, 5);
        e = typed_n(b, n, NULL);
        CHECK(json_is_false(json_object_get(e, "valid")));
        json_decref(e);
        make_png(b, 0x80000000u, 5);
        e = typed_n(b, n, NULL);
        CHECK(json_is_false(json_object_get(e, "valid")));
        json_decref(e);
        /* A PNG's text name but not its signature: text. */
        e = typed("just text\n", "fake.png");
        CHECK_STR(fmt(e), "text");
        json_decref(e);
}

TEST(jpeg)
{
        unsigned char b[200000];
        size_t n = 0;
        b[n++] = 0xFF, b[n++] = 0xD8;
        /* APP1 (EXIF) of 100,000 bytes: larger than the sniffed head. */
        b[n++] = 0xFF, b[n++] = 0xE1;
        b[n++] = 0xFF, b[n++] = 0xFF; /* length 65535 */
        memset(b + n, 0xAB, 65533);
        n += 65533;
        b[n++] = 0xFF, b[n++] = 0xFF; /* a fill byte */
        b[n++] = 0xE2, b[n++] = 0x80, b[n++] = 0x00;
        memset(b + n, 0, 0x7FFE);
        n += 0x7FFE;
        size_t sof = n;
        const unsigned char frame[] = { 0xFF, 0xC2, 0x00, 0x11, 0x08, 0x01, 0xE0, 0x02, 0x80, 0x03 };
        memcpy(b + n, frame, sizeof(frame));
        n += sizeof(frame);
        memset(b + n, 0, 20);
        n += 20;
        json_t *e = typed_n(b, n, "photo.jpg");
        CHECK_STR(fmt(e), "jpeg");
        CHECK_INT(num(e, "width"), 640);
        CHECK_INT(num(e, "height"), 480);
        CHECK_STR(said(e), "JPEG 640×480");
        json_decref(e);
        /* Cut before the frame header: a JPEG without a size. */
        e = typed_n(b, sof + 5, "photo.jpg");
        CHECK_STR(fmt(e), "jpeg");
        CHECK(!has(e, "width") && json_is_false(json_object_get(e, "valid")));
        json_decref(e);
        /* A zero segment length, and a scan before any frame. */
        const unsigned char zero[] = { 0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x00, 0xFF, 0xC0 };
        e = typed_n(zero, sizeof(zero), NULL);
        CHECK(!has(e, "width") && json_is_false(json_object_get(e, "valid")));
        json_decref(e);
        const unsigned char sos[] = { 0xFF, 0xD8, 0xFF, 0xDA, 0x00, 0x04, 0, 0, 0xFF, 0xC0, 0, 11, 8, 0, 1, 0, 1, 1 };
        e = typed_n(sos, sizeof(sos), NULL);
        CHECK(!has(e, "width"));
        json_decref(e);
}

TEST(gif)
{
        unsigned char b[16] = "GIF89a";
        le16put(b + 6, 320);
        le16put(b + 8, 200);
        json_t *e = typed_n(b, 13, NULL);
        CHECK_STR(fmt(e), "gif");
        CHECK_INT(num(e, "width"), 320);
        CHECK_INT(num(e, "height"), 200);
        json_decref(e);
        e = typed_n(b, 8, NULL);
        CHECK_STR(fmt(e), "gif");
        CHECK(!has(e, "width"));
        json_decref(e);
}

TEST(pdf)
{
        const char *pdf = "%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
                          "2 0 obj << /Type /Pages /Kids [3 0 R 4 0 R 5 0 R] /Count 3 >> endobj\n"
                          "6 0 obj << /Type /Outlines /Count 1 >> endobj\n%%EOF\n";
        json_t *e = typed(pdf, "report.pdf");
        CHECK_STR(fmt(e), "pdf");
        CHECK_INT(num(e, "pages"), 3);
        CHECK_STR(said(e), "PDF, 3 pages");
        json_decref(e);
        /* No page tree in plain text (object streams): no count. */
        e = typed("%PDF-1.7\n/Count 99\n", NULL);
        CHECK_STR(fmt(e), "pdf");
        CHECK(!has(e, "pages"));
        json_decref(e);
        e = typed("%PDF-1.7\n/Type/Pages /Count", NULL);
        CHECK(!has(e, "pages"));
        json_decref(e);
}

/* A zip with only what the detector reads: a local header's magic, the
 * central directory and its end record. */
static size_t make_zip(unsigned char *b, const char *const *names, size_t n_names)
{
        size_t n = 0;
        memcpy(b, "PK\3\4", 4);
        memset(b + 4, 0, 26);
        n = 30;
        size_t cd = n;
        for (size_t i = 0; i < n_names; i++) {
                memset(b + n, 0, 46);
                memcpy(b + n, "PK\1\2", 4);
                le16put(b + n + 28, (unsigned)strlen(names[i]));
                memcpy(b + n + 46, names[i], strlen(names[i]));
                n += 46 + strlen(names[i]);
        }
        memset(b + n, 0, 22);
        memcpy(b + n, "PK\5\6", 4);
        le16put(b + n + 8, (unsigned)n_names);
        le16put(b + n + 10, (unsigned)n_names);
        le32put(b + n + 12, (uint32_t)(n - cd));
        le32put(b + n + 16, (uint32_t)cd);
        return n + 22;
}

TEST(zip_family)
{
        unsigned char b[4096];
        const char *xlsx[] = { "[Content_Types].xml", "xl/workbook.xml", "xl/worksheets/sheet1.xml",
                                "xl/worksheets/sheet2.xml" };
        json_t *e = typed_n(b, make_zip(b, xlsx, 4), "out.xlsx");
        CHECK_STR(fmt(e), "xlsx");
        CHECK_INT(num(e, "sheets"), 2);
        CHECK_STR(said(e), "Excel workbook, 2 sheets");
        json_decref(e);
        const char *docx[] = { "word/document.xml" };
        e = typed_n(b, make_zip(b, docx, 1), NULL);
        CHECK_STR(fmt(e), "docx");
        json_decref(e);
        const char *plain[] = { "a.txt", "b.txt", "c/" };
        size_t n = make_zip(b, plain, 3);
        e = typed_n(b, n, "x.xlsx");
        CHECK_STR(fmt(e), "zip");
        CHECK_INT(num(e, "entries"), 3);
        json_decref(e);
        /* The central directory's offset points past the end: a zip,
         * entries as the end record says, nothing read out of bounds. */
        le32put(b + n - 6, 0xFFFFFF0u);
        e = typed_n(b, n, NULL);
        CHECK_STR(fmt(e), "zip");
        json_decref(e);
        /* No end record at all. */
        e = typed_n(b, 40, NULL);
        CHECK_STR(fmt(e), "zip");
        CHECK(!has(e, "entries"));
        json_decref(e);
}

TEST(magic_numbers)
{
        static const struct {
                const char *bytes;
                size_t len;
                const char *format;
        } cases[] = {
                { "PAR1\x15\x04", 6, "parquet" },
                { "\x1f\x8b\x08\x00", 4, "gzip" },
                { "\x28\xb5\x2f\xfd\x00", 5, "zstd" },
                { "SQLite format 3\0\x10", 18, "sqlite" },
                { "\x93NUMPY\x01\x00", 8, "npy" },
                { "\x7f" "ELF\x02\x01", 6, "elf" },
                { "\x00\x01\x02\x03", 4, "binary" },
                { "abc\xff\xfe", 5, "binary" }, /* not UTF-8 */
                { "", 0, "empty" },
        };
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                json_t *e = typed_n(cases[i].bytes, cases[i].len, "file.csv");
                CHECK_STR(fmt(e), cases[i].format);
                json_decref(e);
        }
}

/* ---- CSV ---- */

TEST(csv_basic)
{
        json_t *e = typed("Product,Revenue,Date\nWidget,120.5,2024-01-01\nGadget,80,2024-01-02\n", "top.csv");
        CHECK_STR(fmt(e), "csv");
        CHECK_INT(num(e, "rows"), 2);
        CHECK_INT(num(e, "columns"), 3);
        CHECK_JSON(json_object_get(e, "header"), "[\"Product\",\"Revenue\",\"Date\"]");
        CHECK_STR(said(e), "CSV 2 rows × 3 columns");
        json_decref(e);
        /* No header: the first record is numbers. */
        e = typed("1,2,3\n4,5,6\n7,8,9", "n.csv");
        CHECK_INT(num(e, "rows"), 3);
        CHECK(!has(e, "header"));
        json_decref(e);
        /* pandas' index column: an empty first name. */
        e = typed(",a,b\n0,1.5,x\n1,nan,y\n", "idx.csv");
        CHECK_INT(num(e, "rows"), 2);
        CHECK_JSON(json_object_get(e, "header"), "[\"\",\"a\",\"b\"]");
        json_decref(e);
        /* Without a .csv name, content alone says CSV. */
        e = typed("a,b\n1,2\n3,4\n", "output/result");
        CHECK_STR(fmt(e), "csv");
        CHECK_INT(num(e, "rows"), 2);
        json_decref(e);
        /* Source code whose lines split evenly at commas is not a CSV. */
        e = typed("f(a, b)\ng(c, d)\n", "step.py");
        CHECK_STR(fmt(e), "python");
        json_decref(e);
}

TEST(csv_quoting)
{
        /* Quoted delimiters, doubled quotes and newlines inside quotes: one
         * record each, as RFC 4180 says. */
        const char *q = "id,text,n\r\n"
                        "1,\"a, b\",3\r\n"
                        "2,\"say \"\"hi\"\"\",4\r\n"
                        "3,\"two\nlines\",5\r\n"
                        "4,\"\",6\r\n";
        json_t *e = typed(q, "q.csv");
        CHECK_STR(fmt(e), "csv");
        CHECK_INT(num(e, "rows"), 4);
        CHECK_INT(num(e, "columns"), 3);
        CHECK(!has(e, "ragged"));
        json_decref(e);
        /* A quoted header name with a delimiter and a quote in it. */
        e = typed("\"a,1\",\"b\"\"2\"\nx,y\n", "h.csv");
        CHECK_JSON(json_object_get(e, "header"), "[\"a,1\",\"b\\\"2\"]");
        json_decref(e);
        /* Blank lines are skipped; a last record without a newline counts. */
        e = typed("a,b\n\n1,2\n\r\n3,4", "b.csv");
        CHECK_INT(num(e, "rows"), 2);
        json_decref(e);
        /* Records of different widths. */
        e = typed("a,b,c\n1,2,3\n4,5\n", "r.csv");
        CHECK(json_is_true(json_object_get(e, "ragged")));
        json_decref(e);
        /* An unterminated quote runs to the end: one record. */
        e = typed("a,b\n1,\"open\n2,3\n4,5\n", "u.csv");
        CHECK_INT(num(e, "rows"), 1);
        json_decref(e);
        /* Past the first records the fast path counts lines: quotes there
         * still hold newlines. */
        char big[8192];
        size_t n = (size_t)snprintf(big, sizeof(big), "k,v\n");
        for (int i = 0; i < 100; i++)
                n += (size_t)snprintf(big + n, sizeof(big) - n, i % 10 == 5 ? "%d,\"x\ny,z\"\n" : "%d,plain\n", i);
        e = typed(big, "fast.csv");
        CHECK_INT(num(e, "rows"), 100);
        CHECK(!has(e, "ragged"));
        json_decref(e);
}

TEST(csv_delimiters)
{
        json_t *e = typed("a\tb\tc\n1\t2\t3\n", "t.tsv");
        CHECK_STR(fmt(e), "tsv");
        CHECK_INT(num(e, "columns"), 3);
        CHECK_STR(said(e), "TSV 1 row × 3 columns");
        json_decref(e);
        /* Tabs in a .csv: the sniff decides, not the name. */
        e = typed("a\tb\n1\t2\n", "t.csv");
        CHECK_STR(fmt(e), "tsv");
        json_decref(e);
        /* European CSV: ';' with decimal commas. */
        e = typed("name;price\nx;1,5\ny;2,25\n", "eu.csv");
        CHECK_STR(fmt(e), "csv");
        CHECK_STR(json_string_value(json_object_get(e, "delimiter")), ";");
        CHECK_INT(num(e, "columns"), 2);
        json_decref(e);
        e = typed("a|b|c\n1|2|3\n4|5|6\n", "p.dat");
        CHECK_STR(json_string_value(json_object_get(e, "delimiter")), "|");
        json_decref(e);
        /* One column is CSV only when the name says so. */
        e = typed("value\n1\n2\n", "one.csv");
        CHECK_STR(fmt(e), "csv");
        CHECK_INT(num(e, "columns"), 1);
        CHECK_INT(num(e, "rows"), 2);
        CHECK_STR(said(e), "CSV 2 rows × 1 column");
        json_decref(e);
        e = typed("value\n1\n2\n", "one.txt");
        CHECK_STR(fmt(e), "text");
        CHECK_INT(num(e, "lines"), 3);
        json_decref(e);
}

TEST(csv_cap)
{
        /* 1,000 rows but a scan cap of 1,000 bytes: a lower bound. */
        char *big = malloc(16 * 1024);
        size_t n = (size_t)snprintf(big, 64, "x,y\n");
        for (int i = 0; i < 1000; i++)
                n += (size_t)snprintf(big + n, 16 * 1024 - n, "%d,%d\n", i, i);
        json_t *e = json_object();
        CHECK_INT(artifact_detect_mem(big, n, n, "c.csv", 1000, e), 0);
        CHECK_STR(fmt(e), "csv");
        CHECK(!has(e, "rows"));
        CHECK(num(e, "rows_at_least") > 50 && num(e, "rows_at_least") < 1000);
        CHECK(strncmp(said(e), "CSV at least ", 13) == 0);
        json_decref(e);
        /* Only the head of a larger file was given: also a lower bound. */
        e = json_object();
        CHECK_INT(artifact_detect_mem(big, 500, n, "c.csv", ARTIFACT_SCAN_MAX, e), 0);
        CHECK(has(e, "rows_at_least") && !has(e, "rows"));
        json_decref(e);
        free(big);
}

/* ---- JSON ---- */

TEST(json)
{
        json_t *e = typed("[1, 2.5e3, \"x\\u00e9\\n\", {\"a\": [true, false, null]}, []]", "r.json");
        CHECK_STR(fmt(e), "json");
        CHECK(json_is_true(json_object_get(e, "valid")));
        CHECK_STR(json_string_value(json_object_get(e, "json_type")), "array");
        CHECK_INT(num(e, "length"), 5);
        CHECK_STR(said(e), "JSON array of 5");
        json_decref(e);
        e = typed("{\"a\": {\"b\": 1, \"c\": 2}, \"d\": [1, 2, 3]}\n", "o.json");
        CHECK_INT(num(e, "keys"), 2);
        CHECK_STR(said(e), "JSON object, 2 keys");
        json_decref(e);
        e = typed("  -0.5e-3 ", "n.json");
        CHECK(json_is_true(json_object_get(e, "valid")));
        CHECK_STR(json_string_value(json_object_get(e, "json_type")), "number");
        json_decref(e);
        /* Invalid documents under a .json name: JSON, "valid": false. */
        static const char *const bad[] = { "[1, 2,]", "{\"a\" 1}", "[01]", "[-]", "[1e]", "[\"\t\"]", "[\"\\x\"]",
                                           "[\"\\u12G4\"]", "[tru]", "{\"a\":1", "[1] [2]", "{]", "[1}", "" };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                e = typed(bad[i], "bad.json");
                if (bad[i][0] == '\0') {
                        CHECK_STR(fmt(e), "empty");
                } else {
                        CHECK_STR(fmt(e), "json");
                        CHECK(json_is_false(json_object_get(e, "valid")));
                        CHECK_STR(said(e), "JSON, invalid");
                }
                json_decref(e);
        }
        /* Not JSON and not named so: Markdown starting with a link. */
        e = typed("[link](http://x)\n# Title\n", "notes");
        CHECK_STR(fmt(e), "markdown");
        json_decref(e);
}

TEST(json_lines_and_depth)
{
        json_t *e = typed("{\"a\":1}\n{\"a\":2}\n[3]\n", "rows.jsonl");
        CHECK_STR(fmt(e), "jsonl");
        CHECK_INT(num(e, "rows"), 3);
        CHECK(json_is_true(json_object_get(e, "valid")));
        CHECK_STR(said(e), "JSON Lines 3 records");
        json_decref(e);
        /* Nesting deeper than the validator follows: no verdict, no crash. */
        size_t n = 100000;
        char *deep = malloc(n + 1);
        memset(deep, '[', n);
        deep[n] = '\0';
        e = typed(deep, "deep.json");
        CHECK_STR(fmt(e), "json");
        CHECK(!has(e, "valid"));
        json_decref(e);
        free(deep);
}

/* ---- the other text formats ---- */

TEST(text_formats)
{
        json_t *e = typed("# Energy report\n\nSome *text*.\n\n| a | b |\n|---|---|\n", "report.md");
        CHECK_STR(fmt(e), "markdown");
        CHECK_STR(json_string_value(json_object_get(e, "title")), "Energy report");
        CHECK_INT(num(e, "lines"), 6);
        CHECK_STR(said(e), "Markdown, 6 lines");
        json_decref(e);
        e = typed("# \nnot a title\n", "empty-heading.md");
        CHECK(!has(e, "title"));
        json_decref(e);
        e = typed("intro\n## Results\n", NULL);
        CHECK_STR(fmt(e), "markdown");
        CHECK_STR(json_string_value(json_object_get(e, "title")), "Results");
        json_decref(e);
        e = typed("<!DOCTYPE html>\n<html><head><title> Plot </title></head><body></body></html>", "x.txt");
        CHECK_STR(fmt(e), "html");
        CHECK_STR(json_string_value(json_object_get(e, "title")), "Plot");
        json_decref(e);
        e = typed("<?xml version=\"1.0\"?>\n<!-- by matplotlib -->\n<svg width=\"10\"></svg>\n", "p.svg");
        CHECK_STR(fmt(e), "svg");
        json_decref(e);
        e = typed("<?xml version=\"1.0\"?><data/>", NULL);
        CHECK_STR(fmt(e), "xml");
        json_decref(e);
        e = typed("one\ntwo\nthree", "a.txt");
        CHECK_STR(fmt(e), "text");
        CHECK_INT(num(e, "lines"), 3);
        CHECK_STR(said(e), "text, 3 lines");
        json_decref(e);
        e = typed("\xEF\xBB\xBFwith BOM\n", NULL);
        CHECK_STR(fmt(e), "text");
        json_decref(e);
        /* Code and configuration: by name, else by how they open; their
         * "# comments" are not Markdown headings (detect.py was "Markdown"). */
        static const struct {
                const char *text, *name, *format, *said;
        } code[] = {
                { "# Detect anomalies\nimport pandas as pd\n# --- rules ---\nx = 1\n", "detect.py", "python",
                  "Python, 4 lines" },
                { "#!/usr/bin/env python3\nprint(1)\n", "tool", "python", "Python, 2 lines" },
                { "#!/bin/sh\n# setup\nset -eu\n", NULL, "shell", "shell script, 3 lines" },
                { "# run it\necho hi\n", "run.sh", "shell", "shell script, 2 lines" },
                { "# config\nname: x\nitems: [1, 2]\n", "conf.yaml", "yaml", "YAML, 3 lines" },
                { "---\nname: x\n", NULL, "yaml", "YAML, 2 lines" },
                { "# build\n[tool.x]\na = 1\n", "pyproject.toml", "toml", "TOML, 3 lines" },
                { "-- totals\nSELECT a, b FROM t;\n", "q.sql", "sql", "SQL, 2 lines" },
                { "SELECT product, sum(revenue) FROM sales GROUP BY 1;\n", NULL, "sql", "SQL, 1 line" },
                { "# Title\n```python\nx = 1\n```\n", "notes.md", "markdown", "Markdown, 4 lines" },
                { "a,b\n1,2\n", "x.py", "python", "Python, 2 lines" }, /* not a CSV */
                { "With the data at hand, select what matters.\n", NULL, "text", "text, 1 line" }, /* prose */
        };
        for (size_t i = 0; i < ARRAY_SIZE(code); i++) {
                e = typed(code[i].text, code[i].name);
                CHECK_STR(fmt(e), code[i].format);
                CHECK_STR(said(e), code[i].said);
                json_decref(e);
        }
}

TEST(text_head_boundary)
{
        /* A multi-byte character cut at the end of the sniffed head is
         * still text; one cut at the end of the file is not. */
        size_t n = ARTIFACT_HEAD_MAX + 100;
        char *b = malloc(n + 1);
        memset(b, 'a', n);
        for (size_t i = 99; i < n; i += 100)
                b[i] = '\n';
        memcpy(b + ARTIFACT_HEAD_MAX - 1, "\xC3\xA9", 2);
        b[n] = '\0';
        json_t *e = typed(b, "long.txt");
        CHECK_STR(fmt(e), "text");
        CHECK_INT(num(e, "lines"), (long long)(n / 100) + (n % 100 != 0));
        json_decref(e);
        e = typed_n("abc\xC3", 4, "cut.txt");
        CHECK_STR(fmt(e), "binary");
        json_decref(e);
        /* The line count stops at the cap. */
        e = json_object();
        artifact_detect_mem(b, n, n, "long.txt", 1000, e);
        CHECK(num(e, "lines_at_least") == 10 && !has(e, "lines"));
        CHECK_STR(said(e), "text, at least 10 lines");
        json_decref(e);
        free(b);
}

TEST(sizes)
{
        char buf[32];
        CHECK_STR(artifact_format_size(812, buf, sizeof(buf)), "812 B");
        CHECK_STR(artifact_format_size(3174, buf, sizeof(buf)), "3.1 KB");
        CHECK_STR(artifact_format_size(49152, buf, sizeof(buf)), "48 KB");
        CHECK_STR(artifact_format_size(5u << 20, buf, sizeof(buf)), "5.0 MB");
        json_t *e = json_pack("{s:s}", "path", "x");
        CHECK_STR(said(e), "");
        json_decref(e);
}

/* ---- the tool message ---- */

TEST(observation)
{
        corral_jail_result res;
        memset(&res, 0, sizeof(res));
        res.status = CORRAL_STATUS_OK;
        corral_jail_config jail;
        corral_jail_config_init(&jail);
        json_t *arts = json_loads(
                "[{\"path\":\"output/anomalies.csv\",\"change\":\"created\",\"type\":\"file\",\"size\":3174,"
                "\"format\":\"csv\",\"rows\":42,\"columns\":5},"
                "{\"path\":\"output/energy_anomalies.png\",\"change\":\"created\",\"type\":\"file\","
                "\"size\":49152,\"format\":\"png\",\"width\":1200,\"height\":600},"
                "{\"path\":\"output/notes.bin\",\"change\":\"modified\",\"type\":\"file\",\"size\":12},"
                "{\"path\":\"out.csv\",\"change\":\"created\",\"type\":\"symlink\",\"size\":11},"
                "{\"path\":\"old.txt\",\"change\":\"deleted\",\"type\":\"file\",\"size\":4}]",
                0, NULL);
        char *out = agent_observe_exec(&res, &jail, arts, 4096);
        CHECK(out != NULL);
        CHECK(out && strstr(out, "files changed in /workspace:\n"
                                 "  created output/anomalies.csv (3.1 KB, CSV 42 rows × 5 columns)\n"
                                 "  created output/energy_anomalies.png (48 KB, PNG 1200×600)\n"
                                 "  modified output/notes.bin (12 B)\n"
                                 "  created out.csv (symlink)\n"
                                 "  deleted old.txt\n") != NULL);
        free(out);
        json_decref(arts);
        corral_jail_config_release(&jail);
}

/* ---- files in a workspace ---- */

static char root[256];

static const char *W(const char *fmt_, ...) CORRAL_PRINTF(1, 2);
static const char *W(const char *fmt_, ...)
{
        static char ring[16][512];
        static unsigned next;
        char rel[256];
        va_list ap;
        va_start(ap, fmt_);
        vsnprintf(rel, sizeof(rel), fmt_, ap);
        va_end(ap);
        char *b = ring[next++ % 16];
        snprintf(b, sizeof(ring[0]), "%s/%s", root, rel);
        return b;
}

static void put(const char *path, const void *data, size_t len)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write_all(fd, data, len) < 0) {
                printf("# cannot write %s: %s\n", path, strerror(errno));
                abort();
        }
        close(fd);
}

static void puts_(const char *path, const char *text)
{
        put(path, text, strlen(text));
}

static struct workspace *ws_new(void)
{
        struct workspace *ws = NULL;
        corral_error *err = NULL;
        if (workspace_open(NULL, &ws, &err) < 0) {
                printf("# %s\n", err->msg);
                abort();
        }
        snprintf(root, sizeof(root), "%s", ws->root);
        return ws;
}

TEST(detect_at_hostile)
{
        struct workspace *ws = ws_new();
        unsigned char png[64];
        size_t n = make_png(png, 7, 9);
        put(W("output/p.png"), png, n);
        json_t *e = json_object();
        CHECK_INT(artifact_detect_at(ws->root_fd, "output/p.png", ARTIFACT_SCAN_MAX, e), 0);
        CHECK_INT(num(e, "width"), 7);
        json_decref(e);
        /* A symlink named like a CSV, to a file outside: never read. */
        symlink("/etc/passwd", W("output/out.csv"));
        e = json_object();
        errno = 0;
        CHECK_INT(artifact_detect_at(ws->root_fd, "output/out.csv", ARTIFACT_SCAN_MAX, e), -1);
        CHECK(errno == ELOOP);
        CHECK_INT(json_object_size(e), 0);
        json_decref(e);
        /* A symlinked directory on the way: refused too. */
        symlink("/etc", W("output/etc"));
        e = json_object();
        CHECK_INT(artifact_detect_at(ws->root_fd, "output/etc/passwd", ARTIFACT_SCAN_MAX, e), -1);
        CHECK_INT(json_object_size(e), 0);
        json_decref(e);
        /* A FIFO: not read, and no hang (there is no writer). */
        mkfifo(W("output/fifo.csv"), 0644);
        e = json_object();
        CHECK_INT(artifact_detect_at(ws->root_fd, "output/fifo.csv", ARTIFACT_SCAN_MAX, e), -1);
        CHECK(errno == EINVAL);
        json_decref(e);
        /* A directory, and a file with a second link. */
        mkdir(W("output/dir.csv"), 0755);
        e = json_object();
        CHECK_INT(artifact_detect_at(ws->root_fd, "output/dir.csv", ARTIFACT_SCAN_MAX, e), -1);
        CHECK(errno == EINVAL);
        json_decref(e);
        puts_(W("output/a.csv"), "a,b\n1,2\n");
        link(W("output/a.csv"), W("output/b.csv"));
        e = json_object();
        CHECK_INT(artifact_detect_at(ws->root_fd, "output/a.csv", ARTIFACT_SCAN_MAX, e), -1);
        CHECK(errno == EMLINK);
        json_decref(e);
        /* The diff: files typed, the rest left as they were. */
        unlink(W("output/b.csv"));
        json_t *diff = json_pack("[{s:s,s:s,s:s,s:i},{s:s,s:s,s:s,s:i},{s:s,s:s,s:s,s:i},{s:s,s:s,s:s,s:i},"
                                 "{s:s,s:s,s:s,s:i}]",
                                 "path", "output/a.csv", "change", "created", "type", "file", "size", 8, "path",
                                 "output/out.csv", "change", "created", "type", "symlink", "size", 11, "path",
                                 "output/fifo.csv", "change", "created", "type", "fifo", "size", 0, "path",
                                 "output/gone.csv", "change", "deleted", "type", "file", "size", 3, "path",
                                 "output/p.png", "change", "modified", "type", "file", "size", (int)n);
        CHECK_INT(artifact_type_diff(ws->root_fd, diff, ARTIFACT_SCAN_MAX), 2);
        CHECK_STR(fmt(json_array_get(diff, 0)), "csv");
        CHECK(!has(json_array_get(diff, 1), "format"));
        CHECK(!has(json_array_get(diff, 2), "format"));
        CHECK(!has(json_array_get(diff, 3), "format"));
        CHECK_STR(fmt(json_array_get(diff, 4)), "png");
        json_decref(diff);
        /* At most ARTIFACT_TYPE_MAX files are opened per diff. */
        diff = json_array();
        for (int i = 0; i < ARTIFACT_TYPE_MAX + 5; i++)
                json_array_append_new(diff, json_pack("{s:s,s:s,s:s,s:i}", "path", "output/a.csv", "change",
                                                      "created", "type", "file", "size", 8));
        CHECK_INT(artifact_type_diff(ws->root_fd, diff, ARTIFACT_SCAN_MAX), ARTIFACT_TYPE_MAX);
        CHECK(has(json_array_get(diff, ARTIFACT_TYPE_MAX - 1), "format"));
        CHECK(!has(json_array_get(diff, ARTIFACT_TYPE_MAX), "format"));
        json_decref(diff);
        workspace_close(ws, true);
}

/* ---- incremental snapshots ---- */

/* The diff from a to an incremental snapshot must be the diff from a to a
 * full one.  Returns the incremental snapshot (a's tracking moved to it). */
static struct ws_snapshot *next_matches_full(struct workspace *ws, struct ws_snapshot *a, const char *what,
                                             bool incremental)
{
        struct ws_snapshot *inc = NULL, *full = NULL;
        corral_error *err = NULL;
        CHECK(ws_snapshot_tracking(a));
        CHECK_INT(workspace_snapshot_next(ws, a, &inc, &err), 0);
        CHECK_INT(workspace_snapshot(ws, &full, &err), 0);
        CHECK(ws_snapshot_incremental(inc) == incremental);
        CHECK(!ws_snapshot_incremental(full));
        json_t *d1 = workspace_diff(a, inc), *d2 = workspace_diff(a, full);
        bool same = json_equal(d1, d2);
        CHECK(same);
        if (!same) {
                char *s1 = json_dumps(d1, JSON_COMPACT), *s2 = json_dumps(d2, JSON_COMPACT);
                printf("# %s:\n#   incremental %s\n#   full        %s\n", what, s1, s2);
                free(s1);
                free(s2);
        }
        CHECK_INT(ws_snapshot_count(inc), ws_snapshot_count(full));
        json_decref(d1);
        json_decref(d2);
        ws_snapshot_free(full);
        return inc;
}

TEST(snapshot_next)
{
        struct workspace *ws = ws_new();
        corral_error *err = NULL;
        mkdir(W("output/a"), 0755);
        mkdir(W("output/a/deep"), 0755);
        puts_(W("output/a/deep/x.txt"), "x");
        puts_(W("output/a/y.txt"), "y");
        puts_(W("output/a-b"), "sibling sorted after a/");
        puts_(W("output/keep.txt"), "k");
        puts_(W("output/grow.txt"), "1");
        mkdir(W("output/z"), 0755);
        puts_(W("output/z/in.txt"), "z");
        mkdir(W("output/todir"), 0755);
        puts_(W("input/data.csv"), "a\n");
        struct ws_snapshot *s = NULL;
        CHECK_INT(workspace_snapshot(ws, &s, &err), 0);

        /* Step 1: edits, a new nested tree, a deletion, input/ changes. */
        puts_(W("output/grow.txt"), "12");
        mkdir(W("output/new"), 0755);
        mkdir(W("output/new/sub"), 0755);
        puts_(W("output/new/sub/f.csv"), "a,b\n1,2\n");
        unlink(W("output/keep.txt"));
        puts_(W("input/data.csv"), "changed\n");
        struct ws_snapshot *t = next_matches_full(ws, s, "edits", true);
        json_t *d = workspace_diff(s, t);
        CHECK_INT(json_array_size(d), 3);
        json_decref(d);
        ws_snapshot_free(s);

        /* Step 2: directories renamed (both name orders), a directory
         * replaced by a symlink, a file by a directory, a dir by a file. */
        rename(W("output/a"), W("output/b"));
        rename(W("output/z"), W("output/c"));
        puts_(W("output/c/after-move.txt"), "m");
        puts_(W("output/b/deep/x.txt"), "xx");
        rename(W("output/new"), W("output/gone"));
        symlink("/etc", W("output/new"));
        unlink(W("output/grow.txt"));
        mkdir(W("output/grow.txt"), 0755);
        puts_(W("output/grow.txt/inside"), "i");
        rmdir(W("output/todir"));
        puts_(W("output/todir"), "f");
        struct ws_snapshot *u = next_matches_full(ws, t, "renames", true);
        ws_snapshot_free(t);

        /* Step 3: nothing changed; then a subtree removed. */
        struct ws_snapshot *v = next_matches_full(ws, u, "nothing", true);
        d = workspace_diff(u, v);
        CHECK_JSON(d, "[]");
        json_decref(d);
        ws_snapshot_free(u);
        unlink(W("output/gone/sub/f.csv"));
        rmdir(W("output/gone/sub"));
        rmdir(W("output/gone"));
        struct ws_snapshot *w0 = next_matches_full(ws, v, "rmdir", true);
        ws_snapshot_free(v);

        /* Hard links: a write through one name changes the other, which
         * no event names; the snapshot walks, and both are modified. */
        puts_(W("output/h1"), "1");
        link(W("output/h1"), W("output/h2"));
        struct ws_snapshot *w1 = next_matches_full(ws, w0, "hard link", false);
        ws_snapshot_free(w0);
        int hfd = open(W("output/h1"), O_WRONLY | O_APPEND | O_CLOEXEC);
        CHECK_INT(write(hfd, "more", 4), 4);
        close(hfd);
        struct ws_snapshot *w = next_matches_full(ws, w1, "write through a link", false);
        d = workspace_diff(w1, w);
        CHECK_INT(json_array_size(d), 2);
        json_decref(d);
        ws_snapshot_free(w1);

        /* Lost events: more than the kernel queues (16,384 by default;
         * writes to two files in turn are not merged) make the next
         * snapshot a full walk, still right. */
        int f1 = open(W("output/one"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        int f2 = open(W("output/two"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        int written = 0;
        for (int i = 0; i < 17000; i++)
                written += (int)write(i % 2 ? f2 : f1, "x", 1);
        CHECK_INT(written, 17000);
        close(f1);
        close(f2);
        struct ws_snapshot *x = next_matches_full(ws, w, "overflow", false);
        d = workspace_diff(w, x);
        CHECK_JSON(d, "[{\"path\":\"output/one\",\"change\":\"created\",\"type\":\"file\",\"size\":8500},"
                      "{\"path\":\"output/two\",\"change\":\"created\",\"type\":\"file\",\"size\":8500}]");
        json_decref(d);
        CHECK(ws_snapshot_tracking(x));
        ws_snapshot_free(w);
        ws_snapshot_free(x);
        workspace_close(ws, true);
}

TEST(snapshot_dir_all)
{
        /* corral exec -w: input/ is the user's like the rest. */
        struct workspace *ws = ws_new();
        corral_error *err = NULL;
        struct ws_snapshot *a = NULL, *b = NULL;
        CHECK_INT(ws_snapshot_dir(ws->root_fd, WS_SNAPSHOT_ALL, &a, &err), 0);
        puts_(W("input/x.txt"), "x\n");
        CHECK_INT(ws_snapshot_dir_next(ws->root_fd, WS_SNAPSHOT_ALL, a, &b, &err), 0);
        CHECK(ws_snapshot_incremental(b));
        json_t *d = workspace_diff(a, b);
        CHECK_JSON(d, "[{\"path\":\"input/x.txt\",\"change\":\"created\",\"type\":\"file\",\"size\":2}]");
        json_decref(d);
        ws_snapshot_free(a);
        ws_snapshot_free(b);
        workspace_close(ws, true);
}

TEST(snapshot_watch_cap)
{
        /* More directories than corral will watch (8,192; 16 here): no
         * tracking, full walks, the same diffs. */
        struct workspace *ws = ws_new();
        corral_error *err = NULL;
        ws_snapshot_max_watches(16);
        mkdir(W("output/many"), 0755);
        for (int i = 0; i < 20; i++)
                mkdir(W("output/many/%04d", i), 0755);
        struct ws_snapshot *a = NULL, *b = NULL;
        CHECK_INT(workspace_snapshot(ws, &a, &err), 0);
        CHECK(!ws_snapshot_tracking(a));
        puts_(W("output/many/0012/x.csv"), "a,b\n1,2\n");
        CHECK_INT(workspace_snapshot_next(ws, a, &b, &err), 0);
        CHECK(!ws_snapshot_incremental(b));
        json_t *d = workspace_diff(a, b);
        CHECK_JSON(d, "[{\"path\":\"output/many/0012/x.csv\",\"change\":\"created\",\"type\":\"file\",\"size\":8}]");
        json_decref(d);
        ws_snapshot_free(a);
        ws_snapshot_free(b);
        ws_snapshot_max_watches(0);
        /* Within the cap again: tracked. */
        CHECK_INT(workspace_snapshot(ws, &a, &err), 0);
        CHECK(ws_snapshot_tracking(a));
        ws_snapshot_free(a);
        workspace_close(ws, true);
}

int main(void)
{
        RUN(png);
        RUN(jpeg);
        RUN(gif);
        RUN(pdf);
        RUN(zip_family);
        RUN(magic_numbers);
        RUN(csv_basic);
        RUN(csv_quoting);
        RUN(csv_delimiters);
        RUN(csv_cap);
        RUN(json);
        RUN(json_lines_and_depth);
        RUN(text_formats);
        RUN(text_head_boundary);
        RUN(sizes);
        RUN(observation);
        RUN(detect_at_hostile);
        RUN(snapshot_next);
        RUN(snapshot_dir_all);
        RUN(snapshot_watch_cap);
        return DONE();
}
