/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The park hook's runner (hook.h): a process with one thread and one
 * poll() over the request socket, a signalfd for SIGCHLD and each running
 * hook's output pipe; the earliest timeout or end of a grace is poll's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helper.h"
#include "hook.h"

extern char **environ;

enum { MSG_RUN = 1, MSG_CANCEL = 2 };

/* A request: this header, then the cgroup's path and the record, each
 * without its NUL. */
struct request {
        uint32_t type;
        uint32_t cgroup_len;
        uint64_t seq, park_id, timeout_usec;
        uint32_t record_len;
        uint32_t pad;
};

#define REQUEST_MAX (sizeof(struct request) + PATH_MAX + MGT_HOOK_RECORD_MAX)

const char *mgt_hook_result_name(enum mgt_hook_result r) {
        static const char *const names[_MGT_HOOK_RESULT_MAX] = {
                [MGT_HOOK_SAVED] = "saved",     [MGT_HOOK_THAW] = "thaw",       [MGT_HOOK_FAILED] = "failed",
                [MGT_HOOK_SIGNALED] = "signal", [MGT_HOOK_TIMEOUT] = "timeout", [MGT_HOOK_ERROR] = "error",
                [MGT_HOOK_CANCELLED] = "cancelled",
        };
        return (unsigned) r < _MGT_HOOK_RESULT_MAX ? names[r] : "?";
}

int mgt_hook_split(const char *cmd, char *buf, size_t buf_len, char **argv, char *err, size_t err_len) {
        static const char refused[] = "\"'\\$`;|&<>";
        size_t n = cmd ? strlen(cmd) : 0;
        int argc = 0;
        char *p;

        if (n == 0) {
                snprintf(err, err_len, "empty");
                return -EINVAL;
        }
        if (n >= buf_len) {
                snprintf(err, err_len, "longer than %zu bytes", buf_len - 1);
                return -ENAMETOOLONG;
        }
        for (const char *c = cmd; *c; c++)
                if (strchr(refused, *c) || ((unsigned char) *c < 0x20 && *c != '\t') || *c == 0x7f) {
                        if ((unsigned char) *c < 0x20 || *c == 0x7f)
                                snprintf(err, err_len, "a control byte: not a shell's command line (write a script)");
                        else
                                snprintf(err, err_len, "'%c': not a shell's command line, nothing is quoted or "
                                         "expanded (write a script)", *c);
                        return -EINVAL;
                }
        memcpy(buf, cmd, n + 1);
        for (p = buf; *p;) {
                while (*p == ' ' || *p == '\t')
                        *p++ = '\0';
                if (!*p)
                        break;
                if (argc == MGT_HOOK_ARGS_MAX) {
                        snprintf(err, err_len, "more than %d words", MGT_HOOK_ARGS_MAX);
                        return -E2BIG;
                }
                argv[argc++] = p;
                while (*p && *p != ' ' && *p != '\t')
                        p++;
        }
        argv[argc] = NULL;
        if (argc == 0) {
                snprintf(err, err_len, "empty");
                return -EINVAL;
        }
        if (argv[0][0] != '/') {
                snprintf(err, err_len, "its first word is not an absolute path (no PATH lookup)");
                return -EINVAL;
        }
        return argc;
}

/* ---- the runner process */

static uint64_t mono_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

struct run {
        uint64_t seq;
        pid_t pid;              /* the hook, its group's leader */
        int out;                /* its stdout and stderr, read end, non-blocking; -1 once closed */
        uint64_t start_usec, deadline_usec;
        uint64_t kill_usec;     /* timed out: when SIGKILL follows the SIGTERM */
        enum mgt_hook_result forced; /* MGT_HOOK_TIMEOUT once timed out, _CANCELLED once cancelled; else _SAVED */
        bool killed;            /* SIGKILL sent to its group */
        uint64_t output_bytes;
        char tail[MGT_HOOK_OUTPUT_MAX]; /* a ring of the last bytes */
        size_t tail_at;
};

struct runner {
        int sock, sigfd;
        char **argv;            /* CMD's words, the cgroup's slot after them */
        int argc;
        struct run *runs[MGT_HOOK_RUNNING_MAX];
        size_t n;
};

static void send_reply(int sock, const struct mgt_hook_reply *rep) {
        ssize_t w;

        do
                w = send(sock, rep, sizeof(*rep), MSG_NOSIGNAL);
        while (w < 0 && errno == EINTR);
}

