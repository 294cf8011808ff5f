/* SPDX-License-Identifier: Apache-2.0 */
/* memory.events(.local): mg_parse_mem_events() against the reference. */
#include <stddef.h>

#include "fuzz.h"
#include "kv.h"

#define K(f) { #f, offsetof(struct mg_mem_events, f) }
static const struct kv_ref_key keys[] = {
        K(low), K(high), K(max), K(oom), K(oom_kill), K(oom_group_kill),
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct mg_mem_events a = {}, b = {}, c = {};
        uint64_t seen = 0, seen_keys = 0;
        int ra = mg_parse_mem_events((const char *) data, size, &a);
        int rb = kv_ref_parse(data, size, keys, sizeof(keys) / sizeof(keys[0]), &b, &seen);
        int rc = mg_parse_mem_events_keys((const char *) data, size, &c, &seen_keys);

        FUZZ_CHECK(ra == rb && rc == ra);
        if (ra < 0)
                return 0;
        FUZZ_CHECK(memcmp(&a, &b, sizeof(a)) == 0 && memcmp(&a, &c, sizeof(a)) == 0);
        /* the parser's mask counts the same keys, whatever their bit order */
        FUZZ_CHECK(__builtin_popcountll(seen) == __builtin_popcountll(seen_keys));
        return 0;
}
