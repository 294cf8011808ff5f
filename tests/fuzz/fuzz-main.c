/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Replays inputs through a fuzz target without libFuzzer, so the seed corpus
 * runs in the unit suite under any compiler (and under ASan+UBSan in CI).
 * Each argument is a file or a directory of files; every input is copied
 * into a buffer of exactly its size, so a read past the end is an ASan
 * error as it is under libFuzzer.  Prints TAP: one line per input.
 *
 * Usage: fuzz-TARGET FILE|DIR...
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

/* Inputs are small: parsers read one cgroup file or one snapshot header. */
#define FUZZ_MAX_INPUT (1 << 20)

static int n_run, n_failed;

static int replay_file(int dirfd, const char *name, const char *shown) {
        struct stat st;
        uint8_t *buf;
        ssize_t n;
        int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);

        if (fd < 0 || fstat(fd, &st) < 0 || st.st_size > FUZZ_MAX_INPUT) {
                printf("not ok %d - %s: %s\n", ++n_run, shown, fd < 0 ? strerror(errno) : "unreadable or too big");
                n_failed++;
                if (fd >= 0)
                        close(fd);
                return -1;
        }
        /* malloc(0) may return NULL: keep one byte, pass the true size */
        buf = malloc(st.st_size ? (size_t) st.st_size : 1);
        if (!buf)
                abort();
        n = read(fd, buf, (size_t) st.st_size);
        close(fd);
        if (n != st.st_size) {
                printf("not ok %d - %s: short read\n", ++n_run, shown);
                n_failed++;
                free(buf);
                return -1;
        }
        (void) LLVMFuzzerTestOneInput(buf, (size_t) n); /* aborts on a failed check */
        free(buf);
        printf("ok %d - %s\n", ++n_run, shown);
        return 0;
}

static int cmp_names(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* Runs every regular file of a directory, in name order. */
static void replay_dir(const char *path) {
        char *names[4096], shown[1024];
        size_t n = 0;
        struct dirent *de;
        DIR *d = opendir(path);

        if (!d) {
                printf("not ok %d - %s: %s\n", ++n_run, path, strerror(errno));
                n_failed++;
                return;
        }
        while ((de = readdir(d)) && n < sizeof(names) / sizeof(names[0]))
                if (de->d_name[0] != '.' && (de->d_type == DT_REG || de->d_type == DT_UNKNOWN))
                        names[n++] = strdup(de->d_name);
        qsort(names, n, sizeof(names[0]), cmp_names);
        for (size_t i = 0; i < n; i++) {
                snprintf(shown, sizeof(shown), "%s/%s", path, names[i]);
                (void) replay_file(dirfd(d), names[i], shown);
                free(names[i]);
        }
        closedir(d);
}

int main(int argc, char **argv) {
        setvbuf(stdout, NULL, _IOLBF, 0);
        printf("TAP version 13\n");
        for (int i = 1; i < argc; i++) {
                struct stat st;
                if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
                        replay_dir(argv[i]);
                else
                        (void) replay_file(AT_FDCWD, argv[i], argv[i]);
        }
        if (n_run == 0) {
                /* an empty corpus is a broken test, not a pass */
                printf("1..0 # no inputs\n");
                return 1;
        }
        printf("1..%d\n", n_run);
        return n_failed ? 1 : 0;
}
