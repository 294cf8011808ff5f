/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgdir.h"
#include "parse.h"
#include "scenario.h"
#include "spawn.h"
#include "util.h"

/* ---- what a guard told ------------------------------------------------- */

void mgt_events_record(struct mgt_events *e, const struct mg_event *ev) {
        if ((unsigned) ev->type < MGT_EVENT_N)
                e->n[ev->type]++;
        if (ev->type == MG_EVENT_KILL) {
                e->kill = *ev->kill;
                e->kill_time = ev->time_usec;
        }
        if (ev->type == MG_EVENT_GONE)
                e->gone++;
        if (ev->lend)
                e->lend = *ev->lend;
        if (ev->type == MG_EVENT_EMPTY_OVER_LIMIT)
                e->empty = *ev->report;
        if (ev->type == MG_EVENT_THROTTLED)
                e->throttle = *ev->throttle;
        if (ev->type == MG_EVENT_PARK)
                e->park = *ev->kill;
        if (ev->type == MG_EVENT_THAW)
                e->thaw = *ev->kill;
        if (ev->type == MG_EVENT_RECLAIM) {
                if (e->n[MG_EVENT_RECLAIM] == 1) {
                        e->reclaim = *ev->reclaim;
                        e->reclaim_time = ev->time_usec;
                }
                e->reclaim_last = *ev->reclaim;
        }
}

bool mgt_events_killed(void *ud) {
        return ((struct mgt_events *) ud)->n[MG_EVENT_KILL] > 0;
}

bool mgt_events_parked(void *ud) {
        return ((struct mgt_events *) ud)->n[MG_EVENT_PARK] > 0;
}

/* ---- a workload process ------------------------------------------------- */

/* A fixture run's children stay where this process is: a fake cgroup
 * directory is no cgroup for clone3. */
static pid_t spawn_here(char *const argv[], int *ret_pidfd) {
        pid_t pid = fork();

        if (pid == 0) {
                sigset_t none;
                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
                execv(argv[0], argv);
                _exit(127);
        }
        if (pid < 0)
                return -errno;
        *ret_pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        return pid;
}

