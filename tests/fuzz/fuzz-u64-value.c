/* SPDX-License-Identifier: Apache-2.0 */
/* One-value files (memory.current, memory.high, memory.max): "max" or a
 * decimal u64, one optional newline; checked against strtoull. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "parse.h"

static int reference(const uint8_t *data, size_t size, uint64_t *ret) {
        char buf[32];
        size_t len = size;

        if (len > 0 && data[len - 1] == '\n')
                len--;
        if (len == 3 && memcmp(data, "max", 3) == 0) {
                *ret = UINT64_MAX;
                return 0;
        }
        if (len == 0)
                return -EBADMSG;
        for (size_t i = 0; i < len; i++)
                if (data[i] < '0' || data[i] > '9')
                        return -EBADMSG;
        /* leading zeros change nothing; UINT64_MAX has 20 digits */
        while (len > 1 && data[0] == '0')
                data++, len--;
        if (len >= sizeof(buf))
                return -EBADMSG;
        memcpy(buf, data, len);
        buf[len] = '\0';
        errno = 0;
        unsigned long long v = strtoull(buf, NULL, 10);
        if (errno == ERANGE)
                return -EBADMSG;
        *ret = v;
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint64_t a = 7, b = 0;
        int ra = mg_parse_u64_value((const char *) data, size, &a);
        int rb = reference(data, size, &b);

        FUZZ_CHECK(ra == rb);
        FUZZ_CHECK(ra < 0 ? a == 7 : a == b);
        return 0;
}