/* Keeps the last bytes of what the hook wrote; reads until EAGAIN or EOF
 * (then closes).  A hook writing without end is read as fast as it writes. */
static void drain(struct run *x) {
        char buf[16384];

        while (x->out >= 0) {
                ssize_t n = read(x->out, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return;
                if (n <= 0) {
                        close(x->out);
                        x->out = -1;
                        return;
                }
                x->output_bytes += (uint64_t) n;
                for (ssize_t i = n > MGT_HOOK_OUTPUT_MAX ? n - MGT_HOOK_OUTPUT_MAX : 0; i < n; i++) {
                        x->tail[x->tail_at % MGT_HOOK_OUTPUT_MAX] = buf[i];
                        x->tail_at++;
                }
        }
}

static void reply_of(const struct run *x, enum mgt_hook_result res, int code, struct mgt_hook_reply *rep) {
        size_t n = x->tail_at < MGT_HOOK_OUTPUT_MAX ? x->tail_at : MGT_HOOK_OUTPUT_MAX;
        size_t from = x->tail_at - n;

        *rep = (struct mgt_hook_reply) {
                .seq = x->seq,
                .result = res,
                .code = code,
                .duration_usec = mono_usec() - x->start_usec,
                .output_bytes = x->output_bytes,
                .output_len = (uint32_t) n,
        };
        for (size_t i = 0; i < n; i++)
                rep->output[i] = x->tail[(from + i) % MGT_HOOK_OUTPUT_MAX];
        rep->output[n] = '\0';
}

/* The hook, in the child: its own session and group, the record on
 * stdin, the output pipe on stdout and stderr, the signals as a fresh
 * process has them, oom_score_adj 0. */
static void __attribute__((noreturn)) exec_hook(char **argv, int in, int out, const struct request *q,
                                                const char *cgroup, pid_t runner) {
        char num[32];
        sigset_t all;
        int fd;

        (void) setsid();
        /* A runner killed outright (it ends its hooks' groups itself when
         * watch closes the socket) takes the hook with it. */
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != runner)
                _exit(127);
        if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
                _exit(127);
        (void) close_range(3, ~0U, 0);
        for (int s = 1; s < NSIG; s++)
                if (s != SIGKILL && s != SIGSTOP)
                        (void) signal(s, SIG_DFL);
        sigemptyset(&all);
        (void) sigprocmask(SIG_SETMASK, &all, NULL);
        /* watch's unit runs at Nice=-10 and OOMScoreAdjust=-900 so that
         * the guards keep up while the node thrashes; the hook is work like
         * any other.  Raising either needs no privilege; a failure leaves
         * it as it was. */
        (void) setpriority(PRIO_PROCESS, 0, 0);
        fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
                (void) !write(fd, "0", 1);
                close(fd);
        }
        /* The service manager's words to watch, not to the hook: a hook
         * that ran systemd-notify would speak for watch. */
        unsetenv("NOTIFY_SOCKET");
        unsetenv("WATCHDOG_PID");
        unsetenv("WATCHDOG_USEC");
        setenv("MEMGUARD_CGROUP", cgroup, 1);
        snprintf(num, sizeof(num), "%" PRIu64, q->park_id);
        setenv("MEMGUARD_PARK_ID", num, 1);
        snprintf(num, sizeof(num), "%" PRIu64, q->timeout_usec / 1000);
        setenv("MEMGUARD_TIMEOUT_MS", num, 1);
        snprintf(num, sizeof(num), "%d", MGT_HOOK_THAW_STATUS);
        setenv("MEMGUARD_THAW_STATUS", num, 1);
        execve(argv[0], argv, environ);
        dprintf(2, "memguard: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
}

/* Starts a run of q.  Returns the run, or NULL with *ret_err (answered
 * MGT_HOOK_ERROR by the caller). */
