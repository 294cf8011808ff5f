/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ktest.h"
#include "guard.h"
#include "lend.h"
#include "tick.h"
#include "set.h"

const char *kt_base, *kt_disk, *kt_workload;
char kt_skip_reason[256];

static char cgroups[64][512];
static int n_cgroups, cg_counter;

static struct mgt_proc spawned[64];
static int n_spawned;

/* Every line of a note is a TAP comment: a value read from a kernel file
 * ends in a newline, and a bare line would break the TAP stream. */
void kt_note(const char *fmt, ...) {
        char buf[16384];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        const char *line = buf;
        do {
                size_t n = strcspn(line, "\n");
                printf("# %.*s\n", (int) n, line);
                line += n + (line[n] == '\n');
        } while (*line);
        fflush(stdout);
}

const char *kt_cg_new(const char *name) {
        if (n_cgroups == 64)
                return NULL;
        char *p = cgroups[n_cgroups];
        snprintf(p, sizeof(cgroups[0]), "%s/%s-%d", kt_base, name, ++cg_counter);
        if (mkdir(p, 0755) < 0) {
                kt_note("mkdir %s: %s", p, strerror(errno));
                return NULL;
        }
        n_cgroups++;
        return p;
}

void kt_cleanup_all(void) {
        while (n_cgroups > 0) {
                const char *cg = cgroups[--n_cgroups];
                int r = mgt_cg_destroy(cg, 10 * MG_USEC_PER_SEC);
                if (r < 0)
                        kt_note("cleanup: %s: %s", cg, r == -ETIMEDOUT ? "did not empty" : strerror(-r));
        }
        for (int i = 0; i < n_spawned; i++)
                mgt_proc_end(&spawned[i]);
        n_spawned = 0;
}

pid_t kt_spawn(const char *cg, const char *const args[]) {
        return kt_spawn_exe(cg, kt_workload, args);
}

pid_t kt_spawn_exe(const char *cg, const char *exe, const char *const args[]) {
        if (n_spawned == 64)
                return -ENOSPC;
        struct mgt_proc *p = &spawned[n_spawned];
        int r = mgt_proc_start(p, cg, exe, args, "/tmp");
        if (r < 0) {
                mgt_proc_end(p);
                return r;
        }
        n_spawned++;
        return p->pid;
}

static struct mgt_proc *spawned_proc(pid_t pid) {
        for (int i = 0; i < n_spawned; i++)
                if (spawned[i].pid == pid)
                        return &spawned[i];
        return NULL;
}

int kt_wait(pid_t pid, uint64_t timeout_usec) {
        struct mgt_proc *p = spawned_proc(pid), own = { .pid = pid, .pidfd = -1 };
        int r;

        if (!p) {
                /* a child the scenario forked itself (harden.c) */
                own.pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
                p = &own;
        }
        r = mgt_proc_wait(p, timeout_usec);
        if (p == &own && own.pidfd >= 0)
                close(own.pidfd);
        return r == -ECHILD ? -ETIMEDOUT : r; /* as waitpid() failing always said here */
}

const char *kt_result(pid_t pid) {
        static char line[512];
        struct mgt_proc *p = spawned_proc(pid);
        line[0] = '\0';
        return p ? mgt_proc_result(p, line, sizeof(line)) : line;
}

