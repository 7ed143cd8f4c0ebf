/* artifact.c: typing the files a step made, by their content.
 *
 * Everything here reads bytes that code in a jail wrote, so every parser is
 * bounded by what it was given: offsets are checked against the bytes read,
 * loops against a count, and the streaming counters (CSV records, JSON
 * values, text lines) stop at scan_max.  Binary formats are told by their
 * magic numbers and headers; text formats by a look at the first 64 KiB
 * (valid UTF-8, no NUL), then one pass over the file for the counts, 64
 * KiB at a time.  Memory is bounded whatever the file: the largest buffer
 * is a PDF of at most 4 MiB read whole for its page count.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "artifact.h"
#include "workspace-internal.h"

#define CHUNK 65536
#define HEADER_NAMES 8      /* CSV header names reported */
#define NAME_BYTES 64       /* each cut at this */
#define SAMPLE_RECORDS 32   /* records sniffed for the CSV delimiter */
#define JSON_MAX_DEPTH 4096 /* deeper documents are not validated */

/* ---- where the bytes come from: memory (tests, fuzzing) or a file ---- */

struct src {
        const unsigned char *mem; /* or NULL: read fd */
        size_t mem_len;
        int fd;
        uint64_t size;  /* the file's size (may exceed what can be read) */
        uint64_t limit; /* never read at or past this offset */
};

/* Read up to n bytes at off; the count read (short at the end or limit). */
static size_t src_read(const struct src *s, void *buf, size_t n, uint64_t off)
{
        if (off >= s->limit)
                return 0;
        if (n > s->limit - off)
                n = (size_t)(s->limit - off);
        if (s->mem) {
                if (off >= s->mem_len)
                        return 0;
                if (n > s->mem_len - off)
                        n = (size_t)(s->mem_len - off);
                memcpy(buf, s->mem + off, n);
                return n;
        }
        size_t got = 0;
        while (got < n) {
                ssize_t r = pread(s->fd, (char *)buf + got, n - got, (off_t)(off + got));
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        break;
                got += (size_t)r;
        }
        return got;
}

