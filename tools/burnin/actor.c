/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One actor process, already in its cgroup (memory.high at 90 % of the actor
 * size).  Threads: the main one cycles; the ticker (tools/common/ticker.h)
 * runs the actor's mg_set every 20 ms and samples memory.stat while a write
 * runs, serialised with the lend through the snapshot's lock callback (the
 * guard is not thread-safe).
 *
 * A cycle: work (a helper process allocates and touches memory and writes and
 * syncs a scratch file; the guest-memory region, a shared mapping of the
 * memfd the worker made, is filled), suspend (mg_snapshot_write of the memfd
 * with the guard), teardown (SIGKILL the helper, unmap the region and punch
 * the memfd empty), resume (mg_snapshot_restore into a fresh anonymous
 * region, check a few pages), then the snapshot file is removed.
 *
 * Chaos: a BI_CONTROL_CHAOS byte on the control pipe makes the next cycle's
 * work phase start CHAOS_PROCS processes that grow anon past the actor size.
 * The worker's guard in the main process kills the whole cgroup (this
 * process too) and tells the kill there; this process only notices if
 * nobody kills it.  The actor's own guard kills nothing (a dry run,
 * guards.h): a kill it made would take this process and its record.
 * Before the overshoot it tells the worker the seed of the guest memory
 * (BI_SAMPLE_GUEST): a parked actor's memfd is saved and checked there.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgdir.h"
#include "guards.h"
#include "image.h"
#include "scenario.h"
#include "ticker.h"
#include "burnin.h"
#include "memguard/memguard.h"
#include "memguard/snapshot.h"
#include "util.h"

#define PAGE 4096u
#define CHECK_PAGES 16u         /* pages compared after a restore */
#define SCRATCH_BYTES (1u << 20)
/*
 * A chaos overshoot adds the actor size again, in CHAOS_PROCS processes:
 * with the guest region (3/4 of the size) it stays below memory.max (2x),
 * so a guard that does not kill leaves it to the wait below, not to the
 * kernel's OOM killer.  Above memory.high (90 %) the kernel throttles each
 * allocating task: it reclaims, then sleeps (up to 2 s per 64 pages charged,
 * growing with the square of the overage; mem_cgroup_handle_over_high(), in
 * the charge path too once a task owes more than 64 pages).  One process
 * crept from 90 % to 100 % in 12-60 s with three actors, and not in 300 s
 * with six on two busy CPUs (it reclaims the actor's own text, which its
 * threads fault back).  The sleep is per task, so several processes cross
 * the zone that many times faster, as a guest's many threads would.  And
 * the crossing must be short next to the guards' stall windows: held there,
 * its text re-read, the actor is a stall by the library's rules (the
 * faulting path's 8 s at 64 MiB), and a check that wants an overshoot
 * races them.  With 8 processes and 10 actors on 2 TCG vCPUs it took 4 to
 * 12.5 s and one in 14 was killed as a stall; with 32 (and forks that copy
 * no page table of the guest region) 1.3 to 8.1 s, median 3 s.
 */
#define CHAOS_PROCS 32
#define CHAOS_STEP ((size_t) 256 << 10)
#define CHAOS_WAIT_USEC BI_CHAOS_WAIT_USEC

/* The actor is the scenario library's (tools/common/scenario.h): its set,
 * ticked by a.tk, counts the guard's events in a.ev under tk.mu; userdata
 * is the actor's bi_actor_config.  One actor per process: */
static char first_what[96];             /* under tk.mu: the first kill or error of a cycle */
static uint64_t last_end_id;            /* under tk.mu: the last lend told ended */

/* ---- the guest-memory pattern (tools/common/image.h) --------------------- */

/* Every fourth 2 MiB block is never touched (holes in the image), one page in
 * 61 is touched but zero: about 3/4 of the image is charged, under
 * memory.high at 90 % with room for the helper and the process itself. */
#define HOLES 4

static uint64_t fnv1a(const uint8_t *p, size_t len) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        for (size_t k = 0; k < len; k++)
                h = (h ^ p[k]) * UINT64_C(0x100000001b3);
        return h;
}

static uint64_t mix(uint64_t x) {
        x ^= x >> 33;
        x *= UINT64_C(0xff51afd7ed558ccd);
        x ^= x >> 33;
        return x;
}

/* ---- the guard's callbacks (the ticker thread, tools/common/ticker.h) ------- */