int mgt_proc_start(struct mgt_proc *p, const char *cg, const char *exe, const char *const args[], const char *dir) {
        static unsigned counter;
        char *argv[32];
        int n = 0, out, saved, r;

        *p = (struct mgt_proc) { .pid = -1, .pidfd = -1 };
        argv[n++] = (char *) exe;
        for (int i = 0; args[i] && n < 31; i++)
                argv[n++] = (char *) args[i];
        argv[n] = NULL;
        if ((size_t) snprintf(p->out, sizeof(p->out), "%s/mg-out-%d-%u", dir, (int) getpid(), counter++) >=
            sizeof(p->out))
                return -ENAMETOOLONG;
        out = open(p->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (out < 0) {
                r = -errno;
                p->out[0] = '\0';
                return r;
        }
        /* The child inherits fd 1; dup2 drops O_CLOEXEC on it. */
        fflush(stdout);
        saved = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        if (saved < 0) {
                r = -errno;
                close(out);
                return r;
        }
        dup2(out, STDOUT_FILENO);
        p->pid = cg ? mg_spawn_in_cgroup(cg, argv, &p->pidfd) : spawn_here(argv, &p->pidfd);
        dup2(saved, STDOUT_FILENO);
        close(saved);
        close(out);
        if (p->pid < 0) {
                r = p->pid;
                p->pid = -1;
                p->pidfd = -1;
                return r;
        }
        return 0;
}

bool mgt_proc_check(struct mgt_proc *p) {
        if (p->pid > 0 && !p->done && waitpid(p->pid, &p->status, WNOHANG) == p->pid)
                p->done = true;
        return p->done;
}

int mgt_proc_wait(struct mgt_proc *p, uint64_t timeout_usec) {
        uint64_t end = mg_mono_usec() + timeout_usec;

        if (p->pid <= 0)
                return -ECHILD;
        for (;;) {
                if (p->done)
                        return p->status; /* also when asked again after it ended */
                pid_t r = waitpid(p->pid, &p->status, WNOHANG);
                if (r == p->pid) {
                        p->done = true;
                        continue;
                }
                if (r < 0)
                        return -errno; /* -ECHILD: someone else reaped it */
                if (mg_mono_usec() >= end)
                        return -ETIMEDOUT;
                struct pollfd pfd = { .fd = p->pidfd, .events = POLLIN };
                (void) poll(&pfd, p->pidfd >= 0 ? 1 : 0, 50);
        }
}

int mgt_proc_stop(struct mgt_proc *p, int sig, uint64_t timeout_usec) {
        int r;

        if (p->pid <= 0)
                return -ECHILD;
        if (!mgt_proc_check(p) && sig)
                (void) kill(p->pid, sig);
        r = mgt_proc_wait(p, timeout_usec);
        if (r != -ETIMEDOUT)
                return r;
        (void) kill(p->pid, SIGKILL);
        if (waitpid(p->pid, &p->status, 0) != p->pid)
                return -ETIMEDOUT;
        p->done = true;
        return p->status;
}

char *mgt_proc_output_all(const struct mgt_proc *p) {
        struct stat st;
        char *buf;
        ssize_t n;
        int fd;

        if (!p->out[0])
                return NULL;
        fd = open(p->out, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        if (fstat(fd, &st) < 0 || !(buf = malloc((size_t) st.st_size + 1))) {
                close(fd);
                return NULL;
        }
        n = pread(fd, buf, (size_t) st.st_size, 0);
        close(fd);
        buf[n > 0 ? n : 0] = '\0';
        return buf;
}

void mgt_proc_end(struct mgt_proc *p) {
        if (p->pid > 0 && !p->done) {
                /* its cgroup was destroyed: it dies, or has died, of that;
                 * one reaped elsewhere (-ECHILD) is left alone: its pid
                 * may be another process's by now */
                if (mgt_proc_wait(p, 5 * MG_USEC_PER_SEC) == -ETIMEDOUT) {
                        (void) kill(p->pid, SIGKILL);
                        if (waitpid(p->pid, &p->status, 0) == p->pid)
                                p->done = true;
                }
        }
        if (p->pidfd >= 0)
                close(p->pidfd);
        p->pidfd = -1;
        if (p->out[0]) {
                mgt_proc_output(p, p->text, sizeof(p->text));
                mgt_proc_result(p, p->result, sizeof(p->result));
                (void) unlink(p->out);
        }
        p->out[0] = '\0';
}

size_t mgt_proc_output(const struct mgt_proc *p, char *buf, size_t len) {
        ssize_t n = -1;
        int fd;

        if (len == 0)
                return 0;
        if (!p->out[0]) {
                snprintf(buf, len, "%s", p->text);
                return strlen(buf);
        }
        fd = open(p->out, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                n = pread(fd, buf, len - 1, 0);
                close(fd);
        }
        buf[n > 0 ? n : 0] = '\0';
        return n > 0 ? (size_t) n : 0;
}

bool mgt_proc_printed(const struct mgt_proc *p) {
        char buf[512];
        mgt_proc_output(p, buf, sizeof(buf));
        return strchr(buf, '\n') != NULL;
}

const char *mgt_proc_result(const struct mgt_proc *p, char *buf, size_t len) {
        char line[512];
        FILE *f;

        if (!p->out[0]) {
                snprintf(buf, len, "%s", p->result);
                return buf;
        }
        buf[0] = '\0';
        f = fopen(p->out, "re");
        if (!f)
                return buf;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "workload=", 9) == 0)
                        snprintf(buf, len, "%s", line);
        fclose(f);
        buf[strcspn(buf, "\n")] = '\0';
        return buf;
}

int mgt_proc_result_value(const struct mgt_proc *p, const char *key, uint64_t *ret) {
        char line[512], pat[64];
        const char *s;

        mgt_proc_result(p, line, sizeof(line));
        snprintf(pat, sizeof(pat), " %s=", key);
        s = strstr(line, pat);
        if (!s)
                return -ENOENT;
        s += strlen(pat);
        return mg_parse_u64_value(s, strcspn(s, " "), ret);
}

bool mgt_proc_exited_ok(const struct mgt_proc *p) {
        return p->done && WIFEXITED(p->status) && WEXITSTATUS(p->status) == 0;
}

bool mgt_proc_sigkilled(const struct mgt_proc *p) {
        return p->done && WIFSIGNALED(p->status) && WTERMSIG(p->status) == SIGKILL;
}