static uint32_t be32(const unsigned char *p)
{
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint16_t be16(const unsigned char *p)
{
        return (uint16_t)(p[0] << 8 | p[1]);
}

static uint16_t le16(const unsigned char *p)
{
        return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const unsigned char *p)
{
        return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int set_int(json_t *o, const char *key, uint64_t v)
{
        return json_object_set_new(o, key, json_integer((json_int_t)(v > INT64_MAX ? INT64_MAX : v)));
}

static int set_str(json_t *o, const char *key, const char *v)
{
        return json_object_set_new(o, key, json_string(v));
}

/* A JSON string of bytes from the file: invalid UTF-8 becomes U+FFFD. */
static json_t *text_value(const char *s, size_t n)
{
        if (utf8_valid(s, n))
                return json_stringn_nocheck(s, n);
        size_t len = 0;
        cleanup_free char *clean = utf8_sanitize(s, n, &len);
        return clean ? json_stringn_nocheck(clean, len) : NULL;
}

/* ---- images ---- */

static int detect_png(const unsigned char *h, size_t n, json_t *e)
{
        /* The signature, then the IHDR chunk: length 13, type, width, height. */
        int r = set_str(e, "format", "png");
        if (n < 24 || be32(h + 8) != 13 || memcmp(h + 12, "IHDR", 4) != 0)
                return r | json_object_set_new(e, "valid", json_false());
        uint32_t w = be32(h + 16), ht = be32(h + 20);
        if (w == 0 || ht == 0 || w > INT32_MAX || ht > INT32_MAX)
                return r | json_object_set_new(e, "valid", json_false());
        return r | set_int(e, "width", w) | set_int(e, "height", ht);
}

static bool jpeg_is_sof(unsigned m)
{
        /* SOF0-SOF15 but DHT (C4), JPG (C8) and DAC (CC). */
        return m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
}

static int detect_jpeg(const struct src *s, json_t *e)
{
        int r = set_str(e, "format", "jpeg");
        uint64_t off = 2;
        /* Segments up to the frame header; EXIF and ICC segments may come
         * first and be large, so they are skipped by their length. */
        for (unsigned seg = 0; seg < 4096; seg++) {
                unsigned char b[9];
                if (src_read(s, b, 2, off) < 2 || b[0] != 0xFF)
                        break;
                unsigned m = b[1];
                if (m == 0xFF) { /* fill byte */
                        off++;
                        continue;
                }
                if (m == 0xD8 || m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {
                        off += 2;
                        continue;
                }
                if (m == 0xD9 || m == 0xDA) /* end of image, start of scan */
                        break;
                if (src_read(s, b, 9, off) < 4)
                        break;
                unsigned len = be16(b + 2);
                if (len < 2)
                        break;
                if (jpeg_is_sof(m)) {
                        if (len < 7 || src_read(s, b, 9, off) < 9)
                                break;
                        unsigned ht = be16(b + 5), w = be16(b + 7);
                        if (w == 0)
                                break;
                        r |= set_int(e, "width", w);
                        if (ht > 0) /* 0: given later by a DNL marker */
                                r |= set_int(e, "height", ht);
                        return r;
                }
                off += 2 + (uint64_t)len;
        }
        return r | json_object_set_new(e, "valid", json_false());
}

static int detect_gif(const unsigned char *h, size_t n, json_t *e)
{
        int r = set_str(e, "format", "gif");
        if (n < 10 || le16(h + 6) == 0 || le16(h + 8) == 0)
                return r | json_object_set_new(e, "valid", json_false());
        return r | set_int(e, "width", le16(h + 6)) | set_int(e, "height", le16(h + 8));
}

/* ---- PDF: the page count when the page tree is plain text ---- */

#define PDF_SCAN_MAX (4u << 20)

static int detect_pdf(const struct src *s, json_t *e)
{
        int r = set_str(e, "format", "pdf");
        if (s->size > PDF_SCAN_MAX)
                return r; /* not cheap: no page count */
        /* The root of the page tree ("/Type /Pages") has the largest
         * "/Count"; outlines have one too, never larger than the pages.
         * Compressed object streams hide it: then there is no count. */
        cleanup_free unsigned char *buf = malloc((size_t)s->size + 1);
        if (buf == NULL)
                return -1;
        size_t n = src_read(s, buf, (size_t)s->size, 0);
        buf[n] = '\0';
        bool pages = memmem(buf, n, "/Type /Pages", 12) || memmem(buf, n, "/Type/Pages", 11);
        uint64_t best = 0;
        bool found = false;
        const unsigned char *p = buf, *end = buf + n;
        while (pages && (p = memmem(p, (size_t)(end - p), "/Count", 6)) != NULL) {
                p += 6;
                while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
                        p++;
                uint64_t v = 0;
                unsigned digits = 0;
                while (p < end && *p >= '0' && *p <= '9' && digits < 9) {
                        v = v * 10 + (uint64_t)(*p++ - '0');
                        digits++;
                }
                if (digits > 0 && v >= best) {
                        best = v;
                        found = true;
                }
        }
        if (found)
                r |= set_int(e, "pages", best);
        return r;
}

/* ---- zip containers: the central directory names the kind ---- */

static int detect_zip(const struct src *s, json_t *e)
{
        /* The end-of-central-directory record is in the last 64 KiB + 22. */
        enum { EOCD = 22, TAIL = 65535 + EOCD };
        uint64_t size = s->size < s->limit ? s->size : s->limit;
        uint64_t start = size > TAIL ? size - TAIL : 0;
        cleanup_free unsigned char *tail = malloc(TAIL);
        if (tail == NULL)
                return -1;
        size_t n = src_read(s, tail, TAIL, start);
        const unsigned char *eocd = NULL;
        for (size_t i = n >= EOCD ? n - EOCD + 1 : 0; i-- > 0;)
                if (memcmp(tail + i, "PK\5\6", 4) == 0) {
                        eocd = tail + i;
                        break;
                }
        const char *kind = "zip";
        size_t entries = 0, sheets = 0;
        bool known = false;
        if (eocd != NULL) {
                entries = le16(eocd + 10);
                uint64_t off = le32(eocd + 16);
                known = entries != 0xFFFF && off != 0xFFFFFFFF; /* else ZIP64: not read */
                for (size_t i = 0; known && i < entries && i < 10000; i++) {
                        unsigned char hdr[46];
                        char name[64];
                        if (src_read(s, hdr, sizeof(hdr), off) < sizeof(hdr) || memcmp(hdr, "PK\1\2", 4) != 0)
                                break;
                        size_t nlen = le16(hdr + 28), xlen = le16(hdr + 30), clen = le16(hdr + 32);
                        size_t got = src_read(s, name, nlen < sizeof(name) - 1 ? nlen : sizeof(name) - 1, off + 46);
                        name[got] = '\0';
                        if (strcmp(name, "xl/workbook.xml") == 0)
                                kind = "xlsx";
                        else if (strcmp(name, "word/document.xml") == 0)
                                kind = "docx";
                        else if (strcmp(name, "ppt/presentation.xml") == 0)
                                kind = "pptx";
                        else if (strncmp(name, "xl/worksheets/sheet", 19) == 0)
                                sheets++;
                        off += 46 + nlen + xlen + clen;
                }
        }
        int r = set_str(e, "format", kind);
        if (strcmp(kind, "xlsx") == 0)
                r |= set_int(e, "sheets", sheets);
        else if (strcmp(kind, "zip") == 0 && known)
                r |= set_int(e, "entries", entries);
        return r;
}

/* ---- text: lines ---- */

struct lines {
        uint64_t n;
        bool last_nl; /* the last byte seen was '\n' */
        bool any;
};

static void lines_feed(struct lines *l, const unsigned char *p, size_t n)
{
        if (n == 0)
                return;
        const unsigned char *end = p + n;
        while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
                l->n++;
                p++;
        }
        l->last_nl = end[-1] == '\n';
        l->any = true;
}

static uint64_t lines_total(const struct lines *l)
{
        return l->n + (l->any && !l->last_nl);
}

/* ---- CSV: RFC 4180 records (quoted fields may hold delimiters, quotes as
 * "" and newlines), blank lines skipped as pandas does ---- */

struct csv {
        unsigned char delim;
        enum { F_START, F_PLAIN, F_QUOTED, F_QUOTE_END } st;
        uint64_t records;       /* complete, non-blank */
        size_t fields;          /* in the current record */
        size_t rec_bytes;       /* bytes of the current record but CR */
        size_t first_fields;    /* fields of the first record */
        bool ragged;
        /* The first two records' fields (cut), for the header test. */
        char cell[2][HEADER_NAMES][NAME_BYTES + 4];
        size_t cell_len[2][HEADER_NAMES];
        size_t sample_fields[SAMPLE_RECORDS]; /* field counts of the first records */
        size_t sampled;
        struct csv_preview *pv; /* artifact_csv_preview(): the cells kept, or NULL */
};

/* The first rows of a CSV as cells (artifact_csv_preview()). */
struct csv_preview {
        json_t *rows;           /* [[cell, ...], ...] */
        json_t *row;            /* the record being read */
        struct capbuf cell;
        size_t max_rows, max_cols;
        bool more_cols;
};

static void pv_end_cell(struct csv *c)
{
        struct csv_preview *pv = c->pv;
        if (pv == NULL || json_array_size(pv->rows) >= pv->max_rows)
                return;
        if (pv->row == NULL)
                pv->row = json_array();
        if (json_array_size(pv->row) < pv->max_cols) {
                size_t n = 0;
                cleanup_free char *text = utf8_sanitize(pv->cell.data ? pv->cell.data : "", pv->cell.len, &n);
                json_array_append_new(pv->row, text ? json_stringn(text, n) : json_string(""));
        } else {
                pv->more_cols = true;
        }
        capbuf_release(&pv->cell);
        pv->cell = (struct capbuf){ .cap = pv->cell.cap };
}

static void csv_byte_to_cell(struct csv *c, unsigned char ch)
{
        if (c->pv && json_array_size(c->pv->rows) < c->pv->max_rows)
                capbuf_append(&c->pv->cell, (const char *)&ch, 1);
        if (c->records >= 2 || c->fields >= HEADER_NAMES)
                return;
        size_t *len = &c->cell_len[c->records][c->fields];
        if (*len < NAME_BYTES)
                c->cell[c->records][c->fields][(*len)++] = (char)ch;
}

static void csv_end_field(struct csv *c)
{
        pv_end_cell(c);
        c->fields++;
        c->st = F_START;
}

static void csv_end_record(struct csv *c)
{
        c->fields++;
        c->st = F_START;
        if (c->rec_bytes == 0) { /* a blank line */
                c->fields = 0;
                if (c->pv) {
                        capbuf_release(&c->pv->cell);
                        c->pv->cell = (struct capbuf){ .cap = c->pv->cell.cap };
                }
                return;
        }
        if (c->pv) {
                pv_end_cell(c);
                if (c->pv->row && json_array_size(c->pv->rows) < c->pv->max_rows)
                        json_array_append(c->pv->rows, c->pv->row);
                json_decref(c->pv->row);
                c->pv->row = NULL;
        }
        if (c->records == 0)
                c->first_fields = c->fields;
        else if (c->fields != c->first_fields)
                c->ragged = true;
        if (c->sampled < SAMPLE_RECORDS)
                c->sample_fields[c->sampled++] = c->fields;
        c->records++;
        c->fields = 0;
        c->rec_bytes = 0;
}

static void csv_byte(struct csv *c, unsigned char ch)
{
        switch (c->st) {
        case F_QUOTED:
                if (ch == '"')
                        c->st = F_QUOTE_END;
                else
                        csv_byte_to_cell(c, ch);
                c->rec_bytes++;
                return;
        case F_QUOTE_END:
                if (ch == '"') { /* "" inside quotes */
                        csv_byte_to_cell(c, ch);
                        c->st = F_QUOTED;
                        c->rec_bytes++;
                        return;
                }
                c->st = F_PLAIN; /* the quotes closed: go on as unquoted */
                break;
        case F_START:
        case F_PLAIN:
        default:
                break;
        }
        if (ch == c->delim) {
                c->rec_bytes++;
                csv_end_field(c);
        } else if (ch == '\n') {
                csv_end_record(c);
        } else if (ch == '\r') {
                /* CRLF ends a record as LF does; a CR elsewhere is ignored. */
        } else if (ch == '"' && c->st == F_START) {
                c->st = F_QUOTED;
                c->rec_bytes++;
        } else {
                c->st = F_PLAIN;
                csv_byte_to_cell(c, ch);
                c->rec_bytes++;
        }
}

static void csv_feed(struct csv *c, const unsigned char *p, size_t n)
{
        const unsigned char *end = p + n;
        while (p < end) {
                /* Past the sample, a line without a quote starting a record
                 * is one record: count it with two memchr()s. */
                if (c->records >= SAMPLE_RECORDS && c->st == F_START && c->fields == 0 && c->rec_bytes == 0) {
                        const unsigned char *nl = memchr(p, '\n', (size_t)(end - p));
                        if (nl == NULL)
                                goto slow;
                        if (memchr(p, '"', (size_t)(nl - p)) == NULL) {
                                bool blank = nl == p || (nl == p + 1 && *p == '\r');
                                if (!blank) {
                                        size_t f = 1;
                                        for (const unsigned char *q = p; q < nl; q++)
                                                f += *q == c->delim;
                                        if (f != c->first_fields)
                                                c->ragged = true;
                                        c->records++;
                                }
                                p = nl + 1;
                                continue;
                        }
                }
        slow:
                csv_byte(c, *p++);
        }
}

static void csv_finish(struct csv *c)
{
        if (c->rec_bytes > 0 || c->st == F_QUOTED || c->fields > 0)
                csv_end_record(c);
}

/* A number as pandas and spreadsheets write one: "-1.5", "3e10", "nan",
 * "inf" (no thousands separators: ',' may be the delimiter).  Empty is not
 * a number. */
static bool looks_numeric(const char *s, size_t n)
{
        while (n > 0 && (*s == ' ' || *s == '\t'))
                s++, n--;
        while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
                n--;
        if (n == 0)
                return false;
        size_t i = 0, digits = 0;
        if (s[i] == '-' || s[i] == '+')
                i++;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
                digits++;
        if (i < n && s[i] == '.')
                for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++)
                        digits++;
        if (digits == 0) {
                /* nan, inf: numeric columns in pandas output */
                return (n == 3 && (strncasecmp(s, "nan", 3) == 0 || strncasecmp(s, "inf", 3) == 0)) ||
                       (n == 4 && (strncasecmp(s, "-inf", 4) == 0));
        }
        if (i < n && (s[i] == 'e' || s[i] == 'E')) {
                i++;
                if (i < n && (s[i] == '-' || s[i] == '+'))
                        i++;
                size_t ed = 0;
                for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
                        ed++;
                if (ed == 0)
                        return false;
        }
        return i == n;
}

static bool csv_has_header(const struct csv *c)
{
        if (c->records == 0)
                return false;
        size_t n0 = c->first_fields < HEADER_NAMES ? c->first_fields : HEADER_NAMES;
        for (size_t i = 0; i < n0; i++)
                if (looks_numeric(c->cell[0][i], c->cell_len[0][i]))
                        return false;
        if (c->records == 1)
                return true;
        for (size_t i = 0; i < n0; i++)
                if (looks_numeric(c->cell[1][i], c->cell_len[1][i]))
                        return true;
        /* All text: a header when its names are there and distinct. */
        for (size_t i = 0; i < n0; i++) {
                if (c->cell_len[0][i] == 0 && i > 0)
                        return false;
                for (size_t j = 0; j < i; j++)
                        if (c->cell_len[0][i] == c->cell_len[0][j] &&
                            memcmp(c->cell[0][i], c->cell[0][j], c->cell_len[0][i]) == 0)
                                return false;
        }
        return true;
}

/* Field counts of the sample records for delimiter d: how many records
 * (complete in buf) and whether they all have the same count >= 2. */
static bool csv_sniff_one(const unsigned char *buf, size_t n, bool complete, unsigned char d, size_t *ret_records,
                          size_t *ret_fields)
{
        struct csv *c = calloc(1, sizeof(*c));
        if (c == NULL)
                return false;
        c->delim = d;
        for (size_t i = 0; i < n && c->records < SAMPLE_RECORDS; i++)
                csv_byte(c, buf[i]);
        if (complete && c->records < SAMPLE_RECORDS)
                csv_finish(c);
        bool same = c->sampled > 0;
        for (size_t i = 1; i < c->sampled; i++)
                if (c->sample_fields[i] != c->sample_fields[0])
                        same = false;
        *ret_records = c->sampled;
        *ret_fields = c->sampled ? c->sample_fields[0] : 0;
        free(c);
        return same && *ret_fields >= 2;
}

static bool name_ends(const char *name, const char *ext)
{
        if (name == NULL)
                return false;
        size_t n = strlen(name), m = strlen(ext);
        return n > m && strcasecmp(name + n - m, ext) == 0;
}

/* Source code and configuration: text even when its lines split evenly at
 * commas. */
static bool code_name(const char *name)
{
        static const char *const exts[] = { ".py",   ".sh",  ".js",  ".ts",  ".c",   ".h",   ".r",
                                            ".sql",  ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf",
                                            ".log",  ".tex", ".rst", ".css", ".ipynb" };
        for (size_t i = 0; i < ARRAY_SIZE(exts); i++)
                if (name_ends(name, exts[i]))
                        return true;
        return false;
}

/* The delimiter when head reads as delimited records, else 0.  lenient: the
 * name says CSV/TSV, so one column or uneven records still count. */
static unsigned char csv_sniff(const unsigned char *h, size_t n, bool complete, const char *name, bool lenient)
{
        bool tsv = name_ends(name, ".tsv") || name_ends(name, ".tab");
        const unsigned char order_csv[] = { ',', '\t', ';', '|' };
        const unsigned char order_tsv[] = { '\t', ',', ';', '|' };
        const unsigned char *order = tsv ? order_tsv : order_csv;
        for (size_t i = 0; i < 4; i++) {
                size_t records, fields;
                if (csv_sniff_one(h, n, complete, order[i], &records, &fields) && (lenient || records >= 2))
                        return order[i];
        }
        if (!lenient)
                return 0;
        /* The name says so: take the delimiter that splits the first record
         * at all, else one column of the usual one. */
        for (size_t i = 0; i < 4; i++) {
                size_t records, fields;
                csv_sniff_one(h, n, complete, order[i], &records, &fields);
                if (fields >= 2)
                        return order[i];
        }
        return tsv ? '\t' : ',';
}

/* ---- JSON: a streaming validator that counts top-level elements ---- */

struct jscan {
        enum {
                J_VALUE,      /* a value must come */
                J_VALUE_OR_END, /* after '[' */
                J_KEY_OR_END, /* after '{' */
                J_KEY,        /* after ',' in an object */
                J_COLON,
                J_COMMA_OR_END,
                J_STRING,
                J_ESCAPE,
                J_UNICODE,
                J_NUMBER,
                J_LITERAL,
                J_DONE,       /* a top-level value ended */
                J_BAD,
                J_TOO_DEEP,
        } st;
        unsigned char stack[JSON_MAX_DEPTH / 8]; /* bit set: object */
        unsigned depth;
        bool key;           /* the string being read is an object key */
        unsigned hex;       /* \u digits still to come */
        int num;            /* number grammar state */
        const char *lit;    /* literal being matched */
        unsigned lit_i;
        unsigned char top;  /* first byte of the top-level value */
        uint64_t count;     /* elements (array) or members (object) at depth 1 */
        uint64_t values;    /* top-level values (more than 1: JSON Lines) */
        bool nl_since_value;
        bool multi_bad;     /* two top-level values on one line */
};

static bool js_is_object(const struct jscan *j)
{
        unsigned d = j->depth - 1;
        return j->stack[d / 8] >> (d % 8) & 1;
}

static void js_value_end(struct jscan *j)
{
        if (j->depth == 0) {
                j->st = J_DONE;
                j->nl_since_value = false;
        } else {
                j->st = J_COMMA_OR_END;
        }
}

/* Number states: 1 after '-', 2 after leading 0, 3 integer digits, 4 after
 * '.', 5 fraction digits, 6 after 'e', 7 after exponent sign, 8 exponent
 * digits.  Terminal: 2, 3, 5, 8. */
static int js_num_step(int s, unsigned char c)
{
        bool digit = c >= '0' && c <= '9';
        switch (s) {
        case 0:
                return c == '-' ? 1 : c == '0' ? 2 : digit ? 3 : -1;
        case 1:
                return c == '0' ? 2 : digit ? 3 : -1;
        case 2:
                return c == '.' ? 4 : (c == 'e' || c == 'E') ? 6 : -1;
        case 3:
                return digit ? 3 : c == '.' ? 4 : (c == 'e' || c == 'E') ? 6 : -1;
        case 4:
        case 5:
                return digit ? 5 : (s == 5 && (c == 'e' || c == 'E')) ? 6 : -1;
        case 6:
                return (c == '+' || c == '-') ? 7 : digit ? 8 : -1;
        case 7:
        case 8:
                return digit ? 8 : -1;
        default:
                return -1;
        }
}

static void js_byte(struct jscan *j, unsigned char c);

static void js_start_value(struct jscan *j, unsigned char c)
{
        if (j->depth == 0) {
                if (j->values == 0)
                        j->top = c;
                j->values++;
        } else if (j->depth == 1 && !js_is_object(j)) {
                j->count++; /* object members are counted by their keys */
        }
        switch (c) {
        case '{':
        case '[':
                if (j->depth >= JSON_MAX_DEPTH) {
                        j->st = J_TOO_DEEP;
                        return;
                }
                if (c == '{')
                        j->stack[j->depth / 8] |= (unsigned char)(1u << (j->depth % 8));
                else
                        j->stack[j->depth / 8] &= (unsigned char)~(1u << (j->depth % 8));
                j->depth++;
                j->st = c == '{' ? J_KEY_OR_END : J_VALUE_OR_END;
                return;
        case '"':
                j->key = false;
                j->st = J_STRING;
                return;
        case 't':
                j->lit = "true";
                break;
        case 'f':
                j->lit = "false";
                break;
        case 'n':
                j->lit = "null";
                break;
        default:
                j->num = js_num_step(0, c);
                j->st = j->num < 0 ? J_BAD : J_NUMBER;
                return;
        }
        j->lit_i = 1;
        j->st = J_LITERAL;
}

static bool js_space(unsigned char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void js_close(struct jscan *j, unsigned char c)
{
        bool obj = js_is_object(j);
        if ((c == '}') != obj) {
                j->st = J_BAD;
                return;
        }
        j->depth--;
        js_value_end(j);
}

static void js_byte(struct jscan *j, unsigned char c)
{
        switch (j->st) {
        case J_STRING:
                if (c == '"') {
                        if (j->key)
                                j->st = J_COLON;
                        else
                                js_value_end(j);
                } else if (c == '\\') {
                        j->st = J_ESCAPE;
                } else if (c < 0x20) {
                        j->st = J_BAD;
                }
                return;
        case J_ESCAPE:
                if (c == 'u') {
                        j->hex = 4;
                        j->st = J_UNICODE;
                } else if (strchr("\"\\/bfnrt", c) != NULL && c != '\0') {
                        j->st = J_STRING;
                } else {
                        j->st = J_BAD;
                }
                return;
        case J_UNICODE:
                if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
                        j->st = J_BAD;
                        return;
                }
                if (--j->hex == 0)
                        j->st = J_STRING;
                return;
        case J_NUMBER: {
                int next = js_num_step(j->num, c);
                if (next >= 0) {
                        j->num = next;
                        return;
                }
                if (j->num != 2 && j->num != 3 && j->num != 5 && j->num != 8) {
                        j->st = J_BAD;
                        return;
                }
                js_value_end(j);
                js_byte(j, c); /* the byte after the number */
                return;
        }
        case J_LITERAL:
                if (c != (unsigned char)j->lit[j->lit_i]) {
                        j->st = J_BAD;
                        return;
                }
                if (j->lit[++j->lit_i] == '\0')
                        js_value_end(j);
                return;
        case J_BAD:
        case J_TOO_DEEP:
                return;
        default:
                break;
        }
        if (js_space(c)) {
                if (c == '\n' && j->st == J_DONE)
                        j->nl_since_value = true;
                return;
        }
        switch (j->st) {
        case J_VALUE:
                js_start_value(j, c);
                return;
        case J_VALUE_OR_END:
                if (c == ']')
                        js_close(j, c);
                else
                        js_start_value(j, c);
                return;
        case J_KEY_OR_END:
        case J_KEY:
                if (c == '}' && j->st == J_KEY_OR_END) {
                        js_close(j, c);
                } else if (c == '"') {
                        if (j->depth == 1)
                                j->count++;
                        j->key = true;
                        j->st = J_STRING;
                } else {
                        j->st = J_BAD;
                }
                return;
        case J_COLON:
                j->st = c == ':' ? J_VALUE : J_BAD;
                return;
        case J_COMMA_OR_END:
                if (c == ',')
                        j->st = js_is_object(j) ? J_KEY : J_VALUE;
                else if (c == ']' || c == '}')
                        js_close(j, c);
                else
                        j->st = J_BAD;
                return;
        case J_DONE:
                /* Another value: JSON Lines when it starts a new line. */
                if (!j->nl_since_value)
                        j->multi_bad = true;
                js_start_value(j, c);
                return;
        default:
                j->st = J_BAD;
                return;
        }
}

/* End of input: is what was read a complete document? */
static bool js_finish(struct jscan *j)
{
        if (j->st == J_NUMBER) {
                if (j->num != 2 && j->num != 3 && j->num != 5 && j->num != 8)
                        return false;
                js_value_end(j);
        }
        return j->st == J_DONE && !j->multi_bad;
}

static const char *js_type_name(unsigned char top)
{
        switch (top) {
        case '{':
                return "object";
        case '[':
                return "array";
        case '"':
                return "string";
        case 't':
        case 'f':
                return "boolean";
        case 'n':
                return "null";
        default:
                return "number";
        }
}

/* ---- the text family ---- */

/* The head's bytes as text: valid UTF-8 without NUL (a sequence cut at the
 * end of a head shorter than the file is fine). */
static bool is_text(const unsigned char *h, size_t n, bool complete)
{
        if (memchr(h, '\0', n) != NULL)
                return false;
        if (utf8_valid((const char *)h, n))
                return true;
        if (complete)
                return false;
        for (size_t cut = 1; cut <= 3 && cut < n; cut++)
                if (utf8_valid((const char *)h, n - cut))
                        return true;
        return false;
}

static const unsigned char *skip_space(const unsigned char *p, const unsigned char *end)
{
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f'))
                p++;
        return p;
}

static bool starts_ci(const unsigned char *p, const unsigned char *end, const char *s)
{
        size_t n = strlen(s);
        return (size_t)(end - p) >= n && strncasecmp((const char *)p, s, n) == 0;
}

/* The text between <title> and </title> in the head, if any. */
static int html_title(const unsigned char *h, size_t n, json_t *e)
{
        const unsigned char *end = h + n;
        for (const unsigned char *p = h; (p = memchr(p, '<', (size_t)(end - p))) != NULL; p++) {
                if (!starts_ci(p, end, "<title>"))
                        continue;
                const unsigned char *t = p + 7, *q = t;
                while (q < end && *q != '<')
                        q++;
                if (q == end)
                        return 0;
                t = skip_space(t, q);
                size_t len = (size_t)(q - t);
                while (len > 0 && js_space(t[len - 1]))
                        len--;
                if (len == 0)
                        return 0;
                return json_object_set_new(e, "title", text_value((const char *)t, len < 120 ? len : 120));
        }
        return 0;
}

/* Markdown signals in the head: an ATX heading, a code fence, a table rule. */
static bool looks_markdown(const unsigned char *h, size_t n, const unsigned char **ret_heading)
{
        const unsigned char *end = h + n;
        bool signal = false;
        *ret_heading = NULL;
        for (const unsigned char *line = h; line < end;) {
                const unsigned char *nl = memchr(line, '\n', (size_t)(end - line));
                const unsigned char *le = nl ? nl : end;
                size_t hashes = 0;
                while (line + hashes < le && line[hashes] == '#' && hashes < 7)
                        hashes++;
                if (hashes >= 1 && hashes <= 6 && line + hashes < le && line[hashes] == ' ') {
                        signal = true;
                        if (*ret_heading == NULL)
                                *ret_heading = line;
                } else if (le - line >= 3 && memcmp(line, "```", 3) == 0) {
                        signal = true;
                } else if (le - line >= 4 && line[0] == '|' && memmem(line, (size_t)(le - line), "---", 3)) {
                        signal = true;
                }
                line = nl ? nl + 1 : end;
        }
        return signal;
}

static int set_heading(json_t *e, const unsigned char *line, const unsigned char *end)
{
        while (line < end && *line == '#')
                line++;
        while (line < end && (*line == ' ' || *line == '\t'))
                line++;
        const unsigned char *le = line;
        while (le < end && *le != '\n' && *le != '\r')
                le++;
        size_t len = (size_t)(le - line);
        if (len == 0)
                return 0;
        return json_object_set_new(e, "title", text_value((const char *)line, len < 120 ? len : 120));
}

/* One pass over the file from offset 0 in chunks, up to the scan limit. */
/* feed: false to stop the pass early (the answer is known). */
typedef bool (*feed_fn)(void *state, const unsigned char *p, size_t n);

/* Returns false when the limit (or feed) stopped the pass before the end. */
static bool scan_all(const struct src *s, unsigned char *buf, feed_fn feed, void *state)
{
        uint64_t off = 0;
        for (;;) {
                size_t n = src_read(s, buf, CHUNK, off);
                if (n == 0)
                        break;
                off += n;
                if (!feed(state, buf, n))
                        return false;
        }
        return off >= s->size;
}

static bool feed_lines(void *st, const unsigned char *p, size_t n)
{
        lines_feed(st, p, n);
        return true;
}

static bool feed_csv(void *st, const unsigned char *p, size_t n)
{
        csv_feed(st, p, n);
        return true;
}

static bool feed_json(void *st, const unsigned char *p, size_t n)
{
        struct jscan *j = st;
        for (size_t i = 0; i < n && j->st != J_BAD && j->st != J_TOO_DEEP; i++)
                js_byte(j, p[i]);
        return j->st != J_BAD && j->st != J_TOO_DEEP;
}

static int count_lines(const struct src *s, unsigned char *buf, json_t *e)
{
        struct lines l = { 0 };
        bool whole = scan_all(s, buf, feed_lines, &l);
        return set_int(e, whole ? "lines" : "lines_at_least", lines_total(&l));
}

static int detect_csv(const struct src *s, unsigned char *buf, unsigned char delim, json_t *e)
{
        struct csv *c = calloc(1, sizeof(*c));
        if (c == NULL)
                return -1;
        c->delim = delim;
        bool whole = scan_all(s, buf, feed_csv, c);
        if (whole)
                csv_finish(c);
        bool header = csv_has_header(c);
        uint64_t rows = c->records - (header ? 1 : 0);
        char d[2] = { (char)delim, '\0' };
        int r = set_str(e, "format", delim == '\t' ? "tsv" : "csv") |
                set_int(e, whole ? "rows" : "rows_at_least", rows) | set_int(e, "columns", c->first_fields) |
                set_str(e, "delimiter", d);
        if (header) {
                json_t *names = json_array();
                size_t n = c->first_fields < HEADER_NAMES ? c->first_fields : HEADER_NAMES;
                for (size_t i = 0; names && i < n; i++)
                        r |= json_array_append_new(names, text_value(c->cell[0][i], c->cell_len[0][i]));
                r |= json_object_set_new(e, "header", names);
        }
        if (c->ragged)
                r |= json_object_set_new(e, "ragged", json_true());
        free(c);
        return r;
}

/* JSON: 1 typed, 0 not JSON after all (only when !sure), -1 no memory. */
static int detect_json(const struct src *s, unsigned char *buf, bool sure, json_t *e)
{
        struct jscan *j = calloc(1, sizeof(*j));
        if (j == NULL)
                return -1;
        j->st = J_VALUE;
        bool whole = scan_all(s, buf, feed_json, j);
        /* Invalid whatever follows, once the validator failed. */
        bool decided = whole || j->st == J_BAD;
        bool valid = whole && js_finish(j);
        bool lines = j->values > 1 && !j->multi_bad;
        int r;
        if (!valid && !sure && j->st == J_BAD) {
                free(j);
                return 0;
        }
        if (lines) {
                r = set_str(e, "format", "jsonl") | set_int(e, whole ? "rows" : "rows_at_least", j->values);
        } else {
                r = set_str(e, "format", "json") | set_str(e, "json_type", js_type_name(j->top));
                if (j->top == '[' || j->top == '{')
                        r |= set_int(e, j->top == '[' ? (valid ? "length" : "length_at_least")
                                                        : (valid ? "keys" : "keys_at_least"),
                                     j->count);
        }
        if (decided && j->st != J_TOO_DEEP)
                r |= json_object_set_new(e, "valid", json_boolean(valid));
        free(j);
        return r < 0 ? -1 : 1;
}

/* needle in h[0..n), ignoring ASCII case. */
static bool memcasemem(const unsigned char *h, size_t n, const char *needle)
{
        size_t m = strlen(needle);
        for (size_t i = 0; m <= n && i <= n - m; i++)
                if (strncasecmp((const char *)h + i, needle, m) == 0)
                        return true;
        return false;
}

/* Source code and configuration by name, else by what the file opens with
 * (a #! line, an SQL statement, a YAML document marker): the format, or
 * NULL.  Asked before Markdown, whose "# heading" is also a comment in
 * Python, shell, YAML and TOML. */
static const char *code_format(const char *name, const unsigned char *p, const unsigned char *end)
{
        static const struct {
                const char *ext, *format;
        } by_name[] = {
                { ".py", "python" }, { ".pyw", "python" }, { ".sh", "shell" },  { ".bash", "shell" },
                { ".zsh", "shell" },  { ".yaml", "yaml" },  { ".yml", "yaml" },  { ".toml", "toml" },
                { ".sql", "sql" },
        };
        for (size_t i = 0; i < ARRAY_SIZE(by_name); i++)
                if (name_ends(name, by_name[i].ext))
                        return by_name[i].format;
        const unsigned char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t first = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (first > 2 && p[0] == '#' && p[1] == '!') {
                if (memmem(p, first, "python", 6))
                        return "python";
                if (memmem(p, first, "sh", 2))
                        return "shell";
        }
        if (first >= 3 && memcmp(p, "---", 3) == 0 && (first == 3 || p[3] == ' ' || p[3] == '\r'))
                return "yaml";
        if (starts_ci(p, end, "%YAML"))
                return "yaml";
        /* A statement: its keyword, and a word it needs further on (prose
         * may start with "With" or "Select"). */
        static const struct {
                const char *start, *needs;
        } sql[] = { { "select ", " from " }, { "with ", " as (" },        { "create table ", "(" },
                    { "create view ", " as " }, { "insert into ", "values" }, { "update ", " set " },
                    { "delete from ", ";" },  { "drop table ", ";" } };
        size_t span = (size_t)(end - p) < 4096 ? (size_t)(end - p) : 4096;
        for (size_t i = 0; i < ARRAY_SIZE(sql); i++)
                if (starts_ci(p, end, sql[i].start) && memcasemem(p, span, sql[i].needs))
                        return "sql";
        return NULL;
}

static int detect_text(const struct src *s, const unsigned char *h, size_t n, const char *name, json_t *e)
{
        bool complete = n >= s->size;
        cleanup_free unsigned char *buf = malloc(CHUNK);
        if (buf == NULL)
                return -1;
        const unsigned char *end = h + n;
        const unsigned char *body = h;
        if (n >= 3 && memcmp(h, "\xEF\xBB\xBF", 3) == 0)
                body += 3;
        const unsigned char *p = skip_space(body, end);

        bool json_name = name_ends(name, ".json") || name_ends(name, ".jsonl") || name_ends(name, ".ndjson") ||
                         name_ends(name, ".geojson");
        if (p < end && (*p == '{' || *p == '[' || json_name)) {
                int r = detect_json(s, buf, json_name, e);
                if (r != 0)
                        return r < 0 ? -1 : 0;
        }
        if (p < end && *p == '<') {
                const unsigned char *lim = end - p > 1024 ? p + 1024 : end;
                if (starts_ci(p, end, "<svg") ||
                    ((starts_ci(p, end, "<?xml") || starts_ci(p, end, "<!--") || starts_ci(p, end, "<!doctype svg")) &&
                     memmem(p, (size_t)(end - p), "<svg", 4) != NULL))
                        return set_str(e, "format", "svg");
                if (starts_ci(p, end, "<!doctype html") || starts_ci(p, end, "<html") ||
                    memmem(p, (size_t)(lim - p), "<head", 5) || memmem(p, (size_t)(lim - p), "<body", 5) ||
                    name_ends(name, ".html") || name_ends(name, ".htm"))
                        return set_str(e, "format", "html") | html_title(h, n, e);
                if (starts_ci(p, end, "<?xml"))
                        return set_str(e, "format", "xml");
        }
        bool csv_name = name_ends(name, ".csv") || name_ends(name, ".tsv") || name_ends(name, ".tab");
        bool md_name = name_ends(name, ".md") || name_ends(name, ".markdown");
        const char *code = md_name || csv_name ? NULL : code_format(name, body, end);
        if (code)
                return set_str(e, "format", code) | count_lines(s, buf, e);
        const unsigned char *heading = NULL;
        if (!csv_name && (md_name || looks_markdown(body, (size_t)(end - body), &heading))) {
                if (heading == NULL)
                        looks_markdown(body, (size_t)(end - body), &heading);
                int r = set_str(e, "format", "markdown");
                if (heading)
                        r |= set_heading(e, heading, end);
                return r | count_lines(s, buf, e);
        }
        /* Text that splits into records of the same width, or a .csv. */
        unsigned char delim = csv_sniff(body, (size_t)(end - body), complete, name, csv_name);
        if (delim != 0 && (csv_name || !code_name(name)))
                return detect_csv(s, buf, delim, e);
        return set_str(e, "format", "text") | count_lines(s, buf, e);
}

/* ---- the dispatcher ---- */

static int detect(const struct src *s, const unsigned char *h, size_t n, const char *name, json_t *e)
{
        if (s->size == 0)
                return set_str(e, "format", "empty");
        static const unsigned char png_sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n' };
        if (n >= 8 && memcmp(h, png_sig, 8) == 0)
                return detect_png(h, n, e);
        if (n >= 3 && h[0] == 0xFF && h[1] == 0xD8 && h[2] == 0xFF)
                return detect_jpeg(s, e);
        if (n >= 6 && (memcmp(h, "GIF87a", 6) == 0 || memcmp(h, "GIF89a", 6) == 0))
                return detect_gif(h, n, e);
        if (n >= 5 && memcmp(h, "%PDF-", 5) == 0)
                return detect_pdf(s, e);
        if (n >= 4 && (memcmp(h, "PK\3\4", 4) == 0 || memcmp(h, "PK\5\6", 4) == 0))
                return detect_zip(s, e);
        static const struct {
                const char *magic;
                size_t len;
                const char *format;
        } magics[] = {
                { "PAR1", 4, "parquet" },
                { "\x1F\x8B", 2, "gzip" },
                { "\x28\xB5\x2F\xFD", 4, "zstd" },
                { "SQLite format 3", 16, "sqlite" }, /* with its NUL */
                { "\x93NUMPY", 6, "npy" },
                { "\x7F" "ELF", 4, "elf" },
        };
        for (size_t i = 0; i < ARRAY_SIZE(magics); i++)
                if (n >= magics[i].len && memcmp(h, magics[i].magic, magics[i].len) == 0)
                        return set_str(e, "format", magics[i].format);
        if (!is_text(h, n, n >= s->size))
                return set_str(e, "format", "binary");
        return detect_text(s, h, n, name, e);
}

int artifact_detect_mem(const void *data, size_t len, uint64_t file_size, const char *name, uint64_t scan_max,
                        json_t *entry)
{
        if (file_size < len)
                file_size = len;
        struct src s = { .mem = data, .mem_len = len, .fd = -1, .size = file_size, .limit = scan_max };
        if (len > scan_max)
                len = (size_t)scan_max;
        size_t head = len < ARTIFACT_HEAD_MAX ? len : ARTIFACT_HEAD_MAX;
        return detect(&s, data, head, name, entry) < 0 ? -1 : 0;
}

int artifact_detect_at(int root_fd, const char *rel, uint64_t scan_max, json_t *entry)
{
        /* The walk that found rel followed no symlink: nor does this open,
         * so a symlink swapped in since is refused (ELOOP), not read. */
        cleanup_close int fd = ws_open_beneath(root_fd, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW, 0, true);
        if (fd < 0)
                return -1;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -1;
        if (!S_ISREG(st.st_mode)) {
                errno = EINVAL;
                return -1;
        }
        if (st.st_nlink > 1) {
                errno = EMLINK;
                return -1;
        }
        struct src s = { .fd = fd, .size = (uint64_t)st.st_size, .limit = scan_max };
        unsigned char head[ARTIFACT_HEAD_MAX];
        size_t n = src_read(&s, head, sizeof(head), 0);
        if (n < sizeof(head) && n < s.limit && n < s.size)
                s.size = n; /* shrank since fstat */
        if (detect(&s, head, n, rel, entry) < 0) {
                errno = ENOMEM;
                return -1;
        }
        return 0;
}

size_t artifact_type_diff(int root_fd, json_t *diff, uint64_t scan_max)
{
        size_t typed = 0, tried = 0, i;
        json_t *a;
        json_array_foreach(diff, i, a) {
                const char *change = json_string_value(json_object_get(a, "change"));
                const char *type = json_string_value(json_object_get(a, "type"));
                const char *path = json_string_value(json_object_get(a, "path"));
                if (change == NULL || type == NULL || path == NULL || strcmp(type, "file") != 0 ||
                    strcmp(change, "deleted") == 0)
                        continue;
                if (tried++ >= ARTIFACT_TYPE_MAX)
                        break;
                /* Typed on a copy: a failure halfway leaves the entry as it was. */
                json_t *fields = json_object();
                if (fields && artifact_detect_at(root_fd, path, scan_max, fields) == 0) {
                        json_object_update(a, fields);
                        typed++;
                }
                json_decref(fields);
        }
        return typed;
}

/* ---- words ---- */

char *artifact_format_size(uint64_t bytes, char *buf, size_t size)
{
        static const char *const units[] = { "KB", "MB", "GB", "TB", "PB", "EB" };
        return ws_format_size_in(bytes, units, true, buf, size);
}

static json_int_t iget(const json_t *e, const char *key, bool *ret_has)
{
        json_t *v = json_object_get(e, key);
        *ret_has = json_is_integer(v);
        return json_integer_value(v);
}

char *artifact_describe(const json_t *e, char *buf, size_t size)
{
        static const struct {
                const char *format, *label;
        } labels[] = {
                { "png", "PNG" },         { "jpeg", "JPEG" },      { "gif", "GIF" },
                { "svg", "SVG" },         { "pdf", "PDF" },        { "csv", "CSV" },
                { "tsv", "TSV" },         { "json", "JSON" },      { "jsonl", "JSON Lines" },
                { "markdown", "Markdown" }, { "html", "HTML" },    { "xml", "XML" },
                { "text", "text" },       { "xlsx", "Excel workbook" }, { "docx", "Word document" },
                { "python", "Python" },   { "shell", "shell script" }, { "yaml", "YAML" },
                { "toml", "TOML" },       { "sql", "SQL" },
                { "pptx", "PowerPoint deck" }, { "zip", "zip archive" }, { "parquet", "Parquet" },
                { "gzip", "gzip" },       { "zstd", "zstd" },      { "sqlite", "SQLite database" },
                { "npy", "NumPy array" }, { "elf", "ELF executable" }, { "binary", "binary" },
                { "empty", "empty" },
        };
        buf[0] = '\0';
        const char *format = json_string_value(json_object_get(e, "format"));
        if (format == NULL)
                return buf;
        const char *label = format;
        for (size_t i = 0; i < ARRAY_SIZE(labels); i++)
                if (strcmp(labels[i].format, format) == 0)
                        label = labels[i].label;
        bool h1, h2, bad = json_is_false(json_object_get(e, "valid"));
        json_int_t a, b;
        if (strcmp(format, "png") == 0 || strcmp(format, "jpeg") == 0 || strcmp(format, "gif") == 0) {
                a = iget(e, "width", &h1);
                b = iget(e, "height", &h2);
                if (h1 && h2)
                        snprintf(buf, size, "%s %" JSON_INTEGER_FORMAT "×%" JSON_INTEGER_FORMAT, label, a, b);
                else
                        snprintf(buf, size, "%s%s", label, bad ? ", unreadable header" : "");
        } else if (strcmp(format, "csv") == 0 || strcmp(format, "tsv") == 0 || strcmp(format, "jsonl") == 0) {
                bool least = false;
                a = iget(e, "rows", &h1);
                if (!h1) {
                        a = iget(e, "rows_at_least", &h1);
                        least = h1;
                }
                b = iget(e, "columns", &h2);
                const char *unit = strcmp(format, "jsonl") == 0 ? "record" : "row";
                if (h2)
                        snprintf(buf, size, "%s %s%" JSON_INTEGER_FORMAT " %s%s × %" JSON_INTEGER_FORMAT " column%s",
                                 label, least ? "at least " : "", a, unit, a == 1 ? "" : "s", b, b == 1 ? "" : "s");
                else
                        snprintf(buf, size, "%s %s%" JSON_INTEGER_FORMAT " %s%s%s", label, least ? "at least " : "",
                                 a, unit, a == 1 ? "" : "s", bad ? ", invalid" : "");
        } else if (strcmp(format, "json") == 0) {
                const char *t = json_string_value(json_object_get(e, "json_type"));
                a = iget(e, "length", &h1);
                b = iget(e, "keys", &h2);
                if (bad)
                        snprintf(buf, size, "JSON, invalid");
                else if (h1)
                        snprintf(buf, size, "JSON array of %" JSON_INTEGER_FORMAT, a);
                else if (h2)
                        snprintf(buf, size, "JSON object, %" JSON_INTEGER_FORMAT " key%s", b, b == 1 ? "" : "s");
                else
                        snprintf(buf, size, "JSON %s", t ? t : "");
        } else if (strcmp(format, "text") == 0 || strcmp(format, "markdown") == 0 || strcmp(format, "python") == 0 ||
                   strcmp(format, "shell") == 0 || strcmp(format, "yaml") == 0 || strcmp(format, "toml") == 0 ||
                   strcmp(format, "sql") == 0) {
                bool least = false;
                a = iget(e, "lines", &h1);
                if (!h1) {
                        a = iget(e, "lines_at_least", &h1);
                        least = h1;
                }
                snprintf(buf, size, "%s, %s%" JSON_INTEGER_FORMAT " line%s", label, least ? "at least " : "", a,
                         a == 1 ? "" : "s");
        } else if (strcmp(format, "pdf") == 0) {
                a = iget(e, "pages", &h1);
                if (h1)
                        snprintf(buf, size, "PDF, %" JSON_INTEGER_FORMAT " page%s", a, a == 1 ? "" : "s");
                else
                        snprintf(buf, size, "PDF");
        } else if (strcmp(format, "xlsx") == 0) {
                a = iget(e, "sheets", &h1);
                snprintf(buf, size, "%s, %" JSON_INTEGER_FORMAT " sheet%s", label, a, a == 1 ? "" : "s");
        } else if (strcmp(format, "zip") == 0) {
                a = iget(e, "entries", &h1);
                if (h1)
                        snprintf(buf, size, "%s, %" JSON_INTEGER_FORMAT " entr%s", label, a, a == 1 ? "y" : "ies");
                else
                        snprintf(buf, size, "%s", label);
        } else {
                snprintf(buf, size, "%s", label);
        }
        return buf;
}

json_t *artifact_csv_preview(const void *data, size_t len, unsigned char delim, size_t max_rows, size_t max_cols,
                             size_t cell_max, bool *ret_more_cols)
{
        struct csv_preview pv = { .rows = json_array(), .cell = { .cap = cell_max }, .max_rows = max_rows,
                                  .max_cols = max_cols };
        struct csv *c = calloc(1, sizeof(*c));
        if (c == NULL || pv.rows == NULL) {
                free(c);
                json_decref(pv.rows);
                return NULL;
        }
        c->delim = delim ? delim : ',';
        c->pv = &pv;
        const unsigned char *p = data;
        for (size_t i = 0; i < len && json_array_size(pv.rows) < max_rows; i++)
                csv_byte(c, p[i]);
        if (json_array_size(pv.rows) < max_rows)
                csv_finish(c);
        json_decref(pv.row);
        capbuf_release(&pv.cell);
        free(c);
        if (ret_more_cols)
                *ret_more_cols = pv.more_cols;
        return pv.rows;
}

char *artifact_result_to_json(const corral_jail_result *res, int ws_fd, struct ws_snapshot *before,
                              corral_error **ret_err)
{
        char *text = corral_jail_result_to_json(res);
        if (text == NULL || before == NULL)
                return text;
        json_t *o = json_loads(text, 0, NULL);
        free(text);
        struct ws_snapshot *after = NULL;
        if (o == NULL || ws_snapshot_dir_next(ws_fd, WS_SNAPSHOT_ALL, before, &after, ret_err) < 0) {
                json_decref(o);
                return NULL;
        }
        json_t *diff = workspace_diff(before, after);
        if (diff)
                artifact_type_diff(ws_fd, diff, ARTIFACT_SCAN_MAX);
        json_object_set_new(o, "artifacts", diff ? diff : json_null());
        if (ws_snapshot_truncated(before) || ws_snapshot_truncated(after))
                json_object_set_new(o, "artifacts_truncated", json_true());
        ws_snapshot_free(after);
        text = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12));
        json_decref(o);
        return text;
}

