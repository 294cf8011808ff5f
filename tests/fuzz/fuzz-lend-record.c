/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The lend record (user.memguard.lend, memguard/guard.h): whoever can write
 * the cgroup directory's xattrs can write one, so the parser sees hostile
 * input.  What it accepts must be exactly what mg_lend_record_format()
 * writes for the parsed fields: one canonical text per record.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "guard.h"
#include "lend.h"
#include "tick.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct mg_lend_record r;
        char again[MG_LEND_RECORD_MAX + 1];
        int n;

        memset(&r, 0x5a, sizeof(r));
        if (mg_lend_record_parse((const char *) data, size, &r) < 0) {
                /* not written on failure */
                FUZZ_CHECK(r.pid == UINT64_C(0x5a5a5a5a5a5a5a5a));
                return 0;
        }
        FUZZ_CHECK(size <= MG_LEND_RECORD_MAX);
        FUZZ_CHECK(memchr(r.old_high, '\0', sizeof(r.old_high)) != NULL);
        FUZZ_CHECK(strcmp(r.old_high, "max") == 0 ? r.old_high_bytes == UINT64_MAX
                                                   : r.old_high_bytes != UINT64_MAX);
        n = mg_lend_record_format(&r, again, sizeof(again));
        FUZZ_CHECK(n > 0 && (size_t) n == size && memcmp(again, data, size) == 0);
        return 0;
}
