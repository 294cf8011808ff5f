/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "notify.h"

int mgt_notify_open(void) {
        const char *path = getenv("NOTIFY_SOCKET");
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        size_t n;
        int fd;

        if (!path || !*path)
                return 0;
        n = strlen(path);
        if ((path[0] != '/' && path[0] != '@') || n >= sizeof(sa.sun_path))
                return -EINVAL;
        memcpy(sa.sun_path, path, n);
        if (path[0] == '@')
                sa.sun_path[0] = '\0'; /* the abstract namespace */
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (const struct sockaddr *) &sa, (socklen_t) (offsetof(struct sockaddr_un, sun_path) + n)) < 0) {
                int e = -errno;
                close(fd);
                return e;
        }
        return fd;
}

int mgt_notify(int fd, const char *text) {
        ssize_t w;

        if (fd <= 0)
                return 0;
        do
                w = write(fd, text, strlen(text));
        while (w < 0 && errno == EINTR);
        return w < 0 ? -errno : 0;
}

uint64_t mgt_notify_watchdog_usec(void) {
        const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
        char *end;
        uint64_t v;

        if (!usec)
                return 0;
        if (pid && strtoll(pid, NULL, 10) != (long long) getpid())
                return 0;
        errno = 0;
        v = strtoull(usec, &end, 10);
        return errno || *end || end == usec ? 0 : v;
}
