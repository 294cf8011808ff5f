/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "cgdir.h"
#include "loop.h"
#include "util.h"

#define FROM_USER 0x80 /* signal numbers stay below 65 */

static int signal_pipe[2] = { -1, -1 };

static void on_signal(int sig, siginfo_t *si, void *uc) {
        int saved = errno;
        /* SI_USER/SI_QUEUE/SI_TKILL: kill(2) and friends; SI_KERNEL: the tty */
        unsigned char b = (unsigned char) sig | (si && si->si_code <= 0 ? FROM_USER : 0);
        (void) uc;
        (void) !write(signal_pipe[1], &b, 1);
        errno = saved;
}

int mgt_signals_open(const int *sigs) {
        struct sigaction sa = { .sa_sigaction = on_signal, .sa_flags = SA_SIGINFO | SA_RESTART };

        if (signal_pipe[0] < 0 && pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
                return -errno;
        sigemptyset(&sa.sa_mask);
        for (; *sigs; sigs++)
                if (sigaction(*sigs, &sa, NULL) < 0)
                        return -errno;
        return signal_pipe[0];
}

int mgt_signals_next(int fd, bool *ret_from_user) {
        unsigned char b;
        ssize_t n;

        do
                n = read(fd, &b, 1);
        while (n < 0 && errno == EINTR);
        if (n != 1)
                return 0;
        if (ret_from_user)
                *ret_from_user = b & FROM_USER;
        return b & ~FROM_USER;
}

int mgt_wait(mg_set *set, struct pollfd *extra, unsigned n, uint64_t deadline_usec) {
        struct pollfd p[9];
        uint64_t now = mg_mono_usec(), due = UINT64_MAX;
        int timeout_ms, r, hits = 0;

        if (n > 8)
                return -EINVAL;
        for (unsigned i = 0; i < n; i++) {
                p[i] = extra[i];
                p[i].revents = 0;
        }
        if (set) {
                p[n] = (struct pollfd) { .fd = mg_set_get_fd(set), .events = POLLIN };
                (void) mg_set_get_timeout(set, &due);
        }
        if (deadline_usec < due)
                due = deadline_usec;
        if (due == UINT64_MAX)
                timeout_ms = -1;
        else if (due <= now)
                timeout_ms = 0;
        else /* rounded up: waking before the tick is due would spin */
                timeout_ms = (int) ((due - now + 999) / 1000 > 60000 ? 60000 : (due - now + 999) / 1000);

        r = poll(p, n + (set ? 1 : 0), timeout_ms);
        if (r < 0 && errno != EINTR)
                return -errno;
        for (unsigned i = 0; i < n; i++) {
                extra[i].revents = (short) (r > 0 ? p[i].revents : 0);
                hits += extra[i].revents != 0;
        }
        if (set) {
                r = mg_set_process(set);
                if (r < 0)
                        return r;
        }
        return hits;
}
