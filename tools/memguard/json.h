/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * One flat JSON object per line (scalars, and arrays of them): enough for
 * the event stream and `stat --json`, no parser.  The buffer grows as needed; after an allocation
 * failure every call is a no-op and mgt_json_end() returns NULL.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Each field of an object as it is added, for another format (the
 * journal's, journal.h): its key and its value as text, a string as it
 * is (unescaped), a number in decimal, "true" or "false", an array's items
 * separated by spaces; a null is not passed.  With no_text the object's
 * JSON is not built at all (no allocation; mgt_json_end() returns NULL). */
struct mgt_json_tap {
        void (*field)(const char *key, const char *value, void *userdata);
        void *userdata;
        bool no_text;
};

struct mgt_json {
        char *buf;
        size_t len, cap;
        bool failed, first;
        const struct mgt_json_tap *tap;
};

/*
 * Writes s as the contents of a JSON string (no quotes) into out: '"', '\\'
 * and control characters escaped, valid UTF-8 kept, each byte of an invalid
 * sequence replaced by U+FFFD (cgroup names are bytes, a consumer wants
 * text).  Returns the length it needed, like snprintf; out is always
 * NUL-terminated when size > 0.
 */
size_t mgt_json_escape(const char *s, char *out, size_t size);
/* The walk both formats escape with (JSON here, the metrics' label values
 * in metrics.c): valid UTF-8 copied, each byte of an invalid sequence
 * written as invalid, and a single byte for which esc() returns a text
 * written as that text (buf: 8 bytes it may use). */
size_t mgt_escape(const char *s, char *out, size_t size, const char *invalid,
                  const char *(*esc)(unsigned char c, char buf[8]));

/* s as one line of text, as every line the tool prints is: a control
 * byte (a tenant's xattr value, a cgroup's name) written as \xNN, a byte
 * that is not UTF-8 as U+FFFD.  Returns the length it needed, like
 * snprintf. */
size_t mgt_line_escape(const char *s, char *out, size_t size);

/* Length of the valid UTF-8 sequence at s (1-4), 0 if it is not one (no
 * overlongs, no surrogates, nothing above U+10FFFF; stops at a NUL). */
size_t mgt_utf8_len(const unsigned char *s);

void mgt_json_begin(struct mgt_json *j);
/* The same, with each field passed to tap too (NULL: none). */
void mgt_json_begin_tap(struct mgt_json *j, const struct mgt_json_tap *tap);
void mgt_json_str(struct mgt_json *j, const char *key, const char *val);   /* NULL: null */
void mgt_json_u64(struct mgt_json *j, const char *key, uint64_t val);
void mgt_json_i64(struct mgt_json *j, const char *key, int64_t val);
void mgt_json_bool(struct mgt_json *j, const char *key, bool val);
void mgt_json_null(struct mgt_json *j, const char *key);
/* A byte count, null for MG_UNLIMITED ("max"). */
void mgt_json_bytes(struct mgt_json *j, const char *key, uint64_t val);
/* Hundredths as a decimal number: 1234 -> 12.34 (PSI averages in percent). */
void mgt_json_centi(struct mgt_json *j, const char *key, uint64_t centi);
/* [1,2,3] */
void mgt_json_i32_array(struct mgt_json *j, const char *key, const int32_t *val, size_t n);
void mgt_json_u64_array(struct mgt_json *j, const char *key, const uint64_t *val, size_t n);
/* ["D","R",null]: one-character strings, null for the character unknown
 * (process states, '?' where unread). */
void mgt_json_char_array(struct mgt_json *j, const char *key, const char *val, size_t n, char unknown);
/* Closes the object; returns the text (no newline) or NULL.  The caller
 * frees j->buf (mgt_json_free) either way. */
const char *mgt_json_end(struct mgt_json *j);
void mgt_json_free(struct mgt_json *j);
