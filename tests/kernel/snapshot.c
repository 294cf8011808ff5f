/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The snapshot module on a real kernel and a real (throttled) disk.
 *
 * Tree: <base>/snap-<n>: memory.high 230 MiB (90 % of 256 MiB), memory.max
 * 512 MiB, guarded with a 256 MiB limit.  The test process moves itself into
 * the actor's cgroup (its pid to cgroup.procs) to build the guest image, so
 * the image is charged to the actor as a microVM's RAM is (224 MiB of 256:
 * every eighth 2 MiB is never touched, or a hole of the memfd), and writes it
 * from there, so the page cache the write makes is charged to the actor too.
 * A second thread samples memory.stat every 20 ms (file_dirty +
 * file_writeback) and ticks the guard set, serialised with the lend through
 * the snapshot's lock callback.  Restores run back in the test's own cgroup.
 *
 * Expected: every write completes with no kill, no memory.events high beyond
 * what the lend allows (none), dirty + writeback within the window + 4 MiB
 * (memory.stat's per-CPU batching hides at most 64 pages per CPU), and
 * memory.high back to the exact bytes it had; every restore byte for byte.
 * The buffered baseline and a plain O_DIRECT copy are measured, not judged.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "ktest.h"
#include "image.h"
#include "ticker.h"
#include "memguard/snapshot.h"
#include "scenarios.h"

#define IMG (256 * MG_MIB)
#define LIMIT (256 * MG_MIB)
#define HIGH (230 * MG_MIB)
#define TOLERANCE (4 * MG_MIB)
#define PAGE 4096

/* ---- the guest image ----------------------------------------------------- */

/* tools/common/image.h: one 2 MiB block in 8 never touched. */
#define HOLES 8

static int make_memfd(uint64_t len, uint64_t seed) {
        static uint8_t buf[MG_MIB] __attribute__((aligned(4096)));
        int fd = memfd_create("guest-ram", MFD_CLOEXEC);
        if (fd < 0 || ftruncate(fd, (off_t) len) < 0)
                return -1;
        for (uint64_t b = 0; b < len / MG_MIB; b++) {
                uint64_t first = b * MG_MIB / PAGE;
                if (img_untouched(first, HOLES))
                        continue; /* a hole */
                for (uint64_t i = 0; i < MG_MIB / PAGE; i++)
                        img_expect(buf + i * PAGE, first + i, HOLES, seed);
                if (pwrite(fd, buf, MG_MIB, (off_t) (b * MG_MIB)) != (ssize_t) MG_MIB) {
                        close(fd);
                        return -1;
                }
        }
        return fd;
}

/* ---- the actor ------------------------------------------------------------ */

/* The scenario library's actor (tools/common/scenario.h): its cgroup (from
 * kt_cg_new(), removed by kt_cleanup_all()), its set, whose events land in
 * ev under tk.mu, and the ticker. */

static void actor_note(struct mgt_actor *a, const struct mg_event *ev) {
        (void) a;
        kt_note_event(ev);
}

static void log_fn(int level, const char *msg, void *ud) {
        (void) ud;
        if (level <= MG_LOG_WARNING)
                kt_note("library: %s", msg);
}


static int actor_start(struct mgt_actor *a, const char *name, bool guarded) {
        const char *cg = kt_cg_new(name);
        int r = mgt_actor_adopt(a, cg ? cg : "");

        if (!cg || r < 0)
                return -ENOENT;
        if (mgt_actor_limit(a, "memory.max", 2 * LIMIT) < 0 || mgt_actor_limit(a, "memory.high", HIGH) < 0)
                return -EIO;
        if (guarded) {
                a->on_event = actor_note;
                if (mgt_actor_guard(a, LIMIT, NULL) < 0)
                        return -EIO;
        }
        return mgt_ticker_start(&a->tk, a->cg, a->set);
}

/* Always run, whatever a scenario's checks said: out of the cgroup before
 * kt_cleanup_all() kills what is in it. */
static void actor_stop(struct mgt_actor *a) {
        (void) kt_leave(a);
        (void) mgt_actor_end(a); /* stops the ticker, frees the set */
}

struct result {
        const char *what;
        int r;
        struct mg_snapshot_stats st;
        uint64_t peak_dw, samples, high_events;
        char high_before[64], high_after[64];
};

static void note_write(const struct result *x) {
        const struct mg_snapshot_stats *s = &x->st;
        double secs = (double) s->total_usec / 1e6;
        char lend[32];
        if (s->lend_bytes == MG_UNLIMITED)
                snprintf(lend, sizeof(lend), "max");
        else
                snprintf(lend, sizeof(lend), "%" PRIu64, s->lend_bytes / MG_MIB);
        kt_note("%s: method=%s total_ms=%" PRIu64 " write_ms=%" PRIu64 " sync_ms=%" PRIu64 " lend_begin_ms=%" PRIu64
                " lend_end_ms=%" PRIu64 " publish_ms=%" PRIu64 " image_MBps=%.1f data_MBps=%.1f",
                x->what, mg_snapshot_method_to_string(s->method), s->total_usec / 1000, s->write_usec / 1000,
                s->sync_usec / 1000, s->lend_begin_usec / 1000, s->lend_end_usec / 1000, s->publish_usec / 1000,
                secs > 0 ? (double) s->image_bytes / 1e6 / secs : 0, secs > 0 ? (double) s->data_bytes / 1e6 / secs : 0);
        kt_note("%s: data_mib=%.1f zero_mib=%.1f hole_mib=%.1f ranges=%u allocated_mib=%.1f file_mib=%.1f "
                "window_mib=%" PRIu64 " lend_mib=%s peak_dirty_writeback_mib=%.2f samples=%" PRIu64
                " high_events=%" PRIu64 " memory.high %s -> %s",
                x->what, (double) s->data_bytes / MG_MIB, (double) s->zero_bytes / MG_MIB, (double) s->hole_bytes / MG_MIB,
                s->ranges, (double) s->allocated_bytes / MG_MIB, (double) s->file_bytes / MG_MIB, s->window_bytes / MG_MIB,
                lend,
                (double) x->peak_dw / MG_MIB, x->samples, x->high_events, x->high_before, x->high_after);
}

/* One write from inside the actor, measured. */
static void do_write(struct mgt_actor *a, struct result *x, const struct mg_snapshot_source *src, const char *name,
                     uint32_t method, uint64_t lend) {
        struct mg_snapshot_options o;
        int dfd = open(kt_disk, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        uint64_t high0 = UINT64_MAX;
        (void) mgt_cg_read_key(a->cg, "memory.events", "high", &high0);

        mg_snapshot_options_init(&o);
        o.method = method;
        o.guard = a->guard;
        o.lend_bytes = lend;
        o.lock = mgt_ticker_lock;
        o.lock_userdata = &a->tk;
        o.log = log_fn;
        x->st = (struct mg_snapshot_stats) { .size = sizeof(x->st) };
        mgt_cg_read(a->cg, "memory.high", x->high_before, sizeof(x->high_before));
        mgt_ticker_measure(&a->tk);
        x->r = mg_snapshot_write(src, dfd, name, &o, &x->st);
        mgt_ticker_measured(&a->tk, &x->peak_dw, &x->samples);
        uint64_t high1 = UINT64_MAX;
        (void) mgt_cg_read_key(a->cg, "memory.events", "high", &high1);
        x->high_events = high1 - high0;
        mgt_cg_read(a->cg, "memory.high", x->high_after, sizeof(x->high_after));
        x->high_before[strcspn(x->high_before, "\n")] = '\0';
        x->high_after[strcspn(x->high_after, "\n")] = '\0';
        close(dfd);
        if (x->r == 0)
                note_write(x);
        else
                kt_note("%s: %s", x->what, strerror(-x->r));
}

static int check_write(const struct result *x, bool bounded) {
        KT_CHECK(x->r == 0, "%s: write failed: %s", x->what, strerror(-x->r));
        KT_CHECK(strcmp(x->high_before, x->high_after) == 0, "%s: memory.high %s restored as %s", x->what,
                 x->high_before, x->high_after);
        if (bounded) {
                KT_CHECK(x->samples >= 3, "%s: only %" PRIu64 " samples", x->what, x->samples);
                KT_CHECK(x->peak_dw <= x->st.window_bytes + TOLERANCE,
                         "%s: dirty + writeback peaked at %" PRIu64 " KiB, window %" PRIu64 " KiB", x->what,
                         x->peak_dw / 1024, x->st.window_bytes / 1024);
                KT_CHECK(x->high_events == 0, "%s: %" PRIu64 " memory.high events during a lent write", x->what,
                         x->high_events);
        }
        return KT_PASS;
}

/* Restores name into a fresh target (memory, or a memfd when fd is true)
 * and compares it with the pattern page by page. */
static int restore_check(const char *what, const char *name, bool to_fd, uint64_t seed) {
        struct mg_snapshot_stats st = { .size = sizeof(st) };
        struct mg_snapshot_options o;
        int dfd = open(kt_disk, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd = -1, r;
        uint8_t *p;

        mg_snapshot_options_init(&o);
        o.log = log_fn;
        if (to_fd) {
                fd = memfd_create("restored", MFD_CLOEXEC);
                struct mg_snapshot_target t = { .kind = MG_SNAPSHOT_FD, .fd = fd, .length = IMG };
                r = mg_snapshot_restore(dfd, name, &t, &o, &st);
                p = r == 0 ? mmap(NULL, IMG, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
        } else {
                p = mmap(NULL, IMG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                struct mg_snapshot_target t = { .kind = MG_SNAPSHOT_MEMORY, .addr = p, .length = IMG };
                r = mg_snapshot_restore(dfd, name, &t, &o, &st);
        }
        close(dfd);
        int64_t bad = r == 0 && p != MAP_FAILED ? img_verify(p, IMG, HOLES, seed) : -2;
        uint64_t blocks = 0;
        if (to_fd && r == 0) {
                struct stat s;
                fstat(fd, &s);
                blocks = (uint64_t) s.st_blocks * 512;
        }
        if (p != MAP_FAILED)
                munmap(p, IMG);
        if (fd >= 0)
                close(fd);
        KT_CHECK(r == 0, "%s: restore: %s", what, strerror(-r));
        char shmem[64] = "";
        if (to_fd)
                snprintf(shmem, sizeof(shmem), " target_shmem_mib=%.1f", (double) blocks / MG_MIB);
        kt_note("%s: restore method=%s total_ms=%" PRIu64 " read_ms=%" PRIu64 " zero_ms=%" PRIu64 " MBps=%.1f%s",
                what, mg_snapshot_method_to_string(st.method), st.total_usec / 1000, st.read_usec / 1000,
                st.zero_usec / 1000, st.total_usec ? (double) st.image_bytes / (double) st.total_usec : 0, shmem);
        KT_CHECK(bad == -1, "%s: restored page %" PRId64 " differs", what, bad);
        return KT_PASS;
}

static void unlink_disk(const char *name) {
        char p[600];
        snprintf(p, sizeof(p), "%s/%s", kt_disk, name);
        unlink(p);
}

/* A plain O_DIRECT copy of len bytes: what the disk itself gives. */
static double plain_direct_mbps(uint64_t len, uint64_t *ret_usec) {
        char path[600];
        snprintf(path, sizeof(path), "%s/plain-direct", kt_disk);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0600);
        uint8_t *buf = mmap(NULL, 4 * MG_MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (fd < 0 || buf == MAP_FAILED)
                return 0;
        for (uint64_t i = 0; i < 4 * MG_MIB / PAGE; i++)
                img_fill(buf + i * PAGE, i, 99);
        uint64_t t0 = mg_mono_usec();
        bool ok = true;
        for (uint64_t off = 0; off < len && ok; off += 4 * MG_MIB)
                ok = pwrite(fd, buf, 4 * MG_MIB, (off_t) off) == (ssize_t) (4 * MG_MIB);
        ok = ok && fdatasync(fd) == 0;
        uint64_t us = mg_mono_usec() - t0;
        close(fd);
        unlink(path);
        munmap(buf, 4 * MG_MIB);
        *ret_usec = us;
        return ok && us ? (double) len / (double) us : 0;
}

/* ---- (a) + (c): lent writes of a 256 MiB guest, restored byte for byte --- */

static int write_inner(struct mgt_actor *a) {
        struct result x[4] = { { .what = "anon/auto" }, { .what = "anon/windowed" }, { .what = "anon/dontcache" },
                               { .what = "memfd/auto lend=max" } };
        KT_CHECK(actor_start(a, "snap", true) == 0, "setup");
        KT_CHECK(kt_enter(a) == 0, "move into %s", a->cg);
        uint64_t t0 = mg_mono_usec();
        uint8_t *img = img_make_anon(IMG, HOLES, 1);
        KT_CHECK(img, "mmap");
        uint64_t cur = UINT64_MAX;
        (void) mgt_cg_read_u64(a->cg, "memory.current", &cur);
        kt_note("anon image built in %" PRIu64 " ms; actor memory.current %" PRIu64 " MiB, memory.high %" PRIu64
                " MiB", (mg_mono_usec() - t0) / 1000, cur / MG_MIB, HIGH / MG_MIB);
        struct mg_snapshot_source src = { .kind = MG_SNAPSHOT_MEMORY, .addr = img, .length = IMG };
        do_write(a, &x[0], &src, "snap-anon-auto", MG_SNAPSHOT_AUTO, 0);
        do_write(a, &x[1], &src, "snap-anon-windowed", MG_SNAPSHOT_WINDOWED, 0);
        do_write(a, &x[2], &src, "snap-anon-dontcache", MG_SNAPSHOT_DONTCACHE, 0);
        munmap(img, IMG);

        t0 = mg_mono_usec();
        int fd = make_memfd(IMG, 2);
        KT_CHECK(fd >= 0, "memfd");
        cur = UINT64_MAX;
        (void) mgt_cg_read_u64(a->cg, "memory.current", &cur);
        kt_note("memfd image built in %" PRIu64 " ms; actor memory.current %" PRIu64 " MiB",
                (mg_mono_usec() - t0) / 1000,
                cur / MG_MIB);
        src = (struct mg_snapshot_source) { .kind = MG_SNAPSHOT_FD, .fd = fd, .length = IMG };
        do_write(a, &x[3], &src, "snap-memfd", MG_SNAPSHOT_AUTO, MG_UNLIMITED);
        close(fd);
        KT_CHECK(kt_leave(a) == 0, "move out");

        /* the guard keeps watching for a second after the last lend */
        (void) poll(NULL, 0, 1000);
        pthread_mutex_lock(&a->tk.mu);
        int kills = a->ev.n[MG_EVENT_KILL], begins = a->ev.n[MG_EVENT_LEND_BEGIN], ends = a->ev.n[MG_EVENT_LEND_END];
        pthread_mutex_unlock(&a->tk.mu);
        int lends = 4; /* a forced method the fs refuses fails inside its lend too */
        kt_note("guard: kills=%d lend_begin=%d lend_end=%d", kills, begins, ends);

        KT_CHECK(check_write(&x[0], true) == KT_PASS, "anon/auto");
        KT_CHECK(x[0].st.method == MG_SNAPSHOT_DIRECT, "ext4 should take O_DIRECT, took %s",
                 mg_snapshot_method_to_string(x[0].st.method));
        KT_CHECK(x[0].st.allocated_bytes < IMG - 16 * MG_MIB, "not sparse: %" PRIu64 " MiB allocated",
                 x[0].st.allocated_bytes / MG_MIB);
        KT_CHECK(check_write(&x[1], true) == KT_PASS, "anon/windowed");
        if (x[2].r == -EOPNOTSUPP) {
                kt_note("anon/dontcache: RWF_DONTCACHE not supported by this kernel or ext4 (6.14+)");
                KT_CHECK(strcmp(x[2].high_before, x[2].high_after) == 0, "refused dontcache: memory.high %s -> %s",
                         x[2].high_before, x[2].high_after);
        } else
                KT_CHECK(check_write(&x[2], true) == KT_PASS, "anon/dontcache");
        KT_CHECK(check_write(&x[3], true) == KT_PASS, "memfd");
        KT_CHECK(x[3].st.hole_bytes == IMG / 8, "memfd holes %" PRIu64 " MiB", x[3].st.hole_bytes / MG_MIB);
        KT_CHECK(kills == 0, "the guard killed the actor during or after a snapshot");
        KT_CHECK(begins == lends && ends == lends, "lends: %d begun, %d ended, %d writes", begins, ends, lends);

        /* (c) byte for byte, zero pages, untouched pages and holes included */
        KT_CHECK(restore_check("anon/auto", "snap-anon-auto", false, 1) == KT_PASS, "restore");
        KT_CHECK(restore_check("anon/windowed", "snap-anon-windowed", true, 1) == KT_PASS, "restore");
        KT_CHECK(restore_check("memfd", "snap-memfd", true, 2) == KT_PASS, "restore");
        return KT_PASS;
}

/* snapshot-write.  Tree: the file's header (<base>/snap-<n>).  Build: a
 * 256 MiB anon image written three times (auto, windowed, dontcache) and a
 * memfd image once (auto, lend "max"), each from inside the actor.
 * Expect: every write succeeds with memory.high back to its bytes, at least
 * 3 samples, dirty + writeback within the window + 4 MiB and no memory.high
 * events (dontcache may be refused as unsupported, memory.high unchanged);
 * auto takes O_DIRECT on ext4 and allocates under 240 MiB; the memfd's holes
 * are 32 MiB; no kill, 4 lends begun and ended; 3 restores byte for byte. */
int t_snapshot_write(void) {
        struct mgt_actor a = { 0 }; /* actor_stop() reads it even if the test stops before actor_start() */
        int r = write_inner(&a);
        actor_stop(&a);
        unlink_disk("snap-anon-auto");
        unlink_disk("snap-anon-windowed");
        unlink_disk("snap-anon-dontcache");
        unlink_disk("snap-memfd");
        return r;
}

/* ---- (b): the buffered baseline, and the disk alone ---------------------- */

static int baseline_inner(struct mgt_actor *a) {
        struct result x = { .what = "anon/buffered" };
        KT_CHECK(actor_start(a, "snap-base", true) == 0, "setup");
        KT_CHECK(kt_enter(a) == 0, "move into %s", a->cg);
        uint8_t *img = img_make_anon(IMG, HOLES, 3);
        KT_CHECK(img, "mmap");
        struct mg_snapshot_source src = { .kind = MG_SNAPSHOT_MEMORY, .addr = img, .length = IMG };
        do_write(a, &x, &src, "snap-buffered", MG_SNAPSHOT_BUFFERED, 0);
        munmap(img, IMG);
        KT_CHECK(kt_leave(a) == 0, "move out");
        uint64_t dirty = UINT64_MAX;
        (void) mgt_cg_read_key(a->cg, "memory.stat", "file_dirty", &dirty);
        uint64_t file = UINT64_MAX;
        (void) mgt_cg_read_key(a->cg, "memory.stat", "file", &file);
        kt_note("anon/buffered: after the write: file_mib=%" PRIu64 " file_dirty_mib=%" PRIu64
                " (cache a plain write leaves charged to the actor)", file / MG_MIB, dirty / MG_MIB);
        KT_CHECK(check_write(&x, false) == KT_PASS, "buffered");
        KT_CHECK(a->ev.n[MG_EVENT_KILL] == 0, "killed");
        KT_CHECK(restore_check("anon/buffered", "snap-buffered", false, 3) == KT_PASS, "restore");

        uint64_t us = 0;
        double mbps = plain_direct_mbps(IMG, &us);
        kt_note("plain O_DIRECT copy of %" PRIu64 " MiB: ms=%" PRIu64 " MBps=%.1f", IMG / MG_MIB, us / 1000, mbps);
        KT_CHECK(mbps > 0, "plain O_DIRECT copy failed");
        return KT_PASS;
}

/* snapshot-baseline.  Tree: the file's header (<base>/snap-base-<n>).
 * Build: a 256 MiB anon image written buffered from inside the actor, then
 * a plain O_DIRECT copy of 256 MiB; their speed and the cache left behind
 * are measured, not judged.
 * Expect: the write succeeds with memory.high back to its bytes and no
 * kill, its restore is byte for byte, and the O_DIRECT copy completes. */
int t_snapshot_baseline(void) {
        struct mgt_actor a = { 0 }; /* actor_stop() reads it even if the test stops before actor_start() */
        int r = baseline_inner(&a);
        actor_stop(&a);
        unlink_disk("snap-buffered");
        return r;
}

/* ---- (d): ENOSPC on a small disk, a truncated and a corrupt file --------- */

static int count_deleted_fds(void) {
        char p[300], target[600];
        int n = 0;
        for (int fd = 0; fd < 1024; fd++) {
                snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
                ssize_t k = readlink(p, target, sizeof(target) - 1);
                if (k < 0)
                        continue;
                target[k] = '\0';
                n += strstr(target, "(deleted)") != NULL;
        }
        return n;
}

static int entries(const char *dir) {
        DIR *d = opendir(dir);
        struct dirent *de;
        int n = 0;
        if (!d)
                return -1;
        while ((de = readdir(d)))
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
                    strcmp(de->d_name, "lost+found") != 0)
                        n++;
        closedir(d);
        return n;
}

static uint64_t free_bytes(const char *dir) {
        struct statfs s;
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        syncfs(fd); /* ext4 returns freed blocks at the journal commit */
        fstatfs(fd, &s);
        close(fd);
        return (uint64_t) s.f_bfree * (uint64_t) s.f_bsize;
}

static int faults_inner(struct mgt_actor *a) {
        const char *small = getenv("MEMGUARD_TEST_SMALL");
        if (!small)
                small = "/mnt/small";
        KT_CHECK(actor_start(a, "snap-fault", true) == 0, "setup");

        struct statfs sfs;
        if (statfs(small, &sfs) == 0 && access(small, W_OK) == 0) {
                uint64_t len = 96 * MG_MIB, free0 = free_bytes(small);
                int n0 = entries(small);
                KT_CHECK(kt_enter(a) == 0, "enter");
                uint8_t *img = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                KT_CHECK(img != MAP_FAILED, "mmap");
                for (uint64_t i = 0; i < len / PAGE; i++)
                        img_fill(img + i * PAGE, i, 5);
                int sfd = open(small, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                static const uint32_t m[] = { MG_SNAPSHOT_AUTO, MG_SNAPSHOT_WINDOWED, MG_SNAPSHOT_BUFFERED };
                for (size_t i = 0; i < 3; i++) {
                        struct mg_snapshot_options o;
                        struct mg_snapshot_source src = { .kind = MG_SNAPSHOT_MEMORY, .addr = img, .length = len };
                        char before[64] = "", after[64] = "";
                        mg_snapshot_options_init(&o);
                        o.method = m[i];
                        o.guard = a->guard;
                        o.lock = mgt_ticker_lock;
                        o.lock_userdata = &a->tk;
                        mgt_cg_read(a->cg, "memory.high", before, sizeof(before));
                        uint64_t t0 = mg_mono_usec();
                        int r = mg_snapshot_write(&src, sfd, "snap", &o, NULL);
                        uint64_t ms = (mg_mono_usec() - t0) / 1000;
                        mgt_cg_read(a->cg, "memory.high", after, sizeof(after));
                        uint64_t free1 = free_bytes(small);
                        int n1 = entries(small), del = count_deleted_fds();
                        kt_note("ENOSPC %s: r=%s after_ms=%" PRIu64 " entries=%d->%d free_kib=%" PRIu64 "->%" PRIu64
                                " deleted_fds=%d",
                                mg_snapshot_method_to_string(m[i]), r ? strerror(-r) : "0", ms, n0, n1, free0 / 1024,
                                free1 / 1024, del);
                        KT_CHECK(r == -ENOSPC, "%s: %s", mg_snapshot_method_to_string(m[i]), strerror(-r));
                        KT_CHECK(strcmp(before, after) == 0, "memory.high %s came back as %s", before, after);
                        KT_CHECK(n1 == n0, "left %d entries behind", n1 - n0);
                        KT_CHECK(free1 == free0, "free space %" PRIu64 " -> %" PRIu64 " KiB", free0 / 1024,
                                 free1 / 1024);
                        KT_CHECK(del == 0, "%d fds on deleted files", del);
                }
                close(sfd);
                munmap(img, len);
                KT_CHECK(kt_leave(a) == 0, "leave");
        } else {
                kt_note("no small disk at %s (tests/kernel/run passes --disk2-mib 64): ENOSPC part not run", small);
        }

        /* truncated, corrupt, wrong length */
        uint64_t len = 8 * MG_MIB;
        uint8_t *img = img_make_anon(len, HOLES, 6), *back = mmap(NULL, len, PROT_READ | PROT_WRITE,
                                                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        KT_CHECK(img && back != MAP_FAILED, "mmap");
        int dfd = open(kt_disk, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct mg_snapshot_source src = { .kind = MG_SNAPSHOT_MEMORY, .addr = img, .length = len };
        struct mg_snapshot_target dst = { .kind = MG_SNAPSHOT_MEMORY, .addr = back, .length = len };
        struct mg_snapshot_options o;
        mg_snapshot_options_init(&o);
        o.log = log_fn;
        KT_CHECK(mg_snapshot_write(&src, dfd, "snap-small", &o, NULL) == 0, "write");
        KT_CHECK(mg_snapshot_restore(dfd, "snap-small", &dst, &o, NULL) == 0, "restore");
        KT_CHECK(img_verify(back, len, HOLES, 6) == -1, "restore differs");
        int fd = openat(dfd, "snap-small", O_RDWR | O_CLOEXEC);
        struct stat s;
        fstat(fd, &s);
        uint8_t b;
        pread(fd, &b, 1, 4096 + 5 * PAGE + 17);
        b ^= 1;
        pwrite(fd, &b, 1, 4096 + 5 * PAGE + 17);
        fdatasync(fd);
        int r = mg_snapshot_restore(dfd, "snap-small", &dst, &o, NULL);
        kt_note("one data bit flipped: %s", strerror(-r));
        KT_CHECK(r == -EBADMSG, "corrupt file restored: %d", r);
        KT_CHECK(ftruncate(fd, s.st_size - 4096) == 0, "truncate");
        r = mg_snapshot_restore(dfd, "snap-small", &dst, &o, NULL);
        kt_note("truncated by 4 KiB: %s", strerror(-r));
        KT_CHECK(r == -EBADMSG, "truncated file restored: %d", r);
        KT_CHECK(ftruncate(fd, (off_t) (len / 2)) == 0, "truncate");
        r = mg_snapshot_restore(dfd, "snap-small", &dst, &o, NULL);
        KT_CHECK(r == -EBADMSG, "half a file restored: %d", r);
        close(fd);
        KT_CHECK(mg_snapshot_write(&src, dfd, "snap-small", &o, NULL) == 0, "write");
        dst.length = len / 2;
        r = mg_snapshot_restore(dfd, "snap-small", &dst, &o, NULL);
        KT_CHECK(r == -EMSGSIZE, "restore into a smaller target: %d", r);
        unlinkat(dfd, "snap-small", 0);
        close(dfd);
        munmap(img, len);
        munmap(back, len);
        return KT_PASS;
}

/* snapshot-faults.  Tree: the file's header (<base>/snap-fault-<n>) and the
 * small disk (MEMGUARD_TEST_SMALL, default /mnt/small; without it the ENOSPC
 * part is not run).  Build: a 96 MiB image written there by auto, windowed
 * and buffered; an 8 MiB image on the disk, then damaged.
 * Expect: each write to the small disk fails with ENOSPC, memory.high as it
 * was, no entry left, the free space as it was, no fd on a deleted file;
 * the 8 MiB image restores byte for byte, then with one data bit flipped,
 * truncated by 4 KiB or to half it is refused with EBADMSG, and restoring
 * it into a target half its size with EMSGSIZE. */
int t_snapshot_faults(void) {
        struct mgt_actor a = { 0 }; /* actor_stop() reads it even if the test stops before actor_start() */
        int r = faults_inner(&a);
        actor_stop(&a);
        unlink_disk("snap-small");
        return r;
}

/* ---- (e): 100 cycles ------------------------------------------------------ */

/* 8 MiB images, half of each MiB zero, methods alternating, a lend each
 * time: no fd on a deleted file, the directory and the free space as they
 * were, memory.high as it was. */
static int cycles_inner(struct mgt_actor *a) {
        char dir[600], before[64] = "", after[64] = "";
        uint64_t len = 8 * MG_MIB;
        snprintf(dir, sizeof(dir), "%s/cycles", kt_disk);
        KT_CHECK(mkdir(dir, 0755) == 0 || errno == EEXIST, "mkdir");
        KT_CHECK(actor_start(a, "snap-cycles", true) == 0, "setup");
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        uint8_t *img = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        uint8_t *back = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        KT_CHECK(dfd >= 0 && img != MAP_FAILED && back != MAP_FAILED, "setup");
        mgt_cg_read(a->cg, "memory.high", before, sizeof(before));
        uint64_t free0 = free_bytes(dir);
        int n0 = entries(dir), del0 = count_deleted_fds();
        uint64_t t0 = mg_mono_usec(), wr = 0, rd = 0, worst = 0;
        static const uint32_t m[] = { MG_SNAPSHOT_AUTO, MG_SNAPSHOT_WINDOWED, MG_SNAPSHOT_BUFFERED };
        for (int i = 0; i < 100; i++) {
                for (uint64_t p = 0; p < len / PAGE; p++) {
                        if ((p * PAGE / (512 * UINT64_C(1024))) % 2)
                                memset(img + p * PAGE, 0, PAGE);
                        else
                                img_fill(img + p * PAGE, p, (uint64_t) i + 100);
                }
                struct mg_snapshot_options o;
                struct mg_snapshot_stats st = { .size = sizeof(st) }, rs = { .size = sizeof(st) };
                struct mg_snapshot_source src = { .kind = MG_SNAPSHOT_MEMORY, .addr = img, .length = len };
                struct mg_snapshot_target dst = { .kind = MG_SNAPSHOT_MEMORY, .addr = back, .length = len };
                mg_snapshot_options_init(&o);
                o.method = m[i % 3];
                o.guard = a->guard;
                o.lock = mgt_ticker_lock;
                o.lock_userdata = &a->tk;
                o.log = log_fn;
                int r = mg_snapshot_write(&src, dfd, "snap", &o, &st);
                KT_CHECK(r == 0, "cycle %d: write: %s", i, strerror(-r));
                memset(back, 0xA5, len);
                r = mg_snapshot_restore(dfd, "snap", &dst, &o, &rs);
                KT_CHECK(r == 0, "cycle %d: restore: %s", i, strerror(-r));
                KT_CHECK(memcmp(img, back, len) == 0, "cycle %d: restored image differs", i);
                wr += st.total_usec;
                rd += rs.total_usec;
                if (st.total_usec > worst)
                        worst = st.total_usec;
        }
        int del = count_deleted_fds();
        KT_CHECK(unlinkat(dfd, "snap", 0) == 0, "unlink");
        uint64_t free1 = free_bytes(dir);
        int n1 = entries(dir);
        mgt_cg_read(a->cg, "memory.high", after, sizeof(after));
        kt_note("100 cycles of %" PRIu64 " MiB (4 MiB data): ms=%" PRIu64 " write_avg_ms=%.1f write_max_ms=%" PRIu64
                " restore_avg_ms=%.1f deleted_fds=%d->%d entries=%d->%d free_kib=%" PRIu64 "->%" PRIu64,
                len / MG_MIB, (mg_mono_usec() - t0) / 1000, (double) wr / 100 / 1000, worst / 1000, (double) rd / 100 / 1000,
                del0, del, n0, n1, free0 / 1024, free1 / 1024);
        close(dfd);
        munmap(img, len);
        munmap(back, len);
        rmdir(dir);
        KT_CHECK(del == del0, "%d fds on deleted files", del - del0);
        KT_CHECK(n1 == n0, "directory has %d entries, had %d", n1, n0);
        KT_CHECK(free1 == free0, "free space %" PRIu64 " KiB, was %" PRIu64 " KiB", free1 / 1024, free0 / 1024);
        KT_CHECK(strcmp(before, after) == 0, "memory.high %s is now %s", before, after);
        pthread_mutex_lock(&a->tk.mu);
        int begins = a->ev.n[MG_EVENT_LEND_BEGIN], ends = a->ev.n[MG_EVENT_LEND_END];
        pthread_mutex_unlock(&a->tk.mu);
        KT_CHECK(begins == 100 && ends == 100, "lends %d/%d", begins, ends);
        return KT_PASS;
}

/* snapshot-cycles.  Tree: the file's header (<base>/snap-cycles-<n>), the
 * images in a directory of their own on the disk.  Build: 100 cycles of
 * cycles_inner() above.
 * Expect: every write and restore succeeds, each restore identical; after
 * them no more fds on deleted files, the directory's entries and free space
 * as they were, memory.high as it was, 100 lends begun and 100 ended. */
int t_snapshot_cycles(void) {
        struct mgt_actor a = { 0 }; /* actor_stop() reads it even if the test stops before actor_start() */
        int r = cycles_inner(&a);
        actor_stop(&a);
        return r;
}
