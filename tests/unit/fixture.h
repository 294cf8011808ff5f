/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Fake cgroupfs trees in temp dirs for unit tests, and an I/O seam that
 * counts every open and read and behaves like kernfs on write (a write
 * replaces the whole value).  Real-kernel behaviour is tested in the VM.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "memguard/cgroup.h"

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
};

/* Makes a cgroup dir with plausible files for a 256 MiB actor at rest. */
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
/* Learns which fd is which file from the guard's open cgroup. */
void fixture_map_fds(struct fixture *f, const struct mg_cgroup *cg);
void fixture_reset_counts(struct fixture *f);
uint64_t fixture_clock(void *userdata);
