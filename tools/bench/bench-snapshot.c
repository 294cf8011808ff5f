/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-snapshot: the snapshot write over many cycles, side by side with a
 * plain O_DIRECT copy of the same size to the same directory (what the disk
 * gives) and with the buffered write() baseline (MG_SNAPSHOT_BUFFERED, what
 * Firecracker does), for p50/p99 of each and of their ratios.
 *
 *   bench-snapshot --cgroup ROOT --dir DIR [--cycles N (20)] [--warmup W (1)]
 *                  [--size MIB (256)] [--restore-cycles R (0)]
 *                  [--restore-writers N (4)]
 *   bench-snapshot --no-cgroup --dir DIR ...   (no actor, no guard, no lend:
 *                                               bench-smoke on any host)
 *
 * The actor is the one of tests/kernel/snapshot.c, scaled by --size:
 * ROOT/memguard-bench-snap-PID/actor with memory.high 90 % of SIZE (at least
 * the image's charge + 4 MiB), memory.max 2 x SIZE, guarded with a SIZE
 * limit in a guard set.  This process moves itself into the actor's cgroup
 * and builds the guest image there (SIZE MiB of which 7/8 are touched and
 * charged to the actor: every eighth 2 MiB block never touched, one page in
 * 61 a touched zero page), so the image is charged to the actor like a
 * microVM's RAM, and it stays there for every write, so the page cache each
 * writer makes is charged to the actor too.  The copy's 4 MiB buffer is
 * touched before, outside the actor.  A second thread (tools/common/ticker.h)
 * samples the actor's memory.stat every 20 ms (file_dirty + file_writeback)
 * and ticks the guard set, serialised with the lend through the snapshot's
 * lock callback.
 *
 * Each cycle runs the three writers once, each to a fresh file, in an order
 * rotated every cycle (copy, memguard, buffered; then memguard, buffered,
 * copy; ...) so drift of the shared host hits them alike:
 *   copy      open(O_DIRECT | O_CREAT | O_TRUNC), SIZE bytes in 4 MiB
 *             pwrite()s from one buffer, fdatasync, close (as the kernel
 *             scenario's plain copy)
 *   memguard  mg_snapshot_write(), MG_SNAPSHOT_AUTO, in a lend of the guard
 *   buffered  mg_snapshot_write(), MG_SNAPSHOT_BUFFERED, in the same lend
 * Each file is unlinked after its write and the file system synced
 * (syncfs) before the next, outside the measure.  W warm-up cycles run
 * first and are printed with warmup=1.  After the last cycle the last
 * memguard file is restored outside the actor and compared page by page.
 *
 * Then, with --restore-cycles R, the restore, outside the actor, of an
 * image with the burn-in's pattern instead (every fourth 2 MiB block
 * untouched: runs of 6 MiB between the holes): each cycle writes it as N
 * files of SIZE/N MiB (--restore-writers N, default 4) three ways, in an
 * order rotated per cycle: plain O_DIRECT
 * copies, one file at a time, of each slice and of its data bytes alone
 * (the runs back to back: the bytes a restore reads), memguard's writer (N
 * threads at once, MG_SNAPSHOT_AUTO, no guard) and the buffered baseline (N
 * threads at once), the way the burn-in's actors write side by side on one
 * disk; the buffered files' cache is dropped (as the end of a lend on 6.1
 * reclaims it).  Then, one at a time, each slice is read back into fresh
 * memory four ways, in one of the 24 orders per slice, each read after
 * 300 ms idle: the two copies by O_DIRECT preads of 4 MiB (what the
 * disk gives), memguard's file and the buffered writer's file by
 * mg_snapshot_restore() (MG_SNAPSHOT_AUTO: O_DIRECT), compared with the
 * image.  Each file's layout is counted with FIEMAP as filefrag counts it:
 * an extent that does not continue the previous one on the disk (across
 * the file's holes) starts a new one.
 *
 * Output: one "result bench=snapshot ..." line per write (ms from before
 * the call to after it, wall clock; cpu_ms this process's user + system
 * time over the same interval, the sampler thread's included), then
 * "result bench=snapshot-check"
 * (memory.high restored, kills, restore verified), then one
 * "result bench=snapshot-restore ..." line per read and one
 * "result bench=snapshot-layout ..." line per file.  tools/bench/report.py
 * computes the percentiles.  No figure is judged here: the exit status is
 * 0 when every write succeeded and the image restored.
 */
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
#include <sys/utsname.h>
#include <unistd.h>

#include "bench.h"
#include "cgdir.h"
#include "fiemap.h"
#include "image.h"
#include "scenario.h"
#include "ticker.h"
#include "memguard/memguard.h"
#include "memguard/snapshot.h"

#define PAGE 4096
#define COPY_BUF (4 * MG_MIB)

enum writer { W_COPY, W_MEMGUARD, W_BUFFERED, W_N };
static const char *const writer_names[W_N] = { "copy", "memguard", "buffered" };
static const char *const file_names[W_N] = { "bench-snap-copy", "bench-snap-memguard", "bench-snap-buffered" };

/* The guest image: tests/kernel/snapshot.c's (tools/common/image.h); the
 * restore's is the burn-in's, runs of 6 MiB between 2 MiB holes. */
#define HOLES 8
#define HOLES_RESTORE 4

/* ---- the actor ------------------------------------------------------------ */

/* The scenario library's actor (tools/common/scenario.h) in a parent of
 * the bench's own below root; its events are counted in ev (under tk.mu). */
static char base[512];

static void log_fn(int level, const char *msg, void *ud) {
        (void) ud;
        if (level <= MG_LOG_WARNING)
                fprintf(stderr, "bench-snapshot: library: %s\n", msg);
}

static int actor_start(struct mgt_actor *a, const char *root, uint64_t limit) {
        int r;

        snprintf(base, sizeof(base), "%s/memguard-bench-snap-%d", root, (int) getpid());
        if ((r = mgt_cg_make_parent(root, base, "+memory +io")) < 0) {
                base[0] = '\0';
                return r;
        }
        if ((r = mgt_actor_new(a, base, "actor", 1)) < 0)
                return r;
        if ((r = mgt_actor_limit(a, "memory.max", 2 * limit)) < 0)
                return r;
        /* 90 % of the limit (230 MiB of 256, as the kernel scenario), but at
         * least 4 MiB above the image's charge (7/8), for the bench's own
         * pages: small --size runs would start over memory.high otherwise. */
        uint64_t high = limit / 10 * 9 / MG_MIB * MG_MIB;
        if (high < limit / 8 * 7 + 4 * MG_MIB)
                high = limit / 8 * 7 + 4 * MG_MIB;
        if ((r = mgt_actor_limit(a, "memory.high", high)) < 0)
                return r;
        if ((r = mgt_actor_guard(a, limit, NULL)) < 0)
                return r;
        if ((r = mgt_ticker_start(&a->tk, a->cg, a->set)) < 0)
                return r;
        return mgt_actor_enter(a, root);
}

static int actor_leave(struct mgt_actor *a) {
        int r = mgt_actor_leave(a);
        if (r < 0)
                fprintf(stderr, "bench-snapshot: cannot move back to %s: %s\n", a->home, strerror(-r));
        return r;
}

/* Removes the actor's cgroup (empty by now: we were its only process) and
 * the bench's parent. */
static void actor_stop(struct mgt_actor *a) {
        (void) actor_leave(a);
        (void) mgt_actor_end(a);
        if (base[0])
                (void) rmdir(base);
}

/* ---- the writers ------------------------------------------------------- */

struct sample {
        int r;
        uint64_t usec, cpu_usec, peak_dw, samples, high_events, current;
        bool high_ok;
        struct mg_snapshot_stats st;
};

/* A plain O_DIRECT copy of len bytes to dirfd/name: what the disk gives. */
static int plain_copy(int dirfd, const char *name, const uint8_t *buf, uint64_t len) {
        int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        int r = 0;
        for (uint64_t off = 0; off < len && r == 0; off += COPY_BUF) {
                size_t n = (size_t) (len - off < COPY_BUF ? len - off : COPY_BUF);
                ssize_t w = pwrite(fd, buf, n, (off_t) off);
                if (w != (ssize_t) n)
                        r = w < 0 ? -errno : -EIO;
        }
        if (r == 0 && fdatasync(fd) < 0)
                r = -errno;
        close(fd);
        return r;
}

static void run_one(struct mgt_actor *a, enum writer w, int dirfd, const uint8_t *img, uint64_t len,
                    const uint8_t *copy_buf, struct sample *x) {
        char hb[64] = "", ha[64] = "";
        uint64_t high0 = 0, high1 = 0; /* 0 where memory.events cannot be read */
        bool cg = a->cg[0] != '\0';

        memset(x, 0, sizeof(*x));
        x->st.size = sizeof(x->st);
        if (cg) {
                (void) mgt_cg_read_key(a->cg, "memory.events", "high", &high0);
                (void) mgt_cg_read_u64(a->cg, "memory.current", &x->current);
                mgt_cg_read(a->cg, "memory.high", hb, sizeof(hb));
                mgt_ticker_measure(&a->tk);
        }
        uint64_t c0 = bench_cpu_usec(NULL), t0 = mg_mono_nsec();
        if (w == W_COPY) {
                x->r = plain_copy(dirfd, file_names[w], copy_buf, len);
        } else {
                struct mg_snapshot_options o;
                struct mg_snapshot_source src = { .kind = MG_SNAPSHOT_MEMORY, .addr = img, .length = len };
                mg_snapshot_options_init(&o);
                o.method = w == W_MEMGUARD ? MG_SNAPSHOT_AUTO : MG_SNAPSHOT_BUFFERED;
                o.guard = a->guard;
                o.lock = mgt_ticker_lock; /* taken around the lend: never without a guard */
                o.lock_userdata = &a->tk;
                o.log = log_fn;
                x->r = mg_snapshot_write(&src, dirfd, file_names[w], &o, &x->st);
        }
        x->usec = (mg_mono_nsec() - t0) / 1000;
        x->cpu_usec = bench_cpu_usec(NULL) - c0;
        if (cg) {
                mgt_ticker_measured(&a->tk, &x->peak_dw, &x->samples);
                (void) mgt_cg_read_key(a->cg, "memory.events", "high", &high1);
                x->high_events = high1 - high0;
                mgt_cg_read(a->cg, "memory.high", ha, sizeof(ha));
                x->high_ok = strcmp(hb, ha) == 0;
        } else {
                x->high_ok = true;
        }
}

static void print_one(const struct sample *x, enum writer w, int cycle, int pos, bool warmup, uint64_t len,
                      bool cg) {
        const struct mg_snapshot_stats *s = &x->st;
        char extra[512] = "", dw[96] = "";
        if (w != W_COPY)
                snprintf(extra, sizeof(extra),
                         " method=%s total_ms=%.1f write_ms=%.1f sync_ms=%.1f lend_begin_ms=%.1f lend_end_ms=%.1f"
                         " publish_ms=%.1f data_mib=%.1f window_kib=%" PRIu64 " lend_kib=%" PRIu64,
                         mg_snapshot_method_to_string(s->method), (double) s->total_usec / 1000,
                         (double) s->write_usec / 1000, (double) s->sync_usec / 1000,
                         (double) s->lend_begin_usec / 1000, (double) s->lend_end_usec / 1000,
                         (double) s->publish_usec / 1000, (double) s->data_bytes / MG_MIB, s->window_bytes / 1024,
                         s->lend_bytes == MG_UNLIMITED ? 0 : s->lend_bytes / 1024);
        else
                snprintf(extra, sizeof(extra), " method=o_direct data_mib=%.1f", (double) len / MG_MIB);
        if (cg)
                snprintf(dw, sizeof(dw),
                         " peak_dw_kib=%" PRIu64 " samples=%" PRIu64 " high_events=%" PRIu64 " current_mib=%" PRIu64,
                         x->peak_dw / 1024, x->samples, x->high_events, x->current / MG_MIB);
        printf("result bench=snapshot writer=%s cycle=%d pos=%d warmup=%d r=%s ms=%.1f cpu_ms=%.1f mbps=%.1f"
               " image_mib=%" PRIu64 " high_restored=%d%s%s\n",
               writer_names[w], cycle, pos, warmup ? 1 : 0, x->r ? strerror(-x->r) : "0", (double) x->usec / 1000,
               (double) x->cpu_usec / 1000,
               x->usec ? (double) len / (double) x->usec : 0.0, len / MG_MIB, x->high_ok ? 1 : 0, extra, dw);
}

static int restore_verify(int dirfd, uint64_t len, uint64_t seed, uint64_t *ret_usec) {
        struct mg_snapshot_stats st = { .size = sizeof(st) };
        uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                return -errno;
        struct mg_snapshot_target t = { .kind = MG_SNAPSHOT_MEMORY, .addr = p, .length = len };
        int r = mg_snapshot_restore(dirfd, file_names[W_MEMGUARD], &t, NULL, &st);
        *ret_usec = st.total_usec;
        if (r == 0 && img_verify(p, len, HOLES, seed) != -1)
                r = -EBADMSG;
        munmap(p, len);
        return r;
}

/* ---- the restore ------------------------------------------------------- */

#define RESTORE_WRITERS_MAX 8

/* The extents of dirfd/name as filefrag counts them, the whole file
 * (fiemap.h).  Returns the count or a negative errno (-EOPNOTSUPP: no
 * FIEMAP here). */
static int file_extents(int dirfd, const char *name) {
        int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC), n;

        if (fd < 0)
                return -errno;
        n = mgt_fiemap_pieces(fd, 0, UINT64_MAX);
        close(fd);
        return n;
}

struct slice_writer {
        pthread_t thread;
        int dirfd;
        char name[64];
        const uint8_t *addr;
        uint64_t len;
        uint32_t method;
        int r;
        struct mg_snapshot_stats st;
};

static void *slice_write(void *ud) {
        struct slice_writer *sw = ud;
        struct mg_snapshot_options o;
        struct mg_snapshot_source src = { .kind = MG_SNAPSHOT_MEMORY, .addr = sw->addr, .length = sw->len };
        mg_snapshot_options_init(&o);
        o.method = sw->method;
        o.log = log_fn;
        sw->st = (struct mg_snapshot_stats) { .size = sizeof(sw->st) };
        sw->r = mg_snapshot_write(&src, sw->dirfd, sw->name, &o, &sw->st);
        return NULL;
}

/* The restore's files and readers: the plain copy of a slice (all of it),
 * the plain copy of its data bytes alone (the runs back to back: the same
 * bytes the restore reads), memguard's file, the baseline's file. */
enum reader { R_COPY, R_DATA, R_MEMGUARD, R_BUFFERED, R_N };
static const char *const reader_names[R_N] = { "copy", "data", "memguard", "buffered" };

static void slice_name(char *buf, size_t size, enum reader rd, unsigned i) {
        snprintf(buf, size, "bench-rs-%s-%u", reader_names[rd], i);
}

/* The data runs of slice i (pages outside the never-touched blocks),
 * written back to back with O_DIRECT from the image itself, and synced. */
static int data_copy(int dirfd, const char *name, const uint8_t *img, uint64_t slice, unsigned i,
                     uint64_t *ret_bytes) {
        int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0600);
        uint64_t first = i * slice / PAGE, n = slice / PAGE, out = 0;
        int r = 0;
        if (fd < 0)
                return -errno;
        for (uint64_t pg = first; pg < first + n && r == 0;) {
                if (img_untouched(pg, HOLES_RESTORE)) {
                        pg++;
                        continue;
                }
                uint64_t end = pg;
                while (end < first + n && !img_untouched(end, HOLES_RESTORE) && (end - pg) * PAGE < COPY_BUF)
                        end++;
                size_t len = (size_t) ((end - pg) * PAGE);
                ssize_t k = pwrite(fd, img + pg * PAGE, len, (off_t) out);
                if (k != (ssize_t) len)
                        r = k < 0 ? -errno : -EIO;
                out += len;
                pg = end;
        }
        if (r == 0 && fdatasync(fd) < 0)
                r = -errno;
        close(fd);
        *ret_bytes = out;
        return r;
}

