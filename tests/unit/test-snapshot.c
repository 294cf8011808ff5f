/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The snapshot module on this host's file systems (/tmp or $TMPDIR): the
 * format parsers on literal, hostile and truncated buffers; round trips from
 * memory and from a memfd with holes and zero pages, by every write method
 * the kernel offers; corrupt, truncated and foreign files refused; ENOSPC on
 * a small tmpfs (private mount namespace) or RLIMIT_FSIZE; injected EIO; a
 * writer killed mid-write; the lend on a fake cgroup tree; 100 cycles
 * leaving no fd and no file behind.
 */
#include <criterion/criterion.h>
#include <linux/magic.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fiemap.h"
#include "fixture.h"
#include "guard.h"
#include "lend.h"
#include "tick.h"
#include "set.h"
#include "memguard/snapshot.h"
#include "crc32c.h"
#include "format.h"
#include "internal.h"
#include "util.h"


static char dir[256];
static int dfd = -1;
/* The seam of the writes and restores below: faults and forced paths. */
static struct mg_snap_seam snap_seam;
static size_t page;
static char last_log[512];

static void log_fn(int level, const char *msg, void *ud) {
        (void) level;
        (void) ud;
        snprintf(last_log, sizeof(last_log), "%s", msg);
}

static void note_preexisting_fds(void);

