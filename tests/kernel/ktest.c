/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ktest.h"
#include "guard.h"
#include "spawn.h"

const char *kt_base, *kt_disk, *kt_workload;
char kt_skip_reason[256];

static char cgroups[64][512];
static int n_cgroups, cg_counter;

static struct {
        pid_t pid;
        char out[256];
        bool reaped;
        int status;
} spawned[64];
static int n_spawned;

void kt_note(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        fputs("# ", stdout);
        vprintf(fmt, ap);
        fputc('\n', stdout);
        va_end(ap);
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
        for (int i = 0; i < n_spawned; i++) {
                if (spawned[i].pid > 0 && !spawned[i].reaped)
                        (void) waitpid(spawned[i].pid, NULL, WNOHANG);
                spawned[i].reaped = false;
                unlink(spawned[i].out);
        }
        n_spawned = 0;
}

pid_t kt_spawn(const char *cg, const char *const args[]) {
        return kt_spawn_exe(cg, kt_workload, args);
}

pid_t kt_spawn_exe(const char *cg, const char *exe, const char *const args[]) {
        char *argv[16];
        int n = 0;
        argv[n++] = (char *) exe;
        for (int i = 0; args[i] && n < 15; i++)
                argv[n++] = (char *) args[i];
        argv[n] = NULL;
        if (n_spawned == 64)
                return -ENOSPC;
        snprintf(spawned[n_spawned].out, sizeof(spawned[0].out), "/tmp/kt-out-%d-%d", getpid(), n_spawned);
        int out = open(spawned[n_spawned].out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (out < 0)
                return -errno;
        fflush(stdout);
        int saved = dup(1);
        dup2(out, 1);
        pid_t pid = mg_spawn_in_cgroup(cg, argv, NULL);
        dup2(saved, 1);
        close(saved);
        close(out);
        if (pid > 0)
                spawned[n_spawned++].pid = pid;
        return pid;
}

int kt_wait(pid_t pid, uint64_t timeout_usec) {
        uint64_t end = mg_mono_usec() + timeout_usec;
        int status, slot = -1;
        for (int i = 0; i < n_spawned; i++)
                if (spawned[i].pid == pid)
                        slot = i;
        if (slot >= 0 && spawned[slot].reaped)
                return spawned[slot].status; /* asked again after it ended */
        int pfd = (int) syscall(SYS_pidfd_open, pid, 0);
        for (;;) {
                pid_t r = waitpid(pid, &status, WNOHANG);
                if (r == pid) {
                        if (pfd >= 0)
                                close(pfd);
                        if (slot >= 0) {
                                spawned[slot].reaped = true;
                                spawned[slot].status = status;
                        }
                        return status;
                }
                if (r < 0 || mg_mono_usec() >= end)
                        break;
                struct pollfd p = { .fd = pfd, .events = POLLIN };
                (void) poll(&p, pfd >= 0 ? 1 : 0, 50);
        }
        if (pfd >= 0)
                close(pfd);
        return -ETIMEDOUT;
}

const char *kt_result(pid_t pid) {
        static char line[512];
        line[0] = '\0';
        for (int i = 0; i < n_spawned; i++) {
                if (spawned[i].pid != pid)
                        continue;
                FILE *f = fopen(spawned[i].out, "r");
                if (!f)
                        break;
                char buf[512];
                while (fgets(buf, sizeof(buf), f))
                        if (strncmp(buf, "workload=", 9) == 0)
                                snprintf(line, sizeof(line), "%s", buf);
                fclose(f);
                line[strcspn(line, "\n")] = '\0';
        }
        return line;
}

int kt_make_file(const char *path, uint64_t mib) {
        static char buf[1 << 20];
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        for (uint64_t i = 0; i < mib; i++) {
                memset(buf, (int) (i * 7 + 1), sizeof(buf));
                if (write(fd, buf, sizeof(buf)) != (ssize_t) sizeof(buf)) {
                        int r = -errno;
                        close(fd);
                        return r;
                }
        }
        fsync(fd);
        close(fd);
        kt_drop_cache(path);
        return 0;
}

void kt_drop_cache(const char *path) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                fdatasync(fd);
                posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
                close(fd);
        }
}

