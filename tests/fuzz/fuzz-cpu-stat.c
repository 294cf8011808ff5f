/* SPDX-License-Identifier: Apache-2.0 */
/* cpu.stat: usage_usec required, the rest ignored. */
#include <stddef.h>

#include "fuzz.h"
#include "kv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const struct kv_ref_key keys[] = { { "usage_usec", 0 } };
        uint64_t a = 12345, b = 0, seen;
        int ra = mg_parse_cpu_usage((const char *) data, size, &a);
        int rb = kv_ref_parse(data, size, keys, 1, &b, &seen);

        if (rb == 0 && !seen)
                rb = -EBADMSG;
        FUZZ_CHECK(ra == rb);
        FUZZ_CHECK(ra < 0 ? a == 12345 : a == b);
        return 0;
}
