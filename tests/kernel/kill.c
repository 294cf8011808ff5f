/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a kill cannot reach, on a real cgroup v2.
 *
 * empty-over-limit: memory charged to a cgroup that has no process left.
 *
 * Tree: <base>/empty-<n>, no memory.max, guard limit 64 MiB; a tmpfs
 * (size=200m) mounted by the scenario on a fresh directory under /tmp and
 * unmounted at the end.
 * 1. `mg-workload write FILE 96` runs in the cgroup, writes 96 MiB into a
 *    file on the tmpfs and exits: the cgroup holds 96 MiB of shmem
 *    (memory.stat shmem >= 96 MiB, memory.current > 64 MiB) and
 *    cgroup.events says populated 0.  The guard starts only then: while
 *    the writer writes it is a member over the limit, and a guard watching
 *    would rightly kill it.
 * 2. 8 s of the guard (a guard that did not look at populated wrote
 *    cgroup.kill again after every kill wait and hold-off: about 2.5 s).
 *    Expect: no write to cgroup.kill (counted through the I/O seam) and no
 *    kill record; exactly one MG_EVENT_EMPTY_OVER_LIMIT, whose report
 *    has used > 64 MiB and shmem >= 90 MiB.
 * 3. `mg-workload anon 160 256 -1` is started in the cgroup.  Expect: it
 *    is killed as an overshoot (SIGKILL, one cgroup.kill write, the cgroup
 *    empties), within 30 s.  The tmpfs file is still charged, so used is
 *    over the limit as soon as the process is there: the kill may come
 *    before it has allocated much; either way it is the usual rule.
 * Needs root (mount); the VM runs the suite as root.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ktest.h"
#include "guard.h"
#include "lend.h"
#include "tick.h"
#include "scenarios.h"

#define LIMIT (64 * MG_MIB)

/* Counts the guard's writes to its cgroup.kill, known by its inode (the
 * guard opens it when it reaches its limit, so its fd is not known ahead);
 * everything else is the system calls (NULL members of the seam). */
static struct {
        ino_t kill_ino;
        unsigned kill_writes;
} seam;

static ssize_t counting_pwrite(void *ud, int fd, const void *buf, size_t len, off_t off) {
        struct stat st;
        (void) ud;
        if (seam.kill_ino && fstat(fd, &st) == 0 && st.st_ino == seam.kill_ino)
                seam.kill_writes++;
        return pwrite(fd, buf, len, off);
}

static const struct mg_io counting_io = { .pwrite = counting_pwrite };

struct empty_run {
        struct mgt_events ev;
        pid_t pid;
        mg_set *set;            /* freed by the caller, whatever happened */
};

static bool killed_or_exited(void *ud) {
        struct empty_run *e = ud;
        return mgt_events_killed(&e->ev) || kt_wait(e->pid, 0) != -ETIMEDOUT;
}

