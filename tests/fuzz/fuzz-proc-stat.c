/* SPDX-License-Identifier: Apache-2.0 */
/* /proc/PID/stat, field 3: "PID (COMM) S ...", COMM anything the process
 * named itself; checked against a reader that takes the last ")" with
 * memrchr and the pid with strtoull. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "parse.h"

static int reference(const uint8_t *data, size_t size, char *ret) {
        size_t digits = 0;
        const uint8_t *close;

        while (digits < size && data[digits] >= '0' && data[digits] <= '9')
                digits++;
        if (digits == 0 || size - digits < 2 || data[digits] != ' ' || data[digits + 1] != '(')
                return -EBADMSG;
        if (digits > 19) {
                /* the pid must fit a u64, as the parser reads it (leading
                 * zeros and all) */
                size_t zeros = 0;
                char num[32];
                while (zeros < digits - 1 && data[zeros] == '0')
                        zeros++;
                if (digits - zeros >= sizeof(num))
                        return -EBADMSG;
                memcpy(num, data + zeros, digits - zeros);
                num[digits - zeros] = '\0';
                errno = 0;
                (void) strtoull(num, NULL, 10);
                if (errno == ERANGE)
                        return -EBADMSG;
        }
        close = memrchr(data + digits + 2, ')', size - digits - 2);
        if (!close || (size_t) (data + size - close) < 4 || close[1] != ' ' || close[3] != ' ')
                return -EBADMSG;
        if (!((close[2] >= 'A' && close[2] <= 'Z') || (close[2] >= 'a' && close[2] <= 'z')))
                return -EBADMSG;
        *ret = (char) close[2];
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char a = '#', b = 0;
        int ra = mg_parse_proc_stat_state((const char *) data, size, &a);
        int rb = reference(data, size, &b);

        FUZZ_CHECK(ra == rb);
        FUZZ_CHECK(ra < 0 ? a == '#' : a == b);
        return 0;
}
