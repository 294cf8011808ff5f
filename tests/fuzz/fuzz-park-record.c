/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The park record (user.memguard.park, memguard/park.h): whoever can write
 * the cgroup directory's xattrs can write one, so the parser sees hostile
 * input.  What it accepts must be exactly what mg_park_record_format()
 * writes for the parsed fields: one canonical text per record, an id that
 * is never 0 and a reason the library names.
 */
#include <string.h>

#include "fuzz.h"
#include "park.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct mg_park_record r;
        char again[MG_PARK_RECORD_MAX + 1];
        int n;

        memset(&r, 0x5a, sizeof(r));
        if (mg_park_record_parse((const char *) data, size, &r) < 0) {
                /* not written on failure */
                FUZZ_CHECK(r.pid == UINT64_C(0x5a5a5a5a5a5a5a5a) && r.id == UINT64_C(0x5a5a5a5a5a5a5a5a));
                return 0;
        }
        FUZZ_CHECK(size <= MG_PARK_RECORD_MAX);
        FUZZ_CHECK(r.id != 0);
        FUZZ_CHECK(r.reason == MG_KILL_OVERSHOOT || r.reason == MG_KILL_STALL);
        n = mg_park_record_format(&r, again, sizeof(again));
        FUZZ_CHECK(n > 0 && (size_t) n == size && memcmp(again, data, size) == 0);
        return 0;
}
