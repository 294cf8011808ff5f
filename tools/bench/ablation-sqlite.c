/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The SQLite canary (ablation.h): SQLite embedded in the canary process, as
 * seed 002 ran it, over a database of `rows` rows with `payload`-byte blobs
 * and a second, indexed key column.  A request is `queries` point queries
 * by that key (the index's B-tree, then the table's by rowid), each
 * reading its blob.
 *
 * With 4 KiB pages a 1,536-byte row fits in its table leaf (SQLite spills
 * a row to overflow pages only above about 4,000 bytes of payload), two
 * rows a leaf: 80,000 rows are about 160 MiB.  The canary reads the whole
 * file once before it is ready, so that its page cache is charged to its
 * own cgroup (the first to read a page pays for it) and a query misses
 * only what reclaim took from it since.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "ablation.h"
#include "util.h"

#define KEY_OFFSET 1000000 /* keys are rowid + this: the index is not the rowid */

/* 1 if path holds a database of this shape, 0 if not. */
static int db_matches(const char *path, uint32_t rows, uint32_t payload) {
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        int ok = 0;

        if (access(path, R_OK) < 0)
                return 0;
        if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
            sqlite3_prepare_v2(db, "SELECT rows, payload FROM meta", -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
                ok = sqlite3_column_int64(st, 0) == rows && sqlite3_column_int64(st, 1) == payload;
        sqlite3_finalize(st);
        sqlite3_close(db);
        return ok;
}

static int exec(sqlite3 *db, const char *sql) {
        char *err = NULL;
        int r = sqlite3_exec(db, sql, NULL, NULL, &err);
        if (r != SQLITE_OK)
                fprintf(stderr, "bench-ablation: sqlite: %s: %s\n", sql, err ? err : sqlite3_errstr(r));
        sqlite3_free(err);
        return r == SQLITE_OK ? 0 : -EIO;
}

int abl_db_make(const char *path, uint32_t rows, uint32_t payload) {
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        uint64_t rng = 0x5EED5EED5EEDULL;
        uint8_t *blob;
        char tmp[PATH_MAX + 8], meta[128];
        int r = -EIO;

        if (rows == 0 || payload == 0)
                return -EINVAL;
        if (db_matches(path, rows, payload))
                return 0;
        if ((size_t) snprintf(tmp, sizeof(tmp), "%s.new", path) >= sizeof(tmp))
                return -ENAMETOOLONG;
        (void) unlink(tmp);
        blob = malloc(payload);
        if (!blob)
                return -ENOMEM;
        if (sqlite3_open(tmp, &db) != SQLITE_OK)
                goto out;
        /* Built once, thrown away with the guest: no journal, no syncs
         * until the end. */
        if (exec(db, "PRAGMA page_size=4096; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;") < 0 ||
            exec(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER NOT NULL, payload BLOB NOT NULL);"
                     "CREATE TABLE meta(rows INTEGER, payload INTEGER); BEGIN;") < 0)
                goto out;
        if (sqlite3_prepare_v2(db, "INSERT INTO t(id, k, payload) VALUES(?1, ?2, ?3)", -1, &st, NULL) != SQLITE_OK)
                goto out;
        for (uint32_t i = 0; i < rows; i++) {
                for (uint32_t b = 0; b < payload; b += 8) {
                        uint64_t x = abl_rand(&rng);
                        memcpy(blob + b, &x, payload - b < 8 ? payload - b : 8);
                }
                sqlite3_bind_int64(st, 1, i);
                sqlite3_bind_int64(st, 2, (sqlite3_int64) i + KEY_OFFSET);
                sqlite3_bind_blob(st, 3, blob, (int) payload, SQLITE_STATIC);
                if (sqlite3_step(st) != SQLITE_DONE) {
                        fprintf(stderr, "bench-ablation: sqlite insert: %s\n", sqlite3_errmsg(db));
                        goto out;
                }
                sqlite3_reset(st);
        }
        snprintf(meta, sizeof(meta), "INSERT INTO meta VALUES(%" PRIu32 ", %" PRIu32 "); COMMIT;", rows, payload);
        if (exec(db, meta) < 0 || exec(db, "CREATE INDEX t_k ON t(k);") < 0)
                goto out;
        r = 0;
out:
        sqlite3_finalize(st);
        if (db && sqlite3_close(db) != SQLITE_OK && r == 0)
                r = -EIO;
        free(blob);
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                (void) unlink(tmp);
        return r == 0 ? 1 : r;
}

struct canary {
        sqlite3 *db;
        sqlite3_stmt *st;
        uint32_t rows, queries;
        uint64_t rng;
        volatile uint64_t sink;
};

static int query_work(void *ud) {
        struct canary *c = ud;
        uint64_t sum = 0;
        int r = 0;

        for (uint32_t q = 0; q < c->queries; q++) {
                sqlite3_int64 k = (sqlite3_int64) (abl_rand(&c->rng) % c->rows) + KEY_OFFSET;
                sqlite3_bind_int64(c->st, 1, k);
                if (sqlite3_step(c->st) == SQLITE_ROW) {
                        const uint8_t *b = sqlite3_column_blob(c->st, 0);
                        int n = sqlite3_column_bytes(c->st, 0);
                        for (int i = 0; b && i < n; i += 64)
                                sum += b[i];
                } else {
                        r = -EIO;
                }
                sqlite3_reset(c->st);
        }
        c->sink = sum;
        return r;
}

/* Reads the file through, so its page cache is charged here. */
static void warm(const char *path) {
        static char buf[1 << 20];
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return;
        (void) posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        while (read(fd, buf, sizeof(buf)) > 0)
                ;
        close(fd);
}

int abl_role_sqlite(int argc, char **argv) {
        const char *path = abl_arg_str(argc, argv, "db", NULL);
        struct canary c = {
                .rows = (uint32_t) abl_arg_u64(argc, argv, "rows", 80000),
                .queries = (uint32_t) abl_arg_u64(argc, argv, "queries", 8),
                .rng = abl_arg_u64(argc, argv, "seed", 1) * UINT64_C(0x9E3779B97F4A7C15) | 1,
        };
        uint32_t period = (uint32_t) abl_arg_u64(argc, argv, "period_ms", 100);
        uint32_t max_s = (uint32_t) abl_arg_u64(argc, argv, "max_s", 600);
        int r;

        if (!path || c.rows == 0 || c.queries == 0 || period == 0)
                return 2;
        if (abl_arg_u64(argc, argv, "warm", 1))
                warm(path);
        if (sqlite3_open_v2(path, &c.db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
            sqlite3_prepare_v2(c.db, "SELECT payload FROM t WHERE k = ?1", -1, &c.st, NULL) != SQLITE_OK) {
                fprintf(stderr, "bench-ablation: sqlite %s: %s\n", path, c.db ? sqlite3_errmsg(c.db) : "open");
                sqlite3_close(c.db);
                return 1;
        }
        /* The schema and the first pages read before the first request. */
        (void) query_work(&c);
        r = abl_canary_loop("sqlite", query_work, &c, period, max_s);
        sqlite3_finalize(c.st);
        sqlite3_close(c.db);
        return r < 0 ? 1 : 0;
}
