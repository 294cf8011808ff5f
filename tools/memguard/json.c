/* SPDX-License-Identifier: Apache-2.0 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "memguard/memguard.h"

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if it is not one:
 * no overlongs, no surrogates, nothing above U+10FFFF (RFC 3629). */
size_t mgt_utf8_len(const unsigned char *s) {
        unsigned char c = s[0];
        size_t n;
        uint32_t cp;

        if (c < 0x80)
                return 1;
        if (c >= 0xc2 && c <= 0xdf) {
                n = 2;
                cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
                n = 3;
                cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
                n = 4;
                cp = c & 0x07;
        } else {
                return 0;
        }
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0; /* also stops at the NUL */
                cp = cp << 6 | (s[i] & 0x3f);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return n;
}

size_t mgt_escape(const char *s, char *out, size_t size, const char *invalid,
                  const char *(*esc)(unsigned char c, char buf[8])) {
        const unsigned char *p = (const unsigned char *) s;
        size_t need = 0;
        char buf[8];

#define PUT(str, n)                                                             \
        do {                                                                    \
                for (size_t k_ = 0; k_ < (n); k_++, need++)                     \
                        if (need + 1 < size)                                    \
                                out[need] = (str)[k_];                          \
        } while (0)

        while (*p) {
                size_t n = mgt_utf8_len(p);
                const char *e = n == 1 ? esc(*p, buf) : NULL;
                if (n == 0) {
                        PUT(invalid, strlen(invalid));
                        p++;
                } else if (e) {
                        PUT(e, strlen(e));
                        p++;
                } else {
                        PUT((const char *) p, n);
                        p += n;
                }
        }
#undef PUT
        if (size > 0)
                out[need < size ? need : size - 1] = '\0';
        return need;
}

/* A line stays one line whatever went into it; UTF-8 passes. */
static const char *line_escape_byte(unsigned char c, char buf[8]) {
        if (c >= 0x20 && c != 0x7f)
                return NULL;
        snprintf(buf, 8, "\\x%02x", c);
        return buf;
}

size_t mgt_line_escape(const char *s, char *out, size_t size) {
        return mgt_escape(s, out, size, "\xef\xbf\xbd", line_escape_byte);
}

/* '"', '\\' and every control character. */
static const char *json_escape_byte(unsigned char c, char buf[8]) {
        switch (c) {
        case '"': return "\\\"";
        case '\\': return "\\\\";
        case '\n': return "\\n";
        case '\t': return "\\t";
        case '\r': return "\\r";
        case '\b': return "\\b";
        case '\f': return "\\f";
        default:
                if (c >= 0x20)
                        return NULL;
                snprintf(buf, 8, "\\u%04x", c);
                return buf;
        }
}

size_t mgt_json_escape(const char *s, char *out, size_t size) {
        return mgt_escape(s, out, size, "\\ufffd", json_escape_byte);
}

static void grow(struct mgt_json *j, size_t more) {
        if (j->failed || j->len + more + 1 <= j->cap)
                return;
        size_t cap = j->cap ? j->cap : 256;
        while (cap < j->len + more + 1)
                cap *= 2;
        char *b = realloc(j->buf, cap);
        if (!b) {
                j->failed = true;
                return;
        }
        j->buf = b;
        j->cap = cap;
}

/* The field to the tap, if any. */
static void tap(struct mgt_json *j, const char *k, const char *value) {
        if (j->tap && j->tap->field)
                j->tap->field(k, value, j->tap->userdata);
}

static bool no_text(const struct mgt_json *j) {
        return j->tap && j->tap->no_text;
}

static void append(struct mgt_json *j, const char *s, size_t n) {
        if (no_text(j))
                return;
        grow(j, n);
        if (j->failed)
                return;
        memcpy(j->buf + j->len, s, n);
        j->len += n;
        j->buf[j->len] = '\0';
}

/* A number snprintf() wrote into num (n < 0: it failed, nothing to add). */
static void append_num(struct mgt_json *j, const char *num, int n) {
        if (n < 0)
                j->failed = true;
        else
                append(j, num, (size_t) n);
}

static void append_string(struct mgt_json *j, const char *s) {
        size_t n;

        if (no_text(j))
                return;
        n = mgt_json_escape(s, NULL, 0);
        append(j, "\"", 1);
        grow(j, n);
        if (j->failed)
                return;
        mgt_json_escape(s, j->buf + j->len, n + 1);
        j->len += n;
        append(j, "\"", 1);
}

