/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-ablation: seed 002's controlled ablation of a bounded reclaim
 * actuator at a size a 1 GiB, 1-vCPU TCG guest can run, and seed 003's
 * swapless pair (docs/benchmarks.md, "Seed 002's ablation, reproduced";
 * the parts: ablation.h).  Runs inside a VM as root on a real cgroup v2
 * (tools/bench/ablation boots it), or with --fixture on a fake tree, which
 * checks the flow and the CSV and measures nothing.
 *
 * Cases are matched: the arms of one regime and repeat run back to back,
 * in an order rotated by repeat and regime, with the same seeds (the
 * generator's contents, the canaries' keys).  One CSV line per case on
 * stdout (ablation-stats.c has the columns); progress and the guest's
 * qualification on stderr, each line "bench-ablation: ..." or "# ...".
 * Exit 0 when every case ran, 1 when one did not (its line says why in
 * "status"), 2 on bad arguments.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "ablation.h"
#include "swap.h"
#include "cgdir.h"
#include "fixture.h"
#include "scenario.h"
#include "util.h"

static const char usage_text[] =
        "usage: bench-ablation [--cgroup ROOT | --fixture DIR] [--swapless] [options]\n"
        "  runs inside a VM as root (MEMGUARD_VM=1, as tests/vm/vmrun sets; --allow-host otherwise)\n"
        "  --cgroup ROOT          cgroup2 mount to make memguard-ablation/{bg,fg} in (/sys/fs/cgroup)\n"
        "  --fixture DIR          a dry run on a fake tree in DIR: no kernel, no swap, small sizes;\n"
        "                         checks the flow and the CSV, measures nothing\n"
        "  --dir DIR              database, swapfile and the actor's file (/mnt/disk)\n"
        "  --work DIR             the children's output (/tmp)\n"
        "  --swapless             seed 003's swapless pair instead of seed 002's ablation\n"
        "  --arms LIST            static,delayed,reclaim (swapless: none,headroom)\n"
        "  --regimes LIST         s16,r16,s64,r64: s structured / r random contents, MiB/s\n"
        "                         (swapless: f16,f64: the actor's file read, MiB/s)\n"
        "  --repeat N             the first repeat's id (0); --repeats N how many (1)\n"
        "  --warmup S --pressure S --recovery S   the phases (10, 30, 10)\n"
        "  --period-ms MS         the canaries' period (100)\n"
        "  --ready-timeout S      for the canaries to set up (300)\n"
        " swap ablation:\n"
        "  --bg-limit-mib N       bg's memory.max (160)\n"
        "  --bg-alloc-mib N       the generator's ring, allocated beyond the limit (240)\n"
        "  --active-mib N         its active set, touched once a second (80)\n"
        "  --dose-mib N           the reclaim arm's dose (96)\n"
        "  --zram-mib N           zram's disksize (256); --swapfile-mib N the swapfile (512)\n"
        "  --guard-on fg|bg       where the reclaim arm's guard sits (fg, dosing bg)\n"
        "  --fg-guard-limit-mib N that guard's limit on fg (512; fg has no memory.max)\n"
        " canaries:\n"
        "  --rows N --payload B   the SQLite table (80000 rows of 1536 bytes)\n"
        "  --queries N            point queries a request (8)\n"
        "  --hot-mib N --compute-iters N --scratch-kib N   the compute canary (16, 200000, 64)\n"
        " swapless pair:\n"
        "  --fg-limit-mib N       the actor's memory.max (320)\n"
        "  --headroom-mib N --headroom-dose-mib N   the headroom rule (32, 64)\n"
        "  --stream-mib N         the file the actor reads (512)\n"
        "  --reader-anon-mib N --reader-anon-rate N the actor's anon cycle (64 MiB at 8 MiB/s)\n"
        "  --no-header            no CSV header line\n";

static void usage(int st) {
        fputs(usage_text, st ? stderr : stdout);
        exit(st);
}

