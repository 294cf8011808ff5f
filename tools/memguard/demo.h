/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The demo's harness, shared by demo.c (the scenarios and the table),
 * demo-actor.c (actors: a cgroup, maybe a guard, the workloads in it) and
 * demo-vm.c (running the whole demo inside the VM harness).
 */

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "memguard/memguard.h"
#include "util.h"

/* Progress lines start with this; the VM relay sends them to stderr. */
#define DEMO_PROGRESS "memguard demo: "

struct demo {
        char *base;             /* our cgroup; the actors are its children */
        char dir[PATH_MAX];     /* temp files */
        char *workload;
        int sigfd;
        bool interrupted;       /* SIGINT/SIGTERM/SIGHUP seen: wind down */
        unsigned n_cg;
        unsigned step, steps;   /* for the progress lines */
        const char *scenario;
};

/* One mg-workload process. */
struct proc {
        pid_t pid;
        int out;                /* read end of its stdout */
        char text[512];         /* what it printed; its last line is the result */
        size_t len;
        int status;
        bool done;
};

/* One run of a scenario: a cgroup below the demo's, with or without a guard. */
struct actor {
        struct demo *d;
        char *cg;
        mg_set *set;
        mg_guard *guard;
        int current_fd;
        uint64_t start_usec;
        uint64_t watch_bytes;   /* crossed_usec: first memory.current above it */
        uint64_t peak, crossed_usec;
        /* thrash onset: the first read-back of a page of its working set */
        bool watch_onset;
        uint64_t refaults0, onset_usec, last_onset_usec; /* onset: first file refault */
        unsigned kills, lend_begin, lend_end, errors;
        struct mg_kill_record kill;
        /* the worst the guard would have said, sampled with mg_guard_report() */
        bool sample_reports;
        uint64_t last_report_usec, max_used;
        enum mg_verdict worst;
};

/* "memguard demo: ..." on stderr. */
void demo_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "210 ms", "3.5 s"; "64 MiB" (rounded).  Return buf. */
const char *demo_dur(uint64_t usec, char *buf, size_t len);
const char *demo_mib(uint64_t bytes, char *buf, size_t len);
/* A key of a flat keyed cgroup file; 0 if it cannot be read. */

/* Makes <base>/<name>-<n>; with guard_limit, a guard set guarding it.
 * Returns 0 or a negative errno (already reported); demo_actor_end()
 * cleans up either way. */
int demo_actor_new(struct demo *d, const char *name, uint64_t guard_limit, struct actor *a);
/* Writes a limit file (memory.max, memory.high).  0 or negative errno. */
int demo_actor_set(struct actor *a, const char *file, uint64_t bytes);
/* Starts mg-workload ARGS (NULL-terminated) in the actor's cgroup, its
 * stdout on a pipe.  0 or a negative errno. */
int demo_proc_start(struct actor *a, struct proc *p, const char *const args[]);
/* Reads what the process printed and reaps it if it ended. */
void demo_proc_check(struct proc *p);
bool demo_proc_printed(const struct proc *p);
bool demo_exited_ok(const struct proc *p);
bool demo_sigkilled(const struct proc *p);
/* "exit 0", "signal 9", "still running".  Returns buf. */
const char *demo_status(const struct proc *p, char *buf, size_t len);
/* A key=value of the workload's result line; 0 if absent. */
uint64_t demo_result(const struct proc *p, const char *key);

typedef bool (*demo_stop_fn)(struct actor *a, struct proc *p, unsigned n);
bool demo_all_done(struct actor *a, struct proc *p, unsigned n);
bool demo_killed_or_done(struct actor *a, struct proc *p, unsigned n);
bool demo_printed_or_done(struct actor *a, struct proc *p, unsigned n);
/* Runs the actor's guard (if any) and samples memory.current every 10 ms
 * until stop() (may be NULL) or the timeout.  True if stop() became true. */
bool demo_actor_run(struct actor *a, struct proc *p, unsigned n, uint64_t timeout_usec, demo_stop_fn stop);
/* Kills what is left, reaps the processes, frees the guard, removes the
 * cgroup.  Accepts a half-made actor. */
void demo_actor_end(struct actor *a, struct proc *p, unsigned n);

/* Writes a file of mib MiB (from outside the actors) and drops it from the
 * page cache.  0 or a negative errno. */
int demo_make_file(const char *path, uint64_t mib);
void demo_drop_cache(const char *path);

/* Runs `memguard demo --native` inside tests/vm/vmrun; why says why it
 * cannot run here.  Returns the demo's exit status. */
int demo_vm(const char *kernel, const char *why);