const char *mgt_proc_status(const struct mgt_proc *p, char *buf, size_t len) {
        if (!p->done)
                snprintf(buf, len, "still running");
        else if (WIFEXITED(p->status))
                snprintf(buf, len, "exit %d", WEXITSTATUS(p->status));
        else
                snprintf(buf, len, "signal %d", WTERMSIG(p->status));
        return buf;
}

/* ---- running a guard set -------------------------------------------------- */

/* One wait: until the set's fd is readable or its next tick is due, for at
 * most 10 ms; then the set runs. */
static void wait_once(mg_set *s) {
        uint64_t now = mg_mono_usec(), due, wait = 10 * MG_USEC_PER_MSEC;

        if (!s) {
                (void) poll(NULL, 0, (int) (wait / MG_USEC_PER_MSEC));
                return;
        }
        struct pollfd p = { .fd = mg_set_get_fd(s), .events = POLLIN };
        mg_set_get_timeout(s, &due);
        if (due <= now)
                wait = 0;
        else if (due - now < wait)
                wait = due - now;
        (void) poll(&p, 1, (int) ((wait + 999) / 1000));
        mg_set_process(s);
}

bool mgt_run(mg_set *s, uint64_t timeout_usec, bool (*stop)(void *), void (*sample)(void *), void *ud) {
        uint64_t end = mg_mono_usec() + timeout_usec;

        for (;;) {
                if (sample)
                        sample(ud);
                if (stop && stop(ud))
                        return true;
                if (mg_mono_usec() >= end)
                        return false;
                wait_once(s);
        }
}

/* ---- an actor --------------------------------------------------------------- */

static void actor_init(struct mgt_actor *a) {
        *a = (struct mgt_actor) { .current_fd = -1, .worst = MG_VERDICT_OK, .out_dir = "/tmp" };
        for (unsigned i = 0; i < MGT_ACTOR_PROCS; i++)
                a->proc[i] = (struct mgt_proc) { .pid = -1, .pidfd = -1 };
}

static int actor_open(struct mgt_actor *a) {
        char path[PATH_MAX + 16];
        snprintf(path, sizeof(path), "%s/memory.current", a->cg);
        a->current_fd = open(path, O_RDONLY | O_CLOEXEC);
        a->start_usec = mg_mono_usec();
        return 0;
}

int mgt_actor_new(struct mgt_actor *a, const char *parent, const char *name, unsigned n) {
        actor_init(a);
        if ((size_t) snprintf(a->cg, sizeof(a->cg), "%s/%s-%u", parent, name, n) >= sizeof(a->cg)) {
                a->cg[0] = '\0';
                return -ENAMETOOLONG;
        }
        if (mkdir(a->cg, 0755) < 0) {
                int r = -errno;
                a->cg[0] = '\0';
                return r;
        }
        a->own_cg = true;
        return actor_open(a);
}

int mgt_actor_adopt(struct mgt_actor *a, const char *cg) {
        actor_init(a);
        if ((size_t) snprintf(a->cg, sizeof(a->cg), "%s", cg) >= sizeof(a->cg)) {
                a->cg[0] = '\0';
                return -ENAMETOOLONG;
        }
        return actor_open(a);
}

int mgt_actor_limit(struct mgt_actor *a, const char *file, uint64_t bytes) {
        return mgt_cg_writef(a->cg, file, "%" PRIu64, bytes);
}

static void actor_event(mg_guard *g, const struct mg_event *ev, void *userdata) {
        struct mgt_actor *a = userdata;

        (void) g;
        mgt_events_record(&a->ev, ev);
        if (ev->type == MG_EVENT_KILL)
                a->ev.kill.cgroup = a->cg; /* the guard's copy dies with it */
        if (a->on_event)
                a->on_event(a, ev);
}

int mgt_actor_guard(struct mgt_actor *a, uint64_t limit, struct mg_guard_options *o) {
        struct mg_guard_options dflt;
        int r;

        if (!o) {
                r = mg_guard_options_init(&dflt, limit);
                if (r < 0)
                        return r;
                o = &dflt;
        }
        o->on_event = actor_event;
        o->userdata = a;
        r = mg_set_new(NULL, &a->set);
        if (r < 0) {
                a->set = NULL;
                return r;
        }
        return mg_set_add(a->set, a->cg, o, &a->guard);
}

