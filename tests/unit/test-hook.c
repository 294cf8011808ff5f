/* SPDX-License-Identifier: Apache-2.0 */
/*
 * watch's park hook runner (tools/memguard/hook.h) with no cgroup: a
 * shell script in a temp dir as the hook, its mode the first word after
 * the script in CMD, the "cgroup" a made-up path.  Each case starts a
 * runner, asks for runs and waits (poll on the runner's socket, bounded)
 * for the replies:
 *   exit 0 saved, exit 10 thaw, exit 3 failed, SIGTERM to itself a signal;
 *   the record on stdin whole, the cgroup the last argument, the
 *   environment; a hook that reads no stdin; 64 MiB of stdout kept to its
 *   tail and counted; a hook past its timeout and a cancelled one killed
 *   with their group (a child left in the background is gone too); at the
 *   timeout SIGTERM first: a hook that traps it cleans up and exits, one
 *   that ignores it is killed at the grace's end; a command that does not
 *   exist; two runs at once answered each; a run past the bound of runs at
 *   once refused; the runner's end when watch's socket closes.  CMD's
 *   parser too.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hook.h"

static char dir[] = "/tmp/mg-hook-XXXXXX";
static char script[256];

/* The test hook: its mode, then the cgroup.  The modes that set a trap
 * do it first, before the shell forks anything (dirname), and say so in
 * "trapped" after: under memcheck the shell is slow to start. */
static const char hook_sh[] =
        "#!/bin/sh\n"
        "case $1 in\n"
        "term) trap 'echo cleaned up > \"${0%/*}/cleaned\"; exit 0' TERM; echo $$ > \"${0%/*}/trapped\";"
        " sleep 300 & wait; exit 1 ;;\n"
        "noterm) trap '' TERM; echo $$ > \"${0%/*}/trapped\"; sleep 300 & echo $! > \"${0%/*}/bg\"; wait;"
        " echo exited > \"${0%/*}/exited\"; exit 1 ;;\n"
        "esac\n"
        "d=$(dirname \"$0\")\n"
        "case $1 in\n"
        "saved) cat > \"$d/stdin\"; echo \"$2\" > \"$d/args\"; env | grep -E '^(MEMGUARD_(CGROUP|PARK_ID|THAW_STATUS|TIMEOUT_MS)|NOTIFY_SOCKET|WATCHDOG_)' | sort > \"$d/env\";"
        " cat /proc/self/oom_score_adj > \"$d/oom\"; cut -d' ' -f19 /proc/self/stat > \"$d/nice\";"
        " echo saved it; exit 0 ;;\n"
        "thaw) echo raised memory.max; exit 10 ;;\n"
        "fail) echo first line; echo 'snapshot: no space left' >&2; exit 3 ;;\n"
        "signal) kill -TERM $$; sleep 5 ;;\n"
        "nostdin) exit 0 ;;\n"
        "huge) head -c 67108864 /dev/zero; echo the end; exit 0 ;;\n"
        "slow) echo $$ > \"$d/leader\"; sleep 300 & echo $! > \"$d/bg\"; sleep 300 ;;\n"
        "leave) sleep 300 & echo $! > \"$d/bg\"; exit 0 ;;\n"
        "esac\n"
        "exit 99\n";

static void setup(void) {
        cr_assert_not_null(mkdtemp(dir));
        snprintf(script, sizeof(script), "%s/hook.sh", dir);
        FILE *f = fopen(script, "w");
        cr_assert_not_null(f);
        fputs(hook_sh, f);
        fclose(f);
        cr_assert_eq(chmod(script, 0755), 0);
}

/* dir and its files (it holds no directory). */
static void teardown(void) {
        DIR *d = opendir(dir);
        struct dirent *de;

        while (d && (de = readdir(d)))
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                        (void) unlinkat(dirfd(d), de->d_name, 0);
        if (d)
                closedir(d);
        (void) rmdir(dir);
}

/* The pid a hook wrote to a file, 0 if none. */
static pid_t pid_in(const char *text) {
        char *end;
        long v = text ? strtol(text, &end, 10) : 0;
        return text && end != text && v > 0 ? (pid_t) v : 0;
}

