/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config-load.h"

/* Reads path whole into buf (MGT_CONFIG_MAX_BYTES).  Returns its length,
 * or a negative errno with err written. */
static ssize_t read_file(const char *path, char *buf, char *err, size_t err_len) {
        size_t len = 0;
        int fd = open(path, O_RDONLY | O_CLOEXEC), r;

        if (fd < 0) {
                r = -errno;
                snprintf(err, err_len, "%s: %s", path, strerror(-r));
                return r;
        }
        for (;;) {
                ssize_t n = read(fd, buf + len, MGT_CONFIG_MAX_BYTES - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        r = -errno;
                        close(fd);
                        snprintf(err, err_len, "%s: %s", path, strerror(-r));
                        return r;
                }
                if (n == 0)
                        break;
                len += (size_t) n;
                if (len == MGT_CONFIG_MAX_BYTES) {
                        close(fd);
                        snprintf(err, err_len, "%s: larger than %zu bytes", path, MGT_CONFIG_MAX_BYTES - 1);
                        return -EFBIG;
                }
        }
        close(fd);
        return (ssize_t) len;
}

/* One file parsed, its settings merged over *s. */
static int load_one(const char *path, char *buf, struct mgt_settings *s, char *err, size_t err_len) {
        struct mgt_settings f;
        char why[320];
        ssize_t n = read_file(path, buf, err, err_len);

        if (n < 0)
                return (int) n;
        if (mgt_config_parse(buf, (size_t) n, &f, why, sizeof(why)) < 0) {
                snprintf(err, err_len, "%s: %s", path, why);
                return -EINVAL;
        }
        mgt_settings_merge(s, &f);
        return 0;
}

static int name_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

void mgt_config_dropins_free(char **names, int n) {
        if (!names)
                return;
        for (int i = 0; i < n; i++)
                free(names[i]);
        free(names);
}

int mgt_config_dropins(const char *dir, char ***ret_names) {
        static const char suffix[] = ".conf";
        char **names = NULL;
        struct dirent *de;
        int n = 0, r = 0;
        DIR *d = opendir(dir);

        *ret_names = NULL;
        if (!d)
                return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
        while ((errno = 0, de = readdir(d))) {
                size_t len = strlen(de->d_name);
                struct stat st;
                char **more;

                if (de->d_name[0] == '.' || len <= sizeof(suffix) - 1 ||
                    strcmp(de->d_name + len - (sizeof(suffix) - 1), suffix) != 0)
                        continue;
                /* A link to a file counts; a directory named x.conf does not. */
                if (fstatat(dirfd(d), de->d_name, &st, 0) < 0 || !S_ISREG(st.st_mode))
                        continue;
                if (n == MGT_CONFIG_MAX_DROPINS) {
                        r = -E2BIG;
                        break;
                }
                more = realloc(names, (size_t) (n + 1) * sizeof(*names));
                if (!more || !(more[n] = strdup(de->d_name))) {
                        names = more ? more : names;
                        r = -ENOMEM;
                        break;
                }
                names = more;
                n++;
        }
        if (r == 0 && errno != 0)
                r = -errno;
        closedir(d);
        if (r < 0) {
                mgt_config_dropins_free(names, n);
                return r;
        }
        if (n > 0)
                qsort(names, (size_t) n, sizeof(*names), name_cmp);
        *ret_names = names;
        return n;
}

int mgt_config_load(const char *path, struct mgt_settings *ret, char *err, size_t err_len) {
        struct mgt_settings s = {};
        char *buf, *dir = NULL, **names = NULL, file[PATH_MAX];
        int n = 0, r;

        buf = malloc(MGT_CONFIG_MAX_BYTES);
        if (!buf || asprintf(&dir, "%s.d", path) < 0) {
                free(buf);
                snprintf(err, err_len, "%s: %s", path, strerror(ENOMEM));
                return -ENOMEM;
        }
        r = load_one(path, buf, &s, err, err_len);
        if (r == 0) {
                n = mgt_config_dropins(dir, &names);
                r = n < 0 ? n : 0;
                if (r == -E2BIG)
                        snprintf(err, err_len, "%s: more than %d drop-ins", dir, MGT_CONFIG_MAX_DROPINS);
                else if (r < 0)
                        snprintf(err, err_len, "%s: %s", dir, strerror(-r));
        }
        for (int i = 0; r == 0 && names && i < n; i++) {
                if (snprintf(file, sizeof(file), "%s/%s", dir, names[i]) >= (int) sizeof(file)) {
                        snprintf(err, err_len, "%s/%.64s...: the path is too long", dir, names[i]);
                        r = -ENAMETOOLONG;
                        break;
                }
                r = load_one(file, buf, &s, err, err_len);
        }
        if (n > 0)
                mgt_config_dropins_free(names, n);
        free(dir);
        free(buf);
        if (r == 0)
                *ret = s;
        return r;
}