static uint64_t num(const char *opt, const char *s) {
        char *end;
        unsigned long long v;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || end == s || *end) {
                fprintf(stderr, "bench-ablation: %s wants a number, not %s\n", opt, s);
                exit(2);
        }
        return (uint64_t) v;
}

static uint32_t num32(const char *opt, const char *s) {
        uint64_t v = num(opt, s);
        if (v > UINT32_MAX) {
                fprintf(stderr, "bench-ablation: %s %s is too large\n", opt, s);
                exit(2);
        }
        return (uint32_t) v;
}

static void parse_arms(struct abl_cfg *c, const char *list) {
        char buf[256], *save = NULL;
        snprintf(buf, sizeof(buf), "%s", list);
        c->n_arms = 0;
        for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                int a = -1;
                for (int i = 0; i < ABL_ARM_N; i++)
                        if (strcmp(t, abl_arm_names[i]) == 0)
                                a = i;
                bool swapless_arm = a == ABL_NONE || a == ABL_HEADROOM;
                if (a < 0 || swapless_arm != c->swapless || c->n_arms == ABL_MAX_ARMS) {
                        fprintf(stderr, "bench-ablation: arm %s is not one of %s\n", t,
                                c->swapless ? "none,headroom" : "static,delayed,reclaim");
                        exit(2);
                }
                c->arms[c->n_arms++] = (enum abl_arm) a;
        }
}

static void parse_regimes(struct abl_cfg *c, const char *list) {
        char buf[256], *save = NULL;
        snprintf(buf, sizeof(buf), "%s", list);
        c->n_regimes = 0;
        for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                struct abl_regime *g = &c->regimes[c->n_regimes];
                char want = c->swapless ? 'f' : 0;
                if (c->n_regimes == ABL_MAX_REGIMES || strlen(t) >= sizeof(g->name) ||
                    !(want ? t[0] == want : t[0] == 's' || t[0] == 'r')) {
                        fprintf(stderr, "bench-ablation: regime %s: %s\n", t,
                                c->swapless ? "fN (the actor reads N MiB/s)" : "sN or rN (structured, random; N MiB/s)");
                        exit(2);
                }
                snprintf(g->name, sizeof(g->name), "%s", t);
                g->contents = t[0];
                g->rate_mibps = num32("--regimes", t + 1);
                if (g->rate_mibps == 0)
                        usage(2);
                c->n_regimes++;
        }
}

static void defaults(struct abl_cfg *c, bool fixture) {
        *c = (struct abl_cfg) {
                .header = true, .repeats = 1, .warmup_s = 10, .pressure_s = 30, .recovery_s = 10, .period_ms = 100,
                .ready_timeout_s = 300, .bg_limit_mib = 160, .bg_alloc_mib = 240, .active_mib = 80, .dose_mib = 96,
                .zram_mib = 256, .swapfile_mib = 512, .zram_prio = 100, .swapfile_prio = 10, .rows = 80000,
                .payload = 1536, .queries = 8, .hot_mib = 16, .compute_iters = 200000, .scratch_kib = 64,
                .fg_limit_mib = 320, .headroom_mib = 32, .headroom_dose_mib = 64, .stream_mib = 512,
                .reader_anon_mib = 64, .reader_anon_rate = 8, .fg_guard_limit_mib = 512,
        };
        snprintf(c->root, sizeof(c->root), "%s", MGT_CGROUP_ROOT);
        snprintf(c->dir, sizeof(c->dir), "/mnt/disk");
        snprintf(c->work, sizeof(c->work), "/tmp");
        snprintf(c->zram_dev, sizeof(c->zram_dev), "/dev/zram0");
        snprintf(c->zram_sys, sizeof(c->zram_sys), "/sys/block/zram0");
        snprintf(c->proc, sizeof(c->proc), "/proc");
        if (!fixture)
                return;
        /* A dry run: sizes a test machine shrugs at, phases long enough
         * for the predicate's three windows. */
        c->fixture = true;
        c->warmup_s = 1;
        c->pressure_s = 5;
        c->recovery_s = 1;
        c->ready_timeout_s = 60;
        c->bg_limit_mib = 8;
        c->bg_alloc_mib = 12;
        c->active_mib = 4;
        c->dose_mib = 4;
        c->zram_mib = 16;
        c->rows = 2000;
        c->payload = 256;
        c->hot_mib = 1;
        c->compute_iters = 2000;
        c->fg_limit_mib = 64;
        c->headroom_mib = 8;
        c->headroom_dose_mib = 4;
        c->stream_mib = 8;
        c->reader_anon_mib = 4;
        c->reader_anon_rate = 4;
}

