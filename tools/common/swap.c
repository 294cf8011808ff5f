/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Swap areas (swap.h).  Kernel behaviour:
 *  - swapon(2) reads the first page of the device or file: the header
 *    (mm/swapfile.c, read_swap_header()) is version 1, last_page, no bad
 *    pages, and "SWAPSPACE2" in the last ten bytes of the page.  A file
 *    must have no holes (its extents are mapped once, at swapon, and
 *    written without the file system), so it is written with zeros.
 *  - Pages go to the active device of highest priority that has room
 *    (swap_avail_heads is sorted by priority), so zram at a higher
 *    priority than the swapfile takes everything while it is on, and the
 *    swapfile only what zram's disksize does not hold.
 *  - swapoff(2) reads every page back in before it returns; zram's reset
 *    (writing its "reset" file) frees the compressed pool and zeroes the
 *    counters of mm_stat, and refuses (EBUSY) while the device is swapped on.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/swap.h>
#include <unistd.h>

#include "cgdir.h"
#include "scenario.h"
#include "swap.h"
#include "util.h"

/* Neither is a string: the header holds their bytes, no NUL. */
static const char swap_magic[10] = { 'S', 'W', 'A', 'P', 'S', 'P', 'A', 'C', 'E', '2' };
static const char swap_label[8] = { 'm', 'e', 'm', 'g', 'u', 'a', 'r', 'd' };

static size_t page_size(void) {
        long p = sysconf(_SC_PAGESIZE);
        return p > 0 ? (size_t) p : 4096;
}

int mgt_mkswap(const char *path, uint64_t bytes) {
        size_t ps = page_size();
        uint64_t pages = bytes / ps;
        uint8_t *hdr;
        int fd, r = 0;

        if (pages < 10 || pages - 1 > UINT32_MAX)
                return -EINVAL;
        hdr = calloc(1, ps);
        if (!hdr)
                return -ENOMEM;
        /* union swap_header's info, after 1024 bytes of boot block */
        uint32_t version = 1, last_page = (uint32_t) (pages - 1), nr_badpages = 0;
        memcpy(hdr + 1024, &version, 4);
        memcpy(hdr + 1028, &last_page, 4);
        memcpy(hdr + 1032, &nr_badpages, 4);
        memcpy(hdr + 1052, swap_label, sizeof(swap_label)); /* the volume label, after the 16-byte uuid */
        memcpy(hdr + ps - sizeof(swap_magic), swap_magic, sizeof(swap_magic));
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0) {
                r = -errno;
        } else {
                if (pwrite(fd, hdr, ps, 0) != (ssize_t) ps)
                        r = errno ? -errno : -EIO;
                if (r == 0 && fsync(fd) < 0)
                        r = -errno;
                close(fd);
        }
        free(hdr);
        return r;
}

static bool has_header(const char *path) {
        size_t ps = page_size();
        char magic[10];
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        bool ok;

        if (fd < 0)
                return false;
        ok = pread(fd, magic, sizeof(magic), (off_t) (ps - sizeof(magic))) == (ssize_t) sizeof(magic) &&
             memcmp(magic, swap_magic, sizeof(magic)) == 0;
        close(fd);
        return ok;
}

/* The line of path in /proc/swaps ("Filename Type Size Used Priority"),
 * or NULL; buf holds the file. */
static const char *swaps_line(const char *path, char *buf, size_t size) {
        char real[PATH_MAX];
        ssize_t n = mgt_cg_read("/proc", "swaps", buf, size);
        size_t len;

        if (n <= 0)
                return NULL;
        if (!realpath(path, real))
                snprintf(real, sizeof(real), "%s", path);
        len = strlen(real);
        for (char *line = strchr(buf, '\n'); line && line[1]; line = strchr(line + 1, '\n'))
                if (strncmp(line + 1, real, len) == 0 && (line[1 + len] == ' ' || line[1 + len] == '\t'))
                        return line + 1;
        return NULL;
}

bool mgt_swap_active(const char *path) {
        char buf[4096];
        return swaps_line(path, buf, sizeof(buf)) != NULL;
}

uint64_t mgt_swap_used_kib(const char *path) {
        char buf[4096];
        const char *p = swaps_line(path, buf, sizeof(buf));

        /* past the name, the type and the size */
        for (int field = 0; field < 3 && p; field++) {
                p = strpbrk(p, " \t");
                p = p ? p + strspn(p, " \t") : NULL;
        }
        return p ? strtoull(p, NULL, 10) : 0;
}

int mgt_swapon(const char *path, uint32_t prio) {
        int flags = SWAP_FLAG_PREFER | (int) ((prio << SWAP_FLAG_PRIO_SHIFT) & SWAP_FLAG_PRIO_MASK);
        return swapon(path, flags) < 0 ? -errno : 0;
}

int mgt_swapoff(const char *path) {
        if (!mgt_swap_active(path))
                return 0;
        return swapoff(path) < 0 ? -errno : 0;
}

int mgt_swapfile_make(const char *path, uint64_t mib) {
        static char zero[1 << 20];
        struct stat st;
        int fd, r = 0;

        if (mgt_swap_active(path))
                return 0;
        if (stat(path, &st) == 0 && (uint64_t) st.st_size == mib * MG_MIB && has_header(path))
                return 0;
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        for (uint64_t i = 0; i < mib && r == 0; i++)
                if (write(fd, zero, sizeof(zero)) != (ssize_t) sizeof(zero))
                        r = errno ? -errno : -EIO;
        if (r == 0 && fsync(fd) < 0)
                r = -errno;
        close(fd);
        if (r == 0)
                r = mgt_mkswap(path, mib * MG_MIB);
        if (r == 0)
                mgt_drop_cache(path);
        return r;
}

int mgt_zram_reset(const char *dev, const char *sys, uint64_t mib) {
        int r = mgt_swapoff(dev);

        if (r < 0)
                return r;
        if ((r = mgt_cg_write(sys, "reset", "1")) < 0)
                return r;
        if ((r = mgt_cg_writef(sys, "disksize", "%" PRIu64, mib * MG_MIB)) < 0)
                return r;
        return mgt_mkswap(dev, mib * MG_MIB);
}

int mgt_zram_stat(const char *sys, uint64_t *ret_orig, uint64_t *ret_compr) {
        char buf[256];
        unsigned long long orig, compr;
        ssize_t n = mgt_cg_read(sys, "mm_stat", buf, sizeof(buf));

        if (n < 0)
                return (int) n;
        /* orig_data_size compr_data_size mem_used_total ... (bytes) */
        if (sscanf(buf, "%llu %llu", &orig, &compr) != 2) /* NOLINT(cert-err34-c): two counts, checked */
                return -EBADMSG;
        *ret_orig = orig;
        *ret_compr = compr;
        return 0;
}

void mgt_zram_algorithm(const char *sys, char *buf, size_t size) {
        char alg[256];
        const char *open_b, *close_b;

        snprintf(buf, size, "?");
        if (mgt_cg_read(sys, "comp_algorithm", alg, sizeof(alg)) <= 0)
                return;
        /* "lzo [lzo-rle] lz4 ...": the one in use is bracketed */
        open_b = strchr(alg, '[');
        close_b = open_b ? strchr(open_b, ']') : NULL;
        if (open_b && close_b)
                snprintf(buf, size, "%.*s", (int) (close_b - open_b - 1), open_b + 1);
}
