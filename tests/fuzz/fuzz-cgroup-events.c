/* SPDX-License-Identifier: Apache-2.0 */
/* cgroup.events: "populated" required and 0 or 1; "frozen" known. */
#include <stddef.h>

#include "fuzz.h"
#include "kv.h"

struct ev {
        uint64_t populated, frozen;
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const struct kv_ref_key keys[] = {
                { "populated", offsetof(struct ev, populated) },
                { "frozen", offsetof(struct ev, frozen) },
        };
        struct ev e = {};
        uint64_t seen;
        int populated = -1;
        int ra = mg_parse_populated((const char *) data, size, &populated);
        int rb = kv_ref_parse(data, size, keys, 2, &e, &seen);

        if (rb == 0 && (!(seen & 1) || e.populated > 1))
                rb = -EBADMSG;
        FUZZ_CHECK(ra == rb);
        if (ra == 0)
                FUZZ_CHECK((uint64_t) populated == e.populated);
        else
                FUZZ_CHECK(populated == -1); /* not written on failure */

        int frozen = -1;
        int fa = mg_parse_frozen((const char *) data, size, &frozen);
        int fb = kv_ref_parse(data, size, keys, 2, &e, &seen);

        if (fb == 0 && !(seen & 2))
                fb = -ENODATA;
        else if (fb == 0 && e.frozen > 1)
                fb = -EBADMSG;
        FUZZ_CHECK(fa == fb);
        if (fa == 0)
                FUZZ_CHECK((uint64_t) frozen == e.frozen);
        else
                FUZZ_CHECK(frozen == -1);
        return 0;
}
