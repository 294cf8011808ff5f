/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ticker.h"

int mgt_dirty_writeback(const char *cg, uint64_t *ret) {
        char path[4200], buf[8192];
        int fd, keys = 0;
        ssize_t n;

        snprintf(path, sizeof(path), "%s/memory.stat", cg);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = read(fd, buf, sizeof(buf) - 1);
        if (n < 0)
                n = -errno;
        close(fd);
        if (n < 0)
                return (int) n;
        buf[n] = '\0';
        *ret = 0;
        for (char *l = buf; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
                if (strncmp(l, "file_dirty ", 11) == 0 || strncmp(l, "file_writeback ", 15) == 0) {
                        *ret += strtoull(strchr(l, ' ') + 1, NULL, 10);
                        keys++;
                }
        return keys == 2 ? 0 : -EBADMSG;
}

static void *run(void *ud) {
        struct mgt_ticker *t = ud;
        while (!atomic_load(&t->stop)) {
                uint64_t d = 0;
                if (atomic_load(&t->measuring) && mgt_dirty_writeback(t->cg, &d) == 0) {
                        pthread_mutex_lock(&t->mu);
                        if (d > t->peak_dw)
                                t->peak_dw = d;
                        t->samples++;
                        pthread_mutex_unlock(&t->mu);
                }
                if (t->set) {
                        pthread_mutex_lock(&t->mu);
                        (void) mg_set_process(t->set);
                        pthread_mutex_unlock(&t->mu);
                }
                (void) poll(NULL, 0, 20);
        }
        return NULL;
}

int mgt_ticker_start(struct mgt_ticker *t, const char *cg, mg_set *set) {
        int r;
        memset(t, 0, sizeof(*t));
        pthread_mutex_init(&t->mu, NULL);
        t->cg = cg;
        t->set = set;
        r = pthread_create(&t->th, NULL, run, t);
        if (r != 0)
                return -r;
        t->running = true;
        return 0;
}

void mgt_ticker_stop(struct mgt_ticker *t) {
        if (t->running) {
                atomic_store(&t->stop, true);
                pthread_join(t->th, NULL);
                t->running = false;
                pthread_mutex_destroy(&t->mu);
        }
}

void mgt_ticker_lock(void *ticker, bool lock) {
        struct mgt_ticker *t = ticker;
        if (lock)
                pthread_mutex_lock(&t->mu);
        else
                pthread_mutex_unlock(&t->mu);
}

void mgt_ticker_measure(struct mgt_ticker *t) {
        pthread_mutex_lock(&t->mu);
        t->peak_dw = t->samples = 0;
        pthread_mutex_unlock(&t->mu);
        atomic_store(&t->measuring, true);
}

void mgt_ticker_measured(struct mgt_ticker *t, uint64_t *peak_dw, uint64_t *samples) {
        atomic_store(&t->measuring, false);
        pthread_mutex_lock(&t->mu);
        *peak_dw = t->peak_dw;
        if (samples)
                *samples = t->samples;
        pthread_mutex_unlock(&t->mu);
}