TestSuite(hook, .init = setup, .fini = teardown, .timeout = 60);

static uint64_t now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static void start(struct mgt_hook_runner *r, const char *mode) {
        char cmd[400];
        snprintf(cmd, sizeof(cmd), "%s %s", script, mode);
        cr_assert_eq(mgt_hook_runner_start(r, cmd), 0);
}

/* The next reply within ms. */
static bool wait_reply(struct mgt_hook_runner *r, struct mgt_hook_reply *rep, uint64_t ms) {
        uint64_t end = now_ms() + ms;

        for (;;) {
                int e = mgt_hook_read(r, rep);
                cr_assert_geq(e, 0, "the runner is gone");
                if (e == 1)
                        return true;
                uint64_t now = now_ms();
                if (now >= end)
                        return false;
                struct pollfd p = { .fd = r->fd, .events = POLLIN };
                poll(&p, 1, (int) (end - now));
        }
}

static struct mgt_hook_reply run(const char *mode, uint64_t timeout_ms) {
        struct mgt_hook_runner r;
        struct mgt_hook_reply rep;
        int nice_was = getpriority(PRIO_PROCESS, 0);

        /* the runner at -5, as watch's unit at -10 (root only may) */
        if (getuid() == 0)
                (void) setpriority(PRIO_PROCESS, 0, -5);
        setenv("NOTIFY_SOCKET", "/run/systemd/notify", 1); /* watch's, not the hook's */
        start(&r, mode);
        unsetenv("NOTIFY_SOCKET");
        cr_assert_eq(mgt_hook_request(&r, 7, 3, "/sys/fs/cgroup/t/actor", "{\"event\":\"park\"}", timeout_ms * 1000), 0);
        (void) setpriority(PRIO_PROCESS, 0, nice_was);
        cr_assert(wait_reply(&r, &rep, 30000), "%s: a reply within 30 s", mode);
        cr_expect_eq(rep.seq, 7);
        mgt_hook_runner_stop(&r);
        return rep;
}

static char *slurp(const char *name) {
        static char buf[4096];
        char path[300];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        int fd = open(path, O_RDONLY);
        if (fd < 0)
                return NULL;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        /* The shell makes a file (its redirection) before it writes it:
         * empty is not written yet, for the polls that wait on it. */
        if (n <= 0)
                return NULL;
        buf[n] = '\0';
        return buf;
}

/* Whether pid is gone or a zombie (killed, not reaped yet by init). */
static bool dead(pid_t pid) {
        char path[64], buf[512];

        if (pid <= 0)
                return false;
        snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        for (int i = 0; i < 200; i++) {
                int fd = open(path, O_RDONLY);
                if (fd < 0)
                        return true;
                ssize_t n = read(fd, buf, sizeof(buf) - 1);
                close(fd);
                buf[n > 0 ? n : 0] = '\0';
                char *p = strrchr(buf, ')');
                if (p && (p[2] == 'Z' || p[2] == 'X'))
                        return true;
                usleep(10000);
        }
        return false;
}

Test(hook, exit_0_is_saved_with_the_record_the_cgroup_and_the_environment) {
        struct mgt_hook_reply rep = run("saved", 10000);
        cr_expect_eq(rep.result, MGT_HOOK_SAVED);
        cr_expect_eq(rep.code, 0);
        cr_expect_str_eq(rep.output, "saved it\n");
        cr_expect_eq(rep.output_bytes, 9);
        cr_expect_str_eq(slurp("stdin"), "{\"event\":\"park\"}\n", "the record and a newline on stdin");
        cr_expect_str_eq(slurp("args"), "/sys/fs/cgroup/t/actor\n", "the cgroup, the argument after CMD's");
        cr_expect_str_eq(slurp("env"),
                         "MEMGUARD_CGROUP=/sys/fs/cgroup/t/actor\nMEMGUARD_PARK_ID=3\nMEMGUARD_THAW_STATUS=10\n"
                         "MEMGUARD_TIMEOUT_MS=10000\n", "the hook's variables; not NOTIFY_SOCKET");
        cr_expect_str_eq(slurp("oom"), "0\n", "oom_score_adj back at 0");
        if (getuid() == 0)
                cr_expect_str_eq(slurp("nice"), "0\n", "nice back at 0 from the runner's -5");
        cr_expect_lt(rep.duration_usec, 10000000);
}