/* dst (PATH_MAX) = dir/name; false if it does not fit. */
static bool join(char *dst, const char *dir, const char *name) {
        return (size_t) snprintf(dst, PATH_MAX, "%s/%s", dir, name) < PATH_MAX;
}

static void parse(struct abl_cfg *c, int argc, char **argv) {
        const char *fixture = NULL, *arms = NULL, *regimes = NULL;
        bool swapless = false;

        /* --fixture and --swapless first: they set the defaults the other
         * options override, wherever they stand */
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--fixture") == 0 && i + 1 < argc)
                        fixture = argv[++i];
                else if (strcmp(argv[i], "--swapless") == 0)
                        swapless = true;
        }
        defaults(c, fixture != NULL);
        c->swapless = swapless;
        if (fixture) {
                snprintf(c->root, sizeof(c->root), "%s", fixture);
                snprintf(c->dir, sizeof(c->dir), "%s", fixture);
                snprintf(c->work, sizeof(c->work), "%s", fixture);
                if (!join(c->zram_sys, fixture, "zram0") || !join(c->proc, fixture, "proc"))
                        usage(2);
        }
        for (int i = 1; i < argc; i++) {
                const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define OPT(name) (strcmp(o, name) == 0 && v && (i++, true))
                if (!o)
                        break;
                if (strcmp(o, "-h") == 0 || strcmp(o, "--help") == 0)
                        usage(0);
                else if (strcmp(o, "--swapless") == 0 || OPT("--fixture"))
                        ; /* taken in the first pass */
                else if (strcmp(o, "--no-header") == 0)
                        c->header = false;
                else if (strcmp(o, "--allow-host") == 0)
                        c->allow_host = true;
                else if (OPT("--cgroup"))
                        snprintf(c->root, sizeof(c->root), "%s", v);
                else if (OPT("--dir"))
                        snprintf(c->dir, sizeof(c->dir), "%s", v);
                else if (OPT("--work"))
                        snprintf(c->work, sizeof(c->work), "%s", v);
                else if (OPT("--arms"))
                        arms = v;
                else if (OPT("--regimes"))
                        regimes = v;
                else if (OPT("--repeat"))
                        c->repeat0 = num32(o, v);
                else if (OPT("--repeats"))
                        c->repeats = num32(o, v);
                else if (OPT("--warmup"))
                        c->warmup_s = num32(o, v);
                else if (OPT("--pressure"))
                        c->pressure_s = num32(o, v);
                else if (OPT("--recovery"))
                        c->recovery_s = num32(o, v);
                else if (OPT("--period-ms"))
                        c->period_ms = num32(o, v);
                else if (OPT("--ready-timeout"))
                        c->ready_timeout_s = num32(o, v);
                else if (OPT("--bg-limit-mib"))
                        c->bg_limit_mib = num(o, v);
                else if (OPT("--bg-alloc-mib"))
                        c->bg_alloc_mib = num(o, v);
                else if (OPT("--active-mib"))
                        c->active_mib = num(o, v);
                else if (OPT("--dose-mib"))
                        c->dose_mib = num(o, v);
                else if (OPT("--zram-mib"))
                        c->zram_mib = num(o, v);
                else if (OPT("--swapfile-mib"))
                        c->swapfile_mib = num(o, v);
                else if (OPT("--fg-guard-limit-mib"))
                        c->fg_guard_limit_mib = num(o, v);
                else if (OPT("--guard-on")) {
                        if (strcmp(v, "fg") != 0 && strcmp(v, "bg") != 0)
                                usage(2);
                        c->guard_on_bg = strcmp(v, "bg") == 0;
                } else if (OPT("--rows"))
                        c->rows = num32(o, v);
                else if (OPT("--payload"))
                        c->payload = num32(o, v);
                else if (OPT("--queries"))
                        c->queries = num32(o, v);
                else if (OPT("--hot-mib"))
                        c->hot_mib = num32(o, v);
                else if (OPT("--compute-iters"))
                        c->compute_iters = num32(o, v);
                else if (OPT("--scratch-kib"))
                        c->scratch_kib = num32(o, v);
                else if (OPT("--fg-limit-mib"))
                        c->fg_limit_mib = num(o, v);
                else if (OPT("--headroom-mib"))
                        c->headroom_mib = num(o, v);
                else if (OPT("--headroom-dose-mib"))
                        c->headroom_dose_mib = num(o, v);
                else if (OPT("--stream-mib"))
                        c->stream_mib = num(o, v);
                else if (OPT("--reader-anon-mib"))
                        c->reader_anon_mib = num(o, v);
                else if (OPT("--reader-anon-rate"))
                        c->reader_anon_rate = num(o, v);
                else {
                        fprintf(stderr, "bench-ablation: unknown argument %s\n", o);
                        usage(2);
                }
#undef OPT
        }
        parse_arms(c, arms ? arms : c->swapless ? "none,headroom" : "static,delayed,reclaim");
        parse_regimes(c, regimes ? regimes : c->swapless ? (fixture ? "f4" : "f16,f64")
                                                         : (fixture ? "s4,r4" : "s16,r16,s64,r64"));
        if (c->repeats == 0 || c->period_ms == 0 || c->pressure_s == 0 || c->bg_limit_mib == 0 ||
            c->bg_alloc_mib <= c->bg_limit_mib || c->active_mib == 0 || c->active_mib > c->bg_alloc_mib ||
            c->dose_mib == 0 || c->zram_mib == 0 || c->rows == 0 || c->payload == 0 || c->queries == 0 ||
            c->hot_mib == 0 || c->scratch_kib == 0 || c->fg_limit_mib == 0 || c->headroom_mib == 0 ||
            c->headroom_mib >= c->fg_limit_mib || c->headroom_dose_mib == 0 || c->stream_mib == 0 ||
            c->reader_anon_mib == 0 || c->fg_guard_limit_mib == 0) {
                fprintf(stderr, "bench-ablation: a size or a time is 0, or bg's ring is not above its limit, "
                                "or the headroom is not below the actor's limit\n");
                exit(2);
        }
        if (!join(c->parent, c->root, "memguard-ablation") || !join(c->db, c->dir, "ablation.db") ||
            !join(c->swapfile, c->dir, "ablation.swap") || !join(c->stream, c->dir, "ablation.stream")) {
                fprintf(stderr, "bench-ablation: a path is too long\n");
                exit(2);
        }
}