int mgt_actor_start(struct mgt_actor *a, const char *const args[], struct mgt_proc **ret) {
        struct mgt_proc *p;
        int r;

        if (a->n_proc == MGT_ACTOR_PROCS)
                return -ENOSPC;
        p = &a->proc[a->n_proc++];
        r = mgt_proc_start(p, a->cg, a->workload, args, a->out_dir);
        if (ret)
                *ret = p;
        return r;
}

bool mgt_actor_all_done(struct mgt_actor *a) {
        bool all = true;
        for (unsigned i = 0; i < a->n_proc; i++)
                all &= mgt_proc_check(&a->proc[i]);
        return all;
}

static void actor_sample(struct mgt_actor *a) {
        char buf[32];
        uint64_t now = mg_mono_usec(), cur;
        ssize_t n;

        if (a->current_fd >= 0 && (n = pread(a->current_fd, buf, sizeof(buf), 0)) > 0 &&
            mg_parse_u64_value(buf, (size_t) n, &cur) == 0) {
                if (cur > a->peak)
                        a->peak = cur;
                if (a->watch_bytes && !a->crossed_usec && cur > a->watch_bytes)
                        a->crossed_usec = now;
        }
        if (a->watch_onset && !a->onset_usec && now - a->last_onset_usec >= 100 * MG_USEC_PER_MSEC) {
                struct mg_memstat st = { .workingset_refault_file = 0 };
                (void) mgt_cg_read_memstat(a->cg, &st);
                if (!a->last_onset_usec)
                        a->refaults0 = st.workingset_refault_file;
                else if (mgt_thrash_onset(a->refaults0, st.workingset_refault_file))
                        a->onset_usec = now;
                a->last_onset_usec = now;
        }
        if (a->sample_reports && a->guard && now - a->last_report_usec >= 250 * MG_USEC_PER_MSEC) {
                struct mg_report rep = { .size = sizeof(rep) };
                a->last_report_usec = now;
                if (mg_guard_report(a->guard, &rep) == 0) {
                        if (rep.verdict > a->worst)
                                a->worst = rep.verdict;
                        if (rep.used_bytes > a->max_used)
                                a->max_used = rep.used_bytes;
                }
        }
}

bool mgt_actor_run(struct mgt_actor *a, uint64_t timeout_usec, bool (*stop)(struct mgt_actor *a, void *ud),
                   void *ud) {
        uint64_t end = mg_mono_usec() + timeout_usec;

        for (;;) {
                actor_sample(a);
                (void) mgt_actor_all_done(a);
                /* A kill record comes once the cgroup is empty, and the
                 * workload may be reaped first: a guard still waiting for
                 * that is not done. */
                if (stop && stop(a, ud) && !(a->guard && mg_guard_is_killing(a->guard) && mg_mono_usec() < end))
                        return true;
                if (mg_mono_usec() >= end)
                        return false;
                wait_once(a->set);
        }
}

int mgt_actor_enter(struct mgt_actor *a, const char *root) {
        char *home;
        int r = mgt_cg_self_in(root, &home);

        if (r < 0)
                return r;
        r = (size_t) snprintf(a->home, sizeof(a->home), "%s", home) >= sizeof(a->home) ? -ENAMETOOLONG : 0;
        free(home);
        if (r == 0)
                r = mgt_cg_writef(a->cg, "cgroup.procs", "%d", (int) getpid());
        if (r == 0)
                a->inside = true;
        return r;
}

int mgt_actor_leave(struct mgt_actor *a) {
        int r;

        if (!a->inside)
                return 0;
        r = mgt_cg_writef(a->home, "cgroup.procs", "%d", (int) getpid());
        if (r == 0)
                a->inside = false;
        return r;
}

int mgt_actor_end(struct mgt_actor *a) {
        int r = 0;

        if (!a->cg[0] || a->ended)
                return 0;
        a->ended = true;
        if (mgt_actor_leave(a) < 0)
                r = -EBUSY; /* still inside: killing the cgroup would kill us */
        mgt_ticker_stop(&a->tk);
        if (a->own_cg && r == 0)
                r = mgt_cg_destroy(a->cg, 10 * MG_USEC_PER_SEC);
        for (unsigned i = 0; i < a->n_proc; i++)
                mgt_proc_end(&a->proc[i]);
        mg_set_free(a->set);
        a->set = NULL;
        a->guard = NULL;
        if (a->current_fd >= 0)
                close(a->current_fd);
        a->current_fd = -1;
        return r;
}

