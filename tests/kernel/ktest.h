/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Helpers for tests on a real cgroup v2: unique child cgroups cleaned up
 * even when a scenario fails, workloads started into them, guards whose
 * events are counted, TAP output.  Modelled on the kernel's
 * tools/testing/selftests/cgroup/cgroup_util.c, with errno returns.  The
 * workloads, the event counts and the bounded runs of a guard set are the
 * scenario library's (tools/common/scenario.h, shared with `memguard
 * demo`); the cgroup files are read and written through cgdir.h.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "memguard/memguard.h"
#include "cgdir.h"
#include "scenario.h"
#include "util.h"

enum { KT_PASS, KT_FAIL, KT_SKIP };

extern const char *kt_base;     /* the test's own parent cgroup */
extern const char *kt_disk;     /* a directory on a real disk file system */
extern const char *kt_workload; /* the mg-workload binary */
extern char kt_skip_reason[256];

/* Printed as TAP diagnostics; "# key=value" lines are the figures. */
void kt_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Records a failure with its reason and returns KT_FAIL from the caller. */
#define KT_CHECK(cond, ...)                                                    \
        do {                                                                   \
                if (!(cond)) {                                                 \
                        kt_note("FAILED %s:%d: %s", __FILE__, __LINE__, #cond); \
                        kt_note(__VA_ARGS__);                                  \
                        return KT_FAIL;                                        \
                }                                                              \
        } while (0)

/* Makes <base>/<name>-<n>, remembered for cleanup.  Returns a static path.
 * Everything else done to cgroups goes through cgdir.h (mgt_cg_*). */
const char *kt_cg_new(const char *name);
void kt_cleanup_all(void);

/* Starts the workload with args inside cg (mgt_proc_start(); its stdout
 * goes to a file read by kt_result()), remembered for cleanup.  Returns
 * the pid (> 0) or a negative errno. */
pid_t kt_spawn(const char *cg, const char *const args[]);
/* The same with another copy of the workload binary. */
pid_t kt_spawn_exe(const char *cg, const char *exe, const char *const args[]);
/* Waits (bounded) for pid; returns its wait status, or -ETIMEDOUT. */
int kt_wait(pid_t pid, uint64_t timeout_usec);
/* The last line the workload printed (static buffer). */
const char *kt_result(pid_t pid);

/* Notes a kill record, a guard error, an unkillable actor, an empty actor
 * over its limit, a throttle. */
void kt_note_event(const struct mg_event *ev);
/* A guard set whose events land in *ev (mgt_events_record(), then
 * kt_note_event()).  Run it with mgt_run(). */
mg_set *kt_set_new(void);
int kt_guard(mg_set *s, const char *cg, uint64_t limit, struct mgt_events *ev, mg_guard **ret);
/* The same with options the caller filled (events still land in *ev). */
int kt_guard_opts(mg_set *s, const char *cg, struct mg_guard_options *o, struct mgt_events *ev, mg_guard **ret);
/* The same through an I/O seam (struct mg_io, memguard/cgroup.h), so a
 * scenario can count what the guard does to the cgroup's files. */
struct mg_io;
int kt_guard_io(mg_set *s, const char *cg, struct mg_guard_options *o, const struct mg_io *io, struct mgt_events *ev,
                mg_guard **ret);
/* A wait status of a process that died of SIGKILL. */
bool is_sigkill_status(int status);
/* Ends the lend of a guard in s as its caller does: mg_guard_lend_end()
 * hands the restore to the set's worker (1), and the set tells
 * MG_EVENT_LEND_END; runs s until it did (ev is the guard's), for at most
 * timeout.  Returns 0 once told, mg_guard_lend_end()'s negative errno, or
 * -ETIMEDOUT. */
int kt_lend_end(mg_set *s, mg_guard *g, uint64_t lend_id, struct mgt_events *ev, uint64_t timeout_usec);
/* Moves this process into the actor's cgroup (the test's cgroup2 mount is
 * kt_base's parent), to be charged as a microVM is for its guest memory,
 * and back (a failure to leave is noted). */
int kt_enter(struct mgt_actor *a);
int kt_leave(struct mgt_actor *a);
/* Whether this kernel has file in cg (memory.pressure without PSI, cgroup.freeze before 5.2). */
bool kt_have_file(const char *cg, const char *file);