static struct run *start(struct runner *R, const struct request *q, const char *cgroup, const char *record,
                         int *ret_err) {
        struct run *x;
        int in = -1, p[2] = { -1, -1 };
        size_t len = q->record_len;

        if (R->n == MGT_HOOK_RUNNING_MAX) {
                *ret_err = EUSERS;
                return NULL;
        }
        x = calloc(1, sizeof(*x));
        if (!x) {
                *ret_err = ENOMEM;
                return NULL;
        }
        *x = (struct run) { .seq = q->seq, .out = -1, .start_usec = mono_usec() };
        x->deadline_usec = x->start_usec + q->timeout_usec;
        in = memfd_create("memguard-park-record", MFD_CLOEXEC);
        if (in < 0 || pipe2(p, O_CLOEXEC) < 0)
                goto fail;
        for (size_t off = 0; off < len;) {
                ssize_t w = write(in, record + off, len - off);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        goto fail;
                off += (size_t) w;
        }
        if (write(in, "\n", 1) != 1 || lseek(in, 0, SEEK_SET) != 0)
                goto fail;
        R->argv[R->argc] = (char *) cgroup;
        /* its slot before the fork: the child, which may exit without its
         * exec, holds no block it cannot reach */
        R->runs[R->n] = x;
        pid_t self = getpid();
        x->pid = fork();
        if (x->pid < 0) {
                R->argv[R->argc] = NULL;
                goto fail;
        }
        if (x->pid == 0)
                exec_hook(R->argv, in, p[1], q, cgroup, self);
        R->argv[R->argc] = NULL;
        close(in);
        close(p[1]);
        x->out = p[0];
        (void) fcntl(x->out, F_SETFL, O_NONBLOCK);
        /* The leader is in its group once setsid() returns; a signal
         * before that finds no group (signal_group()). */
        R->runs[R->n++] = x;
        return x;
fail:
        *ret_err = errno ? errno : EIO;
        if (in >= 0)
                close(in);
        if (p[0] >= 0) {
                close(p[0]);
                close(p[1]);
        }
        free(x);
        return NULL;
}

/* The group is there once the leader's setsid() has returned; a signal
 * before that (a timeout shorter than a fork) goes to the leader alone,
 * which still has the runner's dispositions then (SIGTERM's default: it
 * ends). */
static void signal_group(const struct run *x, int sig) {
        if (kill(-x->pid, sig) < 0)
                (void) kill(x->pid, sig);
}

/* Its timeout: SIGTERM to the group, so that a hook saving a microVM can
 * stop and clean up (a partial snapshot); SIGKILL follows at kill_usec
 * (runner_main()) unless the leader has exited by then, and reap() kills
 * what is left of the group once it has.  The result is MGT_HOOK_TIMEOUT
 * either way, whatever the hook's exit. */
static void time_out(struct run *x) {
        x->forced = MGT_HOOK_TIMEOUT;
        x->kill_usec = x->deadline_usec + mgt_hook_grace_usec(x->deadline_usec - x->start_usec);
        signal_group(x, SIGTERM);
}

/* SIGKILL to the group: at a cancel (the park it served has ended: no
 * grace, even in the timeout's) and at the end of the grace.  The first
 * reason stands in the answer. */
static void kill_group(struct run *x, enum mgt_hook_result why) {
        if (x->killed)
                return;
        if (x->forced == MGT_HOOK_SAVED)
                x->forced = why;
        x->killed = true;
        signal_group(x, SIGKILL);
}

static void finish(struct runner *R, size_t i, enum mgt_hook_result res, int code) {
        struct run *x = R->runs[i];
        struct mgt_hook_reply rep;

        drain(x);
        if (x->out >= 0)
                close(x->out); /* a process that left the group may hold it: not waited for */
        reply_of(x, res, code, &rep);
        send_reply(R->sock, &rep);
        free(x);
        R->runs[i] = R->runs[--R->n];
}

/* Hooks that ended: seen without reaping (WNOWAIT), so the leader's pid,
 * and with it the group's id, cannot be reused while the group is killed;
 * then reaped and answered. */
