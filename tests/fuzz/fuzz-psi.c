/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memory.pressure / io.pressure: mg_parse_psi() against a reference of the
 * kernel's format (kernel/sched/psi.c psi_show: "%s avg10=%lu.%02lu
 * avg60=%lu.%02lu avg300=%lu.%02lu total=%llu\n", a percentage at most
 * 100.00), a "some" line and an optional "full" line.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "fuzz.h"
#include "parse.h"

struct cursor {
        const uint8_t *p, *end;
};

static bool word(struct cursor *c, const char *w) {
        size_t n = strlen(w);
        if ((size_t) (c->end - c->p) < n || memcmp(c->p, w, n) != 0)
                return false;
        c->p += n;
        return true;
}

static bool digits(struct cursor *c, uint64_t *ret) {
        uint64_t v = 0;
        const uint8_t *s = c->p;
        for (; c->p < c->end && *c->p >= '0' && *c->p <= '9'; c->p++) {
                unsigned d = (unsigned) (*c->p - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return false;
                v = v * 10 + d;
        }
        *ret = v;
        return c->p > s;
}

static bool centi(struct cursor *c, uint32_t *ret) {
        uint64_t ip, f1, f2;
        if (!digits(c, &ip) || !word(c, "."))
                return false;
        if (c->end - c->p < 2 || c->p[0] < '0' || c->p[0] > '9' || c->p[1] < '0' || c->p[1] > '9')
                return false;
        f1 = (uint64_t) (c->p[0] - '0');
        f2 = (uint64_t) (c->p[1] - '0');
        c->p += 2;
        if (ip > 100 || ip * 100 + f1 * 10 + f2 > 10000)
                return false;
        *ret = (uint32_t) (ip * 100 + f1 * 10 + f2);
        return true;
}

static bool line(struct cursor *c, const char *name, struct mg_psi_line *ret) {
        const uint8_t *start = c->p;
        if (!word(c, name) || !word(c, " avg10=") || !centi(c, &ret->avg10_centipct) || !word(c, " avg60=") ||
            !centi(c, &ret->avg60_centipct) || !word(c, " avg300=") || !centi(c, &ret->avg300_centipct) ||
            !word(c, " total=") || !digits(c, &ret->total_usec) || !word(c, "\n"))
                return false;
        /* a line, without its newline, is shorter than MG_PARSE_MAX_LINE */
        return c->p - 1 - start < MG_PARSE_MAX_LINE;
}

static int reference(const uint8_t *data, size_t size, struct mg_psi *ret) {
        struct cursor c = { data, data + size };
        struct mg_psi psi = {};

        if (!line(&c, "some", &psi.some))
                return -EBADMSG;
        if (c.p < c.end) {
                if (!line(&c, "full", &psi.full) || c.p != c.end)
                        return -EBADMSG;
                psi.has_full = true;
        }
        *ret = psi;
        return 0;
}

static bool same_line(const struct mg_psi_line *a, const struct mg_psi_line *b) {
        return a->avg10_centipct == b->avg10_centipct && a->avg60_centipct == b->avg60_centipct &&
               a->avg300_centipct == b->avg300_centipct && a->total_usec == b->total_usec;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct mg_psi a = {}, b = {};
        int ra = mg_parse_psi((const char *) data, size, &a);
        int rb = reference(data, size, &b);

        FUZZ_CHECK(ra == rb);
        if (ra < 0)
                return 0;
        FUZZ_CHECK(same_line(&a.some, &b.some) && a.has_full == b.has_full);
        FUZZ_CHECK(!a.has_full || same_line(&a.full, &b.full));
        FUZZ_CHECK(a.some.avg10_centipct <= 10000 && a.some.avg60_centipct <= 10000 && a.some.avg300_centipct <= 10000);
        return 0;
}
