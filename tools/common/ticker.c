/* SPDX-License-Identifier: Apache-2.0 */
#include <poll.h>
#include <string.h>

#include "cgdir.h"
#include "ticker.h"

/* file_dirty + file_writeback of cg's memory.stat in bytes, or a negative
 * errno. */
static int dirty_writeback(const char *cg, uint64_t *ret) {
        struct mg_memstat st;
        int r = mgt_cg_read_memstat(cg, &st);

        if (r < 0)
                return r;
        *ret = st.file_dirty + st.file_writeback;
        return 0;
}

static void *run(void *ud) {
        struct mgt_ticker *t = ud;
        while (!atomic_load(&t->stop)) {
                uint64_t d = 0;
                if (atomic_load(&t->measuring) && dirty_writeback(t->cg, &d) == 0) {
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