void kt_note_event(const struct mg_event *ev) {
        if (ev->type == MG_EVENT_KILL) {
                char buf[1024];
                mg_kill_record_format(ev->kill, buf, sizeof(buf));
                kt_note("%s", buf);
        }
        if (ev->type == MG_EVENT_ERROR)
                kt_note("guard error on %s: %s", ev->what ? ev->what : "?", strerror(-ev->error));
        if (ev->type == MG_EVENT_UNKILLABLE)
                kt_note("unkillable: %" PRIu32 " members still there %" PRIu64 " ms after the kill, first %" PRId32
                        " (%c)",
                        ev->unkillable->n_members, ev->unkillable->wait_usec / 1000,
                        ev->unkillable->n_pids ? ev->unkillable->pids[0] : 0,
                        ev->unkillable->n_pids ? ev->unkillable->states[0] : '?');
        if (ev->type == MG_EVENT_EMPTY_OVER_LIMIT) {
                const struct mg_report *r = ev->report;
                kt_note("empty over the limit: used %" PRIu64 " KiB of %" PRIu64 " KiB (anon %" PRIu64
                        " shmem %" PRIu64 " kernel %" PRIu64 " sock %" PRIu64 " KiB), memory.current %" PRIu64
                        " KiB, no process",
                        r->used_bytes >> 10, r->limit_bytes >> 10, r->stat.anon >> 10, r->stat.shmem >> 10,
                        r->stat.kernel >> 10, r->stat.sock >> 10, r->current_bytes >> 10);
        }
        if (ev->type == MG_EVENT_THROTTLED) {
                kt_note("throttled: %" PRIu64 " KiB over memory.high %" PRIu64 " KiB, est %" PRIu64
                        " ms per 256 KiB, %" PRIu64 " high events/s, memory some %u.%02u %%, cpu %u.%02u %%",
                        (ev->throttle->current_bytes - ev->throttle->high_bytes) >> 10, ev->throttle->high_bytes >> 10,
                        ev->throttle->est_delay_usec / 1000, ev->throttle->high_events_per_sec,
                        ev->throttle->memory_some_permyriad / 100, ev->throttle->memory_some_permyriad % 100,
                        ev->throttle->cpu_permyriad / 100, ev->throttle->cpu_permyriad % 100);
        }
}

static void on_event(mg_guard *g, const struct mg_event *ev, void *ud) {
        (void) g;
        mgt_events_record(ud, ev);
        kt_note_event(ev);
}

mg_set *kt_set_new(void) {
        mg_set *s = NULL;
        return mg_set_new(NULL, &s) < 0 ? NULL : s;
}

int kt_guard_opts(mg_set *s, const char *cg, struct mg_guard_options *o, struct mgt_events *ev, mg_guard **ret) {
        o->on_event = on_event;
        o->userdata = ev;
        return mg_set_add(s, cg, o, ret);
}

int kt_guard_io(mg_set *s, const char *cg, struct mg_guard_options *o, const struct mg_io *io, struct mgt_events *ev,
                mg_guard **ret) {
        o->on_event = on_event;
        o->userdata = ev;
        return mg_set_add_internal(s, cg, o, 0, io, ret);
}

int kt_guard(mg_set *s, const char *cg, uint64_t limit, struct mgt_events *ev, mg_guard **ret) {
        struct mg_guard_options o;
        int r = mg_guard_options_init(&o, limit);
        return r < 0 ? r : kt_guard_opts(s, cg, &o, ev, ret);
}

bool is_sigkill_status(int status) {
        return status >= 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

struct lend_wait {
        struct mgt_events *ev;
        int ends;
};

static bool lend_told(void *ud) {
        struct lend_wait *w = ud;
        return w->ev->n[MG_EVENT_LEND_END] > w->ends;
}

int kt_lend_end(mg_set *s, mg_guard *g, uint64_t lend_id, struct mgt_events *ev, uint64_t timeout_usec) {
        struct lend_wait w = { .ev = ev, .ends = ev->n[MG_EVENT_LEND_END] };
        int r = mg_guard_lend_end(g, lend_id);
        if (r < 0)
                return r;
        if (r == 0)
                return lend_told(&w) ? 0 : -EPROTO; /* a lone guard's end tells at once */
        return mgt_run(s, timeout_usec, lend_told, NULL, &w) ? 0 : -ETIMEDOUT;
}

int kt_enter(struct mgt_actor *a) {
        const char *slash = strrchr(kt_base, '/');
        char root[512];

        snprintf(root, sizeof(root), "%.*s", slash ? (int) (slash - kt_base) : 0, kt_base);
        return mgt_actor_enter(a, root);
}

int kt_leave(struct mgt_actor *a) {
        int r = mgt_actor_leave(a);
        if (r < 0)
                kt_note("cannot move back to %s: %s", a->home, strerror(-r));
        return r;
}

bool kt_have_file(const char *cg, const char *file) {
        char p[600];
        snprintf(p, sizeof(p), "%s/%s", cg, file);
        return access(p, F_OK) == 0;
}
