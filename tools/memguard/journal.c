/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#if MGT_HAVE_LIBSYSTEMD
#include <systemd/sd-journal.h>
#endif
#if MGT_HAVE_SECCOMP
#include <seccomp.h>
#endif

#include "journal.h"
#include "json.h"

bool mgt_journal_available(void) {
        return MGT_HAVE_LIBSYSTEMD;
}

/* A decimal number of digits only, up to max.  Returns the first byte
 * past it, NULL if there is none or it is too large. */
static const char *decimal(const char *s, unsigned long long max, unsigned long long *ret) {
        unsigned long long v = 0;
        const char *p = s;

        for (; *p >= '0' && *p <= '9'; p++) {
                unsigned d = (unsigned) (*p - '0');
                if (v > (max - d) / 10)
                        return NULL;
                v = v * 10 + d;
        }
        if (p == s)
                return NULL;
        *ret = v;
        return p;
}

bool mgt_journal_stream_matches(const char *text, dev_t dev, ino_t ino) {
        unsigned long long d, i;
        const char *p;

        if (!text)
                return false;
        p = decimal(text, (dev_t) -1, &d);
        if (!p || *p != ':')
                return false;
        p = decimal(p + 1, (ino_t) -1, &i);
        return p && *p == '\0' && (dev_t) d == dev && (ino_t) i == ino;
}

int mgt_journal_stderr_is_journal(void) {
        const char *env = getenv("JOURNAL_STREAM");
        struct stat st;

        if (!env || !*env)
                return 0;
        if (fstat(STDERR_FILENO, &st) < 0)
                return errno == EBADF ? 0 : -errno;
        return mgt_journal_stream_matches(env, st.st_dev, st.st_ino);
}

/* Generated once (systemd-id128 new); never to change: the catalog, and
 * every query and alert a reader wrote, hold them. */
static const struct {
        const char *name, *id;
        int priority;
} msgs[_MGT_MSG_MAX] = {
        [MGT_MSG_NONE] = { NULL, NULL, LOG_INFO },
        [MGT_MSG_KILL] = { "kill", "1637127293384b0a969f4bec559c87d0", LOG_WARNING },
        [MGT_MSG_KILL_DRY_RUN] = { "kill-dry-run", "e285132554cd40d3a788444ed1b2f14a", LOG_NOTICE },
        [MGT_MSG_PRE_KILL] = { "pre-kill", "161fa753d0ca48ee854defab22649d08", LOG_NOTICE },
        [MGT_MSG_KILL_AVERTED] = { "kill-averted", "621cfb2bde184d91885e0f14ccffa97e", LOG_NOTICE },
        [MGT_MSG_LEND_BEGIN] = { "lend-begin", "f9e61a6033134ae8a10b3f28b1f97006", LOG_INFO },
        [MGT_MSG_LEND_END] = { "lend-end", "87cd14a7909543a1b3d23595d0ae5a17", LOG_INFO },
        /* the lender's deadline passed: it held memory.high raised too long */
        [MGT_MSG_LEND_EXPIRED] = { "lend-expired", "ee896394a9d44dd3a0a54ccf5fb20500", LOG_WARNING },
        [MGT_MSG_THROTTLED] = { "throttled", "115e69adf4434fa8a2fb063b47e4d620", LOG_NOTICE },
        [MGT_MSG_EMPTY_OVER_LIMIT] = { "empty-over-limit", "a190bf7e01e047cdabca25efa7d307ee", LOG_WARNING },
        [MGT_MSG_UNKILLABLE] = { "unkillable", "73eb3ba65aa444948b614f231cf6fc79", LOG_ERR },
        [MGT_MSG_KERNEL_OOM] = { "kernel-oom", "d1677e65b451427d84423ee7cec69872", LOG_WARNING },
        [MGT_MSG_ERROR] = { "error", "3c1f1815cf0942e2a36c6890df777d95", LOG_ERR },
        [MGT_MSG_GONE] = { "gone", "b8359593a3cd4b8da0edac77ddaf92b4", LOG_INFO },
        [MGT_MSG_RECLAIM] = { "reclaim", "a0386a7c4618429cb564d6b209e3574a", LOG_INFO },
        [MGT_MSG_WATCH] = { "watch", "5647dad04c694e77bacb2d6d3df14403", LOG_INFO },
        [MGT_MSG_UNWATCH] = { "unwatch", "efeeb99644d64a9492d9c112122cec15", LOG_INFO },
        [MGT_MSG_RELOAD] = { "reload", "f3e1546f8b0e4305b1c57e079ed57519", LOG_INFO },
        [MGT_MSG_DROPPED] = { "dropped", "7cd49c8172c4400bb5d87fa621e342df", LOG_WARNING },
        /* frozen instead of killed: the kill's warning, the actor still there */
        [MGT_MSG_PARK] = { "park", "54b0df8d4182455596404c594b751a04", LOG_WARNING },
        [MGT_MSG_THAW] = { "thaw", "a0490f888a364c83a6323f282bd14dd9", LOG_NOTICE },
        /* notice when the hook answered, warning when it failed (the entry's own) */
        [MGT_MSG_PARK_HOOK] = { "park-hook", "8a341ca306b24b28b081905909115f96", LOG_NOTICE },
};

const char *mgt_msg_name(enum mgt_msg m) {
        return m < _MGT_MSG_MAX ? msgs[m].name : NULL;
}

const char *mgt_msg_id(enum mgt_msg m) {
        return m < _MGT_MSG_MAX ? msgs[m].id : NULL;
}

