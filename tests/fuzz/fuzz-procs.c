/* SPDX-License-Identifier: Apache-2.0 */
/* cgroup.procs: one "%d\n" pid per line; checked against a line reader
 * with strtol, and the digest against the same lines in reverse order
 * (it must not depend on the order). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "parse.h"

/* Fills pids (all of them, up to max) and returns their count, or -1. */
static long reference(const uint8_t *data, size_t size, int32_t *pids, size_t max) {
        long n = 0;
        for (size_t i = 0; i < size;) {
                const uint8_t *nl = memchr(data + i, '\n', size - i);
                char line[16], *end;
                size_t len;
                if (!nl)
                        return -1; /* a line without its newline */
                len = (size_t) (nl - (data + i));
                if (len == 0 || len > 10 || data[i] == '0')
                        return -1;
                for (size_t k = 0; k < len; k++)
                        if (data[i + k] < '0' || data[i + k] > '9')
                                return -1;
                memcpy(line, data + i, len);
                line[len] = '\0';
                long long v = strtoll(line, &end, 10);
                if (v < 1 || v > INT32_MAX)
                        return -1;
                if ((size_t) n < max)
                        pids[n] = (int32_t) v;
                n++;
                i += len + 1;
        }
        return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static int32_t pids[1 << 17];
        struct mg_procs a = { .n = 7 }, b;
        int ra = mg_parse_procs((const char *) data, size, &a);
        long rb = reference(data, size, pids, sizeof(pids) / sizeof(pids[0]));

        FUZZ_CHECK((ra == 0) == (rb >= 0));
        if (ra < 0) {
                FUZZ_CHECK(ra == -EBADMSG && a.n == 7); /* not written on failure */
                return 0;
        }
        FUZZ_CHECK(a.n == (uint32_t) rb);
        for (uint32_t i = 0; i < a.n && i < MG_PROCS_KEEP; i++)
                FUZZ_CHECK(a.pid[i] == pids[i]);
        if ((size_t) rb > sizeof(pids) / sizeof(pids[0]))
                return 0;
        /* the same lines backwards: the same count and digest */
        char *rev = malloc(size ? size : 1);
        size_t at = 0;
        if (!rev)
                abort();
        for (long i = rb - 1; i >= 0; i--) {
                char num[16];
                int k = snprintf(num, sizeof(num), "%d\n", (int) pids[i]);
                memcpy(rev + at, num, (size_t) k);
                at += (size_t) k;
        }
        FUZZ_CHECK(at == size);
        FUZZ_CHECK(mg_parse_procs(rev, at, &b) == 0);
        FUZZ_CHECK(b.n == a.n && b.digest == a.digest);
        free(rev);
        return 0;
}
