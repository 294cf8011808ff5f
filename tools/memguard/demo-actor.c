/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The demo's actors: a cgroup below the demo's, an optional guard set on
 * it, mg-workload processes started inside with their result lines
 * captured, and a loop that runs the guard while sampling memory.current.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgdir.h"
#include "demo.h"
#include "events.h"
#include "loop.h"
#include "spawn.h"

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

/* A key=value of the workload's result line; 0 if absent. */
uint64_t demo_result(const struct proc *p, const char *key) {
        char pat[64];
        const char *s = strstr(p->text, "workload=");
        snprintf(pat, sizeof(pat), " %s=", key);
        s = s ? strstr(s, pat) : NULL;
        return s ? strtoull(s + strlen(pat), NULL, 10) : 0;
}

bool demo_exited_ok(const struct proc *p) {
        return p->done && WIFEXITED(p->status) && WEXITSTATUS(p->status) == 0;
}

bool demo_sigkilled(const struct proc *p) {
        return p->done && WIFSIGNALED(p->status) && WTERMSIG(p->status) == SIGKILL;
}

const char *demo_status(const struct proc *p, char *buf, size_t len) {
        if (!p->done)
                snprintf(buf, len, "still running");
        else if (WIFEXITED(p->status))
                snprintf(buf, len, "exit %d", WEXITSTATUS(p->status));
        else
                snprintf(buf, len, "signal %d", WTERMSIG(p->status));
        return buf;
}

/* ---- actors and their processes --------------------------------------- */

static void on_event(mg_guard *g, const struct mg_event *ev, void *userdata) {
        struct actor *a = userdata;
        char line[2048];

        (void) g;
        switch (ev->type) {
        case MG_EVENT_KILL:
                a->kills++;
                a->kill = *ev->kill;
                a->kill.cgroup = a->cg; /* the guard's copy dies with it */
                mgt_kill_text(ev->kill, line, sizeof(line));
                demo_progress("  %s", line);
                break;
        case MG_EVENT_LEND_BEGIN:
                a->lend_begin++;
                break;
        case MG_EVENT_LEND_END:
                a->lend_end++;
                break;
        case MG_EVENT_ERROR:
                a->errors++;
                demo_progress("  guard error on %s: %s", ev->what ? ev->what : "?", strerror(-ev->error));
                break;
        default:
                break;
        }
}

int demo_actor_new(struct demo *d, const char *name, uint64_t guard_limit, struct actor *a) {
        struct mg_guard_options o;
        int r;

        *a = (struct actor) { .d = d, .current_fd = -1, .worst = MG_VERDICT_OK };
        if (asprintf(&a->cg, "%s/%s-%u", d->base, name, ++d->n_cg) < 0) {
                a->cg = NULL;
                return -ENOMEM;
        }
        if (mkdir(a->cg, 0755) < 0) {
                r = -errno;
                demo_progress("mkdir %s: %s", a->cg, strerror(-r));
                free(a->cg);
                a->cg = NULL;
                return r;
        }
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/memory.current", a->cg);
        a->current_fd = open(path, O_RDONLY | O_CLOEXEC);
        if (guard_limit) {
                r = mg_set_new(NULL, &a->set);
                if (r >= 0) {
                        mg_guard_options_init(&o, guard_limit);
                        o.on_event = on_event;
                        o.userdata = a;
                        r = mg_set_add(a->set, a->cg, &o, &a->guard);
                }
                if (r < 0) {
                        demo_progress("guarding %s: %s", a->cg, strerror(-r));
                        return r;
                }
        }
        a->start_usec = mg_mono_usec();
        return 0;
}

int demo_actor_set(struct actor *a, const char *file, uint64_t bytes) {
        char v[32];
        snprintf(v, sizeof(v), "%" PRIu64, bytes);
        int r = mgt_cg_write(a->cg, file, v);
        if (r < 0)
                demo_progress("writing %s/%s: %s", a->cg, file, strerror(-r));
        return r;
}

/* Starts mg-workload ARGS in the actor's cgroup with its stdout on a pipe. */
int demo_proc_start(struct actor *a, struct proc *p, const char *const args[]) {
        char *argv[12];
        int fds[2], saved, n = 0;

        *p = (struct proc) { .pid = -1, .out = -1 };
        argv[n++] = a->d->workload;
        for (int i = 0; args[i] && n < 11; i++)
                argv[n++] = (char *) args[i];
        argv[n] = NULL;
        if (pipe2(fds, O_CLOEXEC) < 0)
                return -errno;
        /* The child inherits fd 1; dup2 drops O_CLOEXEC on it. */
        fflush(stdout);
        saved = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        if (saved < 0) {
                int r = -errno;
                close(fds[0]);
                close(fds[1]);
                return r;
        }
        dup2(fds[1], STDOUT_FILENO);
        p->pid = mg_spawn_in_cgroup(a->cg, argv, NULL);
        dup2(saved, STDOUT_FILENO);
        close(saved);
        close(fds[1]);
        p->out = fds[0];
        (void) fcntl(p->out, F_SETFL, O_NONBLOCK);
        if (p->pid < 0) {
                demo_progress("starting %s %s in %s: %s", argv[0], args[0], a->cg, strerror(-p->pid));
                return p->pid;
        }
        return 0;
}