static void on_event(mg_guard *g, const struct mg_event *ev, void *ud) {
        struct kt_events *e = ud;
        (void) g;
        if (ev->type < 16)
                e->n[ev->type]++;
        if (ev->type == MG_EVENT_KILL) {
                char buf[1024];
                e->kill = *ev->kill;
                e->kill_time = ev->time_usec;
                mg_kill_record_format(ev->kill, buf, sizeof(buf));
                kt_note("%s", buf);
        }
        if (ev->type == MG_EVENT_ERROR)
                kt_note("guard error on %s: %s", ev->what ? ev->what : "?", strerror(-ev->error));
        if (ev->type == MG_EVENT_GONE)
                e->gone++;
        if (ev->lend)
                e->lend = *ev->lend;
        if (ev->type == MG_EVENT_UNKILLABLE)
                kt_note("unkillable: %" PRIu32 " members still there %" PRIu64 " ms after the kill, first %" PRId32
                        " (%c)",
                        ev->unkillable->n_members, ev->unkillable->wait_usec / 1000,
                        ev->unkillable->n_pids ? ev->unkillable->pids[0] : 0,
                        ev->unkillable->n_pids ? ev->unkillable->states[0] : '?');
        if (ev->type == MG_EVENT_EMPTY_OVER_LIMIT) {
                const struct mg_report *r = ev->report;
                e->empty = *r;
                kt_note("empty over the limit: used %" PRIu64 " KiB of %" PRIu64 " KiB (anon %" PRIu64
                        " shmem %" PRIu64 " kernel %" PRIu64 " sock %" PRIu64 " KiB), memory.current %" PRIu64
                        " KiB, no process",
                        r->used_bytes >> 10, r->limit_bytes >> 10, r->stat.anon >> 10, r->stat.shmem >> 10,
                        r->stat.kernel >> 10, r->stat.sock >> 10, r->current_bytes >> 10);
        }
        if (ev->type == MG_EVENT_THROTTLED) {
                e->throttle = *ev->throttle;
                kt_note("throttled: %" PRIu64 " KiB over memory.high %" PRIu64 " KiB, est %" PRIu64
                        " ms per 256 KiB, %" PRIu64 " high events/s, memory some %u.%02u %%, cpu %u.%02u %%",
                        (ev->throttle->current_bytes - ev->throttle->high_bytes) >> 10, ev->throttle->high_bytes >> 10,
                        ev->throttle->est_delay_usec / 1000, ev->throttle->high_events_per_sec,
                        ev->throttle->memory_some_permyriad / 100, ev->throttle->memory_some_permyriad % 100,
                        ev->throttle->cpu_permyriad / 100, ev->throttle->cpu_permyriad % 100);
        }
}

mg_set *kt_set_new(void) {
        mg_set *s = NULL;
        return mg_set_new(NULL, &s) < 0 ? NULL : s;
}

int kt_guard_opts(mg_set *s, const char *cg, struct mg_guard_options *o, struct kt_events *ev, mg_guard **ret) {
        o->on_event = on_event;
        o->userdata = ev;
        return mg_set_add(s, cg, o, ret);
}

int kt_guard_io(mg_set *s, const char *cg, struct mg_guard_options *o, const struct mg_io *io, struct kt_events *ev,
                mg_guard **ret) {
        o->on_event = on_event;
        o->userdata = ev;
        return mg_set_add_internal(s, cg, o, 0, io, ret);
}

int kt_guard(mg_set *s, const char *cg, uint64_t limit, struct kt_events *ev, mg_guard **ret) {
        struct mg_guard_options o;
        int r = mg_guard_options_init(&o, limit);
        return r < 0 ? r : kt_guard_opts(s, cg, &o, ev, ret);
}

bool killed_any(void *ud) {
        return ((struct kt_events *) ud)->n[MG_EVENT_KILL] > 0;
}

bool is_sigkill_status(int status) {
        return status >= 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

bool kt_run(mg_set *s, uint64_t timeout_usec, bool (*stop)(void *), void (*sample)(void *), void *ud) {
        uint64_t end = mg_mono_usec() + timeout_usec;
        struct pollfd p = { .fd = mg_set_get_fd(s), .events = POLLIN };
        for (;;) {
                if (sample)
                        sample(ud);
                if (stop && stop(ud))
                        return true;
                uint64_t now = mg_mono_usec(), due;
                if (now >= end)
                        return false;
                mg_set_get_timeout(s, &due);
                uint64_t wait = due > now ? due - now : 0;
                if (wait > 10 * MG_USEC_PER_MSEC)
                        wait = 10 * MG_USEC_PER_MSEC;
                (void) poll(&p, 1, (int) ((wait + 999) / 1000));
                mg_set_process(s);
        }
}

struct lend_wait {
        struct kt_events *ev;
        int ends;
};

static bool lend_told(void *ud) {
        struct lend_wait *w = ud;
        return w->ev->n[MG_EVENT_LEND_END] > w->ends;
}

int kt_lend_end(mg_set *s, mg_guard *g, uint64_t lend_id, struct kt_events *ev, uint64_t timeout_usec) {
        struct lend_wait w = { .ev = ev, .ends = ev->n[MG_EVENT_LEND_END] };
        int r = mg_guard_lend_end(g, lend_id);
        if (r < 0)
                return r;
        if (r == 0)
                return lend_told(&w) ? 0 : -EPROTO; /* a lone guard's end tells at once */
        return kt_run(s, timeout_usec, lend_told, NULL, &w) ? 0 : -ETIMEDOUT;
}