static void reap(struct runner *R) {
        for (size_t i = 0; i < R->n;) {
                struct run *x = R->runs[i];
                siginfo_t si = {};
                enum mgt_hook_result res;
                int code;

                if (waitid(P_PID, (id_t) x->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0) {
                        i++;
                        continue;
                }
                /* What it left running in its group ends with it. */
                (void) kill(-x->pid, SIGKILL);
                (void) waitpid(x->pid, NULL, 0);
                if (x->forced != MGT_HOOK_SAVED) {
                        res = x->forced;
                        code = 0;
                } else if (si.si_code == CLD_EXITED) {
                        code = si.si_status;
                        res = code == 0 ? MGT_HOOK_SAVED : code == MGT_HOOK_THAW_STATUS ? MGT_HOOK_THAW : MGT_HOOK_FAILED;
                } else {
                        res = MGT_HOOK_SIGNALED;
                        code = si.si_status;
                }
                finish(R, i, res, code); /* the last run moves into slot i */
        }
}

/* One message from watch.  Returns false once the socket is closed. */
static bool take_request(struct runner *R, char *buf) {
        struct request q;
        ssize_t n;

        do
                n = recv(R->sock, buf, REQUEST_MAX, MSG_TRUNC);
        while (n < 0 && errno == EINTR);
        if (n == 0 || (n < 0 && errno != EAGAIN))
                return false;
        if (n < (ssize_t) sizeof(q) || (size_t) n > REQUEST_MAX)
                return true; /* not ours: nothing to answer */
        memcpy(&q, buf, sizeof(q));
        if (q.type == MSG_CANCEL) {
                for (size_t i = 0; i < R->n; i++)
                        if (R->runs[i]->seq == q.seq)
                                kill_group(R->runs[i], MGT_HOOK_CANCELLED);
                return true;
        }
        if (q.type != MSG_RUN || q.cgroup_len >= PATH_MAX || q.record_len > MGT_HOOK_RECORD_MAX ||
            sizeof(q) + q.cgroup_len + q.record_len != (size_t) n)
                return true;
        char cgroup[PATH_MAX];
        memcpy(cgroup, buf + sizeof(q), q.cgroup_len);
        cgroup[q.cgroup_len] = '\0';
        int err = 0;
        errno = 0;
        if (!start(R, &q, cgroup, buf + sizeof(q) + q.cgroup_len, &err)) {
                struct mgt_hook_reply rep = { .seq = q.seq, .result = MGT_HOOK_ERROR, .code = err };
                send_reply(R->sock, &rep);
        }
        return true;
}

/* The runner's state, static: a hook's child exits without its exec
 * holding nothing it cannot reach. */
static struct runner state;
static struct pollfd *polled;
static char *request_buf;

static void __attribute__((noreturn)) runner_main(int sock, char **argv, int argc) {
        sigset_t chld;

        state = (struct runner) { .sock = sock, .argv = argv, .argc = argc };
        polled = calloc(MGT_HOOK_RUNNING_MAX + 2, sizeof(*polled));
        request_buf = malloc(REQUEST_MAX);

        (void) prctl(PR_SET_NAME, "memguard-hook");
        signal(SIGHUP, SIG_IGN);
        signal(SIGINT, SIG_IGN); /* a terminal's ^C: watch ends us by closing the socket */
        signal(SIGPIPE, SIG_IGN);
        signal(SIGTERM, SIG_DFL);
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        sigprocmask(SIG_BLOCK, &chld, NULL);
        state.sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
        if (!polled || !request_buf || state.sigfd < 0)
                _exit(1);
        for (;;) {
                uint64_t now = mono_usec(), next = UINT64_MAX;
                int timeout;

                for (size_t i = 0; i < state.n; i++) {
                        struct run *x = state.runs[i];
                        if (x->forced == MGT_HOOK_SAVED && now >= x->deadline_usec)
                                time_out(x);
                        if (x->forced == MGT_HOOK_TIMEOUT && !x->killed && now >= x->kill_usec)
                                kill_group(x, MGT_HOOK_TIMEOUT);
                        if (x->forced == MGT_HOOK_SAVED && x->deadline_usec < next)
                                next = x->deadline_usec;
                        if (x->forced == MGT_HOOK_TIMEOUT && !x->killed && x->kill_usec < next)
                                next = x->kill_usec;
                }
                timeout = next == UINT64_MAX ? -1 : (int) ((next - now + 999) / 1000);
                polled[0] = (struct pollfd) { .fd = state.sock, .events = POLLIN };
                polled[1] = (struct pollfd) { .fd = state.sigfd, .events = POLLIN };
                for (size_t i = 0; i < state.n; i++)
                        polled[2 + i] = (struct pollfd) { .fd = state.runs[i]->out, .events = POLLIN };
                if (poll(polled, 2 + state.n, timeout) < 0 && errno != EINTR)
                        break;
                for (size_t i = 0; i < state.n; i++)
                        if (polled[2 + i].revents)
                                drain(state.runs[i]);
                if (polled[1].revents) {
                        struct signalfd_siginfo si;
                        while (read(state.sigfd, &si, sizeof(si)) == sizeof(si))
                                ;
                }
                reap(&state);
                if (polled[0].revents && !take_request(&state, request_buf))
                        break;
        }
        /* watch is gone: so are the parks these hooks served. */
        for (size_t i = 0; i < state.n; i++)
                (void) kill(-state.runs[i]->pid, SIGKILL);
        free(polled);
        free(request_buf);
        _exit(0);
}

int mgt_hook_runner_start(struct mgt_hook_runner *r, const char *cmd) {
        static char buf[PATH_MAX];
        static char *argv[MGT_HOOK_ARGS_MAX + 2];
        char err[160];
        int sv[2], argc;
        pid_t pid;

        *r = (struct mgt_hook_runner) { .fd = -1 };
        argc = mgt_hook_split(cmd, buf, sizeof(buf), argv, err, sizeof(err));
        if (argc < 0)
                return argc;
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        pid = mgt_fork_helper(sv[1]);
        if (pid < 0) {
                close(sv[0]);
                close(sv[1]);
                return pid;
        }
        if (pid == 0)
                runner_main(3, argv, argc);
        close(sv[1]);
        if (fcntl(sv[0], F_SETFL, O_NONBLOCK) < 0) {
                int e = -errno;
                close(sv[0]);
                return e;
        }
        r->fd = sv[0];
        r->pid = pid;
        return 0;
}

/* One message with write(2) (the confined thread has no sendmsg): on a
 * SOCK_SEQPACKET socket a write is one message, whole or not at all. */
static int put_message(struct mgt_hook_runner *r, const void *m, size_t len) {
        ssize_t w;

        if (r->fd < 0 || r->failed)
                return -EPIPE;
        do
                w = write(r->fd, m, len);
        while (w < 0 && errno == EINTR);
        if (w < 0 && (errno == EAGAIN || errno == EMSGSIZE || errno == ENOBUFS))
                return errno == EMSGSIZE ? -EMSGSIZE : -EAGAIN;
        if (w < 0 || (size_t) w != len) {
                r->failed = true;
                return -EPIPE;
        }
        return 0;
}

int mgt_hook_request(struct mgt_hook_runner *r, uint64_t seq, uint64_t park_id, const char *cgroup,
                     const char *record, uint64_t timeout_usec) {
        size_t cl = strlen(cgroup), rl = strlen(record);
        struct request q = { .type = MSG_RUN, .cgroup_len = (uint32_t) cl, .seq = seq, .park_id = park_id,
                             .timeout_usec = timeout_usec, .record_len = (uint32_t) rl };
        char *m;
        int e;

        if (cl >= PATH_MAX || rl > MGT_HOOK_RECORD_MAX)
                return -EMSGSIZE;
        m = malloc(sizeof(q) + cl + rl);
        if (!m)
                return -ENOMEM;
        memcpy(m, &q, sizeof(q));
        /* the header gives their lengths: no NUL in the message */
        /* NOLINTNEXTLINE(bugprone-not-null-terminated-result) */
        memcpy(m + sizeof(q), cgroup, cl);
        /* NOLINTNEXTLINE(bugprone-not-null-terminated-result) */
        memcpy(m + sizeof(q) + cl, record, rl);
        e = put_message(r, m, sizeof(q) + cl + rl);
        free(m);
        return e;
}

int mgt_hook_cancel(struct mgt_hook_runner *r, uint64_t seq) {
        struct request q = { .type = MSG_CANCEL, .seq = seq };

        return put_message(r, &q, sizeof(q));
}

int mgt_hook_read(struct mgt_hook_runner *r, struct mgt_hook_reply *ret) {
        ssize_t n;

        if (r->fd < 0 || r->failed)
                return -EPIPE;
        do
                n = read(r->fd, ret, sizeof(*ret));
        while (n < 0 && errno == EINTR);
        if (n < 0 && errno == EAGAIN)
                return 0;
        if (n != (ssize_t) sizeof(*ret)) {
                r->failed = true;
                return -EPIPE;
        }
        ret->output[ret->output_len < MGT_HOOK_OUTPUT_MAX ? ret->output_len : MGT_HOOK_OUTPUT_MAX] = '\0';
        return 1;
}

void mgt_hook_runner_stop(struct mgt_hook_runner *r) {
        if (r->fd >= 0)
                close(r->fd);
        r->fd = -1;
}
