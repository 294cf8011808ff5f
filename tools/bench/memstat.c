/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memory.stat buffers for the parser benchmarks and the fixtures.
 *
 * The keys, in the kernel's order, are those Debian's 7.2.13+deb14 and
 * 6.1.0-50 kernels print for a cgroup (captured in the VM harness after a
 * 64 MiB write and two reads under memory.max 32 MiB).  bench_memstat_7x
 * keeps the 7.2 keys with the values of a busy 1 GiB actor (every counter
 * non-zero, 1595 bytes, 71 keys): what a guard parses on
 * a production host.  The captured texts themselves follow.
 */
#include "bench.h"

const char bench_memstat_7x[] =
        "anon 734003200\nfile 268435456\nkernel 25165824\nkernel_stack 174854144\n"
        "pagetables 81985536\nsec_pagetables 212967424\npercpu 350466048\nsock 65536\n"
        "vmalloc 26923008\nshmem 4194304\nzswap 39886848\nzswapped 288698368\n"
        "zswap_incomp 51531776\nfile_mapped 197324800\nfile_dirty 313880576\n"
        "file_writeback 32137216\nswapcached 273424384\nanon_thp 116264960\nfile_thp 21127168\n"
        "shmem_thp 47140864\ninactive_anon 233807872\nactive_anon 225501184\n"
        "inactive_file 38502400\nactive_file 130203648\nunevictable 49700864\n"
        "slab_reclaimable 296841216\nslab_unreclaimable 228909056\nslab 32731136\n"
        "workingset_refault_anon 75903910\nworkingset_refault_file 16626417\n"
        "workingset_activate_anon 29972626\nworkingset_activate_file 84651177\n"
        "workingset_restore_anon 84222661\nworkingset_restore_file 78258519\n"
        "workingset_nodereclaim 8312983\npgdemote_kswapd 77467446\npgdemote_direct 78600039\n"
        "pgdemote_khugepaged 53251552\npgdemote_proactive 6665764\npgsteal_kswapd 29683100\n"
        "pgsteal_direct 6262221\npgsteal_khugepaged 74724297\npgsteal_proactive 17884421\n"
        "pgscan_kswapd 38880700\npgscan_direct 56265890\npgscan_khugepaged 19371589\n"
        "pgscan_proactive 72579631\npgrefill 15819806\npgpromote_success 76636738\n"
        "pgscan 41413729\npgsteal 75206458\npswpin 91546852\npswpout 24266684\npgfault 13841903\n"
        "pgmajfault 78071052\npgactivate 76675755\npgdeactivate 85763514\npglazyfree 25225622\n"
        "pglazyfreed 49992352\nswpin_zero 13086910\nswpout_zero 73527017\nzswpin 95587889\n"
        "zswpout 8437393\nzswpwb 75758230\nthp_fault_alloc 8009533\nthp_collapse_alloc 83092061\n"
        "thp_swpout 27653310\nthp_swpout_fallback 66637625\nnuma_pages_migrated 91331738\n"
        "numa_pte_updates 71376283\nnuma_hint_faults 57400467\n";

/* 7.2.13+deb14 as captured (1168 bytes, 71 keys). */
const char bench_memstat_7x_captured[] =
        "anon 0\nfile 32686080\nkernel 114688\nkernel_stack 0\npagetables 0\nsec_pagetables 0\n"
        "percpu 0\nsock 0\nvmalloc 0\nshmem 0\nzswap 0\nzswapped 0\nzswap_incomp 0\n"
        "file_mapped 0\nfile_dirty 0\nfile_writeback 0\nswapcached 0\nanon_thp 0\n"
        "file_thp 10485760\nshmem_thp 0\ninactive_anon 0\nactive_anon 0\ninactive_file 32686080\n"
        "active_file 0\nunevictable 0\nslab_reclaimable 101456\nslab_unreclaimable 15448\n"
        "slab 116904\nworkingset_refault_anon 0\nworkingset_refault_file 63353\n"
        "workingset_activate_anon 0\nworkingset_activate_file 0\nworkingset_restore_anon 0\n"
        "workingset_restore_file 5817\nworkingset_nodereclaim 0\npgdemote_kswapd 0\n"
        "pgdemote_direct 0\npgdemote_khugepaged 0\npgdemote_proactive 0\npgsteal_kswapd 0\n"
        "pgsteal_direct 71759\npgsteal_khugepaged 0\npgsteal_proactive 0\npgscan_kswapd 0\n"
        "pgscan_direct 241531\npgscan_khugepaged 0\npgscan_proactive 0\npgrefill 11008\n"
        "pgpromote_success 0\npgscan 241531\npgsteal 71759\npswpin 0\npswpout 0\npgfault 513\n"
        "pgmajfault 0\npgactivate 130860\npgdeactivate 0\npglazyfree 0\npglazyfreed 0\n"
        "swpin_zero 0\nswpout_zero 0\nzswpin 0\nzswpout 0\nzswpwb 0\nthp_fault_alloc 0\n"
        "thp_collapse_alloc 0\nthp_swpout 0\nthp_swpout_fallback 0\nnuma_pages_migrated 0\n"
        "numa_pte_updates 0\nnuma_hint_faults 0\n";

/* 6.1.0-50 as captured (806 bytes, 51 keys). */
const char bench_memstat_61[] =
        "anon 0\nfile 33021952\nkernel 172032\nkernel_stack 0\npagetables 0\nsec_pagetables 0\n"
        "percpu 0\nsock 0\nvmalloc 0\nshmem 0\nzswap 0\nzswapped 0\nfile_mapped 0\nfile_dirty 0\n"
        "file_writeback 0\nswapcached 0\nanon_thp 0\nfile_thp 0\nshmem_thp 0\ninactive_anon 0\n"
        "active_anon 0\ninactive_file 33013760\nactive_file 8192\nunevictable 0\n"
        "slab_reclaimable 159048\nslab_unreclaimable 14408\nslab 173456\n"
        "workingset_refault_anon 0\nworkingset_refault_file 32768\nworkingset_activate_anon 0\n"
        "workingset_activate_file 0\nworkingset_restore_anon 0\nworkingset_restore_file 0\n"
        "workingset_nodereclaim 0\npgscan 41092\npgsteal 41092\npgscan_kswapd 0\n"
        "pgscan_direct 41092\npgsteal_kswapd 0\npgsteal_direct 41092\npgfault 511\npgmajfault 0\n"
        "pgrefill 0\npgactivate 0\npgdeactivate 0\npglazyfree 0\npglazyfreed 0\nzswpin 0\n"
        "zswpout 0\nthp_fault_alloc 0\nthp_collapse_alloc 0\n";
