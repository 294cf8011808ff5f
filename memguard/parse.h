/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Pure parsers over buffers read from cgroup files.  None of them allocates
 * or touches the file system.  Each returns 0, or -EBADMSG for input that is
 * not what the kernel writes (bad syntax, overflow, duplicated key, a line
 * longer than any kernel line) and -EINVAL for arguments that make no sense.
 * The ret structure is written only on success.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memguard/memguard.h"

/* "max\n" gives MG_UNLIMITED; otherwise a decimal u64 and one optional "\n". */
int mg_parse_u64_value(const char *buf, size_t len, uint64_t *ret);

/* memory.stat: keys by name, unknown keys ignored, "kernel" derived from its
 * parts on kernels that lack it. */
int mg_parse_memstat(const char *buf, size_t len, struct mg_memstat *ret);

/* memory.pressure / io.pressure: a "some" line is required, "full" optional. */
int mg_parse_psi(const char *buf, size_t len, struct mg_psi *ret);

/* memory.events / memory.events.local: all keys optional, unknown ignored. */
int mg_parse_mem_events(const char *buf, size_t len, struct mg_mem_events *ret);

/* The same two, also giving the set of known keys the buffer had (a bit per
 * key of the parser's table; ret_keys may be NULL).  A caller that saw a key
 * before can tell a read cut short at a line boundary, which still parses,
 * from a kernel without the key: the kernel prints a fixed set every time.
 * memory.stat also gives its layout for mg_parse_memstat_tick() (may be NULL). */
struct mg_memstat_layout;
int mg_parse_memstat_keys(const char *buf, size_t len, struct mg_memstat *ret, uint64_t *ret_keys,
                          struct mg_memstat_layout *ret_layout);
int mg_parse_mem_events_keys(const char *buf, size_t len, struct mg_mem_events *ret, uint64_t *ret_keys);

/*
 * The tick's memory.stat parse.  The kernel prints memory.stat from fixed
 * tables (memory_stats[] and memcg_vm_event_stat[] in mm/memcontrol.c), so a
 * key sits on the same line on every read of one boot.  A full parse learns
 * the lines of the keys the decision needs (used's terms, or the parts of
 * "kernel" before 5.18, workingset_restore_*, and for the refault rule file,
 * file_mapped and workingset_refault_file); the tick steps over every
 * other line with memchr and parses those alone, checking each key's name.
 * Lines it steps over are not checked.  Fills only those fields of ret (and
 * kernel, derived as the full parse does); -ESTALE when the buffer does not
 * have the learnt keys on the learnt lines: parse it in full instead.
 */
#define MG_MEMSTAT_LAYOUT_MAX 20
struct mg_memstat_layout {
        uint8_t n;                              /* 0: nothing learnt */
        bool kernel_derived;
        uint8_t key[MG_MEMSTAT_LAYOUT_MAX];     /* the parser's key index */
        uint16_t line[MG_MEMSTAT_LAYOUT_MAX];   /* ascending */
};
int mg_parse_memstat_tick(const char *buf, size_t len, const struct mg_memstat_layout *layout,
                          struct mg_memstat *ret);

/* cpu.stat: "usage_usec" is required (the core cgroup prints it always). */
int mg_parse_cpu_usage(const char *buf, size_t len, uint64_t *ret_usage_usec);

/* cgroup.events: "populated" is required. */
int mg_parse_populated(const char *buf, size_t len, int *ret_populated);
/* cgroup.events "frozen" (5.2+): 0 or 1; -ENODATA if the kernel printed
 * none, -EBADMSG for another value. */
int mg_parse_frozen(const char *buf, size_t len, int *ret_frozen);

/* One field of a record the library writes on a cgroup's directory (the
 * lend's, the park's): "<key><decimal u64>" at *p, ending at stop (a ' ',
 * or the record's last '\n'), digits only and no leading zero (only what
 * the formatter writes).  Advances *p past stop; false (*p unmoved) for
 * anything else. */
bool mg_parse_record_field(const char **p, const char *end, const char *key, char stop, uint64_t *ret);

/*
 * cgroup.procs: one pid per line, as the kernel prints it ("%d\n"); a read
 * that was cut keeps whole lines only (mg_cgroup_read_procs()).  Gives the
 * count, a digest of the whole list that does not depend on its order (the
 * kernel's order is not defined), and the first MG_PROCS_KEEP pids as
 * listed.  A pid listed twice (the kernel may, for one that moved out and
 * back while it was read) counts twice.  Returns 0 or -EBADMSG: not one
 * decimal pid (1 to INT32_MAX, no leading zero) per line, each with its
 * newline.
 */
#define MG_PROCS_KEEP MG_UNKILLABLE_MAX
struct mg_procs {
        uint32_t n;
        uint64_t digest;                /* the same pids in any order: the same digest */
        int32_t pid[MG_PROCS_KEEP];
};
int mg_parse_procs(const char *buf, size_t len, struct mg_procs *ret);

/*
 * The state of /proc/PID/stat: "PID (COMM) S ...", field 3.  COMM is
 * whatever the process named itself (up to 15 bytes, ')', ' ' and '\n'
 * included), so the state is the letter after the last ')' and a space;
 * the fields after it are numbers.  buf may be the start of the file only,
 * as long as it reaches the state.  Returns 0 and the letter, or -EBADMSG.
 */
int mg_parse_proc_stat_state(const char *buf, size_t len, char *ret_state);

/* Bound on one line of any file parsed here; memory.stat keys are < 32. */
#define MG_PARSE_MAX_LINE 256