/* Writes the n slices of img one way: the two copies one file after
 * another, memguard and buffered n threads at once.  Prints one line for
 * the group.  Returns 0 or the first error. */
static int write_slices(int dirfd, enum writer w, const uint8_t *img, uint64_t slice, unsigned n,
                        const uint8_t *copy_buf, int cycle) {
        struct slice_writer sw[RESTORE_WRITERS_MAX];
        uint64_t t0 = mg_mono_nsec(), data_bytes = 0;
        int r = 0;

        for (unsigned i = 0; i < n; i++) {
                enum reader rd = w == W_COPY ? R_COPY : w == W_MEMGUARD ? R_MEMGUARD : R_BUFFERED;
                sw[i] = (struct slice_writer) { .dirfd = dirfd, .addr = img + i * slice, .len = slice,
                                                .method = w == W_MEMGUARD ? MG_SNAPSHOT_AUTO : MG_SNAPSHOT_BUFFERED };
                slice_name(sw[i].name, sizeof(sw[i].name), rd, i);
                if (w == W_COPY) {
                        char dname[64];
                        sw[i].r = plain_copy(dirfd, sw[i].name, copy_buf, slice);
                        slice_name(dname, sizeof(dname), R_DATA, i);
                        if (sw[i].r == 0)
                                sw[i].r = data_copy(dirfd, dname, img, slice, i, &data_bytes);
                } else if ((r = -pthread_create(&sw[i].thread, NULL, slice_write, &sw[i])) < 0) {
                        sw[i].r = r;
                }
        }
        for (unsigned i = 0; i < n; i++) {
                if (w != W_COPY && sw[i].r == 0)
                        pthread_join(sw[i].thread, NULL);
                if (sw[i].r && !r)
                        r = sw[i].r;
        }
        uint64_t usec = (mg_mono_nsec() - t0) / 1000;
        (void) syncfs(dirfd);
        /* The baseline keeps its cache; a lend's end on 6.1 reclaims it, and
         * the restore below is to read the disk in all cases. */
        for (unsigned i = 0; i < n && w == W_BUFFERED; i++) {
                int fd = openat(dirfd, sw[i].name, O_RDONLY | O_CLOEXEC);
                if (fd >= 0) {
                        (void) posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
                        close(fd);
                }
        }
        printf("result bench=snapshot-restore-write writer=%s cycle=%d files=%u at_once=%u r=%s ms=%.1f"
               " slice_mib=%" PRIu64 "\n",
               writer_names[w], cycle, n, w == W_COPY ? 1 : n, r ? strerror(-r) : "0", (double) usec / 1000,
               slice / MG_MIB);
        return r;
}

