/* SPDX-License-Identifier: Apache-2.0 */
/* memory.stat: mg_parse_memstat() against the reference, field by field. */
#include <stddef.h>

#include "fuzz.h"
#include "kv.h"
#include "parse.h"
#include "policy.h"

#define K(f) { #f, offsetof(struct mg_memstat, f) }
static const struct kv_ref_key keys[] = {
        K(anon), K(file), K(kernel), K(kernel_stack), K(pagetables), K(sec_pagetables), K(percpu), K(sock),
        K(vmalloc), K(shmem), K(file_mapped), K(file_dirty), K(file_writeback), K(slab), K(slab_reclaimable),
        K(slab_unreclaimable), K(active_anon), K(inactive_anon), K(active_file), K(inactive_file), K(unevictable),
        K(workingset_refault_anon), K(workingset_refault_file), K(workingset_activate_anon),
        K(workingset_activate_file), K(workingset_restore_anon), K(workingset_restore_file), K(pgscan), K(pgsteal),
        K(pgfault), K(pgmajfault),
};
#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

static int reference(const uint8_t *data, size_t size, struct mg_memstat *ret) {
        struct mg_memstat st = {};
        uint64_t seen;
        int r = kv_ref_parse(data, size, keys, N_KEYS, &st, &seen);

        if (r < 0)
                return r;
        if (!(seen & 1)) /* anon */
                return -EBADMSG;
        if (!(seen & 4)) { /* no "kernel" line (before 5.18): its parts */
                st.kernel = st.kernel_stack + st.pagetables + st.sec_pagetables + st.percpu + st.vmalloc + st.slab;
                if (st.slab == 0)
                        st.kernel += st.slab_reclaimable + st.slab_unreclaimable;
                st.kernel_derived = true;
        }
        *ret = st;
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct mg_memstat a = {}, b = {};
        uint64_t keys_seen = 0;
        int ra = mg_parse_memstat((const char *) data, size, &a);
        int rb = reference(data, size, &b);
        int rk = mg_parse_memstat_keys((const char *) data, size, &a, &keys_seen, NULL);

        FUZZ_CHECK(ra == rb);
        FUZZ_CHECK(rk == ra);
        if (ra < 0)
                return 0;
        for (size_t i = 0; i < N_KEYS; i++)
                FUZZ_CHECK(memcmp((const char *) &a + keys[i].offset, (const char *) &b + keys[i].offset, 8) == 0);
        FUZZ_CHECK(a.kernel == b.kernel && a.kernel_derived == b.kernel_derived);
        FUZZ_CHECK(keys_seen != 0);
        (void) mg_used_bytes(&a);

        /* The tick's parse: with a layout learnt from this buffer it reads
         * it, and agrees with the full parse on every key it reads; with the
         * layout of a kernel's buffer it either refuses or agrees too. */
        static const char k7[] = "anon 1\nfile 2\nkernel 3\nkernel_stack 4\npagetables 5\nsec_pagetables 6\n"
                                 "percpu 7\nsock 8\nvmalloc 9\nshmem 10\nworkingset_restore_anon 11\n"
                                 "workingset_restore_file 12\n";
        struct mg_memstat_layout own = {}, other = {};
        struct mg_memstat c, t;
        FUZZ_CHECK(mg_parse_memstat_keys((const char *) data, size, &c, NULL, &own) == 0);
        FUZZ_CHECK(mg_parse_memstat_keys(k7, sizeof(k7) - 1, &t, NULL, &other) == 0);
        const struct mg_memstat_layout *layouts[] = { &own, &other };
        for (int i = 0; i < 2; i++) {
                int rt = mg_parse_memstat_tick((const char *) data, size, layouts[i], &t);
                FUZZ_CHECK(i == 1 || rt == 0);
                if (rt < 0)
                        continue;
                FUZZ_CHECK(t.anon == a.anon && t.shmem == a.shmem && t.sock == a.sock && t.kernel == a.kernel &&
                           t.kernel_derived == a.kernel_derived &&
                           t.workingset_restore_anon == a.workingset_restore_anon &&
                           t.workingset_restore_file == a.workingset_restore_file && t.file == a.file &&
                           t.file_mapped == a.file_mapped &&
                           t.workingset_refault_file == a.workingset_refault_file);
        }
        return 0;
}