/* ---- the guest's qualification and set-up ---------------------------------------- */

static int fail(const char *what, int err) {
        fprintf(stderr, "# qual %s=FAIL%s%s\n", what, err ? " " : "", err ? strerror(-err) : "");
        return err ? err : -EINVAL;
}

static void read_line(const char *dir, const char *file, char *buf, size_t size) {
        if (mgt_cg_read(dir, file, buf, size) <= 0)
                snprintf(buf, size, "-");
        buf[strcspn(buf, "\n")] = '\0';
}

static const char *fs_name(const char *path) {
        struct statfs s;
        if (statfs(path, &s) < 0)
                return "?";
        return s.f_type == 0xEF53 ? "ext4" : s.f_type == 0x01021994 ? "tmpfs" : "other";
}

static int setup_fixture(struct abl_cfg *c) {
        char procdir[PATH_MAX + 8];
        int r;

        (void) mkdir(c->root, 0755);
        (void) fixture_remove_tree(c->parent);
        if (mkdir(c->parent, 0755) < 0 || mkdir(c->zram_sys, 0755) < 0 || mkdir(c->proc, 0755) < 0) {
                if (errno != EEXIST)
                        return fail("fixture", -errno);
        }
        snprintf(procdir, sizeof(procdir), "%s", c->proc);
        if ((r = fixture_tree_write(procdir, "vmstat", "pswpin 0\npswpout 0\n")) < 0 ||
            (r = fixture_tree_write(c->zram_sys, "mm_stat", "0 0 0 0 0 0 0 0 0\n")) < 0)
                return fail("fixture", r);
        if ((r = abl_db_make(c->db, c->rows, c->payload)) < 0)
                return fail("database", r);
        if (c->swapless && (r = mgt_make_file(c->stream, c->stream_mib)) < 0)
                return fail("stream-file", r);
        fprintf(stderr, "# env mode=%s fixture=%s kernel=%s\n", c->swapless ? "swapless" : "swap", c->root, c->kernel);
        return 0;
}