static void note_error(const char *what) {
        /* called with tk.mu held (event callback) */
        if (first_what[0] == '\0')
                snprintf(first_what, sizeof(first_what), "%s", what);
}

static void on_event(struct mgt_actor *a, const struct mg_event *ev) {
        switch (ev->type) {
        case MG_EVENT_KILL_DRY_RUN: {
                /* The kill the worker's guard is there to make, or one it
                 * must not: stderr says which actor and why.  In a
                 * chaos cycle the worker's guard kills next (the cycle's
                 * sample is never sent); in any other it is a regression. */
                const struct bi_actor_config *c = a->userdata;
                char text[640];
                (void) mg_kill_record_format(ev->kill, text, sizeof(text));
                fprintf(stderr, "\nmemguard-burnin: actor %" PRIu32 ": its own guard would kill (%s; a dry run, "
                        "nothing killed): %s\n", c->id, mg_kill_reason_to_string(ev->kill->reason), text);
                note_error("its own guard would kill (dry run)");
                break;
        }
        case MG_EVENT_KILL:
        case MG_EVENT_KERNEL_OOM:
                note_error(mg_event_type_to_string(ev->type));
                break;
        case MG_EVENT_LEND_END:
                last_end_id = ev->lend->id;
                break;
        case MG_EVENT_LEND_EXPIRED:
                last_end_id = ev->lend->id;
                note_error(ev->what ? ev->what : mg_event_type_to_string(ev->type));
                break;
        case MG_EVENT_ERROR:
        case MG_EVENT_GONE:
                note_error(ev->what ? ev->what : mg_event_type_to_string(ev->type));
                break;
        default:
                break;
        }
}

/* What on_event() counts as a kill, and as an error. */
static unsigned kills_of(const struct mgt_events *e) {
        return (unsigned) (e->n[MG_EVENT_KILL] + e->n[MG_EVENT_KERNEL_OOM] + e->n[MG_EVENT_KILL_DRY_RUN]);
}

static unsigned errors_of(const struct mgt_events *e) {
        return (unsigned) (e->n[MG_EVENT_ERROR] + e->n[MG_EVENT_LEND_EXPIRED] + e->n[MG_EVENT_GONE]);
}

static void on_log(int level, const char *msg, void *ud) {
        const struct bi_actor_config *c = ud;
        if (level <= MG_LOG_ERR)
                fprintf(stderr, "memguard-burnin: actor %" PRIu32 ": %s\n", c->id, msg);
}

/* ---- helpers ------------------------------------------------------------------ */

int bi_count_deleted_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        struct dirent *e;
        int n = 0;
        if (!d)
                return -errno;
        while ((e = readdir(d))) {
                char path[300], target[4096];
                if (e->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
                ssize_t len = readlink(path, target, sizeof(target) - 1);
                if (len <= 0)
                        continue;
                target[len] = '\0';
                /* memfds read "/memfd:name (deleted)" by design */
                if (strstr(target, " (deleted)") && strncmp(target, "/memfd:", 7) != 0)
                        n++;
        }
        closedir(d);
        return n;
}

static void set_error(struct bi_sample *s, int r, const char *what) {
        s->flags |= BI_FLAG_ERROR;
        if (s->error == 0) {
                s->error = r;
                snprintf(s->what, sizeof(s->what), "%s: %s", what, strerror(-r));
        }
}

/*
 * The helper: a second process of the actor, like a VMM's device process.
 * It allocates and touches size bytes, writes, syncs, reads back and removes
 * a scratch file in dir, reports on ready_fd, and waits to be killed.  Only
 * system calls after fork (the parent has threads).
 */
static pid_t helper_start(int dirfd, uint32_t id, uint32_t cycle, uint64_t size, int *ret_ready) {
        int p[2];
        char name[64];
        snprintf(name, sizeof(name), "work-%" PRIu32 "-%" PRIu32, id, cycle);
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        pid_t pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(p[0]);
                close(p[1]);
                return r;
        }
        if (pid == 0) {
                char st = 'E';
                uint8_t *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (m != MAP_FAILED) {
                        for (uint64_t off = 0; off < size; off += PAGE)
                                m[off] = (uint8_t) (off >> 12 | 1);
                        int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                        if (fd >= 0) {
                                bool ok = true;
                                for (uint64_t off = 0; off < SCRATCH_BYTES && ok; off += PAGE)
                                        ok = pwrite(fd, m, PAGE, (off_t) off) == (ssize_t) PAGE;
                                ok = ok && fdatasync(fd) == 0;
                                ok = ok && pread(fd, m, PAGE, 0) == (ssize_t) PAGE;
                                /* synced, so the write that follows sees no dirty pages of ours */
                                (void) posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
                                (void) unlinkat(dirfd, name, 0);
                                close(fd);
                                if (ok)
                                        st = 'R';
                        }
                }
                (void) !write(p[1], &st, 1);
                for (;;)
                        pause();
        }
        close(p[1]);
        *ret_ready = p[0];
        return pid;
}

