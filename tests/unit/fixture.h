/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Fake cgroupfs trees in temp dirs for unit tests, and an I/O seam that
 * counts every open and read and behaves like kernfs on write (a write
 * replaces the whole value).  Real-kernel behaviour is tested in the VM.
 *
 * The seam may run on a set's restore worker (memguard/worker.c) as well
 * as on the test's thread: its counters are atomic, and it makes no system
 * call that thread's filter refuses (mg_confine_thread(0)).  A gate makes
 * the writes of memory.high wait, as the kernel's synchronous reclaim does
 * on 6.1 and 6.12.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup.h"
#include "memguard/memguard.h"

struct fixture {
        char dir[256];
        struct mg_io io;
        unsigned opens, reads, writes;
        unsigned reads_of[MG_CG_N]; /* by file, resolved through the fds */
        int fd_of[MG_CG_N];
        int fail_errno;             /* injected into every read while non-zero */
        uint64_t now_usec;          /* the injected clock */
        uint64_t restore_file;      /* workingset_restore_file in fixture_stat() */
        uint64_t refault_file;      /* workingset_refault_file (pages) in fixture_stat() */
        uint64_t mapped;            /* file_mapped in fixture_stat() */
        /* The gate (fixture_gate()): while closed, each write of
         * memory.high (the file of that inode) through the seam waits for
         * a byte on gate[0], for at most 10 s (then it goes on, and
         * gate_timeouts says so). */
        int gate[2];
        unsigned long gate_ino;     /* memory.high's inode */
        int gate_waiting;           /* writes waiting at it now */
        int gate_passed;            /* writes it let through */
        int gate_timeouts;
        int fail_high_write_errno;  /* injected into every write of memory.high while non-zero */
        int high_writes;            /* writes of memory.high that reached the file */
        int fail_write_errno;       /* injected into every write while non-zero */
};

/*
 * A fake cgroup directory (dir exists) with every file a guard opens: for
 * fixture_init() and for the benchmarks (tools/bench/, thousands of them).
 * Each file of t left NULL (or t NULL) is that of a 256 MiB actor at rest:
 * memory.current 16 MiB, a short memory.stat (anon 8 MiB, file 6 MiB,
 * kernel 1 MiB), no pressure, no events, no limits, populated.  Returns 0
 * or a negative errno.
 */
struct fixture_tree {
        const char *memory_current, *memory_stat, *memory_pressure, *io_pressure, *cpu_stat;
};
int fixture_tree_make(const char *dir, const struct fixture_tree *t);
/* Writes name in dir with content, replacing it: 0 or a negative errno. */
int fixture_tree_write(const char *dir, const char *name, const char *content);

/* Makes a temp dir by fixture_tree_make(): a 256 MiB actor at rest. */
void fixture_init(struct fixture *f);
void fixture_cleanup(struct fixture *f);
/* rm -rf without a shell: 0 (also when dir is already gone), or -1 with errno. */
int fixture_remove_tree(const char *dir);
void fixture_write(struct fixture *f, const char *file, const char *content);
/* Reads a file back (static buffer). */
const char *fixture_read(struct fixture *f, const char *file);
void fixture_remove(struct fixture *f, const char *file);
/* A memory.stat with these parts (bytes) and sensible zeros elsewhere. */
void fixture_stat(struct fixture *f, uint64_t anon, uint64_t file, uint64_t kernel, uint64_t shmem, uint64_t sock,
                  uint64_t dirty, uint64_t writeback);
/* memory.pressure or io.pressure with this "some" total */
void fixture_psi(struct fixture *f, const char *file, uint64_t some_total_usec);
void fixture_events(struct fixture *f, uint64_t high, uint64_t max, uint64_t oom_kill);
void fixture_current(struct fixture *f, uint64_t bytes);
/* The seam's opens tell which fd is which file (also after a trimmed
 * guard opens its files again); a seam of a test's own calls this. */