/* Reads slice i back into fresh memory the way rd's file is read, and
 * checks it.  Prints one line.  Returns 0 or a negative errno. */
static int read_slice(int dirfd, enum reader rd, const uint8_t *img, uint64_t slice, unsigned i, int cycle,
                      int pos) {
        struct mg_snapshot_stats st = { .size = sizeof(st) };
        bool plain = rd == R_COPY || rd == R_DATA;
        uint64_t len = slice;
        struct stat sb;
        char name[64];
        int r = 0, ext;

        slice_name(name, sizeof(name), rd, i);
        ext = file_extents(dirfd, name);
        if (rd == R_DATA) {
                if (fstatat(dirfd, name, &sb, 0) < 0)
                        return -errno;
                len = (uint64_t) sb.st_size;
        }
        /* a slice of holes only has an empty data copy (tiny --size runs) */
        uint8_t *p = mmap(NULL, len ? len : PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                return -errno;
        uint64_t c0 = bench_cpu_usec(NULL), t0 = mg_mono_nsec();
        if (plain) {
                int fd = openat(dirfd, name, O_RDONLY | O_DIRECT | O_CLOEXEC);
                if (fd < 0)
                        r = -errno;
                for (uint64_t off = 0; off < len && r == 0; off += COPY_BUF) {
                        size_t n = (size_t) (len - off < COPY_BUF ? len - off : COPY_BUF);
                        ssize_t k = pread(fd, p + off, n, (off_t) off);
                        if (k != (ssize_t) n)
                                r = k < 0 ? -errno : -EIO;
                }
                if (fd >= 0)
                        close(fd);
        } else {
                struct mg_snapshot_target t = { .kind = MG_SNAPSHOT_MEMORY, .addr = p, .length = slice };
                struct mg_snapshot_options o;
                mg_snapshot_options_init(&o);
                o.log = log_fn;
                r = mg_snapshot_restore(dirfd, name, &t, &o, &st);
        }
        uint64_t usec = (mg_mono_nsec() - t0) / 1000, cpu = bench_cpu_usec(NULL) - c0;
        if (r == 0 && !plain && memcmp(p, img + i * slice, slice) != 0)
                r = -EBADMSG;
        munmap(p, len ? len : PAGE);
        printf("result bench=snapshot-restore reader=%s cycle=%d pos=%d file=%u r=%s ms=%.1f cpu_ms=%.1f mbps=%.1f"
               " image_mib=%" PRIu64 " data_mib=%.1f total_ms=%.1f read_ms=%.1f zero_ms=%.1f method=%s extents=%d\n",
               reader_names[rd], cycle, pos, i, r ? strerror(-r) : "0", (double) usec / 1000, (double) cpu / 1000,
               usec ? (double) len / (double) usec : 0.0, slice / MG_MIB,
               (double) (plain ? len : st.data_bytes) / MG_MIB, (double) (plain ? usec : st.total_usec) / 1000,
               (double) (plain ? usec : st.read_usec) / 1000,
               (double) st.zero_usec / 1000, plain ? "o_direct" : mg_snapshot_method_to_string(st.method), ext);
        return r;
}

/* The k-th of the 24 orders of the four readers (k < 24), so that over 24
 * slices each reader is read in each position and after each other reader
 * alike. */
static void reader_order(uint64_t k, enum reader ret[R_N]) {
        enum reader left[R_N] = { R_COPY, R_DATA, R_MEMGUARD, R_BUFFERED };
        unsigned n = R_N;
        for (unsigned pos = 0, f = 6; pos < R_N; pos++) {
                unsigned j = (unsigned) (k / f) % n;
                ret[pos] = left[j];
                for (unsigned m = j; m + 1 < n; m++)
                        left[m] = left[m + 1];
                n--;
                k %= f;
                f = n > 1 ? f / n : 1;
        }
}

/* R cycles of the restore (see the top of the file).  Returns 0 if every
 * write and read succeeded. */
static int restore_cycles(int dirfd, const uint8_t *img, uint64_t len, unsigned n, uint64_t cycles,
                          const uint8_t *copy_buf) {
        uint64_t slice = len / n;
        int failed = 0;

        for (uint64_t c = 0; c < cycles; c++) {
                for (int k = 0; k < W_N; k++) {
                        enum writer w = (enum writer) (((uint64_t) k + c) % W_N);
                        if (write_slices(dirfd, w, img, slice, n, copy_buf, (int) c) < 0)
                                failed = 1;
                }
                for (unsigned i = 0; i < n; i++) {
                        enum reader order[R_N];
                        reader_order((c * n + i) % 24, order);
                        for (int pos = 0; pos < R_N; pos++) {
                                /* A throttled volume (qemu's, a cloud
                                 * disk's) lets a read that follows an idle
                                 * moment start with a burst: each read
                                 * waits the same idle time, so none
                                 * inherits the bucket its predecessor
                                 * left. */
                                usleep(300 * 1000);
                                if (read_slice(dirfd, order[pos], img, slice, i, (int) c, pos) < 0)
                                        failed = 1;
                        }
                }
                for (unsigned i = 0; i < n; i++)
                        for (int rd = 0; rd < R_N; rd++) {
                                char name[64];
                                slice_name(name, sizeof(name), (enum reader) rd, i);
                                (void) unlinkat(dirfd, name, 0);
                        }
                (void) syncfs(dirfd);
        }
        return failed;
}

static void usage(void) {
        fprintf(stderr, "usage: bench-snapshot (--cgroup ROOT | --no-cgroup) --dir DIR [--cycles N] [--warmup W] "
                        "[--size MIB] [--restore-cycles R] [--restore-writers N]\n");
        exit(2);
}

int main(int argc, char **argv) {
        const char *root = NULL, *dir = NULL;
        bool no_cgroup = false;
        uint64_t cycles = 20, warmup = 1, size_mib = 256, seed = 1, restore_cycles_n = 0, restore_writers = 4;
        struct mgt_actor a = { 0 };
        struct utsname u;
        struct statfs sfs;
        int failed = 0, r;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--cgroup") == 0 && i + 1 < argc)
                        root = argv[++i];
                else if (strcmp(argv[i], "--no-cgroup") == 0)
                        no_cgroup = true;
                else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
                        dir = argv[++i];
                else if (strcmp(argv[i], "--cycles") == 0 && i + 1 < argc)
                        cycles = strtoull(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc)
                        warmup = strtoull(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc)
                        size_mib = strtoull(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--restore-cycles") == 0 && i + 1 < argc)
                        restore_cycles_n = strtoull(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--restore-writers") == 0 && i + 1 < argc)
                        restore_writers = strtoull(argv[++i], NULL, 10);
                else
                        usage();
        }
        if (!dir || no_cgroup == !!root || cycles == 0 || size_mib < 4 || size_mib % 4 || restore_writers == 0 ||
            restore_writers > RESTORE_WRITERS_MAX || size_mib % restore_writers)
                usage(); /* whole 4 MiB copy buffers; 2 MiB blocks of the pattern; whole MiB slices */
        uint64_t len = size_mib * MG_MIB;
        setvbuf(stdout, NULL, _IOLBF, 0);

        int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0) {
                fprintf(stderr, "bench-snapshot: %s: %s\n", dir, strerror(errno));
                return 1;
        }
        uname(&u);
        const char *fs = "?";
        if (fstatfs(dirfd, &sfs) == 0)
                fs = sfs.f_type == 0xEF53 ? "ext4" : sfs.f_type == 0x01021994 ? "tmpfs" : "other";
        /* The copy's buffer is charged where this process is now, not to the
         * actor: only the image is the actor's. */
        uint8_t *copy_buf = mmap(NULL, COPY_BUF, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (copy_buf == MAP_FAILED) {
                fprintf(stderr, "bench-snapshot: mmap: %s\n", strerror(errno));
                close(dirfd);
                return 1;
        }
        for (uint64_t i = 0; i < COPY_BUF / PAGE; i++)
                img_fill(copy_buf + i * PAGE, i, 99);
        if (root) {
                r = actor_start(&a, root, len);
                if (r < 0) {
                        fprintf(stderr, "bench-snapshot: actor under %s: %s\n", root, strerror(-r));
                        failed = 1;
                        goto out;
                }
        }
        uint64_t t0 = mg_mono_nsec();
        uint8_t *img = img_make_anon(len, HOLES, seed);
        if (!img) {
                fprintf(stderr, "bench-snapshot: mmap: %s\n", strerror(errno));
                failed = 1;
                goto out;
        }
        uint64_t build_ms = (mg_mono_nsec() - t0) / 1000000;
        char high[64] = "max";
        uint64_t current = 0;
        if (root) {
                (void) mgt_cg_read_u64(a.cg, "memory.current", &current);
                mgt_cg_read(a.cg, "memory.high", high, sizeof(high));
                high[strcspn(high, "\n")] = '\0';
        }
        printf("env bench=snapshot kernel=%s where=%s fs=%s cycles=%" PRIu64 " warmup=%" PRIu64 " image_mib=%" PRIu64
               " limit_mib=%" PRIu64 " high_bytes=%s max_mib=%" PRIu64 " current_mib=%" PRIu64 " build_ms=%" PRIu64
               " mem_kib=%" PRIu64 "\n",
               u.release, root ? "cgroup" : "none", fs, cycles, warmup, size_mib, root ? size_mib : 0, high,
               root ? 2 * size_mib : 0, current / MG_MIB, build_ms,
               (uint64_t) sysconf(_SC_PHYS_PAGES) * (uint64_t) sysconf(_SC_PAGESIZE) / 1024);

        int n_ok = 0, n_writes = 0, high_bad = 0;
        for (uint64_t c = 0; c < warmup + cycles; c++) {
                bool wu = c < warmup;
                int cycle = wu ? -(int) (warmup - c) : (int) (c - warmup);
                for (int pos = 0; pos < W_N; pos++) {
                        enum writer w = (enum writer) (((uint64_t) pos + c) % W_N);
                        struct sample x;
                        run_one(&a, w, dirfd, img, len, copy_buf, &x);
                        print_one(&x, w, cycle, pos, wu, len, root != NULL);
                        n_writes++;
                        n_ok += x.r == 0;
                        high_bad += !x.high_ok;
                        if (x.r != 0 && !(w == W_COPY && x.r == -EINVAL)) /* EINVAL: no O_DIRECT here */
                                failed = 1;
                        /* the last memguard file is kept for the restore check */
                        if (!(w == W_MEMGUARD && c + 1 == warmup + cycles))
                                (void) unlinkat(dirfd, file_names[w], 0);
                        (void) syncfs(dirfd);
                }
        }
        /* Restore outside the actor (memory.high would throttle a second image). */
        uint64_t restore_us = 0;
        if (root && actor_leave(&a) < 0)
                failed = 1;
        r = restore_verify(dirfd, len, seed, &restore_us);
        (void) unlinkat(dirfd, file_names[W_MEMGUARD], 0);
        if (r < 0)
                failed = 1;
        mgt_ticker_stop(&a.tk); /* the guard's counts are final */
        printf("result bench=snapshot-check writes=%d ok=%d high_not_restored=%d kills=%d lend_begin=%d lend_end=%d "
               "guard_errors=%d restore=%s restore_ms=%.1f\n",
               n_writes, n_ok, high_bad, a.ev.n[MG_EVENT_KILL] + a.ev.n[MG_EVENT_KERNEL_OOM], a.ev.n[MG_EVENT_LEND_BEGIN],
               a.ev.n[MG_EVENT_LEND_END], a.ev.n[MG_EVENT_ERROR] + a.ev.n[MG_EVENT_LEND_EXPIRED],
               r ? strerror(-r) : "verified",
               (double) restore_us / 1000);
        if (restore_cycles_n) {
                munmap(img, len);
                img = img_make_anon(len, HOLES_RESTORE, seed);
                if (!img) {
                        fprintf(stderr, "bench-snapshot: mmap: %s\n", strerror(errno));
                        failed = 1;
                        goto out;
                }
                printf("env bench=snapshot-restore cycles=%" PRIu64 " files=%" PRIu64 " slice_mib=%" PRIu64
                       " hole_every=%d\n",
                       restore_cycles_n, restore_writers, size_mib / restore_writers, HOLES_RESTORE);
                if (restore_cycles(dirfd, img, len, (unsigned) restore_writers, restore_cycles_n, copy_buf))
                        failed = 1;
        }
        munmap(img, len);
out:
        munmap(copy_buf, COPY_BUF);
        if (root)
                actor_stop(&a);
        close(dirfd);
        return failed;
}