Test(hook, exit_10_is_thaw) {
        struct mgt_hook_reply rep = run("thaw", 10000);
        cr_expect_eq(rep.result, MGT_HOOK_THAW);
        cr_expect_eq(rep.code, MGT_HOOK_THAW_STATUS);
        cr_expect_str_eq(rep.output, "raised memory.max\n");
}

Test(hook, another_status_is_failed_with_stderr_in_the_output) {
        struct mgt_hook_reply rep = run("fail", 10000);
        cr_expect_eq(rep.result, MGT_HOOK_FAILED);
        cr_expect_eq(rep.code, 3);
        cr_expect_str_eq(rep.output, "first line\nsnapshot: no space left\n");
}

Test(hook, a_signal) {
        struct mgt_hook_reply rep = run("signal", 10000);
        cr_expect_eq(rep.result, MGT_HOOK_SIGNALED);
        cr_expect_eq(rep.code, SIGTERM);
}

Test(hook, a_hook_that_reads_no_stdin) {
        struct mgt_hook_runner r;
        struct mgt_hook_reply rep;
        /* a record past a pipe's 64 KiB would block a writer on a pipe */
        char *big = malloc(MGT_HOOK_RECORD_MAX + 1);
        memset(big, 'x', MGT_HOOK_RECORD_MAX);
        big[MGT_HOOK_RECORD_MAX] = '\0';
        start(&r, "nostdin");
        cr_assert_eq(mgt_hook_request(&r, 1, 1, "/cg", big, 10000000), 0);
        cr_assert(wait_reply(&r, &rep, 10000));
        cr_expect_eq(rep.result, MGT_HOOK_SAVED);
        cr_expect_eq(mgt_hook_request(&r, 2, 1, "/cg", "", 10000000), 0, "an empty record");
        cr_expect_eq(mgt_hook_request(&r, 3, 1, "/cg", (big[MGT_HOOK_RECORD_MAX - 1] = 'x', big), 10000000), 0);
        char *bigger = realloc(big, MGT_HOOK_RECORD_MAX + 2);
        cr_assert_not_null(bigger);
        big = bigger;
        big[MGT_HOOK_RECORD_MAX] = 'x';
        big[MGT_HOOK_RECORD_MAX + 1] = '\0';
        cr_expect_eq(mgt_hook_request(&r, 4, 1, "/cg", big, 10000000), -EMSGSIZE, "a record past the bound");
        cr_assert(wait_reply(&r, &rep, 10000));
        cr_assert(wait_reply(&r, &rep, 10000));
        free(big);
        mgt_hook_runner_stop(&r);
}

Test(hook, a_huge_stdout_is_read_to_its_end_and_its_tail_kept) {
        struct mgt_hook_reply rep = run("huge", 20000);
        cr_expect_eq(rep.result, MGT_HOOK_SAVED);
        cr_expect_eq(rep.output_bytes, 67108864 + 8);
        cr_expect_eq(rep.output_len, MGT_HOOK_OUTPUT_MAX);
        cr_expect_str_eq(rep.output + MGT_HOOK_OUTPUT_MAX - 8, "the end\n");
}

Test(hook, the_timeout_kills_the_group) {
        uint64_t t0 = now_ms();
        /* 2 s: under memcheck the hook's shell is slow to start its
         * background child and write its pid */
        struct mgt_hook_reply rep = run("slow", 2000);
        uint64_t took = now_ms() - t0;
        char *bg = slurp("bg");
        cr_expect_eq(rep.result, MGT_HOOK_TIMEOUT);
        cr_expect_geq(rep.duration_usec, 2000000);
        cr_expect_lt(took, 8000, "answered %lu ms after the request", (unsigned long) took);
        cr_assert_not_null(bg);
        cr_expect(dead(pid_in(bg)), "the hook's background child %s is killed with its group", bg);
}