enum mgt_msg mgt_msg_of(const char *event) {
        for (int m = MGT_MSG_NONE + 1; event && m < _MGT_MSG_MAX; m++)
                if (strcmp(event, msgs[m].name) == 0)
                        return (enum mgt_msg) m;
        return MGT_MSG_NONE;
}

int mgt_msg_priority(enum mgt_msg m) {
        return m < _MGT_MSG_MAX ? msgs[m].priority : LOG_INFO;
}

/* Appends KEY=, then the escaped value, then the NUL; the whole field or
 * nothing. */
static void add(struct mgt_journal_entry *e, const char *key, const char *value, bool escape) {
        /* a byte spare: a writer of the entry as text adds a newline */
        size_t k = strlen(key), room = sizeof(e->buf) - 1 - e->len, v;
        char *at = e->buf + e->len;

        if (e->n == MGT_JOURNAL_FIELDS_MAX || k + 2 > room) {
                e->truncated = true;
                return;
        }
        snprintf(at, room, "%s=", key); /* its NUL is the value's first byte's place */
        room -= k + 1;
        if (escape) {
                v = mgt_line_escape(value, at + k + 1, room);
        } else {
                v = strlen(value);
                if (v < room)
                        memcpy(at + k + 1, value, v + 1);
        }
        if (v >= room) {
                e->truncated = true;
                return;
        }
        e->len += k + 1 + v + 1;
        e->n++;
}

void mgt_journal_entry_init(struct mgt_journal_entry *e, int priority, enum mgt_msg m) {
        char p[4];

        e->len = 0;
        e->n = 0;
        e->truncated = false;
        snprintf(p, sizeof(p), "%d", priority & 7);
        add(e, "PRIORITY", p, false);
        if (mgt_msg_id(m))
                add(e, "MESSAGE_ID", mgt_msg_id(m), false);
}

void mgt_journal_add(struct mgt_journal_entry *e, const char *key, const char *value) {
        add(e, key, value, true);
}

void mgt_journal_add_event_field(struct mgt_journal_entry *e, const char *json_key, const char *value) {
        static const char prefix[] = "MEMGUARD_";
        char key[64];
        size_t n = sizeof(prefix) - 1;

        if (strcmp(json_key, "format_version") == 0)
                return;
        memcpy(key, prefix, n);
        for (const char *p = json_key; *p && n < sizeof(key) - 1; p++) {
                char c = *p;
                if (c >= 'a' && c <= 'z')
                        c = (char) (c - 'a' + 'A');
                else if (c == '-')
                        c = '_';
                key[n++] = c;
        }
        key[n] = '\0';
        add(e, key, value, true);
}

size_t mgt_journal_iovec(const char *buf, size_t len, struct iovec *iov, size_t max) {
        size_t n = 0;

        for (size_t at = 0; at < len && n < max;) {
                const char *end = memchr(buf + at, '\0', len - at);
                size_t l = end ? (size_t) (end - (buf + at)) : len - at;
                iov[n++] = (struct iovec) { .iov_base = (void *) (buf + at), .iov_len = l };
                at += l + 1;
        }
        return n;
}

#if MGT_HAVE_LIBSYSTEMD
int mgt_journal_send(const char *buf, size_t len) {
        struct iovec iov[MGT_JOURNAL_FIELDS_MAX];
        size_t n = mgt_journal_iovec(buf, len, iov, MGT_JOURNAL_FIELDS_MAX);

        return n ? sd_journal_sendv(iov, (int) n) : -EINVAL;
}
#else
int mgt_journal_send(const char *buf, size_t len) {
        (void) buf;
        (void) len;
        return -EOPNOTSUPP;
}
#endif

#if MGT_HAVE_SECCOMP
/*
 * What the writer calls, by name (skipped where this libseccomp or
 * architecture lacks one): sd_journal_sendv() makes its socket on the
 * first entry (socket, then getsockopt/setsockopt to raise SO_SNDBUF) and
 * sends each with sendmsg; a refused entry's line goes to the stream on
 * stderr (write); the queue's lock and condition (futex); malloc and libc's
 * thread exit; the sanitizer runtimes' sigaltstack.  Nothing opens a file.
 * What code running here could do beyond the guard thread's list: send a
 * datagram to a local socket.
 */
static const char *const writer_calls[] = {
        "sendmsg", "getsockopt", "setsockopt", "write", "writev", "close", "poll", "ppoll",
        "futex", "clock_gettime", "gettimeofday", "clock_nanosleep", "nanosleep",
        "brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "getrandom", "sched_yield",
        "rt_sigreturn", "rt_sigprocmask", "restart_syscall", "getpid", "gettid", "exit", "exit_group",
        "sigaltstack",
};

int mgt_journal_confine_thread(void) {
        scmp_filter_ctx ctx;
        int r;

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
        if (!ctx)
                return -ENOMEM;
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 0); /* this thread only */
        for (size_t i = 0; r >= 0 && i < sizeof(writer_calls) / sizeof(writer_calls[0]); i++) {
                int nr = seccomp_syscall_resolve_name(writer_calls[i]);
                if (nr == __NR_SCMP_ERROR)
                        continue;
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
                if (r < 0 && nr < 0) /* a call this architecture lacks */
                        r = 0;
        }
        /* The journal's socket only: a local datagram one. */
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 2, SCMP_A0(SCMP_CMP_EQ, AF_UNIX),
                                     SCMP_A1(SCMP_CMP_MASKED_EQ, ~(scmp_datum_t) (SOCK_CLOEXEC | SOCK_NONBLOCK),
                                             SOCK_DGRAM));
        if (r >= 0)
                r = seccomp_load(ctx);
        seccomp_release(ctx);
        return r;
}
#else
int mgt_journal_confine_thread(void) {
        return -EOPNOTSUPP;
}
#endif
