/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baseline.h"

int base_init(struct base *b, enum base_kind kind, const char *dir, uint64_t limit_bytes) {
        *b = (struct base) { .kind = kind, .dirfd = -1, .limit_bytes = limit_bytes };
        snprintf(b->dir, sizeof(b->dir), "%s", dir);
        if (kind == BASE_OPENAT) {
                b->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (b->dirfd < 0)
                        return -errno;
        }
        return 0;
}

void base_fini(struct base *b) {
        if (b->dirfd >= 0)
                close(b->dirfd);
        b->dirfd = -1;
}

static int decide(const struct base *b, uint64_t current, uint64_t used) {
        return used > b->limit_bytes && current > b->limit_bytes ? BASE_OVERSHOOT : BASE_NEAR;
}

/* ---- stdio ---------------------------------------------------------- */

static int stdio_current(struct base *b, uint64_t *ret) {
        char path[4200], line[64];
        FILE *f;
        int r = -EBADMSG;

        snprintf(path, sizeof(path), "%s/memory.current", b->dir);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        b->opens++;
        /* NOLINTNEXTLINE(cert-err34-c): the stdio baseline is this naive reader, on purpose */
        if (fgets(line, sizeof(line), f) && sscanf(line, "%" SCNu64, ret) == 1)
                r = 0;
        fclose(f);
        b->closes++;
        return r;
}

static int stdio_used(struct base *b, uint64_t *ret) {
        char path[4200], line[256], key[64];
        uint64_t v, used = 0;
        FILE *f;

        snprintf(path, sizeof(path), "%s/memory.stat", b->dir);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        b->opens++;
        while (fgets(line, sizeof(line), f)) {
                /* NOLINTNEXTLINE(cert-err34-c): the stdio baseline is this naive reader, on purpose */
                if (sscanf(line, "%63s %" SCNu64, key, &v) != 2)
                        continue;
                if (strcmp(key, "anon") == 0 || strcmp(key, "shmem") == 0 || strcmp(key, "kernel") == 0 ||
                    strcmp(key, "sock") == 0)
                        used += v;
        }
        fclose(f);
        b->closes++;
        *ret = used;
        return 0;
}

/* ---- openat from a directory fd ------------------------------------- */

static ssize_t read_at(struct base *b, const char *name, char *buf, size_t size) {
        size_t off = 0;
        ssize_t n;
        int fd = openat(b->dirfd, name, O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return -errno;
        b->opens++;
        /* Read to EOF, as a read-the-whole-file helper does. */
        while (off < size - 1 && (n = read(fd, buf + off, size - 1 - off)) > 0)
                off += (size_t) n;
        close(fd);
        b->closes++;
        buf[off] = '\0';
        return (ssize_t) off;
}

static int openat_current(struct base *b, uint64_t *ret) {
        char buf[64], *end;
        ssize_t n = read_at(b, "memory.current", buf, sizeof(buf));

        if (n < 0)
                return (int) n;
        *ret = strtoull(buf, &end, 10);
        return end == buf ? -EBADMSG : 0;
}

uint64_t base_used_scan(const char *buf, size_t len) {
        static const struct {
                const char *k;
                size_t len;
        } want[] = { { "anon ", 5 }, { "shmem ", 6 }, { "kernel ", 7 }, { "sock ", 5 } };
        uint64_t used = 0;

        for (const char *p = buf; p < buf + len;) {
                const char *nl = memchr(p, '\n', (size_t) (buf + len - p));
                for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
                        if (strncmp(p, want[i].k, want[i].len) == 0)
                                used += strtoull(p + want[i].len, NULL, 10);
                if (!nl)
                        break;
                p = nl + 1;
        }
        return used;
}

static int openat_used(struct base *b, uint64_t *ret) {
        char buf[8192];
        ssize_t n = read_at(b, "memory.stat", buf, sizeof(buf));

        if (n < 0)
                return (int) n;
        *ret = base_used_scan(buf, (size_t) n);
        return 0;
}

int base_tick(struct base *b) {
        uint64_t current = 0, used = 0;
        int r;

        r = b->kind == BASE_STDIO ? stdio_current(b, &current) : openat_current(b, &current);
        if (r < 0)
                return r;
        if (current < b->limit_bytes - b->limit_bytes / 16)
                return BASE_FAST;
        r = b->kind == BASE_STDIO ? stdio_used(b, &used) : openat_used(b, &used);
        if (r < 0)
                return r;
        return decide(b, current, used);
}