static int setup(struct abl_cfg *c) {
        char mglru[64], swappiness[32], alg[64], path[PATH_MAX + 32];
        const char *vm = getenv("MEMGUARD_VM");
        struct statvfs sv;
        uint64_t need_mib;
        int r;

        if (c->fixture)
                return setup_fixture(c);
        /* It writes swap headers on /dev/zram0 and swaps a file on and off:
         * a guest's business, not a host's. */
        if (!(vm && strcmp(vm, "1") == 0) && !c->allow_host)
                return fail("vm (MEMGUARD_VM=1 unset: pass --allow-host to run outside a VM)", 0);
        if (geteuid() != 0)
                return fail("root", -EPERM);
        if ((r = mgt_cg_is_cgroup2(c->root)) != 1)
                return fail("cgroup2", r < 0 ? r : -ENOTSUP);
        if (access(c->parent, F_OK) == 0) {
                char sub[PATH_MAX + 8];
                snprintf(sub, sizeof(sub), "%s/bg", c->parent);
                (void) mgt_cg_destroy(sub, 30 * MG_USEC_PER_SEC);
                snprintf(sub, sizeof(sub), "%s/fg", c->parent);
                (void) mgt_cg_destroy(sub, 30 * MG_USEC_PER_SEC);
                (void) rmdir(c->parent);
        }
        if ((r = mgt_cg_make_parent(c->root, c->parent, "+memory +cpu +io")) < 0)
                return fail("cgroup-parent", r);
        /* memory.reclaim is 5.19's; every non-root cgroup has it there */
        snprintf(path, sizeof(path), "%s/memory.reclaim", c->parent);
        if (access(path, W_OK) < 0)
                return fail("memory.reclaim", -errno);
        need_mib = (uint64_t) c->rows * c->payload / MG_MIB * 2 + 64 + (c->swapless ? c->stream_mib : c->swapfile_mib);
        if (statvfs(c->dir, &sv) < 0)
                return fail("dir", -errno);
        if ((uint64_t) sv.f_bavail * sv.f_frsize / MG_MIB < need_mib)
                return fail("disk-space", -ENOSPC);
        if (!c->swapless) {
                char disksize[PATH_MAX + 16];
                snprintf(disksize, sizeof(disksize), "%s/disksize", c->zram_sys);
                if (access(disksize, W_OK) < 0)
                        return fail("zram (load the module: vmrun --module zram)", -errno);
                if ((r = mgt_zram_reset(c->zram_dev, c->zram_sys, c->zram_mib)) < 0)
                        return fail("zram-reset", r);
                if ((r = mgt_swapfile_make(c->swapfile, c->swapfile_mib)) < 0)
                        return fail("swapfile", r);
                if (!mgt_swap_active(c->swapfile) && (r = mgt_swapon(c->swapfile, c->swapfile_prio)) < 0)
                        return fail("swapon-swapfile", r);
        } else {
                /* no swap at all; fg's memory.swap.max 0 besides */
                (void) mgt_swapoff(c->zram_dev);
                (void) mgt_swapoff(c->swapfile);
                if ((r = mgt_make_file(c->stream, c->stream_mib)) < 0)
                        return fail("stream-file", r);
        }
        fprintf(stderr, "bench-ablation: making the database (%" PRIu32 " rows of %" PRIu32 " bytes)\n", c->rows,
                c->payload);
        if ((r = abl_db_make(c->db, c->rows, c->payload)) < 0)
                return fail("database", r);
        {
                char swaps[1024];
                read_line("/sys/kernel/mm/lru_gen", "enabled", mglru, sizeof(mglru));
                read_line("/proc/sys/vm", "swappiness", swappiness, sizeof(swappiness));
                mgt_zram_algorithm(c->zram_sys, alg, sizeof(alg));
                if (mgt_cg_read("/proc", "swaps", swaps, sizeof(swaps)) <= 0)
                        swaps[0] = '\0';
                for (char *p = swaps; *p; p++)
                        if (*p == '\n')
                                *p = '|';
                fprintf(stderr,
                        "# env mode=%s kernel=%s cpus=%ld mem_kib=%" PRIu64 " mglru=%s swappiness=%s zram_alg=%s "
                        "db=%s db_fs=%s swaps=%s\n",
                        c->swapless ? "swapless" : "swap", c->kernel, sysconf(_SC_NPROCESSORS_ONLN),
                        (uint64_t) sysconf(_SC_PHYS_PAGES) * (uint64_t) sysconf(_SC_PAGESIZE) / 1024, mglru,
                        swappiness, c->swapless ? "-" : alg, c->db, fs_name(c->db), swaps);
        }
        fprintf(stderr, "# qual ok\n");
        return 0;
}