static int helper_wait_ready(int fd) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        char st = 0;
        if (poll(&pfd, 1, 60000) <= 0)
                return -ETIMEDOUT;
        if (read(fd, &st, 1) != 1)
                return -EIO;
        return st == 'R' ? 0 : -EIO;
}

/* A chaos process: anon grown in 256 KiB steps to max bytes, then held. */
static pid_t chaos_start(uint64_t max) {
        pid_t pid = fork();
        if (pid != 0)
                return pid < 0 ? -errno : pid;
        for (uint64_t done = 0; done < max; done += CHAOS_STEP) {
                uint8_t *m = mmap(NULL, CHAOS_STEP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (m == MAP_FAILED)
                        break;
                for (uint64_t off = 0; off < CHAOS_STEP; off += PAGE)
                        m[off] = 1;
        }
        for (;;)
                pause();
}

static void helper_kill(pid_t pid) {
        if (pid <= 0)
                return;
        (void) kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
}

/* Bytes of dirfd/name resident in the page cache (mincore of a shared
 * read-only mapping: mapping it charges nothing and faults nothing in). */
static int64_t resident_bytes(int dirfd, const char *name) {
        int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
        struct stat sb;
        int64_t n = 0;
        if (fd < 0)
                return -errno;
        if (fstat(fd, &sb) < 0 || sb.st_size <= 0) {
                n = sb.st_size == 0 ? 0 : -errno;
                close(fd);
                return n;
        }
        size_t len = (size_t) sb.st_size, pages = (len + PAGE - 1) / PAGE;
        void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
        close(fd);
        if (m == MAP_FAILED)
                return -errno;
        unsigned char *vec = malloc(pages);
        if (!vec)
                n = -ENOMEM;
        else if (mincore(m, len, vec) < 0)
                n = -errno;
        else
                for (size_t i = 0; i < pages; i++)
                        n += (int64_t) (vec[i] & 1) * PAGE;
        free(vec);
        munmap(m, len);
        return n;
}

/* A lend of the actor's own guard around a lent restore: memory.high "max"
 * for the restore, then the end, told by the set (its worker writes
 * memory.high back) before the next snapshot write may begin its own. */
static int lend_begin(struct mgt_actor *a, uint64_t *id) {
        const struct bi_actor_config *c = a->userdata;
        /* the restore runs as long as the write on a shared disk: the same deadline */
        uint64_t deadline = c->lend_deadline_usec ? c->lend_deadline_usec : 60 * MG_USEC_PER_SEC;
        mgt_ticker_lock(&a->tk, true);
        int r = mg_guard_lend_begin(a->guard, MG_UNLIMITED, deadline, id);
        mgt_ticker_lock(&a->tk, false);
        return r;
}

static int lend_end(struct mgt_actor *a, uint64_t id) {
        mgt_ticker_lock(&a->tk, true);
        int r = mg_guard_lend_end(a->guard, id);
        mgt_ticker_lock(&a->tk, false);
        if (r != 1)
                return r;
        for (int k = 0; k < 1000; k++) { /* bounded: 10 s */
                mgt_ticker_lock(&a->tk, true);
                bool done = last_end_id >= id;
                mgt_ticker_lock(&a->tk, false);
                if (done)
                        return 0;
                (void) poll(NULL, 0, 10);
        }
        return -ETIMEDOUT;
}

/* ---- one cycle ---------------------------------------------------------------- */

static void cycle(struct mgt_actor *a, uint32_t n, bool chaos, struct bi_sample *s) {
        const struct bi_actor_config *c = a->userdata;
        uint64_t len = c->actor_bytes, pages = len / PAGE;
        uint64_t seed = mix(c->seed ^ ((uint64_t) c->id << 32) ^ n);
        uint64_t idx[CHECK_PAGES], sums[CHECK_PAGES];
        char name[64], high0[64] = "", high1[64] = "";
        int ready = -1, r;
        pid_t helper;
        static uint32_t buffered_cycles;
        uint8_t *m;

        *s = (struct bi_sample) { .actor = c->id, .cycle = n };
        s->writer = c->writer == BI_WRITER_BOTH ? (c->id + n) % 2 : (uint32_t) c->writer;
        snprintf(name, sizeof(name), "actor-%" PRIu32 ".snap", c->id);

        /* work */
        uint64_t t0 = mg_mono_usec();
        s->start_usec = t0;
        helper = helper_start(c->dirfd, c->id, n, len / 32, &ready);
        if (helper < 0) {
                set_error(s, helper, "fork helper");
                return;
        }
        /* Shared, so the worker's memfd sees it; charged here, to the
         * actor, as shmem (the page's first toucher's cgroup). */
        m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, c->guest_fd, 0);
        if (m == MAP_FAILED) {
                set_error(s, -errno, "mmap region");
                helper_kill(helper);
                close(ready);
                return;
        }
        (void) madvise(m, len, MADV_NOHUGEPAGE);
        /* a chaos process forked from us copies no page table of it */
        (void) madvise(m, len, MADV_DONTFORK);
        for (uint64_t i = 0; i < pages; i++) {
                if (img_untouched(i, HOLES))
                        continue;
                if (img_zero_page(i))
                        memset(m + i * PAGE, 0, PAGE);
                else
                        img_fill(m + i * PAGE, i, seed);
        }
        for (unsigned k = 0; k < CHECK_PAGES; k++) {
                /* the first and last page, the rest spread by the seed */
                /* NOLINTNEXTLINE(clang-analyzer-core.DivideZero): pages >= 2048: main.c refuses --actor-size below 8M */
                idx[k] = k == 0 ? 0 : k == 1 ? pages - 1 : mix(seed + k) % pages;
                sums[k] = fnv1a(m + idx[k] * PAGE, PAGE);
        }
        r = helper_wait_ready(ready);
        close(ready);
        if (r < 0)
                set_error(s, r, "helper work");
        if (chaos && r == 0) {
                /* After the helper removed its scratch file, so what a kill
                 * can leave behind is the guard's and the library's, not ours. */
                struct bi_sample g = { .actor = c->id, .cycle = n, .kind = BI_SAMPLE_GUEST, .guest_seed = seed,
                                       .end_usec = mg_mono_usec() };
                if (write(c->sample_fd, &g, sizeof(g)) != (ssize_t) sizeof(g))
                        set_error(s, -EPIPE, "guest notice");
                pid_t ch[CHAOS_PROCS];
                unsigned started = 0;
                for (; started < CHAOS_PROCS; started++)
                        if ((ch[started] = chaos_start(len / CHAOS_PROCS)) < 0)
                                break;
                if (started < CHAOS_PROCS) {
                        set_error(s, ch[started], "fork chaos");
                } else {
                        uint64_t until = mg_mono_usec() + CHAOS_WAIT_USEC;
                        while (mg_mono_usec() < until)
                                (void) poll(NULL, 0, 100); /* the worker's guard kills us meanwhile */
                        set_error(s, -ETIME, "chaos overshoot not killed within 300 s");
                }
                for (unsigned k = 0; k < started; k++)
                        helper_kill(ch[k]);
        }
        s->work_usec = mg_mono_usec() - t0;

        /* suspend */
        struct mg_snapshot_options o;
        struct mg_snapshot_stats st = { .size = sizeof(st) };
        /* The memfd, as a VMM with memfd guest RAM writes it: its holes
         * (the untouched blocks) are skipped by SEEK_HOLE, never faulted
         * in, as a shared mapping's read of them would. */
        struct mg_snapshot_source src = { .kind = MG_SNAPSHOT_FD, .fd = c->guest_fd, .length = len };
        mg_snapshot_options_init(&o);
        o.method = s->writer == BI_WRITER_BUFFERED ? MG_SNAPSHOT_BUFFERED : MG_SNAPSHOT_AUTO;
        o.guard = a->guard;
        o.window_bytes = c->window_bytes; /* the actor size's, not the lending guard's limit's */
        o.lend_deadline_usec = c->lend_deadline_usec;
        o.lock = mgt_ticker_lock;
        o.lock_userdata = &a->tk;
        o.log = on_log;
        o.log_userdata = a;
        (void) mgt_cg_read(c->cgroup, "memory.high", high0, sizeof(high0));
        mgt_ticker_measure(&a->tk);
        uint64_t t1 = mg_mono_usec();
        r = mg_snapshot_write(&src, c->dirfd, name, &o, &st);
        uint64_t t2 = mg_mono_usec();
        mgt_ticker_measured(&a->tk, &s->peak_dirty_bytes, NULL);
        if (r < 0)
                set_error(s, r, "mg_snapshot_write");
        (void) mgt_cg_read(c->cgroup, "memory.high", high1, sizeof(high1));
        if (strcmp(high0, high1) != 0 || high0[0] == '\0') {
                s->flags |= BI_FLAG_HIGH;
                if (s->what[0] == '\0')
                        snprintf(s->what, sizeof(s->what), "memory.high %.*s -> %.*s", (int) strcspn(high0, "\n"),
                                 high0, (int) strcspn(high1, "\n"), high1);
        }
        s->method = st.method;
        s->lend_begin_usec = st.lend_begin_usec;
        s->write_usec = st.write_usec;
        s->sync_usec = st.sync_usec;
        s->reclaim_usec = st.reclaim_usec;
        s->lend_end_usec = st.lend_end_usec;
        s->publish_usec = st.publish_usec;
        s->snapshot_usec = r == 0 ? st.total_usec : t2 - t1;
        s->window_bytes = st.window_bytes;
        s->data_bytes = st.data_bytes;
        if (r == 0 && s->writer == BI_WRITER_MEMGUARD && s->peak_dirty_bytes > st.window_bytes + BI_PAGECACHE_TOLERANCE)
                s->flags |= BI_FLAG_PAGECACHE;

        /* teardown: the guest memory freed (shmem stays until punched) */
        helper_kill(helper);
        munmap(m, len);
        if (fallocate(c->guest_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, (off_t) len) < 0)
                set_error(s, -errno, "punch the guest memfd");
        uint64_t t3 = mg_mono_usec();
        s->teardown_usec = t3 - t2;

        /* resume */
        if (r == 0) {
                struct mg_snapshot_stats rs = { .size = sizeof(rs) };
                struct mg_snapshot_options ro;
                struct mg_memstat ms;
                uint64_t hev0 = 0, hev1 = 0;
                int64_t res = resident_bytes(c->dirfd, name);
                mg_snapshot_options_init(&ro);
                if (s->writer == BI_WRITER_BUFFERED) {
                        s->restore_method = c->restore == BI_RESTORE_ALTERNATE ? buffered_cycles % 2
                                            : c->restore == BI_RESTORE_ROTATE  ? buffered_cycles % 3
                                                                               : c->restore;
                        buffered_cycles++;
                        ro.method = s->restore_method == BI_RESTORE_DIRECT ? MG_SNAPSHOT_AUTO : MG_SNAPSHOT_BUFFERED;
                }
                s->resident_bytes = res > 0 ? (uint64_t) res : 0;
                if (mgt_cg_read_memstat(c->cgroup, &ms) == 0)
                        s->actor_file_bytes = ms.file;
                (void) mgt_cg_read_key(c->cgroup, "memory.events", "high", &hev0);
                ro.log = on_log;
                ro.log_userdata = a;
                m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (m == MAP_FAILED) {
                        set_error(s, -errno, "mmap restore region");
                } else {
                        (void) madvise(m, len, MADV_NOHUGEPAGE);
                        struct mg_snapshot_target t = { .kind = MG_SNAPSHOT_MEMORY, .addr = m, .length = len };
                        uint64_t lend = 0;
                        if (s->restore_method == BI_RESTORE_LENT && (r = lend_begin(a, &lend)) < 0) {
                                set_error(s, r, "lend for the restore");
                                lend = 0;
                        }
                        r = mg_snapshot_restore(c->dirfd, name, &t, &ro, &rs);
                        if (mgt_cg_read_key(c->cgroup, "memory.events", "high", &hev1) == 0 && hev1 >= hev0)
                                s->restore_high_events = hev1 - hev0;
                        if (lend) {
                                /* a worker keeps the file: what the restore brought in goes first */
                                int fd = openat(c->dirfd, name, O_RDONLY | O_CLOEXEC);
                                if (fd >= 0) {
                                        (void) posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
                                        close(fd);
                                }
                                int e = lend_end(a, lend);
                                char h[64] = "";
                                (void) mgt_cg_read(c->cgroup, "memory.high", h, sizeof(h));
                                if (e < 0)
                                        set_error(s, e, "end of the restore's lend");
                                else if (strcmp(h, high0) != 0) {
                                        s->flags |= BI_FLAG_HIGH;
                                        if (s->what[0] == '\0')
                                                snprintf(s->what, sizeof(s->what), "memory.high %.*s after the "
                                                         "restore's lend", (int) strcspn(h, "\n"), h);
                                }
                        }
                        if (r < 0) {
                                set_error(s, r, "mg_snapshot_restore");
                        } else {
                                s->restore_usec = rs.total_usec;
                                for (unsigned k = 0; k < CHECK_PAGES; k++)
                                        if (fnv1a(m + idx[k] * PAGE, PAGE) != sums[k]) {
                                                s->flags |= BI_FLAG_VERIFY;
                                                if (s->what[0] == '\0')
                                                        snprintf(s->what, sizeof(s->what),
                                                                 "restored page %" PRIu64 " differs", idx[k]);
                                                break;
                                        }
                        }
                        munmap(m, len);
                }
        }
        s->downtime_usec = mg_mono_usec() - t1;
        if (unlinkat(c->dirfd, name, 0) < 0 && errno != ENOENT)
                set_error(s, -errno, "unlink snapshot");

        int del = bi_count_deleted_fds();
        if (del != 0) {
                s->flags |= BI_FLAG_DELETED_FD;
                if (s->what[0] == '\0')
                        snprintf(s->what, sizeof(s->what), "%d fds of deleted files open", del);
        }
        s->end_usec = mg_mono_usec();
}

