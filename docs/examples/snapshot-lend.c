/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A snapshot of guest memory in a lend of its actor's guard: memory.high is
 * raised for the write and restored to its exact value before
 * mg_snapshot_write() returns, kills are paused meanwhile, and the page
 * cache the write makes stays bounded.  Then the image is restored into a
 * fresh mapping and compared.
 *
 *   cc -o snapshot-lend snapshot-lend.c $(pkg-config --cflags --libs memguard)
 *   ./snapshot-lend /sys/fs/cgroup/sandboxes/a /var/lib/snapshots
 *
 * The guest memory here is this process's own (64 MiB, mostly zero); a VMM
 * passes its guest RAM mapping, or the memfd behind it (MG_SNAPSHOT_FD).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <memguard/memguard.h>
#include <memguard/snapshot.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define GUEST_BYTES ((uint64_t) 64 << 20)

static void on_log(int level, const char *msg, void *userdata) {
        (void) userdata;
        if (level <= MG_LOG_INFO)
                fprintf(stderr, "memguard: %s\n", msg);
}

int main(int argc, char **argv) {
        struct mg_guard_options go;
        struct mg_snapshot_options so;
        struct mg_snapshot_stats st = { .size = sizeof(st) };
        struct mg_snapshot_source src = { .kind = MG_SNAPSHOT_MEMORY, .length = GUEST_BYTES };
        struct mg_snapshot_target dst = { .kind = MG_SNAPSHOT_MEMORY, .length = GUEST_BYTES };
        mg_guard *g = NULL;
        char *ram, *back;
        int dirfd = -1, r, ret = 1;

        if (argc != 3) {
                fprintf(stderr, "usage: %s CGROUP-DIR SNAPSHOT-DIR\n", argv[0]);
                return 2;
        }
        mg_guard_options_init(&go, 256u << 20);
        go.log = on_log;
        r = mg_guard_new(argv[1], &go, &g);
        if (r < 0) {
                fprintf(stderr, "%s: %s\n", argv[1], strerror(-r));
                return 1;
        }
        dirfd = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ram = mmap(NULL, GUEST_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        back = mmap(NULL, GUEST_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (dirfd < 0 || ram == MAP_FAILED || back == MAP_FAILED) {
                perror(argv[2]);
                goto out;
        }
        for (uint64_t off = 0; off < GUEST_BYTES; off += 1 << 20)
                snprintf(ram + off, 64, "guest page at %" PRIu64 " MiB", off >> 20);
        src.addr = ram;
        dst.addr = back;

        mg_snapshot_options_init(&so);
        so.guard = g; /* the write runs in a lend of it */
        so.log = on_log;
        r = mg_snapshot_write(&src, dirfd, "guest.snap", &so, &st);
        if (r < 0) {
                fprintf(stderr, "mg_snapshot_write: %s\n", strerror(-r));
                goto out;
        }
        printf("wrote %" PRIu64 " of %" PRIu64 " bytes (%" PRIu64 " zero) with %s, memory.high lent by %" PRIu64
               " bytes, in %" PRIu64 " ms\n",
               st.data_bytes, st.image_bytes, st.zero_bytes,
               mg_snapshot_method_to_string((enum mg_snapshot_method) st.method), st.lend_bytes, st.total_usec / 1000);

        st = (struct mg_snapshot_stats) { .size = sizeof(st) };
        r = mg_snapshot_restore(dirfd, "guest.snap", &dst, NULL, &st);
        if (r < 0) {
                fprintf(stderr, "mg_snapshot_restore: %s\n", strerror(-r));
                goto out;
        }
        if (memcmp(ram, back, GUEST_BYTES) != 0) {
                fprintf(stderr, "the restored image differs\n");
                goto out;
        }
        printf("restored and compared: identical\n");
        ret = 0;
out:
        if (dirfd >= 0)
                close(dirfd);
        mg_guard_free(g);
        return ret;
}