void fixture_note_open(struct fixture *f, const char *name, int fd);
/* Learns which fd is which file from the guard's open cgroup. */
void fixture_map_fds(struct fixture *f, const struct mg_cgroup *cg);
void fixture_reset_counts(struct fixture *f);
uint64_t fixture_clock(void *userdata);
/* Whether dir's file system takes user xattrs (tmpfs before 6.6 does not):
 * 1, 0, or the negative errno of another failure. */
int fixture_user_xattrs(const char *dir);
/* The xattr name of dir into buf, NUL-terminated (at most size - 1 bytes);
 * its length, or -1 (errno). */
ssize_t fixture_get_xattr(const char *dir, const char *name, char *buf, size_t size);
/* The fds this process has open now (/proc/self/fd, less the listing's own). */
int fixture_open_fds(void);
/* Closes the gate on memory.high (as it is now: its inode).  Writes of it
 * through the seam wait until fixture_gate_open() lets them through. */
void fixture_gate(struct fixture *f);
/* Lets n waiting (or later) writes through; the gate stays. */
void fixture_gate_open(struct fixture *f, int n);
/* Removes the gate (no write may be waiting at it): writes go through. */
void fixture_ungate(struct fixture *f);
/* Waits (really, for at most timeout_ms) until n writes wait at the gate;
 * returns whether they do. */
bool fixture_gate_wait(struct fixture *f, int n, int timeout_ms);
/* Atomic reads of the counters the seam updates, for tests that read them
 * while another thread may write. */
int fixture_load(const int *counter);

/*
 * The recorder: what a guard told its callbacks, for every unit test (each
 * keeps its own, zeroed before a test).  A test's callbacks hand each event
 * to fixture_record() and each log line to fixture_record_log(), and do
 * what else the test needs (a deferral, a call from inside the callback).
 */
#define FIXTURE_EVENT_TYPES 32
struct fixture_seen {
        int n[FIXTURE_EVENT_TYPES];     /* events told, by type */
        int events;                     /* events told, of any type */
        struct mg_kill_record kill;     /* the last MG_EVENT_KILL */
        struct mg_kill_record dry;      /* the last MG_EVENT_KILL_DRY_RUN */
        struct mg_kill_record pre;      /* the last MG_EVENT_PRE_KILL */
        struct mg_kill_record averted;  /* the last MG_EVENT_KILL_AVERTED, and its read */
        struct mg_report averted_read;
        int last_error;                 /* the last MG_EVENT_ERROR's errno (negative) */
        const char *last_what;          /* and what failed */
        uint64_t oom_count;             /* the .count of every MG_EVENT_KERNEL_OOM, summed */
        struct mg_lend_info lend;       /* of the last event with a lend (MG_EVENT_LEND_*) */
        struct mg_report empty;         /* the last MG_EVENT_EMPTY_OVER_LIMIT */
        struct mg_unkillable_info unkillable; /* the last MG_EVENT_UNKILLABLE */
        struct mg_kill_record unkillable_kill; /* and its .kill */
        struct mg_reclaim_info reclaim; /* the last MG_EVENT_RECLAIM */
        struct mg_kill_record park;     /* the last MG_EVENT_PARK */
        struct mg_kill_record thaw;     /* the last MG_EVENT_THAW */
        struct mg_report thaw_read;     /* and its .report */
        int kills_before_unkillable;    /* MG_EVENT_KILLs told before it */
        char log[4096];                 /* every log line, one a line */
        int warnings;                   /* the MG_LOG_WARNING lines */
        char warning_log[2048];         /* and those alone */
        /* Set by the test once nothing more may be told (the guard freed
         * or removed): then each event or log line told counts in after. */
        bool silent;
        int after;
};
/* Notes ev in s; a type not below FIXTURE_EVENT_TYPES aborts. */
void fixture_record(struct fixture_seen *s, const struct mg_event *ev);
/* Notes a log line (msg, at level) in s. */
void fixture_record_log(struct fixture_seen *s, int level, const char *msg);
