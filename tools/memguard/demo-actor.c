/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The demo's actors: the scenario library's (tools/common/scenario.h), a
 * cgroup below the demo's with an optional guard, with the progress lines
 * the demo prints around them.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "demo.h"
#include "events.h"
#include "loop.h"

void demo_progress(const char *fmt, ...) {
        char msg[1024], line[1100];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        snprintf(line, sizeof(line), DEMO_PROGRESS "%s", msg);
        mgt_print_line(line);
}

const char *demo_dur(uint64_t usec, char *buf, size_t len) {
        if (usec < MG_USEC_PER_SEC)
                snprintf(buf, len, "%" PRIu64 " ms", usec / MG_USEC_PER_MSEC);
        else
                snprintf(buf, len, "%" PRIu64 ".%" PRIu64 " s", usec / MG_USEC_PER_SEC,
                         usec % MG_USEC_PER_SEC / (100 * MG_USEC_PER_MSEC));
        return buf;
}

const char *demo_mib(uint64_t bytes, char *buf, size_t len) {
        snprintf(buf, len, "%" PRIu64 " MiB", (bytes + MG_MIB / 2) / MG_MIB);
        return buf;
}

/* ---- actors and their processes --------------------------------------- */

static void on_event(struct mgt_actor *a, const struct mg_event *ev) {
        char line[2048];

        (void) a;
        if (ev->type == MG_EVENT_KILL) {
                mgt_kill_text(ev->kill, line, sizeof(line));
                demo_progress("  %s", line);
        }
        if (ev->type == MG_EVENT_ERROR)
                demo_progress("  guard error on %s: %s", ev->what ? ev->what : "?", strerror(-ev->error));
}

int demo_actor_new(struct demo *d, const char *name, uint64_t guard_limit, struct mgt_actor *a) {
        int r = mgt_actor_new(a, d->base, name, ++d->n_cg);

        a->userdata = d;
        a->workload = d->workload;
        a->out_dir = d->dir;
        a->on_event = on_event;
        if (r < 0) {
                demo_progress("mkdir %s/%s-%u: %s", d->base, name, d->n_cg, strerror(-r));
                return r;
        }
        if (guard_limit) {
                r = mgt_actor_guard(a, guard_limit, NULL);
                if (r < 0) {
                        demo_progress("guarding %s: %s", a->cg, strerror(-r));
                        return r;
                }
        }
        a->start_usec = mg_mono_usec();
        return 0;
}

int demo_actor_set(struct mgt_actor *a, const char *file, uint64_t bytes) {
        int r = mgt_actor_limit(a, file, bytes);
        if (r < 0)
                demo_progress("writing %s/%s: %s", a->cg, file, strerror(-r));
        return r;
}

int demo_proc_start(struct mgt_actor *a, const char *const args[]) {
        int r = mgt_actor_start(a, args, NULL);
        if (r < 0)
                demo_progress("starting %s %s in %s: %s", a->workload, args[0], a->cg, strerror(-r));
        return r;
}

bool demo_all_done(struct mgt_actor *a, void *ud) {
        (void) ud;
        return mgt_actor_all_done(a);
}

bool demo_killed_or_done(struct mgt_actor *a, void *ud) {
        return a->ev.n[MG_EVENT_KILL] > 0 || demo_all_done(a, ud);
}

bool demo_printed_or_done(struct mgt_actor *a, void *ud) {
        (void) ud;
        return a->ev.n[MG_EVENT_KILL] > 0 || mgt_proc_check(&a->proc[0]) || mgt_proc_printed(&a->proc[0]);
}

struct run {
        struct demo *d;
        bool (*stop)(struct mgt_actor *a, void *ud);
};

/* The signals come as bytes on a pipe (loop.h); read at every step. */
static bool run_stop(struct mgt_actor *a, void *ud) {
        struct run *r = ud;
        int s;

        while ((s = mgt_signals_next(r->d->sigfd, NULL)) > 0)
                if (s == SIGINT || s == SIGTERM || s == SIGHUP)
                        r->d->interrupted = true;
        return r->d->interrupted || (r->stop && r->stop(a, NULL));
}

bool demo_actor_run(struct mgt_actor *a, uint64_t timeout_usec, bool (*stop)(struct mgt_actor *a, void *ud)) {
        struct run r = { .d = a->userdata, .stop = stop };
        return mgt_actor_run(a, timeout_usec, run_stop, &r) && !r.d->interrupted;
}

void demo_actor_end(struct mgt_actor *a) {
        int r = mgt_actor_end(a);
        if (r < 0)
                demo_progress("removing %s: %s", a->cg, strerror(-r));
}
