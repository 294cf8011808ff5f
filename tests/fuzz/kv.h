/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A slow reference for the flat keyed files (memory.stat, memory.events,
 * cgroup.events, cpu.stat), written from the kernel's format rather than
 * from memguard/parse.c: lines of "key value\n", key [a-z0-9_]+, value a
 * decimal u64, each line shorter than MG_PARSE_MAX_LINE; unknown keys
 * ignored, a known key twice rejected, anything else rejected.  Linear
 * lookup, no cleverness, so the fuzzer can compare the two.
 */

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "parse.h"

struct kv_ref_key {
        const char *name;
        size_t offset;
};

static inline int kv_ref_parse(const uint8_t *buf, size_t len, const struct kv_ref_key *keys, size_t n, void *out,
                               uint64_t *ret_seen) {
        uint64_t seen = 0;
        size_t i = 0;

        if (len == 0 || buf[len - 1] != '\n')
                return -EBADMSG;
        while (i < len) {
                size_t line = i, k = i, klen, j;
                uint64_t v = 0;

                while (i < len && ((buf[i] >= 'a' && buf[i] <= 'z') || (buf[i] >= '0' && buf[i] <= '9') || buf[i] == '_'))
                        i++;
                klen = i - k;
                if (klen == 0 || i >= len || buf[i] != ' ')
                        return -EBADMSG;
                i++;
                if (i >= len || buf[i] < '0' || buf[i] > '9')
                        return -EBADMSG;
                for (; i < len && buf[i] >= '0' && buf[i] <= '9'; i++) {
                        unsigned d = (unsigned) (buf[i] - '0');
                        if (v > (UINT64_MAX - d) / 10)
                                return -EBADMSG;
                        v = v * 10 + d;
                }
                if (i >= len || buf[i] != '\n' || i - line >= MG_PARSE_MAX_LINE)
                        return -EBADMSG;
                i++;
                for (j = 0; j < n; j++)
                        if (strlen(keys[j].name) == klen && memcmp(keys[j].name, buf + k, klen) == 0)
                                break;
                if (j == n)
                        continue;
                if (seen & (UINT64_C(1) << j))
                        return -EBADMSG;
                seen |= UINT64_C(1) << j;
                memcpy((char *) out + keys[j].offset, &v, sizeof(v));
        }
        *ret_seen = seen;
        return 0;
}