static void unlink_in_dir(const char *name) {
        char path[300];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        (void) unlink(path);
}

/* A run of a trapping mode past its timeout.  A shell that had not set its
 * trap when SIGTERM came (a slow start: under memcheck) died of it without
 * a word, which proves nothing: then again with a 4 times longer timeout,
 * once.  The shell writes "trapped" after the trap, and a trapped SIGTERM
 * between the two still writes "cleaned". */
static struct mgt_hook_reply run_trapped(const char *mode, uint64_t *timeout_ms) {
        struct mgt_hook_reply rep;

        for (int attempt = 0;; attempt++) {
                static const char *const files[] = { "trapped", "cleaned", "bg", "exited" };
                for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
                        unlink_in_dir(files[i]);
                rep = run(mode, *timeout_ms);
                if (slurp("trapped") || slurp("cleaned") || attempt == 1)
                        return rep;
                *timeout_ms *= 4;
        }
}

Test(hook, the_timeout_sends_sigterm_first_and_a_hook_that_traps_it_cleans_up) {
        /* 4 s: its grace is 1 s (a quarter), the trap's time to write */
        uint64_t timeout_ms = 4000;
        struct mgt_hook_reply rep = run_trapped("term", &timeout_ms);
        cr_expect_eq(mgt_hook_grace_usec(timeout_ms * 1000), timeout_ms * 250);
        cr_assert_not_null(slurp("trapped"), "the hook's shell set its trap within %lu ms",
                           (unsigned long) timeout_ms);
        cr_expect_eq(rep.result, MGT_HOOK_TIMEOUT, "a timeout, though the hook exited 0 in its trap");
        cr_expect_eq(rep.code, 0);
        cr_expect_geq(rep.duration_usec, timeout_ms * 1000, "not before the timeout");
        cr_expect_str_eq(slurp("cleaned"), "cleaned up\n", "SIGTERM came, and the trap wrote its file whole");
}

Test(hook, a_hook_that_ignores_sigterm_is_killed_at_the_grace_end) {
        uint64_t timeout_ms = 2000, t0 = now_ms();
        struct mgt_hook_reply rep = run_trapped("noterm", &timeout_ms);
        uint64_t grace_usec = mgt_hook_grace_usec(timeout_ms * 1000), took = now_ms() - t0;
        char *leader = slurp("trapped");
        cr_assert_not_null(leader, "the hook's shell set its trap within %lu ms", (unsigned long) timeout_ms);
        pid_t lp = pid_in(leader);
        char *bg = slurp("bg");
        cr_expect_eq(rep.result, MGT_HOOK_TIMEOUT);
        cr_expect_eq(rep.code, 0);
        cr_expect_eq(grace_usec, timeout_ms * 250, "a quarter of the timeout, under 2 s");
        cr_expect_geq(rep.duration_usec, timeout_ms * 1000 + grace_usec, "SIGKILL not before the grace's end");
        /* poll's wake at the grace's end, then the leader reaped: a bound
         * far above that, not a measure */
        cr_expect_lt(took, 4 * timeout_ms + 8000, "answered %lu ms after the first request", (unsigned long) took);
        cr_expect(dead(lp), "the leader %d, ignoring SIGTERM, is killed", (int) lp);
        cr_assert_not_null(bg);
        cr_expect(dead(pid_in(bg)), "its background child %s, ignoring SIGTERM too, is killed with the group", bg);
        cr_expect_null(slurp("exited"), "the hook never got past its wait");
}

Test(hook, the_grace_is_a_quarter_of_the_timeout_at_most_2_s) {
        cr_expect_eq(mgt_hook_grace_usec(100000), 25000, "the shortest timeout, 100 ms");
        cr_expect_eq(mgt_hook_grace_usec(8000000), 2000000);
        cr_expect_eq(mgt_hook_grace_usec(30000000), 2000000, "the default timeout");
        cr_expect_eq(mgt_hook_grace_usec(UINT64_C(1800000000)), 2000000, "the longest");
}