static void teardown(const struct abl_cfg *c) {
        if (c->fixture) {
                (void) fixture_remove_tree(c->parent);
                return;
        }
        (void) rmdir(c->parent);
}

int main(int argc, char **argv) {
        static struct abl_cfg c;
        struct abl_result res;
        struct utsname u;
        int failed = 0;
        ssize_t n;

        if (argc > 1 && strcmp(argv[1], "--role") == 0)
                return abl_role_main(argc, argv);
        parse(&c, argc, argv);
        setvbuf(stdout, NULL, _IOLBF, 0);
        uname(&u);
        snprintf(c.kernel, sizeof(c.kernel), "%s", u.release);
        n = readlink("/proc/self/exe", c.exe, sizeof(c.exe) - 1);
        if (n <= 0) {
                fprintf(stderr, "bench-ablation: /proc/self/exe: %s\n", strerror(errno));
                return 1;
        }
        c.exe[n] = '\0';
        if (setup(&c) < 0) {
                teardown(&c);
                return 1;
        }
        if (c.header)
                abl_csv_header(stdout);
        for (unsigned r = c.repeat0; r < c.repeat0 + c.repeats; r++) {
                for (unsigned gi = 0; gi < c.n_regimes; gi++) {
                        /* regimes rotated by repeat, arms by repeat and regime:
                         * no arm always runs first, or after the same one */
                        unsigned gx = (gi + r) % c.n_regimes;
                        const struct abl_regime *g = &c.regimes[gx];
                        for (unsigned ai = 0; ai < c.n_arms; ai++) {
                                enum abl_arm arm = c.arms[(ai + r + gx) % c.n_arms];
                                fprintf(stderr, "bench-ablation: repeat %u, %s, %s (%u of %u)\n", r, g->name,
                                        abl_arm_names[arm], ai + 1, c.n_arms);
                                res.pos = ai;
                                if (abl_case_run(&c, arm, g, r, &res) < 0)
                                        failed = 1;
                                abl_csv_line(stdout, &c, arm, g, r, &res);
                                /* the freed memory and swap settle before the next */
                                sleep(c.fixture ? 0 : 2);
                        }
                }
        }
        teardown(&c);
        return failed;
}
