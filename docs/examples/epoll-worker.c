/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A worker's event loop with one guard set in it: epoll on the set's fd and
 * a signalfd, one guard per actor cgroup, each at the size its tenant paid
 * for.  A kill is told to the tenant as its record; SIGTERM ends the loop
 * (mg_set_free() restores any memory.high a lend left raised).
 *
 *   cc -o epoll-worker epoll-worker.c $(pkg-config --cflags --libs memguard)
 *   ./epoll-worker /sys/fs/cgroup/sandboxes/a:256M /sys/fs/cgroup/sandboxes/b:1G
 */
#include <errno.h>
#include <inttypes.h>
#include <memguard/memguard.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

static void on_event(mg_guard *g, const struct mg_event *ev, void *userdata) {
        char report[2048];

        (void) userdata;
        switch (ev->type) {
        case MG_EVENT_KILL:
                mg_kill_record_format(ev->kill, report, sizeof(report));
                fprintf(stderr, "%s\n", report); /* what the tenant is told */
                break;
        case MG_EVENT_GONE:
                fprintf(stderr, "%s: removed, no longer guarded\n", ev->cgroup);
                break;
        case MG_EVENT_ERROR:
                fprintf(stderr, "%s: %s: %s\n", ev->cgroup, ev->what, strerror(-ev->error));
                break;
        default: /* and types a newer library adds */
                fprintf(stderr, "%s: %s\n", mg_guard_get_path(g), mg_event_type_to_string(ev->type));
        }
}

static void on_log(int level, const char *msg, void *userdata) {
        (void) userdata;
        if (level <= MG_LOG_WARNING)
                fprintf(stderr, "memguard: %s\n", msg);
}

/* "PATH:SIZE" with SIZE in bytes or with a K, M or G suffix. */
static int parse_actor(char *arg, char **ret_path, uint64_t *ret_limit) {
        char *colon = strrchr(arg, ':'), *end;
        uint64_t v;

        if (!colon)
                return -EINVAL;
        *colon = '\0';
        errno = 0;
        v = strtoull(colon + 1, &end, 10);
        if (errno || end == colon + 1)
                return -EINVAL;
        switch (*end) {
        case 'G': v <<= 10; /* fall through */
        case 'M': v <<= 10; /* fall through */
        case 'K': v <<= 10; end++; break;
        }
        if (*end || v == 0)
                return -EINVAL;
        *ret_path = arg;
        *ret_limit = v;
        return 0;
}

int main(int argc, char **argv) {
        struct mg_set_options so = { .size = sizeof(so), .log = on_log };
        struct epoll_event ev = { .events = EPOLLIN };
        sigset_t mask;
        mg_set *set = NULL;
        int ep, sfd, r, ret = 1;

        if (argc < 2) {
                fprintf(stderr, "usage: %s CGROUP-DIR:SIZE...\n", argv[0]);
                return 2;
        }
        r = mg_set_new(&so, &set);
        if (r < 0) {
                fprintf(stderr, "mg_set_new: %s\n", strerror(-r));
                return 1;
        }
        for (int i = 1; i < argc; i++) {
                struct mg_guard_options o;
                uint64_t limit;
                char *path;

                if (parse_actor(argv[i], &path, &limit) < 0) {
                        fprintf(stderr, "%s: not CGROUP-DIR:SIZE\n", argv[i]);
                        goto out;
                }
                /* A lend a crashed worker left open: end it if its deadline passed. */
                (void) mg_guard_recover(path, MG_RECOVER_EXPIRED);
                mg_guard_options_init(&o, limit);
                o.on_event = on_event;
                o.log = on_log;
                r = mg_set_add(set, path, &o, NULL);
                if (r < 0) {
                        fprintf(stderr, "%s: %s\n", path, strerror(-r));
                        goto out;
                }
        }

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigprocmask(SIG_BLOCK, &mask, NULL); /* after mg_set_new(): its worker blocks every signal itself */
        sfd = signalfd(-1, &mask, SFD_CLOEXEC);
        ep = epoll_create1(EPOLL_CLOEXEC);
        if (sfd < 0 || ep < 0) {
                perror("signalfd/epoll_create1");
                goto out;
        }
        ev.data.fd = mg_set_get_fd(set);
        epoll_ctl(ep, EPOLL_CTL_ADD, ev.data.fd, &ev);
        ev.data.fd = sfd;
        epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);

        for (;;) {
                struct epoll_event got[4];
                int n = epoll_wait(ep, got, 4, -1);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        perror("epoll_wait");
                        goto out;
                }
                for (int i = 0; i < n; i++) {
                        if (got[i].data.fd == sfd) {
                                ret = 0;
                                goto out;
                        }
                        /* the set's fd: a tick is due, or a watched file changed */
                        r = mg_set_process(set);
                        if (r < 0) {
                                fprintf(stderr, "mg_set_process: %s\n", strerror(-r));
                                goto out;
                        }
                }
                if (mg_set_size(set) == 0) {
                        ret = 0;
                        goto out;
                }
        }
out:
        mg_set_free(set);
        return ret;
}