Test(hook, what_the_hook_leaves_in_its_group_ends_with_it) {
        struct mgt_hook_reply rep = run("leave", 10000);
        char *bg = slurp("bg");
        cr_expect_eq(rep.result, MGT_HOOK_SAVED);
        cr_expect_lt(rep.duration_usec, 5000000, "not waiting for the background child's output");
        cr_assert_not_null(bg);
        cr_expect(dead(pid_in(bg)));
}

Test(hook, a_cancel_kills_the_group) {
        struct mgt_hook_runner r;
        struct mgt_hook_reply rep;
        start(&r, "slow");
        cr_assert_eq(mgt_hook_request(&r, 5, 1, "/cg", "{}", 60000000), 0);
        for (int i = 0; i < 500 && !slurp("bg"); i++)
                usleep(10000);
        cr_assert_eq(mgt_hook_cancel(&r, 5), 0);
        cr_assert(wait_reply(&r, &rep, 10000));
        cr_expect_eq(rep.seq, 5);
        cr_expect_eq(rep.result, MGT_HOOK_CANCELLED);
        char *bg = slurp("bg");
        cr_assert_not_null(bg);
        cr_expect(dead(pid_in(bg)));
        cr_expect_eq(mgt_hook_cancel(&r, 5), 0, "a cancel of a run that ended: nothing");
        mgt_hook_runner_stop(&r);
}

Test(hook, a_missing_command_says_why) {
        struct mgt_hook_runner r;
        struct mgt_hook_reply rep;
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "%s/missing", dir);
        cr_assert_eq(mgt_hook_runner_start(&r, cmd), 0);
        cr_assert_eq(mgt_hook_request(&r, 1, 1, "/cg", "{}", 10000000), 0);
        cr_assert(wait_reply(&r, &rep, 10000));
        cr_expect_eq(rep.result, MGT_HOOK_FAILED);
        cr_expect_eq(rep.code, 127, "exit %d, output %s", rep.code, rep.output);
        cr_expect(strstr(rep.output, "cannot run") && strstr(rep.output, "No such file"), "%s", rep.output);
        mgt_hook_runner_stop(&r);
}

Test(hook, runs_at_once_are_answered_each) {
        struct mgt_hook_runner r;
        struct mgt_hook_reply rep;
        bool seen[4] = {};
        start(&r, "thaw");
        for (uint64_t s = 1; s <= 3; s++)
                cr_assert_eq(mgt_hook_request(&r, s, s, "/cg", "{}", 10000000), 0);
        for (int i = 0; i < 3; i++) {
                cr_assert(wait_reply(&r, &rep, 10000));
                cr_assert(rep.seq >= 1 && rep.seq <= 3 && !seen[rep.seq]);
                seen[rep.seq] = true;
                cr_expect_eq(rep.result, MGT_HOOK_THAW);
        }
        mgt_hook_runner_stop(&r);
}

/* /bin/sleep as the hook, its "cgroup" (the last argument) its time: no
 * shell, and under memcheck not traced (/bin is skipped), so that the
 * bound's worth of runs start quickly. */
