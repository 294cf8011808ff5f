/* SPDX-License-Identifier: Apache-2.0 */
/* mgt_notify_open()/mgt_notify() against a socket of our own, as the
 * service manager would listen on it: a path and an abstract name; unset,
 * nothing; $WATCHDOG_USEC for us or for another pid.  TAP on stdout. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "notify.h"

static int n, failed;

static void tap(int good, const char *desc) {
        n++;
        failed += !good;
        printf("%s %d - %s\n", good ? "ok" : "not ok", n, desc);
}

/* A listening datagram socket at name ('@' first: abstract). */
static int listener(const char *name) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        size_t len = strlen(name);
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

        memcpy(sa.sun_path, name, len);
        if (name[0] == '@')
                sa.sun_path[0] = '\0';
        if (fd < 0 || bind(fd, (struct sockaddr *) &sa, (socklen_t) (offsetof(struct sockaddr_un, sun_path) + len)) < 0)
                return -1;
        return fd;
}

static void roundtrip(const char *name, const char *what) {
        char got[256], desc[300];
        int l = listener(name), fd;
        ssize_t r = -1;

        setenv("NOTIFY_SOCKET", name, 1);
        fd = mgt_notify_open();
        if (l >= 0 && fd > 0 && mgt_notify(fd, "READY=1\nSTATUS=guarding 3 cgroups") == 0)
                r = recv(l, got, sizeof(got) - 1, MSG_DONTWAIT);
        if (r >= 0)
                got[r] = '\0';
        snprintf(desc, sizeof(desc), "%s: the datagram arrives whole (%s)", what, r >= 0 ? "received" : strerror(errno));
        tap(r >= 0 && strcmp(got, "READY=1\nSTATUS=guarding 3 cgroups") == 0, desc);
        if (fd > 0)
                close(fd);
        if (l >= 0)
                close(l);
}

static int listen_main(const char *path, int seconds) {
        int l = listener(path);

        if (l < 0) {
                perror(path);
                return 1;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        for (int left = seconds * 10; left > 0; left--) {
                struct pollfd p = { .fd = l, .events = POLLIN };
                char buf[4096];
                ssize_t got;

                if (poll(&p, 1, 100) <= 0)
                        continue;
                got = recv(l, buf, sizeof(buf) - 1, 0);
                if (got < 0)
                        continue;
                buf[got] = '\0';
                for (char *c = buf; *c; c++)
                        if (*c == '\n')
                                *c = '|';
                printf("%s\n", buf);
        }
        close(l);
        unlink(path);
        return 0;
}

int main(int argc, char **argv) {
        char dir[] = "/tmp/memguard-notify-XXXXXX", path[128], pid[32];

        if (argc == 4 && strcmp(argv[1], "listen") == 0)
                return listen_main(argv[2], (int) strtol(argv[3], NULL, 10));

        printf("TAP version 13\n");
        if (!mkdtemp(dir))
                return 1;
        unsetenv("NOTIFY_SOCKET");
        tap(mgt_notify_open() == 0, "no $NOTIFY_SOCKET: 0, nothing to notify");
        tap(mgt_notify(0, "READY=1") == 0, "mgt_notify() on no socket is a no-op");
        snprintf(path, sizeof(path), "%s/notify", dir);
        roundtrip(path, "a path");
        snprintf(path, sizeof(path), "@memguard-test-notify-%d", (int) getpid());
        roundtrip(path, "an abstract name");
        setenv("NOTIFY_SOCKET", "relative/socket", 1);
        tap(mgt_notify_open() == -EINVAL, "a relative path is -EINVAL");
        snprintf(path, sizeof(path), "%s/nobody-listens", dir);
        setenv("NOTIFY_SOCKET", path, 1);
        tap(mgt_notify_open() == -ENOENT, "a socket nobody listens on is -ENOENT");

        unsetenv("WATCHDOG_USEC");
        tap(mgt_notify_watchdog_usec() == 0, "no $WATCHDOG_USEC: no watchdog");
        setenv("WATCHDOG_USEC", "30000000", 1);
        unsetenv("WATCHDOG_PID");
        tap(mgt_notify_watchdog_usec() == 30000000, "$WATCHDOG_USEC without $WATCHDOG_PID is ours");
        snprintf(pid, sizeof(pid), "%d", (int) getpid());
        setenv("WATCHDOG_PID", pid, 1);
        tap(mgt_notify_watchdog_usec() == 30000000, "$WATCHDOG_PID our pid: ours");
        setenv("WATCHDOG_PID", "1", 1);
        tap(mgt_notify_watchdog_usec() == 0, "$WATCHDOG_PID another pid: not ours");
        setenv("WATCHDOG_USEC", "30s", 1);
        unsetenv("WATCHDOG_PID");
        tap(mgt_notify_watchdog_usec() == 0, "a $WATCHDOG_USEC that is not a number: none");

        snprintf(path, sizeof(path), "%s/notify", dir);
        unlink(path);
        rmdir(dir);
        printf("1..%d\n", n);
        return failed ? 1 : 0;
}