/* What the main process asked on the control pipe, without waiting: EOF (or
 * an error) means stop after this cycle; BI_CONTROL_CHAOS an overshoot in the
 * next one.  Returns false to stop. */
static bool control(int fd, bool *chaos) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        char b;
        while (poll(&p, 1, 0) > 0) {
                ssize_t k = read(fd, &b, 1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k != 1)
                        return *chaos; /* an overshoot asked before the stop is still made */
                if (b == BI_CONTROL_CHAOS)
                        *chaos = true;
        }
        return true;
}

_Noreturn void bi_actor_main(const struct bi_actor_config *c) {
        struct mgt_actor a;
        struct mg_guard_options go;
        struct bi_sample s;
        unsigned kills0 = 0, errors0 = 0;
        int r;

        r = mgt_actor_adopt(&a, c->cgroup);
        a.userdata = (void *) c;
        a.on_event = on_event;
        if (r == 0)
                r = bi_actor_guard_options(c->actor_bytes, &go);
        go.log = on_log;
        go.log_userdata = (void *) c;
        if (r == 0)
                r = mgt_actor_guard(&a, go.limit_bytes, &go);
        if (r == 0)
                r = mgt_ticker_start(&a.tk, a.cg, a.set);
        if (r < 0) {
                s = (struct bi_sample) { .actor = c->id, .end_usec = mg_mono_usec() };
                set_error(&s, r, "guard setup");
                (void) !write(c->sample_fd, &s, sizeof(s));
                _exit(1);
        }
        bool chaos = false;
        for (uint32_t n = 0; control(c->control_fd, &chaos); n++) {
                cycle(&a, n, chaos, &s);
                chaos = false;
                mgt_ticker_lock(&a.tk, true);
                unsigned kills = kills_of(&a.ev) - kills0, errors = errors_of(&a.ev) - errors0;
                kills0 += kills;
                errors0 += errors;
                if ((kills || errors) && s.what[0] == '\0')
                        snprintf(s.what, sizeof(s.what), "guard: %s", first_what);
                first_what[0] = '\0';
                mgt_ticker_lock(&a.tk, false);
                if (kills)
                        s.flags |= BI_FLAG_KILL;
                if (errors)
                        s.flags |= BI_FLAG_ERROR;
                if (write(c->sample_fd, &s, sizeof(s)) != (ssize_t) sizeof(s))
                        break;
                if (s.error == -ENOSPC)
                        break;  /* nothing more to learn from a full disk */
        }
        (void) mgt_actor_end(&a); /* the main process removes the cgroup */
        _exit(0);
}