Test(hook, a_run_past_the_bound_of_runs_at_once_is_refused) {
        struct mgt_hook_runner r;
        struct mgt_hook_reply rep;
        int st;
        cr_assert_eq(mgt_hook_runner_start(&r, "/bin/sleep"), 0);
        for (uint64_t s = 1; s <= MGT_HOOK_RUNNING_MAX + 1; s++) {
                int e;
                /* the socket holds a few requests: wait for the runner to take them */
                while ((e = mgt_hook_request(&r, s, s, "300", "{}", 600000000)) == -EAGAIN) {
                        struct pollfd p = { .fd = r.fd, .events = POLLOUT };
                        cr_assert_geq(poll(&p, 1, 10000), 1, "the runner takes requests");
                }
                cr_assert_eq(e, 0);
        }
        cr_assert(wait_reply(&r, &rep, 30000));
        cr_expect_eq(rep.seq, MGT_HOOK_RUNNING_MAX + 1, "the first answer is the one past the bound");
        cr_expect_eq(rep.result, MGT_HOOK_ERROR);
        cr_expect_eq(rep.code, EUSERS);
        mgt_hook_runner_stop(&r);
        cr_expect_eq(waitpid(r.pid, &st, 0), r.pid, "the runner ends, killing the runs' groups");
        cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

Test(hook, the_runner_ends_with_the_socket_and_kills_what_runs) {
        struct mgt_hook_runner r;
        int st;
        start(&r, "slow");
        cr_assert_eq(mgt_hook_request(&r, 1, 1, "/cg", "{}", 60000000), 0);
        for (int i = 0; i < 500 && !slurp("bg"); i++)
                usleep(10000);
        mgt_hook_runner_stop(&r);
        cr_expect_eq(waitpid(r.pid, &st, 0), r.pid);
        cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        char *bg = slurp("bg");
        cr_assert_not_null(bg);
        cr_expect(dead(pid_in(bg)));
        cr_expect_eq(mgt_hook_request(&r, 2, 1, "/cg", "{}", 1000), -EPIPE);
}

Test(hook, a_runner_killed_outright_takes_its_hooks_with_it) {
        struct mgt_hook_runner r;
        int st;
        start(&r, "slow");
        cr_assert_eq(mgt_hook_request(&r, 1, 1, "/cg", "{}", 60000000), 0);
        for (int i = 0; i < 500 && !slurp("bg"); i++)
                usleep(10000);
        pid_t leader = pid_in(slurp("leader"));
        cr_assert_gt(leader, 0);
        kill(r.pid, SIGKILL);
        cr_expect_eq(waitpid(r.pid, &st, 0), r.pid);
        cr_expect(dead(leader), "the hook's leader (PR_SET_PDEATHSIG)");
        cr_expect_eq(mgt_hook_read(&r, &(struct mgt_hook_reply) {}), -EPIPE, "watch's end sees the runner gone");
        mgt_hook_runner_stop(&r);
}

static int split(const char *cmd, char **argv) {
        static char buf[256];
        char err[160];
        return mgt_hook_split(cmd, buf, sizeof(buf), argv, err, sizeof(err));
}

Test(hook, cmd_is_split_at_blanks_without_a_shell) {
        char *argv[MGT_HOOK_ARGS_MAX + 2];
        cr_expect_eq(split("  /usr/lib/x/park\t--to  /var/snap ", argv), 3);
        cr_expect_str_eq(argv[0], "/usr/lib/x/park");
        cr_expect_str_eq(argv[1], "--to");
        cr_expect_str_eq(argv[2], "/var/snap");
        cr_expect_null(argv[3]);
        cr_expect_eq(split("", argv), -EINVAL);
        cr_expect_eq(split("   ", argv), -EINVAL);
        cr_expect_eq(split("park --to /x", argv), -EINVAL, "no PATH lookup");
        cr_expect_eq(split("/bin/park '$x'", argv), -EINVAL);
        cr_expect_eq(split("/bin/park a;b", argv), -EINVAL);
        cr_expect_eq(split("/bin/park a|b", argv), -EINVAL);
        cr_expect_eq(split("/bin/park \"a b\"", argv), -EINVAL);
        cr_expect_eq(split("/bin/park a\nb", argv), -EINVAL);
        char many[200];
        size_t at = (size_t) snprintf(many, sizeof(many), "/bin/park");
        for (int i = 0; i < MGT_HOOK_ARGS_MAX; i++)
                at += (size_t) snprintf(many + at, sizeof(many) - at, " a");
        cr_expect_eq(split(many, argv), -E2BIG);
        char lng[300];
        memset(lng, 'a', sizeof(lng) - 1);
        lng[0] = '/';
        lng[sizeof(lng) - 1] = '\0';
        cr_expect_eq(split(lng, argv), -ENAMETOOLONG);
        cr_expect_str_eq(mgt_hook_result_name(MGT_HOOK_TIMEOUT), "timeout");
}
