/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The worker's save and check of a parked actor's guest memory (park.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "image.h"
#include "memguard/snapshot.h"
#include "park.h"
#include "util.h"

/* The pattern's holes: as actor.c fills the region. */
#define HOLES 4

/* img_verify() compares against a static page: one check at a time. */
static pthread_mutex_t verify_mu = PTHREAD_MUTEX_INITIALIZER;

static void set_lock(void *userdata, bool lock) {
        pthread_mutex_t *mu = userdata;
        if (lock)
                pthread_mutex_lock(mu);
        else
                pthread_mutex_unlock(mu);
}

/* The actor is frozen: its memfd holds what the last work phase filled.
 * The write is the library's AUTO (O_DIRECT here) in a lend of the
 * worker's guard, as a worker saving a parked microVM would make it. */
static void save(struct bi_park_job *j) {
        struct mg_snapshot_options o;
        struct mg_snapshot_source src = { .kind = MG_SNAPSHOT_FD, .fd = j->memfd, .length = j->len };

        mg_snapshot_options_init(&o);
        o.guard = j->guard;
        o.window_bytes = j->window_bytes;
        o.lend_deadline_usec = j->lend_deadline_usec;
        o.lock = set_lock;
        o.lock_userdata = j->set_lock;
        j->save_begin_usec = mg_mono_usec();
        j->save_error = mg_snapshot_write(&src, j->dirfd, j->name, &o, NULL);
        j->save_end_usec = mg_mono_usec();
}

/* After the kill: the image into a fresh memfd (the worker's, charged to
 * the worker's cgroup: the check reads it, nothing resumes it), every page
 * against the pattern, then the image and the copy are gone. */
static void check(struct bi_park_job *j) {
        int copy = memfd_create("burnin-restored", MFD_CLOEXEC);
        uint8_t *m = MAP_FAILED;

        j->bad_page = -1;
        if (copy < 0) {
                j->check_error = -errno;
                goto out;
        }
        struct mg_snapshot_target t = { .kind = MG_SNAPSHOT_FD, .fd = copy, .length = j->len };
        uint64_t t0 = mg_mono_usec();
        j->check_error = mg_snapshot_restore(j->dirfd, j->name, &t, NULL, NULL);
        j->restore_usec = mg_mono_usec() - t0;
        if (j->check_error < 0)
                goto out;
        m = mmap(NULL, j->len, PROT_READ, MAP_SHARED, copy, 0);
        if (m == MAP_FAILED) {
                j->check_error = -errno;
                goto out;
        }
        pthread_mutex_lock(&verify_mu);
        j->bad_page = img_verify(m, j->len, HOLES, j->seed);
        pthread_mutex_unlock(&verify_mu);
out:
        if (m != MAP_FAILED)
                munmap(m, j->len);
        if (copy >= 0)
                close(copy);
        (void) unlinkat(j->dirfd, j->name, 0);
}

static void *run(void *arg) {
        struct bi_park_job *j = arg;
        char b = 'P';
        if (j->stage == BI_PARK_STAGE_SAVE)
                save(j);
        else
                check(j);
        atomic_store(&j->done, true);
        (void) !write(j->wake_fd, &b, 1);
        return NULL;
}

int bi_park_job_start(struct bi_park_job *j, enum bi_park_stage stage) {
        j->stage = stage;
        atomic_store(&j->done, false);
        int r = pthread_create(&j->thread, NULL, run, j);
        if (r != 0)
                return -r;
        j->running = true;
        return 0;
}

void bi_park_job_join(struct bi_park_job *j) {
        if (!j->running)
                return;
        (void) pthread_join(j->thread, NULL);
        j->running = false;
        if (j->stage == BI_PARK_STAGE_SAVE && j->memfd >= 0) {
                close(j->memfd);
                j->memfd = -1;
        }
}