/* ---- the workloads the demo and the kernel suite share ------------------------ */

const struct mgt_actor_spec mgt_spec_anon_overshoot = {
        .name = "overshoot", .limit = 64 * MG_MIB,
        .args = (const char *const[]) { "anon", "160", "256", "-1", NULL },
        .timeout_usec = 60 * MG_USEC_PER_SEC,
};

const struct mgt_actor_spec mgt_spec_thrash_hot_file = {
        .name = "thrash-file", .file_mib = 96, .limit = 48 * MG_MIB, .max = 48 * MG_MIB,
        .args = (const char *const[]) { "hotfile", "FILE", "SECONDS", "60", "95", NULL },
        .timeout_usec = 60 * MG_USEC_PER_SEC,
};

const struct mgt_actor_spec mgt_spec_thrash_sequential = {
        .name = "thrash-seq", .file_mib = 96, .limit = 48 * MG_MIB, .max = 48 * MG_MIB,
        .args = (const char *const[]) { "filehot", "FILE", "SECONDS", "seq", "200", NULL },
        .timeout_usec = 60 * MG_USEC_PER_SEC,
};

const struct mgt_actor_spec mgt_spec_thrash_under_high = {
        .name = "thrash-high", .file_mib = 128, .limit = 64 * MG_MIB, .max = 64 * MG_MIB,
        .high = 64 * MG_MIB * 9 / 10,
        .args = (const char *const[]) { "filehot", "FILE", "SECONDS", "skew", "80", "95", "16", NULL },
        .timeout_usec = 60 * MG_USEC_PER_SEC,
};

const struct mgt_actor_spec mgt_spec_page_cache_writer = {
        .name = "pagecache", .limit = 64 * MG_MIB, .max = 64 * MG_MIB,
        .args = (const char *const[]) { "write", "FILE", "192", "0", NULL },
        .timeout_usec = 60 * MG_USEC_PER_SEC,
};

const struct mgt_actor_spec mgt_spec_page_cache_reader = {
        .name = "pagecache", .file_mib = 128, .limit = 64 * MG_MIB, .max = 64 * MG_MIB,
        .args = (const char *const[]) { "read", "FILE", "SECONDS", NULL },
        .timeout_usec = 60 * MG_USEC_PER_SEC,
};

const struct mgt_actor_spec mgt_spec_dirty_after_lend = {
        .name = "lend", .limit = 64 * MG_MIB, .high = 64 * MG_MIB * 9 / 10,
        .args = (const char *const[]) { "write", "FILE", "256", "0", NULL },
        .timeout_usec = 60 * MG_USEC_PER_SEC,
};

int mgt_spec_args(const struct mgt_actor_spec *s, const char *file, const char *seconds, const char *argv[], size_t n) {
        size_t i = 0;

        for (; s->args[i]; i++) {
                if (i + 1 >= n)
                        return -E2BIG;
                argv[i] = strcmp(s->args[i], "FILE") == 0      ? file
                          : strcmp(s->args[i], "SECONDS") == 0 ? seconds
                                                               : s->args[i];
        }
        argv[i] = NULL;
        return 0;
}

int mgt_actor_apply(struct mgt_actor *a, const struct mgt_actor_spec *s) {
        int r = 0;
        if (s->max)
                r = mgt_actor_limit(a, "memory.max", s->max);
        if (r == 0 && s->high)
                r = mgt_actor_limit(a, "memory.high", s->high);
        return r;
}

int mgt_make_file(const char *path, uint64_t mib) {
        static char buf[1 << 20];
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), r = 0;

        if (fd < 0)
                return -errno;
        for (uint64_t i = 0; i < mib && r == 0; i++) {
                memset(buf, (int) (i * 7 + 1), sizeof(buf));
                if (write(fd, buf, sizeof(buf)) != (ssize_t) sizeof(buf))
                        r = errno ? -errno : -EIO;
        }
        if (r == 0 && fsync(fd) < 0)
                r = -errno;
        close(fd);
        if (r == 0)
                mgt_drop_cache(path);
        return r;
}

void mgt_drop_cache(const char *path) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                (void) fdatasync(fd);
                (void) posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
                close(fd);
        }
}
