/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What a guard reads, as data and errnos: each function reads cgroup files
 * through an open struct mg_cgroup into a struct mg_reader's buffers,
 * parses them (parse.c) and says what it found.  Nothing here reports an
 * error, ends a window or moves a line: that is guard.c's, which reads
 * through these and decides what a failure means.
 */

#include <stdbool.h>
#include <stdint.h>

#include "cgroup.h"
#include "memguard/memguard.h"
#include "parse.h"
#include "policy.h"

/* memory.stat is about 2.5 KiB on 7.x (71 keys of at most 40 bytes). */
#define MG_STAT_BUF_SIZE 8192
/* PSI (2 lines < 200 bytes), memory.events.local, cgroup.events, cpu.stat. */
#define MG_SMALL_BUF_SIZE 512
/* cgroup.procs read for the unkillable report and its comparisons: about
 * 500 pids.  A cgroup with more is compared on what the read shows; a
 * change there counts as new members. */
#define MG_PROCS_BUF_SIZE 4096

/*
 * What one guard's reads keep from one read to the next.  memory.stat goes
 * to stat_buf (MG_STAT_BUF_SIZE), the rest to small_buf
 * (MG_SMALL_BUF_SIZE): the guard's own, or in a set the set's, which its
 * guards share (they tick one at a time, each parsing what it read before
 * the next reads).  The kernel prints the same keys every time: a read with
 * fewer keys than an earlier one had was cut short at a line boundary.
 */
struct mg_reader {
        char *stat_buf;
        char *small_buf;
        uint64_t stat_keys, events_keys;        /* keys memory.stat / memory.events.local had */
        struct mg_memstat_layout stat_layout;   /* where the tick's memory.stat keys are */
};

/* What a read of several files found, file by file. */
struct mg_read_outcome {
        uint16_t ok;            /* MG_CG_BIT()s of the files read and parsed */
        uint16_t hidden;        /* pressure files hidden while the cgroup lives (cgroup.pressure 0) */
        enum mg_cgfile at;      /* the file whose error ended the read (a negative return) */
        int err[MG_CG_N];       /* the errno of each hidden file, and of at */
};

/* A removed cgroup makes every open file return ENODEV; ENOENT is taken
 * the same way.  Whether it is removed is mg_read_removed()'s to say. */
bool mg_gone_errno(int err);
/* cgroup.events, a core file nothing can hide, fails as removed. */
bool mg_read_removed(struct mg_cgroup *cg);

/* memory.stat: only the lines the decision needs (full false, the layout
 * the last full read learnt), or whole.  Returns 0 or a negative errno
 * (-EBADMSG: a read cut short). */
int mg_read_stat(struct mg_reader *rd, struct mg_cgroup *cg, bool full, struct mg_memstat *ret);
/* A small file of f's kind into its parsed form (struct mg_psi, struct
 * mg_mem_events, populated int, cpu usage; memory.stat: struct mg_memstat,
 * whole).  Returns 0 or a negative errno (-EOPNOTSUPP: this kernel has no
 * such file). */
int mg_read_parsed(struct mg_reader *rd, struct mg_cgroup *cg, enum mg_cgfile f, void *ret);

/*
 * The slow path's sample at now, memory.current read (current): memory.stat
 * (whole if full), memory.events.local, memory.pressure and io.pressure,
 * into rep (its size, time, current, stat, used, events and PSI; high and
 * max "max") and x.  Files this kernel lacks leave their part empty, and a
 * pressure file hidden while the cgroup lives is left out too (in
 * out->hidden); any other error ends the read: returns it, out->at its file.
 * out->ok says which files read.
 */
int mg_read_sample(struct mg_reader *rd, struct mg_cgroup *cg, uint32_t page_bytes, uint64_t now,
                   uint64_t current, bool full, struct mg_report *rep, struct mg_sample *x,
                   struct mg_read_outcome *out);
/* What only a throttle needs: memory.high into x->high_bytes, then
 * cpu.stat; x->have_throttle if both read.  Returns 0 or the error, out->at
 * its file. */
int mg_read_throttle(struct mg_reader *rd, struct mg_cgroup *cg, struct mg_sample *x, struct mg_read_outcome *out);
/* memory.high and memory.max; a file that cannot be read (absent in the
 * root cgroup, an error) counts as "max".  Returns the MG_CG_BIT()s of
 * those that read. */
unsigned mg_read_kernel_limits(struct mg_cgroup *cg, uint64_t *ret_high, uint64_t *ret_max);
/* cgroup.procs, parsed: the members now.  Returns 0 or a negative errno. */
int mg_read_members(struct mg_cgroup *cg, struct mg_procs *ret, bool *ret_cut);