static int empty_over_limit(const char *dir, struct empty_run *e) {
        struct mg_guard_options o;
        char file[300];
        mg_guard *g;
        const char *cg = kt_cg_new("empty");
        KT_CHECK(cg, "setup");
        snprintf(file, sizeof(file), "%s/left-behind", dir);

        /* 1. the only process writes 96 MiB into the tmpfs and exits */
        pid_t w = kt_spawn(cg, (const char *[]) { "write", file, "96", NULL });
        KT_CHECK(w > 0, "spawn writer: %s", strerror((int) -w));
        int st = kt_wait(w, 60 * MG_USEC_PER_SEC);
        KT_CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer status %d", st);
        KT_CHECK(mgt_cg_wait_populated(cg, 0, 5 * MG_USEC_PER_SEC) == 0, "the cgroup did not empty after the writer");
        uint64_t shmem = UINT64_MAX, cur = UINT64_MAX;
        (void) mgt_cg_read_key(cg, "memory.stat", "shmem", &shmem);
        (void) mgt_cg_read_u64(cg, "memory.current", &cur);
        kt_note("after the writer: shmem %" PRIu64 " KiB, memory.current %" PRIu64 " KiB, populated 0; %s",
                shmem >> 10, cur >> 10, kt_result(w));
        KT_CHECK(shmem != UINT64_MAX && shmem >= 96 * MG_MIB, "shmem %" PRIu64 ": the tmpfs file is not charged here",
                 shmem);
        KT_CHECK(cur != UINT64_MAX && cur > LIMIT, "memory.current %" PRIu64, cur);

        /* 2. the guard, on the empty cgroup */
        mg_set *s = e->set = kt_set_new();
        KT_CHECK(s, "set");
        KT_CHECK(mg_guard_options_init(&o, LIMIT) == 0, "options");
        int r = kt_guard_io(s, cg, &o, &counting_io, &e->ev, &g);
        KT_CHECK(r == 0, "guard: %s", strerror(-r));
        char kill_path[512];
        struct stat kst;
        snprintf(kill_path, sizeof(kill_path), "%s/cgroup.kill", cg);
        KT_CHECK(stat(kill_path, &kst) == 0, "stat %s", kill_path);
        seam.kill_ino = kst.st_ino;
        seam.kill_writes = 0;
        mgt_run(s, 8 * MG_USEC_PER_SEC, NULL, NULL, NULL);
        int kills = e->ev.n[MG_EVENT_KILL], empties = e->ev.n[MG_EVENT_EMPTY_OVER_LIMIT];
        unsigned writes = seam.kill_writes;
        kt_note("empty for 8 s: cgroup.kill writes %u, kill records %d, empty-over-limit events %d, errors %d", writes,
                kills, empties, e->ev.n[MG_EVENT_ERROR]);
        KT_CHECK(writes == 0, "cgroup.kill written %u times for an empty cgroup", writes);
        KT_CHECK(kills == 0, "%d kill records for an empty cgroup", kills);
        KT_CHECK(empties == 1, "%d empty-over-limit events, not one", empties);
        KT_CHECK(e->ev.empty.used_bytes > LIMIT, "reported used %" PRIu64, e->ev.empty.used_bytes);
        KT_CHECK(e->ev.empty.stat.shmem >= 90 * MG_MIB, "reported shmem %" PRIu64, e->ev.empty.stat.shmem);

        /* 3. a process appears and allocates over the limit */
        e->pid = kt_spawn(cg, (const char *[]) { "anon", "160", "256", "-1", NULL });
        KT_CHECK(e->pid > 0, "spawn: %s", strerror((int) -e->pid));
        bool k = mgt_run(s, 30 * MG_USEC_PER_SEC, killed_or_exited, NULL, e);
        for (uint64_t end = mg_mono_usec() + 5 * MG_USEC_PER_SEC; mg_mono_usec() < end && mg_guard_is_killing(g);)
                mgt_run(s, 50 * MG_USEC_PER_MSEC, NULL, NULL, NULL);
        writes = seam.kill_writes;
        empties = e->ev.n[MG_EVENT_EMPTY_OVER_LIMIT];
        e->set = mg_set_free(s);
        st = kt_wait(e->pid, 10 * MG_USEC_PER_SEC);
        kt_note("with a process: killed %d, reason %s, cgroup.kill writes %u, used %" PRIu64 " KiB (anon %" PRIu64
                " shmem %" PRIu64 " KiB), status 0x%x",
                e->ev.n[MG_EVENT_KILL], e->ev.n[MG_EVENT_KILL] ? mg_kill_reason_to_string(e->ev.kill.reason) : "-",
                writes, e->ev.kill.report.used_bytes >> 10, e->ev.kill.report.stat.anon >> 10,
                e->ev.kill.report.stat.shmem >> 10, (unsigned) st);
        KT_CHECK(k && e->ev.n[MG_EVENT_KILL] == 1, "the process was not killed (kill records %d)",
                 e->ev.n[MG_EVENT_KILL]);
        KT_CHECK(e->ev.kill.reason == MG_KILL_OVERSHOOT, "reason %d", e->ev.kill.reason);
        KT_CHECK(e->ev.kill.report.used_bytes > LIMIT, "used %" PRIu64, e->ev.kill.report.used_bytes);
        KT_CHECK(is_sigkill_status(st), "workload status %d", st);
        KT_CHECK(!e->ev.kill.empty_timed_out, "the cgroup did not empty after the kill");
        KT_CHECK(e->ev.kill.method != MG_KILL_CGROUP_KILL || writes == 1, "cgroup.kill written %u times", writes);
        KT_CHECK(empties == 1, "%d empty-over-limit events by the kill", empties);
        return KT_PASS;
}

int t_empty_over_limit(void) {
        char dir[] = "/tmp/memguard-kt-tmpfs-XXXXXX";
        char file[300];
        KT_CHECK(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
        if (mount("tmpfs", dir, "tmpfs", 0, "size=200m") < 0) {
                int err = errno;
                rmdir(dir);
                if (err == EPERM) {
                        snprintf(kt_skip_reason, sizeof(kt_skip_reason), "mounting a tmpfs needs root");
                        return KT_SKIP;
                }
                KT_CHECK(false, "mount tmpfs on %s: %s", dir, strerror(err));
        }
        struct empty_run e = {};
        int r = empty_over_limit(dir, &e);
        mg_set_free(e.set);
        /* the file's pages stay charged to the cgroup until it goes */
        snprintf(file, sizeof(file), "%s/left-behind", dir);
        unlink(file);
        if (umount(dir) < 0) {
                kt_note("umount %s: %s", dir, strerror(errno));
                (void) umount2(dir, MNT_DETACH);
        }
        rmdir(dir);
        return r;
}