static int run_direct(const corral_jail_config *cfg, const corral_jail_io *io, corral_jail_result *ret_res,
                      void *userdata, corral_error **ret_err)
{
        (void)userdata;
        return corral_jail_run(cfg, io, ret_res, ret_err);
}

int artifact_jail_run(const corral_jail_config *cfg, const corral_jail_io *io, corral_jail_result *ret_res,
                      char **ret_json, corral_error **ret_err)
{
        return artifact_jail_run_by(cfg, io, run_direct, NULL, ret_res, ret_json, ret_err);
}

int artifact_jail_run_by(const corral_jail_config *cfg, const corral_jail_io *io, artifact_runner run,
                         void *userdata, corral_jail_result *ret_res, char **ret_json, corral_error **ret_err)
{
        *ret_json = NULL;
        cleanup_close int ws_fd = -1;
        struct ws_snapshot *before = NULL;
        if (cfg->workspace) {
                /* The run's own checks first: never walk '/' to refuse it. */
                if (corral_jail_config_validate(cfg, ret_err) < 0)
                        return -1;
                ws_fd = open(cfg->workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (ws_fd < 0)
                        return corral_make_error(ret_err, CORRAL_ERR_USAGE, errno, "cannot open the workspace '%s'",
                                                 cfg->workspace);
                if (ws_snapshot_dir(ws_fd, WS_SNAPSHOT_ALL, &before, ret_err) < 0)
                        return corral_error_prefix(ret_err, "cannot snapshot the workspace '%s'", cfg->workspace);
        }
        int rc = run(cfg, io, ret_res, userdata, ret_err);
        if (rc == 0) {
                *ret_json = artifact_result_to_json(ret_res, ws_fd, before, ret_err);
                if (*ret_json == NULL) {
                        corral_jail_result_release(ret_res);
                        if (ret_err && *ret_err == NULL)
                                corral_fail(ret_err, ENOMEM, "cannot format the JSON result");
                        rc = -1;
                }
        }
        ws_snapshot_free(before);
        return rc;
}