static void setup(void) {
        page = (size_t) sysconf(_SC_PAGESIZE);
        snprintf(dir, sizeof(dir), "%s/mgsnap-test-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        cr_assert_not_null(mkdtemp(dir));
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        cr_assert_geq(dfd, 0);
        snap_seam = (struct mg_snap_seam) {};
        last_log[0] = '\0';
        note_preexisting_fds();
}

static void teardown(void) {
        char path[300];
        snap_seam = (struct mg_snap_seam) {};
        if (dfd >= 0)
                close(dfd);
        dfd = -1;
        /* mounts of a test that failed half-way */
        snprintf(path, sizeof(path), "%s/small", dir);
        (void) umount2(path, MNT_DETACH);
        snprintf(path, sizeof(path), "%s/ro", dir);
        (void) umount2(path, MNT_DETACH);
        if (fixture_remove_tree(dir) < 0)
                abort();
}

/* ---- helpers ------------------------------------------------------------- */

static uint64_t rng(uint64_t *s) {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        return *s;
}

/* Page i of an image: zero for i % 8 in {2, 5}, and for whole 128 KiB runs
 * every 1 MiB; pseudo-random otherwise. */
static bool page_zero(size_t i) {
        size_t per_mib = (size_t) MG_MIB / page;
        return i % 8 == 2 || i % 8 == 5 || (i % per_mib >= per_mib / 2 && i % per_mib < per_mib / 2 + 128 * MG_KIB / page);
}

static void fill_page(uint8_t *p, size_t i, uint64_t seed) {
        uint64_t s = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
        if (!s)
                s = 1;
        for (size_t k = 0; k < page; k += 8) {
                uint64_t v = rng(&s);
                memcpy(p + k, &v, 8);
        }
}

static uint8_t *map(size_t len) {
        void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        cr_assert_neq(p, MAP_FAILED);
        return p;
}

static uint8_t *make_image(size_t len, uint64_t seed) {
        uint8_t *p = map(len);
        for (size_t i = 0; i < len / page; i++)
                if (!page_zero(i))
                        fill_page(p + i * page, i, seed);
        return p;
}

/* A memfd of len bytes: every fourth 256 KiB block a hole, zero pages of the
 * pattern written as zeros (data to SEEK_DATA, zero to the scan). */
static int make_memfd(size_t len, uint64_t seed, uint8_t *expect) {
        int fd = memfd_create("mgsnap-test", MFD_CLOEXEC);
        uint8_t *buf = malloc(page);
        cr_assert(fd >= 0 && buf);
        cr_assert_eq(ftruncate(fd, (off_t) len), 0);
        memset(expect, 0, len);
        for (size_t i = 0; i < len / page; i++) {
                if ((i * page / (256 * MG_KIB)) % 4 == 1)
                        continue;
                if (page_zero(i))
                        memset(buf, 0, page);
                else
                        fill_page(buf, i, seed);
                memcpy(expect + i * page, buf, page);
                cr_assert_eq(pwrite(fd, buf, page, (off_t) (i * page)), (ssize_t) page);
        }
        free(buf);
        return fd;
}

static int count_entries(void) {
        int n = 0, fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fdopendir(fd);
        struct dirent *de;
        cr_assert_not_null(d);
        while ((de = readdir(d)))
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                        n++;
        closedir(d);
        return n;
}

static bool has_entry(const char *name) {
        return faccessat(dfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Criterion keeps its shared-memory arena open after unlinking it: fds on
 * deleted files open before the test are not ours. */
/* The fd a /proc/self/fd entry names; -1 for anything else ("." and ".."). */
static int fd_number(const char *name) {
        char *end;
        errno = 0;
        long v = strtol(name, &end, 10);
        return end != name && *end == '\0' && errno == 0 && v >= 0 && v <= INT_MAX ? (int) v : -1;
}

static int ignored_fds[16], n_ignored;

static bool fd_ignored(int fd) {
        for (int i = 0; i < n_ignored; i++)
                if (ignored_fds[i] == fd)
                        return true;
        return false;
}

static void note_preexisting_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;
        n_ignored = 0;
        while (d && (de = readdir(d))) {
                char p[300], target[600];
                snprintf(p, sizeof(p), "/proc/self/fd/%s", de->d_name);
                ssize_t k = readlink(p, target, sizeof(target) - 1);
                if (k > 0 && n_ignored < 16) {
                        target[k] = '\0';
                        if (strstr(target, "(deleted)"))
                                ignored_fds[n_ignored++] = fd_number(de->d_name);
                }
        }
        if (d)
                closedir(d);
}

/* fds of this process on deleted files, and all its fds */
static int deleted_fds(int *ret_total) {
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;
        int n = 0, total = 0;
        cr_assert_not_null(d);
        while ((de = readdir(d))) {
                char p[300], target[600];
                if (de->d_name[0] == '.')
                        continue;
                snprintf(p, sizeof(p), "/proc/self/fd/%s", de->d_name);
                ssize_t k = readlink(p, target, sizeof(target) - 1);
                if (k < 0)
                        continue;
                target[k] = '\0';
                total++;
                if (strstr(target, "(deleted)") && !fd_ignored(fd_number(de->d_name)))
                        n++;
        }
        closedir(d);
        if (ret_total)
                *ret_total = total - 1; /* the DIR's own fd */
        return n;
}

static struct mg_snapshot_options opts(uint32_t method) {
        struct mg_snapshot_options o;
        mg_snapshot_options_init(&o);
        o.method = method;
        o.log = log_fn;
        return o;
}

static int write_mem(const char *name, const void *p, size_t len, const struct mg_snapshot_options *o,
                     struct mg_snapshot_stats *st) {
        struct mg_snapshot_source src = { .kind = MG_SNAPSHOT_MEMORY, .addr = p, .length = len };
        if (st)
                *st = (struct mg_snapshot_stats) { .size = sizeof(*st) };
        return mg_snapshot_write_internal(&src, dfd, name, o, st, &snap_seam);
}

static int restore_mem(const char *name, void *p, size_t len, const struct mg_snapshot_options *o,
                       struct mg_snapshot_stats *st) {
        struct mg_snapshot_target dst = { .kind = MG_SNAPSHOT_MEMORY, .addr = p, .length = len };
        if (st)
                *st = (struct mg_snapshot_stats) { .size = sizeof(*st) };
        return mg_snapshot_restore_internal(dfd, name, &dst, o, st, &snap_seam);
}

static void flip_byte(const char *name, off_t off) {
        int fd = openat(dfd, name, O_RDWR | O_CLOEXEC);
        uint8_t b;
        cr_assert_geq(fd, 0);
        cr_assert_eq(pread(fd, &b, 1, off), 1);
        b ^= 0x40;
        cr_assert_eq(pwrite(fd, &b, 1, off), 1);
        close(fd);
}

static off_t file_size(const char *name) {
        struct stat s;
        cr_assert_eq(fstatat(dfd, name, &s, 0), 0);
        return s.st_size;
}

TestSuite(snapshot, .init = setup, .fini = teardown);
TestSuite(snapformat);

/* ---- crc32c -------------------------------------------------------------- */

Test(snapformat, crc32c_vectors) {
        uint8_t zeros[32] = { 0 }, ones[32];
        memset(ones, 0xff, sizeof(ones));
        /* RFC 3720 B.4 and the usual check value */
        cr_expect_eq(mg_crc32c(0, "123456789", 9), 0xE3069283u);
        cr_expect_eq(mg_crc32c(0, zeros, 32), 0x8A9136AAu);
        cr_expect_eq(mg_crc32c(0, ones, 32), 0x62A8AB43u);
        cr_expect_eq(mg_crc32c_sw(0, "123456789", 9), 0xE3069283u);
        cr_expect_eq(mg_crc32c(mg_crc32c(0, "1234", 4), "56789", 5), 0xE3069283u, "chaining");
        cr_expect_eq(mg_crc32c(0, "", 0), 0u);
}

Test(snapformat, crc32c_hw_matches_table) {
        uint8_t buf[4096 + 16];
        uint64_t s = 42;
        for (size_t i = 0; i < sizeof(buf); i++)
                buf[i] = (uint8_t) rng(&s);
        for (int i = 0; i < 2000; i++) {
                size_t off = rng(&s) % 16, len = rng(&s) % 4096;
                uint32_t seed = (uint32_t) rng(&s);
                uint32_t want = mg_crc32c_sw(seed, buf + off, len);
                cr_assert_eq(mg_crc32c_hw_only(seed, buf + off, len), want, "off %zu len %zu", off, len);
                cr_assert_eq(mg_crc32c(seed, buf + off, len), want, "off %zu len %zu", off, len);
        }
        cr_log_info("crc32c: the CPU %s sse4.2; mg_crc32c uses %s", mg_crc32c_hw_present() ? "has" : "lacks",
                    mg_crc32c_hw() ? "it" : "the table");
}

/* ---- header and index parsers -------------------------------------------- */

static struct mg_snap_header good_header(void) {
        struct mg_snap_header h = {
                .version = MG_SNAP_VERSION,
                .page_size = 4096,
                .chunk_bytes = 1 << 20,
                .image_bytes = 8 * MG_MIB,
                .data_offset = 4096,
                .index_offset = 4096 + 8 * MG_MIB,
                .n_ranges = 2,
                .data_bytes = 3 * UINT64_C(4096),
        };
        return h;
}

static uint64_t file_of(const struct mg_snap_header *h) {
        if (h->chunk_bytes == 0)
                return h->index_offset; /* the parser refuses it before dividing */
        return h->index_offset + mg_snap_index_bytes(h);
}

static int parse(const struct mg_snap_header *h, uint64_t file, uint32_t page_size, const char **why) {
        uint8_t buf[MG_SNAP_HEADER_BYTES];
        struct mg_snap_header out;
        mg_snap_header_encode(h, buf);
        return mg_snap_header_parse(buf, sizeof(buf), file, page_size, &out, why);
}

Test(snapformat, header_round_trip) {
        struct mg_snap_header h = good_header(), out;
        uint8_t buf[MG_SNAP_HEADER_BYTES];
        h.index_crc = 0xdeadbeef;
        mg_snap_header_encode(&h, buf);
        cr_assert_eq(memcmp(buf, MG_SNAP_MAGIC, 8), 0);
        cr_assert_eq(mg_snap_header_parse(buf, sizeof(buf), file_of(&h), 4096, &out, NULL), 0);
        cr_expect_eq(out.image_bytes, h.image_bytes);
        cr_expect_eq(out.n_ranges, 2);
        cr_expect_eq(out.index_crc, 0xdeadbeef);
        cr_expect_eq(out.chunk_bytes, 1u << 20);
        cr_expect_eq(mg_snap_n_chunks(&out), 8);
        cr_expect_eq(mg_snap_index_bytes(&out), 2 * 16 + 8 * 4);
        /* 0: any page size */
        cr_assert_eq(mg_snap_header_parse(buf, sizeof(buf), file_of(&h), 0, &out, NULL), 0);
}

Test(snapformat, header_truncated_and_bitflips) {
        struct mg_snap_header h = good_header(), out = { .version = 77 };
        uint8_t buf[MG_SNAP_HEADER_BYTES], m[MG_SNAP_HEADER_BYTES];
        const char *why = NULL;
        mg_snap_header_encode(&h, buf);
        for (size_t len = 0; len < sizeof(buf); len++)
                cr_assert_eq(mg_snap_header_parse(buf, len, file_of(&h), 4096, &out, &why), -EBADMSG);
        cr_expect_str_eq(why, "shorter than a header");
        /* every bit of every byte is covered by the magic, version or crc */
        for (size_t i = 0; i < sizeof(buf); i++)
                for (int b = 0; b < 8; b++) {
                        memcpy(m, buf, sizeof(m));
                        m[i] ^= (uint8_t) (1u << b);
                        cr_assert_eq(mg_snap_header_parse(m, sizeof(m), file_of(&h), 4096, &out, NULL), -EBADMSG,
                                     "byte %zu bit %d", i, b);
                }
        cr_expect_eq(out.version, 77, "output untouched on failure");
        cr_expect_eq(mg_snap_header_parse(buf, sizeof(buf), file_of(&h), 4096, NULL, NULL), -EINVAL);
}

Test(snapformat, header_hostile_fields) {
        struct mg_snap_header h;
        const char *why;
        uint8_t buf[MG_SNAP_HEADER_BYTES];
        struct mg_snap_header out;

#define BAD(mutate, expect_why)                                                                  \
        do {                                                                                     \
                h = good_header();                                                               \
                mutate;                                                                          \
                why = NULL;                                                                      \
                cr_expect_eq(parse(&h, file_of(&h), 4096, &why), -EBADMSG, "%s", #mutate);        \
                cr_expect(why && strstr(why, expect_why), "%s: %s", #mutate, why ? why : "(none)"); \
        } while (0)

        BAD(h.page_size = 16384, "another page size");
        BAD(h.page_size = 3000, "invalid page size");
        BAD(h.page_size = 0, "invalid page size");
        BAD(h.page_size = 1u << 31, "invalid page size");
        BAD(h.chunk_bytes = 1024, "chunk");
        BAD(h.chunk_bytes = 3 << 20, "chunk");
        BAD(h.chunk_bytes = 0, "chunk");
        BAD(h.flags = 1, "flags");
        BAD(h.image_bytes = 0, "image length");
        BAD(h.image_bytes = 8 * MG_MIB + 1, "image length");
        BAD((h.image_bytes = UINT64_MAX - 4095, h.index_offset = 4096), "index offset");
        BAD(h.data_offset = 64, "data offset");
        BAD(h.data_offset = 4097, "data offset");
        BAD((h.data_offset = 1ull << 40, h.index_offset = (1ull << 40) + 8 * MG_MIB), "data offset");
        BAD(h.index_offset = 4096, "index offset");
        BAD(h.index_offset += 4096, "index offset");
        BAD(h.n_ranges = 8 * MG_MIB / 4096 + 1, "more ranges than pages");
        BAD(h.n_ranges = UINT64_MAX / 8, "more ranges than pages");
        BAD(h.data_bytes = 9 * MG_MIB, "data length");
        BAD(h.data_bytes = 4096, "data length"); /* 2 ranges need 2 pages */
        BAD(h.data_bytes = 100, "data length");
        BAD(h.n_ranges = 0, "data length");
#undef BAD
        /* a later version: refused before its checksum is looked at */
        h = good_header();
        mg_snap_header_encode(&h, buf);
        buf[8] = 2;
        cr_expect_eq(mg_snap_header_parse(buf, sizeof(buf), file_of(&h), 4096, &out, &why), -EBADMSG);
        cr_expect(strstr(why, "version"), "%s", why);
        /* file length: truncated, extended */
        h = good_header();
        cr_expect_eq(parse(&h, file_of(&h) - 1, 4096, &why), -EBADMSG);
        cr_expect(strstr(why, "truncated"), "%s", why);
        cr_expect_eq(parse(&h, file_of(&h) + 1, 4096, &why), -EBADMSG);
        cr_expect(strstr(why, "longer"), "%s", why);
        cr_expect_eq(parse(&h, 100, 4096, &why), -EBADMSG);
        /* reserved bytes, with a valid crc */
        mg_snap_header_encode(&h, buf);
        buf[100] = 1;
        uint32_t c = mg_crc32c(0, buf, 124);
        memcpy(buf + 124, &c, 4); /* little-endian host assumed by this line only */
        cr_expect_eq(mg_snap_header_parse(buf, sizeof(buf), file_of(&h), 4096, &out, &why), -EBADMSG);
        /* bad magic */
        mg_snap_header_encode(&h, buf);
        memcpy(buf, "MGSNAP\0\0", 8); /* NOLINT(bugprone-not-null-terminated-result): 8 bytes of a binary header */
        cr_expect_eq(mg_snap_header_parse(buf, sizeof(buf), file_of(&h), 4096, &out, &why), -EBADMSG);
        cr_expect(strstr(why, "magic"), "%s", why);
}

static int parse_index(struct mg_snap_header *h, const struct mg_snap_range *rg, const char **why) {
        uint32_t crcs[64] = { 1, 2, 3 }, out_crcs[64];
        struct mg_snap_range out[16];
        uint8_t buf[2048];
        h->index_crc = mg_snap_index_encode(h, rg, crcs, buf);
        int r = mg_snap_index_parse(h, buf, (size_t) mg_snap_index_bytes(h), out, out_crcs, why);
        if (r == 0) {
                cr_assert_eq(out_crcs[2], 3);
                for (uint64_t i = 0; i < h->n_ranges; i++)
                        cr_assert(out[i].offset == rg[i].offset && out[i].length == rg[i].length);
        }
        return r;
}

Test(snapformat, index_good_and_hostile) {
        struct mg_snap_header h = good_header();
        const char *why;

        cr_expect_eq(parse_index(&h, (struct mg_snap_range[]) { { 0, 4096 }, { 8192, 8192 } }, &why), 0);
        cr_expect_eq(parse_index(&h, (struct mg_snap_range[]) { { 0, 4096 }, { 4096, 8192 } }, &why), 0,
                     "adjacent ranges are tolerated");
        cr_expect_eq(parse_index(&h, (struct mg_snap_range[]) { { 8192, 8192 }, { 0, 4096 } }, &why), -EBADMSG);
        cr_expect(strstr(why, "unsorted"), "%s", why);
        cr_expect_eq(parse_index(&h, (struct mg_snap_range[]) { { 0, 8192 }, { 4096, 4096 } }, &why), -EBADMSG);
        cr_expect(strstr(why, "overlapping"), "%s", why);
        cr_expect_eq(parse_index(&h, (struct mg_snap_range[]) { { 100, 4096 }, { 8192, 8192 } }, &why), -EBADMSG);
        cr_expect_eq(parse_index(&h, (struct mg_snap_range[]) { { 0, 0 }, { 8192, 12288 } }, &why), -EBADMSG);
        cr_expect_eq(parse_index(&h, (struct mg_snap_range[]) { { 0, 4096 }, { 8 * MG_MIB, 8192 } }, &why), -EBADMSG);
        cr_expect(strstr(why, "outside"), "%s", why);
        cr_expect_eq(parse_index(&h, (struct mg_snap_range[]) { { 0, 4096 }, { UINT64_MAX - 4095, 8192 } }, &why),
                     -EBADMSG);
        cr_expect_eq(parse_index(&h, (struct mg_snap_range[]) { { 0, 4096 }, { 8192, UINT64_MAX - 4095 } }, &why),
                     -EBADMSG);
        cr_expect_eq(parse_index(&h, (struct mg_snap_range[]) { { 0, 4096 }, { 8192, 4096 } }, &why), -EBADMSG);
        cr_expect(strstr(why, "add up"), "%s", why);

        /* a flipped bit anywhere in the index: crc */
        struct mg_snap_range rg[2] = { { 0, 4096 }, { 8192, 8192 } }, out[2];
        uint32_t crcs[8] = { 0 }, oc[8];
        uint8_t buf[256];
        h.index_crc = mg_snap_index_encode(&h, rg, crcs, buf);
        size_t n = (size_t) mg_snap_index_bytes(&h);
        for (size_t i = 0; i < n; i++) {
                buf[i] ^= 1;
                cr_assert_eq(mg_snap_index_parse(&h, buf, n, out, oc, NULL), -EBADMSG);
                buf[i] ^= 1;
        }
        cr_assert_eq(mg_snap_index_parse(&h, buf, n - 1, out, oc, &why), -EBADMSG);
        cr_assert_eq(mg_snap_index_parse(&h, buf, n, out, oc, NULL), 0);
}

/* ---- round trips --------------------------------------------------------- */

static const uint32_t methods[] = { MG_SNAPSHOT_AUTO, MG_SNAPSHOT_DIRECT, MG_SNAPSHOT_DONTCACHE,
                                    MG_SNAPSHOT_WINDOWED, MG_SNAPSHOT_BUFFERED };

Test(snapshot, round_trip_memory_every_method) {
        size_t len = 8 * MG_MIB;
        uint8_t *img = make_image(len, 1), *back = map(len);
        for (size_t m = 0; m < sizeof(methods) / sizeof(methods[0]); m++) {
                struct mg_snapshot_options o = opts(methods[m]);
                struct mg_snapshot_stats st, rs;
                o.window_bytes = 1 * MG_MIB; /* several windows in 8 MiB */
                int r = write_mem("snap", img, len, &o, &st);
                if (r == -EOPNOTSUPP) {
                        cr_log_info("%s: not supported here", mg_snapshot_method_to_string(methods[m]));
                        cr_assert_eq(count_entries(), 0);
                        continue;
                }
                cr_assert_eq(r, 0, "%s: %s (%s)", mg_snapshot_method_to_string(methods[m]), strerror(-r), last_log);
                if (methods[m] != MG_SNAPSHOT_AUTO)
                        cr_expect_eq(st.method, methods[m]);
                cr_log_info("%s -> %s: data %lu zero %lu ranges %u write %lu us sync %lu us",
                            mg_snapshot_method_to_string(methods[m]), mg_snapshot_method_to_string(st.method),
                            (unsigned long) st.data_bytes, (unsigned long) st.zero_bytes, st.ranges,
                            (unsigned long) st.write_usec, (unsigned long) st.sync_usec);
                cr_expect_eq(st.image_bytes, len);
                cr_expect_eq(st.data_bytes + st.skipped_bytes, len);
                cr_expect_eq(st.skipped_bytes, st.zero_bytes + st.hole_bytes);
                cr_expect_gt(st.zero_bytes, 0);
                cr_expect_eq(st.hole_bytes, 0);
                cr_expect_eq((off_t) st.file_bytes, file_size("snap"));
                memset(back, 0xAA, len); /* the zero ranges must be cleared */
                r = restore_mem("snap", back, len, &o, &rs);
                cr_assert_eq(r, 0, "restore: %s (%s)", strerror(-r), last_log);
                cr_assert_eq(memcmp(img, back, len), 0, "%s: restored image differs",
                             mg_snapshot_method_to_string(methods[m]));
                cr_expect_eq(rs.data_bytes, st.data_bytes);
                cr_expect_eq(count_entries(), 1);
        }
        munmap(img, len);
        munmap(back, len);
}

/* Direct I/O one call at a time, as where io_setup fails: memory and fd,
 * aligned and not. */
Test(snapshot, round_trip_without_aio) {
        size_t len = 4 * MG_MIB;
        uint8_t *img = make_image(len + page, 16), *back = map(len + page), *expect = malloc(len);
        int fd = make_memfd(len, 17, expect);
        struct mg_snapshot_source src = { .kind = MG_SNAPSHOT_FD, .fd = fd, .length = len };
        snap_seam.flags |= MG_SNAP_SEAM_NO_AIO;
        cr_assert_eq(write_mem("snap", img, len, NULL, NULL), 0);
        cr_assert_eq(restore_mem("snap", back + 8, len, NULL, NULL), 0);
        cr_assert_eq(memcmp(img, back + 8, len), 0);
        cr_assert_eq(write_mem("snap", img + 8, len, NULL, NULL), 0);
        cr_assert_eq(restore_mem("snap", back, len, NULL, NULL), 0);
        cr_assert_eq(memcmp(img + 8, back, len), 0);
        cr_assert_eq(mg_snapshot_write_internal(&src, dfd, "snap", NULL, NULL, &snap_seam), 0);
        cr_assert_eq(restore_mem("snap", back, len, NULL, NULL), 0);
        cr_assert_eq(memcmp(expect, back, len), 0);
        close(fd);
        free(expect);
        munmap(img, len + page);
        munmap(back, len + page);
}

Test(snapshot, every_zero_page_skipped_with_page_holes) {
        size_t len = 2 * MG_MIB;
        uint8_t *img = make_image(len, 2), *back = map(len);
        struct mg_snapshot_options o = opts(MG_SNAPSHOT_AUTO);
        struct mg_snapshot_stats st;
        size_t zeros = 0;
        for (size_t i = 0; i < len / page; i++)
                zeros += page_zero(i);
        o.min_hole_bytes = page;
        cr_assert_eq(write_mem("snap", img, len, &o, &st), 0);
        cr_expect_eq(st.zero_bytes, zeros * page);
        cr_expect_eq(st.data_bytes, len - zeros * page);
        cr_assert_eq(restore_mem("snap", back, len, NULL, NULL), 0);
        cr_assert_eq(memcmp(img, back, len), 0);
        munmap(img, len);
        munmap(back, len);
}

Test(snapshot, round_trip_memfd_with_holes) {
        size_t len = 8 * MG_MIB;
        uint8_t *expect = malloc(len), *back = map(len);
        int fd = make_memfd(len, 3, expect);
        cr_assert_eq(lseek(fd, 12345, SEEK_SET), 12345);
        struct mg_snapshot_source src = { .kind = MG_SNAPSHOT_FD, .fd = fd, .length = len };
        struct mg_snapshot_options o = opts(MG_SNAPSHOT_AUTO);
        struct mg_snapshot_stats st = { .size = sizeof(st) };
        cr_assert_eq(mg_snapshot_write(&src, dfd, "snap", &o, &st), 0, "%s", last_log);
        cr_expect_eq(lseek(fd, 0, SEEK_CUR), 12345, "the caller's file offset is kept");
        cr_expect_eq(st.hole_bytes, len / 4, "holes %lu", (unsigned long) st.hole_bytes);
        cr_expect_gt(st.zero_bytes, 0);
        cr_expect_eq(st.data_bytes + st.hole_bytes + st.zero_bytes, len);

        /* into memory */
        memset(back, 0x55, len);
        cr_assert_eq(restore_mem("snap", back, len, NULL, NULL), 0, "%s", last_log);
        cr_assert_eq(memcmp(expect, back, len), 0);

        /* into a memfd full of garbage at an offset: holes punched back */
        int t = memfd_create("mgsnap-target", MFD_CLOEXEC);
        cr_assert_geq(t, 0);
        memset(back, 0x77, len);
        cr_assert_eq(pwrite(t, back, len, (off_t) (64 * MG_KIB)), (ssize_t) len);
        struct mg_snapshot_target dst = { .kind = MG_SNAPSHOT_FD, .fd = t, .offset = 64 * MG_KIB, .length = len };
        struct mg_snapshot_stats rs = { .size = sizeof(rs) };
        cr_assert_eq(mg_snapshot_restore(dfd, "snap", &dst, NULL, &rs), 0, "%s", last_log);
        cr_assert_eq(pread(t, back, len, (off_t) (64 * MG_KIB)), (ssize_t) len);
        cr_assert_eq(memcmp(expect, back, len), 0);

        /* into an empty memfd: extended to the image */
        int e = memfd_create("mgsnap-empty", MFD_CLOEXEC);
        dst = (struct mg_snapshot_target) { .kind = MG_SNAPSHOT_FD, .fd = e, .length = len };
        cr_assert_eq(mg_snapshot_restore(dfd, "snap", &dst, NULL, NULL), 0);
        cr_assert_eq(pread(e, back, len, 0), (ssize_t) len);
        cr_assert_eq(memcmp(expect, back, len), 0);
        close(e);
        close(t);
        close(fd);
        free(expect);
        munmap(back, len);
}

Test(snapshot, sparse_file_for_mostly_zero_image) {
        size_t len = 64 * MG_MIB;
        uint8_t *img = map(len), *back = map(len);
        struct mg_snapshot_stats st;
        struct stat s;
        for (size_t i = 0; i < len; i += 4 * MG_MIB)
                fill_page(img + i, i / page, 9); /* one page per 4 MiB */
        fill_page(img + len - page, 0, 9);
        cr_assert_eq(write_mem("snap", img, len, NULL, &st), 0);
        cr_assert_eq(fstatat(dfd, "snap", &s, 0), 0);
        cr_expect_geq((uint64_t) s.st_size, len, "the image is laid out 1:1");
        cr_expect_lt((uint64_t) s.st_blocks * 512, len / 16, "allocated %lu of %zu", (unsigned long) s.st_blocks * 512,
                     len);
        cr_expect_eq(st.data_bytes, 17 * page);
        cr_expect_eq(st.ranges, 17);
        cr_assert_eq(restore_mem("snap", back, len, NULL, NULL), 0);
        cr_assert_eq(memcmp(img, back, len), 0);
        munmap(img, len);
        munmap(back, len);
}

/* Runs of data pages, from run_mib MiB on every step_mib MiB, the rest
 * untouched (holes of the image). */
static uint8_t *make_runs(size_t len, size_t run, size_t step, uint64_t seed) {
        uint8_t *p = map(len);
        for (size_t x = 0; x < len; x += step)
                for (size_t y = x; y < x + run && y < len; y += page)
                        fill_page(p + y, y / page, seed);
        return p;
}

/* The pieces the data area [from, to) of name lies in on the disk, as
 * filefrag counts extents (fiemap.h).  -EOPNOTSUPP without FIEMAP. */
static int disk_pieces(const char *name, uint64_t from, uint64_t to) {
        int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC), pieces;
        cr_assert_geq(fd, 0);
        pieces = mgt_fiemap_pieces(fd, from, to);
        close(fd);
        return pieces;
}

/* A neighbour that allocates right after each run is handed to the disk, as
 * other writers on the same file system do. */
struct neighbour {
        int fd;
        off_t end;
        int calls;
};

static int allocate_between(void *ud, enum mg_snap_op op, uint64_t off, uint64_t len) {
        struct neighbour *nb = ud;
        (void) off;
        (void) len;
        if (op != MG_SNAP_OP_WRITE)
                return 0;
        nb->calls++;
        if (fallocate(nb->fd, 0, nb->end, (off_t) (256 * MG_KIB)) == 0)
                nb->end += (off_t) (256 * MG_KIB);
        return 0;
}

/* Direct writes allocate a region of the image at once (write.c, reserve()):
 * with a neighbour allocating between each of 8 runs, the data of a 16 MiB
 * image still lies in one piece on disk (two allowed, for a region the
 * file system had to split); allocated run by run it lay in one per run. */
Test(snapshot, direct_data_in_one_piece_beside_other_writers) {
        size_t len = 16 * MG_MIB;
        uint64_t data_offset = page > 4096 ? page : 4096;
        uint8_t *img = make_runs(len, 3 * MG_MIB / 2, 2 * MG_MIB, 21), *back = map(len);
        struct neighbour nb = { .fd = openat(dfd, "neighbour", O_RDWR | O_CREAT | O_CLOEXEC, 0600) };
        struct mg_snapshot_options o = opts(MG_SNAPSHOT_AUTO);
        struct mg_snapshot_stats st;
        cr_assert_geq(nb.fd, 0);
        snap_seam.fault = allocate_between;
        snap_seam.userdata = &nb;
        cr_assert_eq(write_mem("snap", img, len, &o, &st), 0, "%s", last_log);
        snap_seam.fault = NULL;
        int pieces = disk_pieces("snap", data_offset, data_offset + len);
        if (st.method != MG_SNAPSHOT_DIRECT || pieces == -EOPNOTSUPP || nb.end == 0)
                cr_skip_test("needs direct I/O, FIEMAP and fallocate here (method %s, FIEMAP %d)",
                             mg_snapshot_method_to_string(st.method), pieces);
        cr_expect_eq(st.ranges, 8);
        cr_expect_geq(nb.calls, 8, "the neighbour allocated between the runs");
        cr_expect(pieces >= 1 && pieces <= 2, "the data in %d pieces on disk", pieces);
        cr_expect_leq(st.allocated_bytes, st.data_bytes + 1 * MG_MIB, "the gaps were punched back: %" PRIu64,
                      st.allocated_bytes);
        cr_assert_eq(restore_mem("snap", back, len, NULL, NULL), 0, "%s", last_log);
        cr_assert_eq(memcmp(img, back, len), 0);
        close(nb.fd);
        munmap(img, len);
        munmap(back, len);
}

Test(snapshot, unaligned_source_and_target) {
        size_t len = 1 * MG_MIB;
        uint8_t *img = make_image(len + page, 4), *back = map(len + page);
        uint8_t *src = img + 8, *dst = back + 24; /* not page-aligned: bounce buffers */
        memmove(src, img, len);
        cr_assert_eq(write_mem("snap", src, len, NULL, NULL), 0, "%s", last_log);
        cr_assert_eq(restore_mem("snap", dst, len, NULL, NULL), 0, "%s", last_log);
        cr_assert_eq(memcmp(src, dst, len), 0);
        munmap(img, len + page);
        munmap(back, len + page);
}

Test(snapshot, replaces_existing_atomically) {
        size_t len = 1 * MG_MIB;
        uint8_t *a = make_image(len, 5), *b = make_image(len, 6), *back = map(len);
        cr_assert_eq(write_mem("snap", a, len, NULL, NULL), 0);
        cr_assert_eq(write_mem("snap", b, len, NULL, NULL), 0);
        cr_assert_eq(restore_mem("snap", back, len, NULL, NULL), 0);
        cr_assert_eq(memcmp(b, back, len), 0);
        cr_expect_eq(count_entries(), 1);
        munmap(a, len);
        munmap(b, len);
        munmap(back, len);
}

/* ---- refusing bad files --------------------------------------------------- */

Test(snapshot, corrupt_truncated_foreign_refused) {
        size_t len = 2 * MG_MIB;
        uint8_t *img = make_image(len, 7), *back = map(len);
        struct mg_snapshot_options o = opts(MG_SNAPSHOT_AUTO);
        struct mg_snapshot_stats st;
        cr_assert_eq(write_mem("snap", img, len, &o, &st), 0);
        off_t size = file_size("snap");
        int fd = openat(dfd, "snap", O_RDONLY | O_CLOEXEC);
        uint8_t hdr[MG_SNAP_HEADER_BYTES];
        cr_assert_eq(pread(fd, hdr, sizeof(hdr), 0), (ssize_t) sizeof(hdr));
        close(fd);
        struct mg_snap_header h;
        cr_assert_eq(mg_snap_header_parse(hdr, sizeof(hdr), (uint64_t) size, (uint32_t) page, &h, NULL), 0);

        /* one data byte (page 1 is data in the pattern) */
        flip_byte("snap", (off_t) (h.data_offset + page + 100));
        cr_expect_eq(restore_mem("snap", back, len, &o, NULL), -EBADMSG);
        cr_expect(strstr(last_log, "chunk 0") && strstr(last_log, "checksum"), "%s", last_log);
        flip_byte("snap", (off_t) (h.data_offset + page + 100));
        cr_assert_eq(restore_mem("snap", back, len, &o, NULL), 0);

        /* one header byte, one index byte */
        flip_byte("snap", 30);
        cr_expect_eq(restore_mem("snap", back, len, &o, NULL), -EBADMSG);
        cr_expect(strstr(last_log, "header checksum"), "%s", last_log);
        flip_byte("snap", 30);
        flip_byte("snap", (off_t) h.index_offset + 3);
        cr_expect_eq(restore_mem("snap", back, len, &o, NULL), -EBADMSG);
        cr_expect(strstr(last_log, "index checksum"), "%s", last_log);
        flip_byte("snap", (off_t) h.index_offset + 3);
        cr_assert_eq(restore_mem("snap", back, len, &o, NULL), 0);

        /* another page size, with a header that is otherwise valid */
        struct mg_snap_header f = h;
        f.page_size = (uint32_t) page * 4;
        mg_snap_header_encode(&f, hdr);
        fd = openat(dfd, "snap", O_RDWR | O_CLOEXEC);
        cr_assert_eq(pwrite(fd, hdr, sizeof(hdr), 0), (ssize_t) sizeof(hdr));
        cr_expect_eq(restore_mem("snap", back, len, &o, NULL), -EBADMSG);
        cr_expect(strstr(last_log, "page size"), "%s", last_log);
        mg_snap_header_encode(&h, hdr);
        cr_assert_eq(pwrite(fd, hdr, sizeof(hdr), 0), (ssize_t) sizeof(hdr));
        cr_assert_eq(restore_mem("snap", back, len, &o, NULL), 0);

        /* truncated: by one byte, into the data, to a stub; and extended */
        cr_assert_eq(ftruncate(fd, size - 1), 0);
        cr_expect_eq(restore_mem("snap", back, len, &o, NULL), -EBADMSG);
        cr_expect(strstr(last_log, "truncated"), "%s", last_log);
        cr_assert_eq(ftruncate(fd, size + 1), 0);
        cr_expect_eq(restore_mem("snap", back, len, &o, NULL), -EBADMSG);
        cr_assert_eq(ftruncate(fd, (off_t) (h.data_offset + len / 2)), 0);
        cr_expect_eq(restore_mem("snap", back, len, &o, NULL), -EBADMSG);
        cr_assert_eq(ftruncate(fd, 100), 0);
        cr_expect_eq(restore_mem("snap", back, len, &o, NULL), -EBADMSG);
        cr_assert_eq(ftruncate(fd, 0), 0);
        cr_expect_eq(restore_mem("snap", back, len, &o, NULL), -EBADMSG);
        close(fd);

        /* not a snapshot at all; none at all */
        fd = openat(dfd, "text", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        cr_assert_eq(write(fd, "hello world, this is not a snapshot\n", 36), 36);
        close(fd);
        cr_expect_eq(restore_mem("text", back, len, &o, NULL), -EBADMSG);
        cr_expect_eq(restore_mem("none", back, len, &o, NULL), -ENOENT);
        munmap(img, len);
        munmap(back, len);
}

Test(snapshot, target_of_another_length) {
        size_t len = 1 * MG_MIB;
        uint8_t *img = make_image(len, 8), *back = map(2 * len);
        cr_assert_eq(write_mem("snap", img, len, NULL, NULL), 0);
        cr_expect_eq(restore_mem("snap", back, 2 * len, NULL, NULL), -EMSGSIZE);
        cr_expect_eq(restore_mem("snap", back, len / 2, NULL, NULL), -EMSGSIZE);
        munmap(img, len);
        munmap(back, 2 * len);
}

/* A hostile file: a valid header claiming a 64 GiB image, one range per
 * page and a chunk per page (an index of 320 MiB), in a sparse file of the
 * length it claims (4 KiB of it written).  Restored into 1 MiB it is
 * refused by the target's length before the index is allocated or read:
 * it used to cost 321 MiB and 3.5 s. */
Test(snapshot, huge_sparse_claim_refused_before_allocating) {
        uint64_t image = UINT64_C(64) << 30;
        struct mg_snap_header h = {
                .version = MG_SNAP_VERSION,
                .page_size = (uint32_t) page,
                .chunk_bytes = (uint32_t) page,
                .image_bytes = image,
                .data_offset = page,
                .index_offset = page + image,
                .n_ranges = image / page,
                .data_bytes = image,
        };
        uint8_t hdr[MG_SNAP_HEADER_BYTES];
        uint8_t *back = map(MG_MIB);
        struct rusage ru0, ru1;
        uint64_t t0;
        int fd;

        mg_snap_header_encode(&h, hdr);
        fd = openat(dfd, "huge", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        cr_assert_geq(fd, 0);
        cr_assert_eq(pwrite(fd, hdr, sizeof(hdr), 0), (ssize_t) sizeof(hdr));
        int tr = ftruncate(fd, (off_t) (h.index_offset + mg_snap_index_bytes(&h))), e = errno;
        close(fd);
        if (tr < 0)
                cr_skip_test("%s: no sparse file of 64 GiB here (%s)", dir, strerror(e));
        cr_assert_eq(getrusage(RUSAGE_SELF, &ru0), 0);
        t0 = mg_mono_usec();
        cr_expect_eq(restore_mem("huge", back, MG_MIB, NULL, NULL), -EMSGSIZE);
        cr_expect_lt(mg_mono_usec() - t0, 500 * MG_USEC_PER_MSEC, "refused in %" PRIu64 " us",
                     mg_mono_usec() - t0);
        cr_assert_eq(getrusage(RUSAGE_SELF, &ru1), 0);
        /* ru_maxrss is the peak in KiB: reading the index would add 320 MiB */
        cr_expect_lt(ru1.ru_maxrss - ru0.ru_maxrss, 16L * 1024, "peak RSS grew by %ld KiB",
                     ru1.ru_maxrss - ru0.ru_maxrss);
        munmap(back, MG_MIB);
}

/* A FIFO at the name neither hangs the restore (an open for reading would
 * wait for a writer) nor is read: it is not a regular file. */
Test(snapshot, fifo_refused_without_hanging) {
        uint8_t *back = map(MG_MIB);
        struct mg_snapshot_options o = opts(MG_SNAPSHOT_AUTO);

        cr_assert_eq(mkfifoat(dfd, "fifo", 0600), 0);
        alarm(10); /* a hang fails the test (SIGALRM) rather than the suite's timeout */
        cr_expect_eq(restore_mem("fifo", back, MG_MIB, &o, NULL), -EINVAL);
        alarm(0);
        cr_expect(strstr(last_log, "not a regular file"), "%s", last_log);
        cr_expect_eq(restore_mem(".", back, MG_MIB, NULL, NULL), -EINVAL, "a directory");
        munmap(back, MG_MIB);
}

/* A symlink at the name is not followed, even to a good snapshot. */
Test(snapshot, symlink_refused) {
        size_t len = 1 * MG_MIB;
        uint8_t *img = make_image(len, 11), *back = map(len);
        struct mg_snapshot_options o = opts(MG_SNAPSHOT_AUTO);

        cr_assert_eq(write_mem("snap", img, len, NULL, NULL), 0);
        cr_assert_eq(symlinkat("snap", dfd, "link"), 0);
        cr_expect_eq(restore_mem("link", back, len, &o, NULL), -ELOOP);
        cr_expect(strstr(last_log, "symbolic link"), "%s", last_log);
        cr_expect(mg_snap_is_zero(back, len), "the target is untouched");
        cr_expect_eq(restore_mem("snap", back, len, &o, NULL), 0);
        cr_expect_eq(memcmp(back, img, len), 0);
        munmap(img, len);
        munmap(back, len);
}

/* ---- bad input ----------------------------------------------------------- */

Test(snapshot, bad_arguments) {
        size_t len = 1 * MG_MIB;
        uint8_t *img = make_image(len, 10);
        struct mg_snapshot_options o = opts(MG_SNAPSHOT_AUTO);
        struct mg_snapshot_stats st = { .size = sizeof(st) };

        cr_expect_eq(write_mem("a/b", img, len, NULL, NULL), -EINVAL);
        cr_expect_eq(write_mem("", img, len, NULL, NULL), -EINVAL);
        cr_expect_eq(write_mem("..", img, len, NULL, NULL), -EINVAL);
        cr_expect_eq(write_mem(MG_SNAP_TMP_PREFIX "x", img, len, NULL, NULL), -EINVAL);
        cr_expect_eq(write_mem("snap", img, len - 1, NULL, NULL), -EINVAL);
        cr_expect_eq(write_mem("snap", NULL, len, NULL, NULL), -EINVAL);
        cr_expect_eq(write_mem("snap", img, 0, NULL, NULL), -EINVAL);
        struct mg_snapshot_source s = { .kind = 9, .addr = img, .length = len };
        cr_expect_eq(mg_snapshot_write(&s, dfd, "snap", NULL, NULL), -EINVAL);

        /* sized options: unknown non-zero tail, too small, bad values */
        struct {
                struct mg_snapshot_options o;
                uint64_t future;
        } big = { .o = o, .future = 1 };
        big.o.size = sizeof(big);
        cr_expect_eq(write_mem("snap", img, len, &big.o, NULL), -E2BIG);
        big.future = 0;
        cr_expect_eq(write_mem("snap", img, len, &big.o, NULL), 0, "a zero tail is fine");
        o.size = 8;
        cr_expect_eq(write_mem("snap", img, len, &o, NULL), -EINVAL);
        o = opts(MG_SNAPSHOT_AUTO);
        o.chunk_bytes = 3 * 4096;
        cr_expect_eq(write_mem("snap", img, len, &o, NULL), -EINVAL);
        o = opts(99);
        cr_expect_eq(write_mem("snap", img, len, &o, NULL), -EINVAL);
        o = opts(MG_SNAPSHOT_AUTO);
        o.window_bytes = 4096;
        cr_expect_eq(write_mem("snap", img, len, &o, NULL), -EINVAL);
        o = opts(MG_SNAPSHOT_AUTO);
        o.flags = 1u << 7;
        cr_expect_eq(write_mem("snap", img, len, &o, NULL), -EINVAL);
        st.size = 7;
        s = (struct mg_snapshot_source) { .kind = MG_SNAPSHOT_MEMORY, .addr = img, .length = len };
        cr_expect_eq(mg_snapshot_write(&s, dfd, "snap", NULL, &st), -EINVAL);
        cr_expect_eq(mg_snapshot_options_init(NULL), -EINVAL);
        cr_expect_str_eq(mg_snapshot_method_to_string(MG_SNAPSHOT_DIRECT), "direct");

        /* a source shorter than declared */
        int fd = memfd_create("short", MFD_CLOEXEC);
        cr_assert_eq(ftruncate(fd, (off_t) len), 0);
        s = (struct mg_snapshot_source) { .kind = MG_SNAPSHOT_FD, .fd = fd, .length = 2 * len };
        cr_expect_eq(mg_snapshot_write(&s, dfd, "short", NULL, NULL), -ENODATA);
        s.length = len;
        s.offset = 4096;
        cr_expect_eq(mg_snapshot_write(&s, dfd, "short", NULL, NULL), -ENODATA);
        s.offset = 100;
        cr_expect_eq(mg_snapshot_write(&s, dfd, "short", NULL, NULL), -EINVAL);
        close(fd);
        cr_expect_eq(count_entries(), 1, "only the one good write");
        munmap(img, len);
}

/* The stats of an older caller (a struct cut before lend_bytes for a write,
 * before read_usec for a restore) get what fits and nothing past it; a
 * newer caller's fields this library lacks are zeroed. */
union stats_buf {
        struct mg_snapshot_stats st;
        unsigned char b[sizeof(struct mg_snapshot_stats) + 64];
};

static void expect_untouched(const union stats_buf *u, size_t from, const char *what) {
        for (size_t i = from; i < sizeof(*u); i++)
                cr_assert_eq(u->b[i], 0xa5, "%s: byte %zu written past the caller's %zu", what, i, from);
}

Test(snapshot, stats_fill_what_fits) {
        size_t len = 1 * MG_MIB;
        uint8_t *img = make_image(len, 12), *back = map(len);
        struct mg_snapshot_source src = { .kind = MG_SNAPSHOT_MEMORY, .addr = img, .length = len };
        struct mg_snapshot_target dst = { .kind = MG_SNAPSHOT_MEMORY, .addr = back, .length = len };
        union stats_buf u;

        size_t cut = offsetof(struct mg_snapshot_stats, lend_bytes);
        memset(&u, 0xa5, sizeof(u));
        u.st.size = cut;
        cr_assert_eq(mg_snapshot_write(&src, dfd, "snap", NULL, &u.st), 0, "%s", last_log);
        cr_expect_eq(u.st.size, cut);
        cr_expect_eq(u.st.image_bytes, len);
        cr_expect_eq(u.st.data_bytes + u.st.skipped_bytes, len);
        expect_untouched(&u, cut, "write");

        cut = offsetof(struct mg_snapshot_stats, read_usec);
        memset(&u, 0xa5, sizeof(u));
        u.st.size = cut;
        cr_assert_eq(mg_snapshot_restore(dfd, "snap", &dst, NULL, &u.st), 0, "%s", last_log);
        cr_expect_eq(u.st.image_bytes, len);
        expect_untouched(&u, cut, "restore");
        cr_expect_eq(memcmp(img, back, len), 0);

        memset(&u, 0xa5, sizeof(u));
        u.st.size = sizeof(uint64_t);
        cr_assert_eq(mg_snapshot_restore(dfd, "snap", &dst, NULL, &u.st), 0);
        expect_untouched(&u, sizeof(uint64_t), ".size alone");

        memset(&u, 0xa5, sizeof(u));
        u.st.size = sizeof(u.st) + 16;
        cr_assert_eq(mg_snapshot_write(&src, dfd, "snap", NULL, &u.st), 0);
        cr_expect_eq(u.st.size, sizeof(u.st) + 16);
        cr_expect_eq(u.st.image_bytes, len);
        for (size_t i = sizeof(u.st); i < sizeof(u.st) + 16; i++)
                cr_assert_eq(u.b[i], 0, "byte %zu of the caller's newer fields not zeroed", i);
        expect_untouched(&u, sizeof(u.st) + 16, "a newer caller's");
        munmap(img, len);
        munmap(back, len);
}

/* ---- faults -------------------------------------------------------------- */

static bool private_mounts(void) {
        return unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0;
}

Test(snapshot, unwritable_directory) {
        size_t len = 1 * MG_MIB;
        uint8_t *img = make_image(len, 11);
        char ro[300];
        snprintf(ro, sizeof(ro), "%s/ro", dir);
        cr_assert_eq(mkdir(ro, 0755), 0);
        bool mounted = geteuid() == 0 && private_mounts() && mount("tmpfs", ro, "tmpfs", MS_RDONLY, "size=1m") == 0;
        if (!mounted)
                cr_assert_eq(chmod(ro, 0555), 0); /* root without mounts would pass this: see below */
        int rfd = open(ro, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct mg_snapshot_source src = { .kind = MG_SNAPSHOT_MEMORY, .addr = img, .length = len };
        struct mg_snapshot_options o = opts(MG_SNAPSHOT_AUTO);
        int r = mg_snapshot_write(&src, rfd, "snap", &o, NULL);
        if (mounted || geteuid() != 0) {
                cr_expect(r == -EROFS || r == -EACCES, "got %d %s", r, strerror(-r));
                cr_expect(strstr(last_log, "cannot create"), "%s", last_log);
                DIR *d = opendir(ro);
                int n = 0;
                while (readdir(d))
                        n++;
                closedir(d);
                cr_expect_eq(n, 2, "nothing left behind");
        }
        close(rfd);
        if (mounted)
                umount(ro);
        chmod(ro, 0755);
        munmap(img, len);
}

/* ENOSPC: a 4 MiB tmpfs in a private mount namespace, else RLIMIT_FSIZE
 * (EFBIG, SIGXFSZ ignored). */
Test(snapshot, enospc_leaves_nothing) {
        size_t len = 8 * MG_MIB;
        uint64_t s = 12;
        uint8_t *img = map(len);
        char small[300];
        struct rlimit old;
        for (size_t i = 0; i < len; i += 8) {
                uint64_t v = rng(&s);
                memcpy(img + i, &v, 8);
        }
        snprintf(small, sizeof(small), "%s/small", dir);
        cr_assert_eq(mkdir(small, 0755), 0);
        bool mounted = geteuid() == 0 && private_mounts() && mount("tmpfs", small, "tmpfs", 0, "size=4m") == 0;
        if (!mounted) {
                cr_assert_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
                signal(SIGXFSZ, SIG_IGN);
                cr_assert_eq(setrlimit(RLIMIT_FSIZE, &(struct rlimit) { 2 * MG_MIB, old.rlim_max }), 0);
        }
        int sfd = open(small, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int before;
        cr_assert_eq(deleted_fds(&before), 0);
        for (size_t m = 0; m < sizeof(methods) / sizeof(methods[0]); m++) {
                struct mg_snapshot_source src = { .kind = MG_SNAPSHOT_MEMORY, .addr = img, .length = len };
                struct mg_snapshot_options o = opts(methods[m]);
                int r = mg_snapshot_write(&src, sfd, "snap", &o, NULL);
                if (r == -EOPNOTSUPP)
                        continue;
                cr_expect(r == -ENOSPC || r == -EFBIG, "%s: got %d %s", mg_snapshot_method_to_string(methods[m]), r,
                          strerror(-r));
                DIR *d = opendir(small);
                int n = 0;
                while (readdir(d))
                        n++;
                closedir(d);
                cr_expect_eq(n, 2, "the partial file was removed");
                int after;
                cr_expect_eq(deleted_fds(&after), 0);
                cr_expect_eq(after, before);
        }
        if (mounted) {
                struct statfs sf;
                cr_assert_eq(fstatfs(sfd, &sf), 0);
                cr_expect_eq(sf.f_bfree, sf.f_blocks, "space given back");
        }
        close(sfd);
        if (mounted)
                umount(small);
        else
                setrlimit(RLIMIT_FSIZE, &old);
        munmap(img, len);
}

struct inject {
        enum mg_snap_op op;
        uint64_t after;                 /* fail the call past this file offset */
        int err;
        int calls;
        char high[64];                  /* memory.high seen during the write */
        struct fixture *fx;
};

static int inject(void *ud, enum mg_snap_op op, uint64_t off, uint64_t len) {
        struct inject *in = ud;
        (void) len;
        if (in->fx && !in->high[0])
                snprintf(in->high, sizeof(in->high), "%s", fixture_read(in->fx, "memory.high"));
        if (op != in->op || off < in->after)
                return 0;
        in->calls++;
        return in->err;
}

Test(snapshot, eio_mid_write_and_at_sync) {
        size_t len = 4 * MG_MIB;
        uint8_t *img = make_image(len, 13);
        struct inject in = { .op = MG_SNAP_OP_WRITE, .after = 4096 + 2 * MG_MIB, .err = -EIO };
        snap_seam.fault = inject;
        snap_seam.userdata = &in;
        for (int named = 0; named < 2; named++) {
                snap_seam.flags = named ? MG_SNAP_SEAM_NO_TMPFILE : 0;
                for (size_t m = 0; m < sizeof(methods) / sizeof(methods[0]); m++) {
                        struct mg_snapshot_options o = opts(methods[m]);
                        o.window_bytes = 1 * MG_MIB;
                        in.op = MG_SNAP_OP_WRITE;
                        in.after = 4096 + 2 * MG_MIB;
                        in.calls = 0;
                        int r = write_mem("snap", img, len, &o, NULL);
                        if (r == -EOPNOTSUPP)
                                continue;
                        cr_expect_eq(r, -EIO, "%s", mg_snapshot_method_to_string(methods[m]));
                        cr_expect_gt(in.calls, 0);
                        cr_expect_eq(count_entries(), 0);
                        cr_expect_eq(deleted_fds(NULL), 0);
                        in.op = MG_SNAP_OP_FSYNC;
                        in.after = 0;
                        in.calls = 0;
                        r = write_mem("snap", img, len, &o, NULL);
                        cr_expect_eq(r, -EIO);
                        cr_expect_eq(in.calls, 1);
                        cr_expect_eq(count_entries(), 0);
                        cr_expect_eq(deleted_fds(NULL), 0);
                }
        }
        munmap(img, len);
}

/* Regions of the image are allocated whole and their gaps punched back,
 * runs crossing a region's end and a last region shorter than the others
 * included: what stays allocated is the data.  Where a region does not fit
 * (ENOSPC from its fallocate) the runs are allocated one by one, the write
 * succeeds and the file is the same; another error fails the write and
 * leaves nothing. */
Test(snapshot, regions_reserved_then_punched_and_enospc_falls_back) {
        size_t len = MG_SNAP_RESERVE_BYTES * 2 + 8 * MG_MIB;
        uint8_t *img = map(len), *back = map(len);
        const size_t runs[][2] = {
                { 0, 1 * MG_MIB },                                                       /* first region */
                { MG_SNAP_RESERVE_BYTES - 2 * MG_MIB, MG_SNAP_RESERVE_BYTES + 2 * MG_MIB }, /* across its end */
                { 2 * MG_SNAP_RESERVE_BYTES + 4 * MG_MIB, len },                         /* the short last one */
        };
        uint64_t data = 0;
        for (size_t k = 0; k < 3; k++) {
                for (size_t y = runs[k][0]; y < runs[k][1]; y += page)
                        fill_page(img + y, y / page, 22);
                data += runs[k][1] - runs[k][0];
        }
        struct inject in = { .op = MG_SNAP_OP_RESERVE, .after = UINT64_MAX };
        struct statfs sf;
        snap_seam.fault = inject;
        snap_seam.userdata = &in;
        for (int round = 0; round < 3; round++) {
                struct mg_snapshot_options o = opts(MG_SNAPSHOT_AUTO);
                struct mg_snapshot_stats st;
                in.after = round == 0 ? UINT64_MAX : 0;
                in.err = round == 1 ? -ENOSPC : -EIO;
                in.calls = 0;
                if (round == 2)
                        cr_assert_eq(unlinkat(dfd, "snap", 0), 0);
                int r = write_mem("snap", img, len, &o, &st);
                if (round == 0 && (st.method != MG_SNAPSHOT_DIRECT || fstatfs(dfd, &sf) < 0 ||
                                   sf.f_type == TMPFS_MAGIC))
                        cr_skip_test("nothing is reserved here (method %s; tmpfs: the pages themselves)",
                                     mg_snapshot_method_to_string(st.method));
                if (round == 2) {
                        cr_expect_eq(r, -EIO, "%s", last_log);
                        cr_expect_eq(in.calls, 1);
                        cr_expect_eq(count_entries(), 0);
                        cr_expect_eq(deleted_fds(NULL), 0);
                        break;
                }
                cr_assert_eq(r, 0, "round %d: %s", round, last_log);
                cr_expect_eq(st.ranges, 3);
                cr_expect_eq(st.data_bytes, data);
                cr_expect_eq(in.calls, round == 1 ? 1 : 0, "round %d: reserved no more after ENOSPC", round);
                cr_expect_leq(st.allocated_bytes, data + 1 * MG_MIB, "round %d: %" PRIu64 " allocated for %" PRIu64,
                              round, st.allocated_bytes, data);
                cr_expect_geq(st.allocated_bytes, data);
                memset(back, 0xa5, len);
                cr_assert_eq(restore_mem("snap", back, len, NULL, NULL), 0, "%s", last_log);
                cr_assert_eq(memcmp(img, back, len), 0, "round %d", round);
        }
        munmap(img, len);
        munmap(back, len);
}

static int die_at(void *ud, enum mg_snap_op op, uint64_t off, uint64_t len) {
        (void) ud;
        (void) len;
        if (op == MG_SNAP_OP_WRITE && off >= 4096 + 1 * MG_MIB)
                raise(SIGKILL);
        return 0;
}

/* A writer killed mid-write: with O_TMPFILE nothing is ever visible; with a
 * named temporary file, the next write in the directory removes it once it
 * is unlocked and not written for a while.  A locked one is left alone. */
Test(snapshot, crash_mid_write_leaves_nothing_published) {
        size_t len = 2 * MG_MIB;
        uint8_t *img = make_image(len, 14);
        for (int named = 0; named < 2; named++) {
                pid_t pid = fork();
                cr_assert_geq(pid, 0);
                if (pid == 0) {
                        snap_seam.fault = die_at;
                        snap_seam.flags = named ? MG_SNAP_SEAM_NO_TMPFILE : 0;
                        write_mem("snap", img, len, NULL, NULL);
                        _exit(0);
                }
                int status;
                cr_assert_eq(waitpid(pid, &status, 0), pid);
                cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "writer was not killed");
                cr_expect(!has_entry("snap"), "nothing published");
                cr_expect_eq(count_entries(), named, "named: one orphan");
        }
        /* the orphan, and a locked temp file of a live writer */
        DIR *d = fdopendir(openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        struct dirent *de;
        char orphan[256] = "";
        while ((de = readdir(d)))
                if (strncmp(de->d_name, MG_SNAP_TMP_PREFIX, strlen(MG_SNAP_TMP_PREFIX)) == 0)
                        snprintf(orphan, sizeof(orphan), "%s", de->d_name);
        closedir(d);
        cr_assert(orphan[0]);
        int live = openat(dfd, MG_SNAP_TMP_PREFIX "live", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        cr_assert_eq(flock(live, LOCK_EX), 0);
        struct timespec old[2] = { { .tv_sec = 1000000 }, { .tv_sec = 1000000 } };
        cr_assert_eq(utimensat(dfd, MG_SNAP_TMP_PREFIX "live", old, 0), 0);

        /* written just now: too young to be judged an orphan */
        cr_assert_eq(write_mem("snap", img, len, NULL, NULL), 0);
        cr_expect(has_entry(orphan), "a fresh temp file is left alone");
        cr_assert_eq(utimensat(dfd, orphan, old, 0), 0);
        cr_assert_eq(write_mem("snap", img, len, NULL, NULL), 0);
        cr_expect(!has_entry(orphan), "the orphan was removed");
        cr_expect(has_entry(MG_SNAP_TMP_PREFIX "live"), "a locked temp file is left alone");
        cr_expect(has_entry("snap"));
        cr_expect_eq(count_entries(), 2);
        close(live);
        munmap(img, len);
}

/* ---- the lend ------------------------------------------------------------ */

static int locks;
static void lock_fn(void *ud, bool lock) {
        (void) ud;
        locks += lock ? 1 : -1;
        cr_assert(locks == 0 || locks == 1);
}

Test(snapshot, lend_around_the_write) {
        uint64_t lend = 0;
        struct fixture fx;
        struct mg_guard_options go;
        mg_guard *g = NULL;
        size_t len = 2 * MG_MIB;
        uint8_t *img = make_image(len, 15);
        fixture_init(&fx);
        fixture_write(&fx, "memory.high", "241172480");
        fixture_write(&fx, "memory.reclaim", "");
        cr_assert_eq(mg_guard_options_init(&go, 256 * MG_MIB), 0);
        cr_assert_eq(mg_guard_new_internal(fx.dir, &go, MG_CGROUP_ANY_FS, &fx.io, &g), 0);

        struct inject in = { .op = MG_SNAP_OP_READ, .fx = &fx };
        snap_seam.fault = inject;
        snap_seam.userdata = &in;
        struct mg_snapshot_options o = opts(MG_SNAPSHOT_AUTO);
        struct mg_snapshot_stats st;
        o.guard = g;
        o.lock = lock_fn;
        o.reclaim_bytes = 8 * MG_MIB;
        fixture_reset_counts(&fx);
        cr_assert_eq(write_mem("snap", img, len, &o, &st), 0, "%s", last_log);
        /* window 256 MiB / 16 = 16 MiB, + 2 x 4 MiB buffers + 4 MiB */
        cr_expect_eq(st.lend_bytes, 28 * MG_MIB);
        cr_expect_eq(st.window_bytes, 16 * MG_MIB);
        cr_expect_str_eq(in.high, "270532608");
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480", "restored exactly");
        cr_expect(!mg_guard_is_lent(g));
        cr_expect_str_eq(fixture_read(&fx, "memory.reclaim"), "8388608 swappiness=0");
        /* through the guard's seam, below its directory, as every cgroup
         * file: memory.high raised and restored, memory.reclaim; opened:
         * the restore's memory.high, memory.reclaim, and what the guard,
         * trimmed far below its limit, opens again for the lend: its
         * directory and every file but memory.current */
        cr_expect_eq(fx.writes, 3);
        cr_expect_eq(fx.opens, 2 + 1 + MG_CG_N - 1);
        cr_expect_eq(st.reclaimed_request_bytes, 8 * MG_MIB);
        cr_expect_eq(locks, 0);

        /* the pod lends it all */
        in.high[0] = '\0';
        o.lend_bytes = MG_UNLIMITED;
        o.reclaim_bytes = 0;
        cr_assert_eq(write_mem("snap", img, len, &o, &st), 0);
        cr_expect_str_eq(in.high, "max");
        cr_expect_eq(st.lend_bytes, MG_UNLIMITED);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");

        /* failure mid-write: memory.high back as well */
        in = (struct inject) { .op = MG_SNAP_OP_WRITE, .after = 4096 + 1 * MG_MIB, .err = -ENOSPC, .fx = &fx };
        o.lend_bytes = 0;
        cr_expect_eq(write_mem("other", img, len, &o, NULL), -ENOSPC);
        cr_expect_str_eq(in.high, "270532608");
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        cr_expect(!mg_guard_is_lent(g));
        cr_expect(!has_entry("other"));

        /* already lent by the caller: refused, and the caller's lend kept */
        cr_assert_eq(mg_guard_lend_begin(g, 1 * MG_MIB, 0, &lend), 0);
        cr_expect_eq(write_mem("other", img, len, &o, NULL), -EBUSY);
        cr_expect(mg_guard_is_lent(g));
        cr_expect(!has_entry("other"));
        cr_assert_eq(mg_guard_lend_end(g, lend), 0);

        /* the window follows the actor's size */
        mg_guard_free(g);
        cr_assert_eq(mg_guard_options_init(&go, 64 * MG_MIB), 0);
        cr_assert_eq(mg_guard_new_internal(fx.dir, &go, MG_CGROUP_ANY_FS, &fx.io, &g), 0);
        o.guard = g;
        snap_seam.fault = NULL;
        cr_assert_eq(write_mem("snap", img, len, &o, &st), 0);
        cr_expect_eq(st.window_bytes, 8 * MG_MIB);
        cr_assert_eq(write_mem("snap", img, len, NULL, &st), 0);
        cr_expect_eq(st.window_bytes, 32 * MG_MIB, "no guard");
        mg_guard_free(g);
        fixture_cleanup(&fx);
        munmap(img, len);
}

/* The write's lend expires mid-write (a slow disk) and someone lends again
 * before the write ends: the write's late end must leave that lend alone
 * (memory.high as it set it, kills still paused), and the write succeeds. */
struct relend {
        mg_guard *g;
        struct fixture *fx;
        uint64_t id;                    /* the second lend's */
        int r;
};

static int expire_and_relend(void *ud, enum mg_snap_op op, uint64_t off, uint64_t len) {
        struct relend *rl = ud;
        (void) off;
        (void) len;
        if (op != MG_SNAP_OP_WRITE || rl->id)
                return 0;
        rl->fx->now_usec = rl->g->lend.info.deadline_usec;
        if (mg_guard_tick(rl->g) != 1)
                rl->r = -EIO; /* the deadline did not restore */
        else
                rl->r = mg_guard_lend_begin(rl->g, MG_UNLIMITED, 0, &rl->id);
        return 0;
}

Test(snapshot, late_end_leaves_a_newer_lend) {
        struct fixture fx;
        struct mg_guard_options go;
        mg_guard *g = NULL;
        size_t len = 2 * MG_MIB;
        uint8_t *img = make_image(len, 16);
        fixture_init(&fx);
        fixture_write(&fx, "memory.high", "241172480\n");
        cr_assert_eq(mg_guard_options_init(&go, 256 * MG_MIB), 0);
        cr_assert_eq(mg_guard_new_internal(fx.dir, &go, MG_CGROUP_ANY_FS, &fx.io, &g), 0);
        mg_guard_set_clock(g, fixture_clock, &fx);

        struct relend rl = { .g = g, .fx = &fx };
        snap_seam.fault = expire_and_relend;
        snap_seam.userdata = &rl;
        struct mg_snapshot_options o = opts(MG_SNAPSHOT_AUTO);
        o.guard = g;
        o.lend_deadline_usec = UINT64_C(1000000);
        cr_assert_eq(write_mem("snap", img, len, &o, NULL), 0, "%s", last_log);
        cr_assert_eq(rl.r, 0);
        cr_assert_neq(rl.id, 0);
        cr_expect(mg_guard_is_lent(g), "the write ended the lend begun after its own expired");
        cr_expect_eq(mg_guard_get_lend_id(g), rl.id);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "max");
        cr_expect(strstr(last_log, "lend already over") != NULL, "%s", last_log);
        cr_expect_eq(mg_guard_lend_end(g, rl.id), 0);
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480");
        mg_guard_free(g);
        fixture_cleanup(&fx);
        munmap(img, len);
}

/* The thread contract: a write keeps its guard alive.  The set's thread
 * removes the guard mid-write (as a caller does on MG_EVENT_GONE): the
 * guard leaves the set at once, sends no more events, and the write goes on
 * with it, ends its own lend and frees it (CI runs this under ASan and
 * valgrind: a use after free or a leak fails it). */
struct remover {
        mg_set *set;
        mg_guard *g;
        bool removed;
        struct fixture_seen seen;       /* what the guard told; silent once removed */
};

static void record_event(mg_guard *g, const struct mg_event *ev, void *ud) {
        struct remover *rm = ud;
        (void) g;
        fixture_record(&rm->seen, ev);
}

static int remove_mid_write(void *ud, enum mg_snap_op op, uint64_t off, uint64_t len) {
        struct remover *rm = ud;
        (void) off;
        (void) len;
        if (op == MG_SNAP_OP_WRITE && !rm->removed) {
                rm->removed = true;
                rm->seen.silent = true;
                cr_assert_eq(mg_set_remove(rm->set, rm->g), 0);
                cr_expect_eq(mg_set_size(rm->set), 0, "the guard left the set at once");
        }
        return 0;
}

Test(snapshot, guard_removed_mid_write) {
        struct fixture fx;
        struct mg_guard_options go;
        struct remover rm = {};
        size_t len = 2 * MG_MIB;
        uint8_t *img = make_image(len, 16);
        fixture_init(&fx);
        fixture_write(&fx, "memory.high", "241172480\n");
        cr_assert_eq(mg_set_new(NULL, &rm.set), 0);
        cr_assert_eq(mg_guard_options_init(&go, 256 * MG_MIB), 0);
        go.on_event = record_event;
        go.userdata = &rm;
        cr_assert_eq(mg_guard_new_internal(fx.dir, &go, MG_CGROUP_ANY_FS, &fx.io, &rm.g), 0);
        cr_assert_eq(mg_set_add_guard(rm.set, rm.g), 0);

        snap_seam.fault = remove_mid_write;
        snap_seam.userdata = &rm;
        struct mg_snapshot_options o = opts(MG_SNAPSHOT_AUTO);
        o.guard = rm.g;
        o.lock = lock_fn;
        cr_assert_eq(write_mem("snap", img, len, &o, NULL), 0, "%s", last_log);
        cr_expect(rm.removed);
        cr_expect_eq(rm.seen.events, 1, "only the lend's begin, before the removal");
        cr_expect_eq(rm.seen.after, 0, "a removed guard sent an event");
        cr_expect_str_eq(fixture_read(&fx, "memory.high"), "241172480", "the write ended its own lend");
        cr_expect_eq(locks, 0);
        mg_set_free(rm.set);
        fixture_cleanup(&fx);
        munmap(img, len);
}

/* The write's lend ends without the lock over the blocking write: writing
 * memory.high back reclaims in the writer (seconds on 6.1 and 6.12), and the
 * set's thread, which takes the same lock around mg_set_process(), must not
 * wait for it.  The write runs on a thread of its own with a real mutex; the
 * fixture's gate holds its memory.high write; meanwhile the test takes the
 * lock and runs the set, whose other guard kills an overshoot.  The write
 * returns 0 with memory.high exact.  Then the same with the write's lend
 * expired mid-write, its restore with the set's worker: the write's end
 * waits for that write, and returns once memory.high is back. */
struct lock_writer {
        pthread_mutex_t mu;
        struct fixture *fx;
        mg_set *set;
        mg_guard *g;
        const uint8_t *img;
        size_t len;
        struct mg_snapshot_options o;
        bool expire;                    /* the hook ends the lend by its deadline */
        bool hooked;
        int r;
        char high_after[64];            /* memory.high as the write returned */
};

static void mutex_lock_fn(void *ud, bool lock) {
        struct lock_writer *lw = ud;
        if (lock)
                pthread_mutex_lock(&lw->mu);
        else
                pthread_mutex_unlock(&lw->mu);
}

/* On the write's thread, after the lend began: the gate closes on
 * memory.high; with expire, the set's thread's part is played here (under
 * the lock): the deadline passes, and the tick hands the restore to the
 * worker, which waits at the gate. */
static int gate_mid_write(void *ud, enum mg_snap_op op, uint64_t off, uint64_t len) {
        struct lock_writer *lw = ud;
        (void) off;
        (void) len;
        if (op != MG_SNAP_OP_WRITE || lw->hooked)
                return 0;
        lw->hooked = true;
        fixture_gate(lw->fx);
        if (lw->expire) {
                pthread_mutex_lock(&lw->mu);
                lw->fx->now_usec = lw->g->lend.info.deadline_usec;
                (void) mg_set_process(lw->set);
                pthread_mutex_unlock(&lw->mu);
        }
        return 0;
}

static void *lock_writer_run(void *ud) {
        struct lock_writer *lw = ud;
        lw->r = write_mem("snap", lw->img, lw->len, &lw->o, NULL);
        snprintf(lw->high_after, sizeof(lw->high_after), "%s", fixture_read(lw->fx, "memory.high"));
        return NULL;
}

Test(snapshot, lend_end_writes_without_the_lock) {
        struct fixture fx, other;
        struct mg_guard_options go;
        struct lock_writer lw = { .mu = PTHREAD_MUTEX_INITIALIZER, .fx = &fx };
        mg_guard *b;
        pthread_t t;
        size_t len = 2 * MG_MIB;
        uint8_t *img = make_image(len, 17);
        fixture_init(&fx);
        fixture_init(&other);
        fixture_write(&fx, "memory.high", "241172480\n");
        cr_assert_eq(mg_set_new(NULL, &lw.set), 0);
        cr_assert_eq(mg_guard_options_init(&go, 256 * MG_MIB), 0);
        cr_assert_eq(mg_guard_new_internal(fx.dir, &go, MG_CGROUP_ANY_FS, &fx.io, &lw.g), 0);
        cr_assert_eq(mg_guard_new_internal(other.dir, &go, MG_CGROUP_ANY_FS, &other.io, &b), 0);
        mg_guard_set_clock(lw.g, fixture_clock, &fx);
        mg_guard_set_clock(b, fixture_clock, &fx);
        cr_assert_eq(mg_set_add_guard(lw.set, lw.g), 0);
        cr_assert_eq(mg_set_add_guard(lw.set, b), 0);
        lw.img = img;
        lw.len = len;
        lw.o = opts(MG_SNAPSHOT_AUTO);
        lw.o.guard = lw.g;
        lw.o.lock = mutex_lock_fn;
        lw.o.lock_userdata = &lw;
        snap_seam.fault = gate_mid_write;
        snap_seam.userdata = &lw;

        for (int part = 0; part < 2; part++) {
                lw.expire = part == 1;
                lw.hooked = false;
                cr_assert_eq(pthread_create(&t, NULL, lock_writer_run, &lw), 0);
                cr_assert(fixture_gate_wait(&fx, 1, 10000), "part %d: the restore never reached memory.high", part);
                if (part == 0) {
                        /* the lock is free during the write: the set ticks,
                         * and its other guard's overshoot is killed */
                        fixture_current(&other, 300 * MG_MIB);
                        fixture_stat(&other, 290 * MG_MIB, 0, 3 * MG_MIB, 0, 0, 0, 0);
                        uint64_t t0 = mg_mono_usec();
                        pthread_mutex_lock(&lw.mu);
                        cr_expect_lt(mg_mono_usec() - t0, 1000000, "the write held the lock over its restore");
                        fx.now_usec += 1000000;
                        (void) mg_set_process(lw.set);
                        pthread_mutex_unlock(&lw.mu);
                        cr_expect_str_eq(fixture_read(&other, "cgroup.kill"), "1");
                }
                (void) poll(NULL, 0, 100);
                cr_expect_str_neq(lw.high_after, "241172480", "part %d: the write returned before its restore", part);
                fixture_gate_open(&fx, 1);
                pthread_join(t, NULL);
                cr_expect_eq(lw.r, 0, "part %d: %s", part, last_log);
                cr_expect_str_eq(lw.high_after, "241172480", "part %d: memory.high when the write returned", part);
                if (part == 1)
                        cr_expect(strstr(last_log, "lend already over") != NULL, "%s", last_log);
                for (int i = 0; i < 5000 && mg_guard_is_lent(lw.g); i++) {
                        pthread_mutex_lock(&lw.mu);
                        (void) mg_set_process(lw.set);
                        pthread_mutex_unlock(&lw.mu);
                        (void) poll(NULL, 0, 1);
                }
                cr_expect(!mg_guard_is_lent(lw.g), "part %d", part);
                cr_expect_eq(fixture_load(&fx.gate_timeouts), 0, "part %d", part);
                lw.high_after[0] = '\0';
                fixture_ungate(&fx); /* the next write's lend begins ungated */
        }
        mg_set_free(lw.set);
        fixture_cleanup(&fx);
        fixture_cleanup(&other);
        munmap(img, len);
}

/* ---- the AIO context ----------------------------------------------------- */

/* The process's AIO rings in /proc/self/maps (anon inode "[aio]"); the
 * address of the last in *ret_addr. */
static int aio_rings(unsigned long *ret_addr) {
        FILE *f = fopen("/proc/self/maps", "re");
        char line[512];
        int n = 0;
        cr_assert_not_null(f);
        while (fgets(line, sizeof(line), f))
                if (strstr(line, "/[aio]")) {
                        n++;
                        if (ret_addr)
                                *ret_addr = strtoul(line, NULL, 16);
                }
        fclose(f);
        return n;
}

struct restorer {
        uint8_t *back;
        size_t len;
        int r;
};

static void *restore_run(void *ud) {
        struct restorer *rs = ud;
        rs->r = restore_mem("snap", rs->back, rs->len, NULL, NULL);
        return NULL;
}

/* io_destroy() waits out RCU grace periods (tens of ms), so the context of
 * a direct write or restore is kept for the next (snapshot/aio.c): one per
 * process whatever the number of calls and threads, taken again by the
 * next call, never by a child after fork(), whose own restore works. */
Test(snapshot, aio_context_kept_one_per_process) {
        size_t len = 4 * MG_MIB;
        uint8_t *img = make_image(len, 31);
        struct restorer rs[4];
        struct mg_snapshot_stats st;
        unsigned long a1 = 0, a2 = 0;
        pthread_t t[4];

        cr_assert_eq(write_mem("snap", img, len, NULL, &st), 0, "%s", last_log);
        if (st.method != MG_SNAPSHOT_DIRECT)
                cr_skip_test("no direct I/O here (method %s): no AIO context",
                             mg_snapshot_method_to_string(st.method));
        for (int i = 0; i < 4; i++)
                rs[i] = (struct restorer) { .back = map(len), .len = len };
        cr_expect_eq(aio_rings(&a1), 1, "the write's context kept");
        cr_assert_eq(restore_mem("snap", rs[0].back, len, NULL, &st), 0, "%s", last_log);
        cr_expect_eq(aio_rings(&a2), 1);
        cr_expect_eq(a1, a2, "taken again, not made anew");
        for (int i = 0; i < 4; i++)
                cr_assert_eq(pthread_create(&t[i], NULL, restore_run, &rs[i]), 0);
        for (int i = 0; i < 4; i++) {
                pthread_join(t[i], NULL);
                cr_expect_eq(rs[i].r, 0, "thread %d: %s", i, strerror(-rs[i].r));
                cr_expect_eq(memcmp(img, rs[i].back, len), 0);
        }
        cr_expect_eq(aio_rings(NULL), 1, "four at once, one kept after");
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
                memset(rs[0].back, 0, len);
                int r = restore_mem("snap", rs[0].back, len, NULL, NULL);
                _exit(r == 0 && memcmp(img, rs[0].back, len) == 0 ? 0 : 1);
        }
        int status;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's restore");
        cr_assert_eq(restore_mem("snap", rs[0].back, len, NULL, NULL), 0, "%s", last_log);
        cr_expect_eq(aio_rings(NULL), 1);
        for (int i = 0; i < 4; i++)
                munmap(rs[i].back, len);
        munmap(img, len);
}

/* ---- many cycles --------------------------------------------------------- */

Test(snapshot, hundred_cycles_leave_no_trace) {
        size_t len = 1 * MG_MIB;
        uint8_t *img = map(len), *back = map(len);
        int keep = openat(dfd, "keep", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        int fds_before, fds_after;
        close(keep);
        cr_assert_eq(deleted_fds(&fds_before), 0);
        for (int i = 0; i < 100; i++) {
                uint32_t method = methods[i % 5];
                struct mg_snapshot_options o = opts(method);
                memset(img, 0, len);
                for (size_t p = 0; p < len / page; p++)
                        if ((p + (size_t) i) % 3)
                                fill_page(img + p * page, p, (uint64_t) i);
                int r = write_mem("snap", img, len, &o, NULL);
                if (r == -EOPNOTSUPP)
                        r = write_mem("snap", img, len, NULL, NULL);
                cr_assert_eq(r, 0, "cycle %d: %s", i, strerror(-r));
                cr_assert_eq(restore_mem("snap", back, len, NULL, NULL), 0, "cycle %d", i);
                cr_assert_eq(memcmp(img, back, len), 0, "cycle %d", i);
        }
        cr_expect_eq(deleted_fds(&fds_after), 0, "an fd to a deleted file");
        cr_expect_eq(fds_after, fds_before);
        cr_expect_leq(aio_rings(NULL), 1, "at most the one AIO context kept");
        cr_expect_eq(count_entries(), 2);
        cr_assert_eq(unlinkat(dfd, "snap", 0), 0);
        cr_expect_eq(count_entries(), 1, "back to the starting contents");
        cr_expect(has_entry("keep"));
        munmap(img, len);
        munmap(back, len);
}