static void key(struct mgt_json *j, const char *k) {
        if (!j->first)
                append(j, ",", 1);
        j->first = false;
        append_string(j, k);
        append(j, ":", 1);
}

void mgt_json_begin_tap(struct mgt_json *j, const struct mgt_json_tap *t) {
        *j = (struct mgt_json) { .first = true, .tap = t };
        append(j, "{", 1);
}

void mgt_json_begin(struct mgt_json *j) {
        mgt_json_begin_tap(j, NULL);
}

void mgt_json_str(struct mgt_json *j, const char *k, const char *val) {
        key(j, k);
        if (val) {
                append_string(j, val);
                tap(j, k, val);
        } else {
                append(j, "null", 4);
        }
}

void mgt_json_u64(struct mgt_json *j, const char *k, uint64_t val) {
        char num[24];
        int n = snprintf(num, sizeof(num), "%" PRIu64, val);
        key(j, k);
        append_num(j, num, n);
        tap(j, k, num);
}

void mgt_json_i64(struct mgt_json *j, const char *k, int64_t val) {
        char num[24];
        int n = snprintf(num, sizeof(num), "%" PRId64, val);
        key(j, k);
        append_num(j, num, n);
        tap(j, k, num);
}

void mgt_json_bool(struct mgt_json *j, const char *k, bool val) {
        key(j, k);
        append(j, val ? "true" : "false", val ? 4 : 5);
        tap(j, k, val ? "true" : "false");
}

void mgt_json_null(struct mgt_json *j, const char *k) {
        key(j, k);
        append(j, "null", 4);
}

void mgt_json_bytes(struct mgt_json *j, const char *k, uint64_t val) {
        if (val == MG_UNLIMITED)
                mgt_json_null(j, k);
        else
                mgt_json_u64(j, k, val);
}

void mgt_json_centi(struct mgt_json *j, const char *k, uint64_t centi) {
        char num[32];
        int n = snprintf(num, sizeof(num), "%" PRIu64 ".%02" PRIu64, centi / 100, centi % 100);
        key(j, k);
        append_num(j, num, n);
        tap(j, k, num);
}

/* An array's items for the tap: space-separated, as far as they fit (the
 * arrays are short: 16 pids, 8 windows). */
struct items {
        char text[512];
        size_t len;
};

static void item(struct items *it, const char *s) {
        int n = snprintf(it->text + it->len, sizeof(it->text) - it->len, "%s%s", it->len ? " " : "", s);
        if (n > 0 && (size_t) n < sizeof(it->text) - it->len)
                it->len += (size_t) n;
}

void mgt_json_i32_array(struct mgt_json *j, const char *k, const int32_t *val, size_t n) {
        struct items it = { .len = 0 };
        char num[16];
        key(j, k);
        append(j, "[", 1);
        for (size_t i = 0; i < n; i++) {
                if (i)
                        append(j, ",", 1);
                append_num(j, num, snprintf(num, sizeof(num), "%" PRId32, val[i]));
                item(&it, num);
        }
        append(j, "]", 1);
        tap(j, k, it.text);
}

void mgt_json_u64_array(struct mgt_json *j, const char *k, const uint64_t *val, size_t n) {
        struct items it = { .len = 0 };
        char num[24];
        key(j, k);
        append(j, "[", 1);
        for (size_t i = 0; i < n; i++) {
                if (i)
                        append(j, ",", 1);
                append_num(j, num, snprintf(num, sizeof(num), "%" PRIu64, val[i]));
                item(&it, num);
        }
        append(j, "]", 1);
        tap(j, k, it.text);
}

void mgt_json_char_array(struct mgt_json *j, const char *k, const char *val, size_t n, char unknown) {
        struct items it = { .len = 0 };
        key(j, k);
        append(j, "[", 1);
        for (size_t i = 0; i < n; i++) {
                char one[2] = { val[i], '\0' };
                if (i)
                        append(j, ",", 1);
                if (val[i] == unknown || val[i] == '\0') {
                        append(j, "null", 4);
                        if (!unknown)
                                one[0] = '?';
                        else
                                one[0] = unknown;
                } else {
                        append_string(j, one);
                }
                item(&it, one);
        }
        append(j, "]", 1);
        tap(j, k, it.text);
}

const char *mgt_json_end(struct mgt_json *j) {
        append(j, "}", 1);
        return j->failed ? NULL : j->buf;
}

void mgt_json_free(struct mgt_json *j) {
        free(j->buf);
        *j = (struct mgt_json) { 0 };
}