void demo_proc_check(struct proc *p) {
        ssize_t n;

        if (p->pid <= 0)
                return;
        while (p->out >= 0 && p->len + 1 < sizeof(p->text) &&
               (n = read(p->out, p->text + p->len, sizeof(p->text) - 1 - p->len)) > 0) {
                p->len += (size_t) n;
                p->text[p->len] = '\0';
        }
        if (!p->done && waitpid(p->pid, &p->status, WNOHANG) == p->pid)
                p->done = true;
}

bool demo_proc_printed(const struct proc *p) {
        return strchr(p->text, '\n') != NULL;
}

static void actor_sample(struct actor *a) {
        char buf[32];
        uint64_t now = mg_mono_usec();
        ssize_t n;

        if (a->current_fd >= 0 && (n = pread(a->current_fd, buf, sizeof(buf) - 1, 0)) > 0) {
                buf[n] = '\0';
                uint64_t cur = strtoull(buf, NULL, 10);
                if (cur > a->peak)
                        a->peak = cur;
                if (a->watch_bytes && !a->crossed_usec && cur > a->watch_bytes)
                        a->crossed_usec = now;
        }
        if (a->watch_onset && !a->onset_usec && now - a->last_onset_usec >= 100 * MG_USEC_PER_MSEC) {
                uint64_t refaults = 0;
                (void) mgt_cg_read_key(a->cg, "memory.stat", "workingset_refault_file", &refaults);
                if (!a->last_onset_usec)
                        a->refaults0 = refaults;
                else if (refaults > a->refaults0)
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

bool demo_all_done(struct actor *a, struct proc *p, unsigned n) {
        (void) a;
        for (unsigned i = 0; i < n; i++)
                if (!p[i].done)
                        return false;
        return true;
}

bool demo_killed_or_done(struct actor *a, struct proc *p, unsigned n) {
        return a->kills > 0 || demo_all_done(a, p, n);
}

bool demo_printed_or_done(struct actor *a, struct proc *p, unsigned n) {
        (void) n;
        return a->kills > 0 || p->done || demo_proc_printed(p);
}

/* Runs the actor's guard (if any) and samples memory.current every 10 ms
 * until stop() or timeout.  Returns true if stop() became true. */
bool demo_actor_run(struct actor *a, struct proc *p, unsigned n, uint64_t timeout_usec, demo_stop_fn stop) {
        uint64_t end = mg_mono_usec() + timeout_usec;

        for (;;) {
                actor_sample(a);
                for (unsigned i = 0; i < n; i++)
                        demo_proc_check(&p[i]);
                /* A kill record comes once the cgroup is empty, and the
                 * workload may be reaped first: a guard still waiting for
                 * that is not done. */
                if (stop && stop(a, p, n) && !(a->guard && mg_guard_is_killing(a->guard) && mg_mono_usec() < end))
                        return true;
                uint64_t now = mg_mono_usec();
                if (now >= end || a->d->interrupted)
                        return false;
                struct pollfd sig = { .fd = a->d->sigfd, .events = POLLIN };
                (void) mgt_wait(a->set, &sig, 1, now + 10 * MG_USEC_PER_MSEC < end ? now + 10 * MG_USEC_PER_MSEC : end);
                int s;
                while ((s = mgt_signals_next(a->d->sigfd, NULL)) > 0)
                        if (s == SIGINT || s == SIGTERM || s == SIGHUP)
                                a->d->interrupted = true;
        }
}

/* Kills what is left, reaps it, frees the guard, removes the cgroup. */
void demo_actor_end(struct actor *a, struct proc *p, unsigned n) {
        if (!a->cg)
                return;
        (void) mgt_cg_destroy(a->cg, 10 * MG_USEC_PER_SEC);
        for (unsigned i = 0; i < n; i++) {
                if (p[i].pid > 0 && !p[i].done) {
                        uint64_t end = mg_mono_usec() + 5 * MG_USEC_PER_SEC;
                        while (!p[i].done && mg_mono_usec() < end) {
                                demo_proc_check(&p[i]);
                                if (!p[i].done)
                                        (void) poll(NULL, 0, 10);
                        }
                        if (!p[i].done) {
                                (void) kill(p[i].pid, SIGKILL);
                                (void) waitpid(p[i].pid, &p[i].status, 0);
                                p[i].done = true;
                        }
                }
                if (p[i].out >= 0)
                        close(p[i].out);
                p[i].out = -1;
        }
        mg_set_free(a->set);
        a->set = NULL;
        a->guard = NULL;
        if (a->current_fd >= 0)
                close(a->current_fd);
        a->current_fd = -1;
        if (a->cg && rmdir(a->cg) < 0 && errno != ENOENT)
                demo_progress("removing %s: %s", a->cg, strerror(errno));
        free(a->cg);
        a->cg = NULL;
}

/* Writes a file of mib MiB from outside the actors and drops it from the
 * page cache, so each run starts cold. */
int demo_make_file(const char *path, uint64_t mib_n) {
        static char buf[1 << 20];
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        if (fd < 0)
                return -errno;
        for (uint64_t i = 0; i < mib_n; i++) {
                memset(buf, (int) (i * 7 + 1), sizeof(buf));
                if (write(fd, buf, sizeof(buf)) != (ssize_t) sizeof(buf)) {
                        int r = errno ? -errno : -EIO;
                        close(fd);
                        return r;
                }
        }
        if (fsync(fd) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        (void) posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
        return 0;
}

void demo_drop_cache(const char *path) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                (void) fdatasync(fd);
                (void) posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
                close(fd);
        }
}
