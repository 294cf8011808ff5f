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
#include "scenario.h"
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

/* "memguard demo: ..." on stderr. */
void demo_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "210 ms", "3.5 s"; "64 MiB" (rounded).  Return buf. */
const char *demo_dur(uint64_t usec, char *buf, size_t len);
const char *demo_mib(uint64_t bytes, char *buf, size_t len);

/*
 * The demo's actors are the scenario library's (tools/common/scenario.h);
 * these add the progress lines.  demo_actor_new() makes <base>/<name>-<n>
 * and, with guard_limit, guards it; its kills and guard errors are
 * printed as they come.  Each returns 0 or a negative errno, already
 * reported; demo_actor_end() cleans up either way.  The processes are
 * a->proc[0], a->proc[1], ... in the order started.
 */
int demo_actor_new(struct demo *d, const char *name, uint64_t guard_limit, struct mgt_actor *a);
int demo_actor_set(struct mgt_actor *a, const char *file, uint64_t bytes);
int demo_proc_start(struct mgt_actor *a, const char *const args[]);
/* mgt_actor_run(), also stopped by SIGINT, SIGTERM or SIGHUP (d->interrupted). */
bool demo_actor_run(struct mgt_actor *a, uint64_t timeout_usec, bool (*stop)(struct mgt_actor *a, void *ud));
void demo_actor_end(struct mgt_actor *a);

/* Stop conditions for demo_actor_run() */
bool demo_all_done(struct mgt_actor *a, void *ud);
bool demo_killed_or_done(struct mgt_actor *a, void *ud);
/* killed, or the first process ended or printed a line */
bool demo_printed_or_done(struct mgt_actor *a, void *ud);

/* Runs `memguard demo --native` inside tests/vm/vmrun; why says why it
 * cannot run here.  Returns the demo's exit status. */
int demo_vm(const char *kernel, const char *why);
