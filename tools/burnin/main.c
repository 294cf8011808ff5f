/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memguard-burnin: the main process.  Parses the command line, creates the
 * parent cgroup, forks one actor process per actor cgroup as the load ladder
 * asks, guards every actor in one set of its own (the worker's: the guard
 * that kills, and the only one that can tell a kill, see burnin.h), sends
 * the chaos overshoots, collects the samples, and runs the end-of-run
 * checks.  See memguard-burnin.1.
 *
 * The set starts a thread (its restore worker) and the actors are forked
 * afterwards: the worker runs none of our code and takes no lock that libc
 * does not reset in the child (malloc and stdio have their fork handlers),
 * and each actor process makes a set of its own.
 *
 * Exit: 0 all checks passed, 1 a regression check failed, 2 bad arguments,
 * 3 the run could not be set up (no cgroup v2, no permission, bad --dir).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "burnin.h"
#include "cgdir.h"
#include "guards.h"
#include "memguard/memguard.h"
#include "park.h"
#include "parks.h"
#include "size.h"
#include "util.h"

#define EXIT_REGRESSION 1
#define EXIT_USAGE 2
#define EXIT_SETUP 3
#define MAX_STEPS 64
#define MAX_ACTORS 256
#define STOP_GRACE_USEC (120 * MG_USEC_PER_SEC) /* a cycle in progress may finish */
#define DISK_TOLERANCE_BYTES MG_MIB               /* + 1 % of the start usage */
/* A chaos actor's process is dead (SIGKILL); its record comes once the guard
 * sees the cgroup empty, within a tick or two and the kill wait. */
#define RECORD_WAIT_USEC (10 * MG_USEC_PER_SEC)
#define MAX_CHAOS 64 /* per step */
/* A park's deadline (mg_guard_options.park_deadline_usec): the save of
 * the guest memory (48 MiB of data at 64M) shares the disk with every
 * actor's cycle; the half-hour run's writes took up to 7 s. */
#define PARK_DEADLINE_USEC (120 * MG_USEC_PER_SEC)

struct options {
        struct bi_step steps[MAX_STEPS];
        size_t n_steps;
        uint32_t actors;
        uint64_t duration_usec, actor_bytes, slot_usec, seed;
        uint32_t chaos;                 /* overshoots per step with actors */
        uint32_t park;                  /* of which parked, saved and killed (parks.h) */
        uint64_t lend_deadline_usec;    /* 0: the library's */
        bool have_actors, have_duration;
        const char *dir, *parent, *csv, *json, *svg;
        enum bi_writer writer;
        enum bi_restore restore;
};

struct child {
        pid_t pid;
        uint32_t id;
        int sample_fd, control_fd;      /* control_fd closed: asked to stop */
        char *cgroup;
        uint64_t stop_usec;
        bool killed;                    /* by us, after the grace period */
        mg_guard *guard;                /* the worker's guard of it */
        bool chaos;                     /* asked to overshoot */
        bool recorded;                  /* the worker's guard told its kill */
        bool dead;                      /* its process reaped, waiting for the record */
        uint64_t dead_usec;
        uint64_t chaos_usec;            /* when chaos asked it */
        uint64_t last_end_usec;         /* the end of its last cycle told (0: none yet) */
        int guest_fd;                   /* its guest memory, a memfd (park.h) */
        uint64_t guest_seed;            /* the pattern in it, told before an overshoot */
        bool have_seed;
        bool park;                      /* chaos chose to park it: its guard parks */
        ssize_t park_idx;               /* its park in run_state.parks, -1: none yet */
        char high[32];                  /* memory.high as written at the start */
};

static const char usage_text[] =
        "usage: memguard-burnin [--actors N | --ladder N:DUR,...] [--duration DUR] [--actor-size SIZE]\n"
        "                       [--dir DIR] [--parent CGROUP] [--writer memguard|buffered|both]\n"
        "                       [--slot DUR] [--chaos N] [--park N] [--restore direct|cached|lent|alternate|rotate]\n"
        "                       [--lend-deadline DUR] [--csv FILE] [--json FILE] [--svg FILE] [--seed N]\n"
        "\n"
        "Cycles N actor cgroups through work, a snapshot write inside a lend of the actor's\n"
        "guard, teardown and restore, and prints per-slot p50/p90/p99/max of each phase.\n"
        "\n"
        "  --actors N          actors cycling at once (default 2), for --duration (default 60s)\n"
        "  --ladder N:DUR,...  a load ladder instead: N actors for DUR, then the next step\n"
        "  --actor-size SIZE   guest memory per actor and its guard limit (default 64M)\n"
        "  --dir DIR           where snapshots are written (default the working directory)\n"
        "  --parent CGROUP     where actor cgroups are made (default /sys/fs/cgroup/memguard-burnin-PID)\n"
        "  --writer W          memguard (default), buffered (the baseline), or both alternating\n"
        "  --slot DUR          table time slot (default 5m)\n"
        "  --chaos N           N actors per ladder step overshoot and are killed by their guard\n"
        "  --park N            of those, the first N per step are parked (frozen), their guest\n"
        "                      memory saved and checked, then killed\n"
        "  --restore M         the buffered writer's restores: direct (default), cached (through\n"
        "                      the page cache), lent (cached in a lend), alternate (direct and\n"
        "                      cached) or rotate (direct, cached, lent)\n"
        "  --lend-deadline DUR the snapshot writes' lend deadline (default the library's)\n"
        "  --csv/--json/--svg FILE  samples as CSV, JSON, and a latency-over-time plot\n"
        "  --seed N            seed of the guest memory pattern (default 1)\n"
        "Sizes: K, M, G (powers of 1024).  Durations: 90s, 2m, 1h, 500ms.\n"
        "Exit: 0 pass, 1 a regression check failed, 2 bad arguments, 3 setup failed.\n";

static _Noreturn __attribute__((format(printf, 1, 2))) void usage_error(const char *fmt, ...) {
        va_list ap;
        fputs("memguard-burnin: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputs(" (see --help)\n", stderr);
        exit(EXIT_USAGE);
}

/* "90s", "2m", "1h", "500ms", "30" (seconds).  0 on success. */
static int parse_duration(const char *s, uint64_t *ret) {
        char *end;
        uint64_t mult;
        if (*s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno)
                return -ERANGE;
        if (strcmp(end, "") == 0 || strcmp(end, "s") == 0)
                mult = 1000000;
        else if (strcmp(end, "ms") == 0)
                mult = 1000;
        else if (strcmp(end, "m") == 0)
                mult = 60 * MG_USEC_PER_SEC;
        else if (strcmp(end, "h") == 0)
                mult = 3600 * MG_USEC_PER_SEC;
        else
                return -EINVAL;
        if (v == 0 || v > UINT64_MAX / mult)
                return -ERANGE;
        *ret = v * mult;
        return 0;
}

static int parse_u32(const char *s, uint32_t max, uint32_t *ret) {
        char *end;
        if (*s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (errno || *end || v > max)
                return -EINVAL;
        *ret = (uint32_t) v;
        return 0;
}

static void parse_ladder(const char *arg, struct options *o) {
        char buf[1024];
        size_t len = strlen(arg);
        if (len >= sizeof(buf))
                usage_error("--ladder %s: too long", arg);
        memcpy(buf, arg, len + 1);
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                char *colon = strchr(tok, ':');
                if (o->n_steps == MAX_STEPS)
                        usage_error("--ladder: more than %d steps", MAX_STEPS);
                struct bi_step *st = &o->steps[o->n_steps];
                if (!colon)
                        usage_error("--ladder %s: step '%s' is not N:DURATION", arg, tok);
                *colon = '\0';
                if (parse_u32(tok, MAX_ACTORS, &st->actors) < 0)
                        usage_error("--ladder %s: '%s' is not a number of actors (0..%d)", arg, tok, MAX_ACTORS);
                if (parse_duration(colon + 1, &st->usec) < 0)
                        usage_error("--ladder %s: '%s' is not a duration", arg, colon + 1);
                o->n_steps++;
        }
        if (o->n_steps == 0)
                usage_error("--ladder: no steps");
}

static void parse_args(int argc, char **argv, struct options *o) {
        enum { O_ACTORS = 256, O_LADDER, O_DURATION, O_SIZE, O_DIR, O_PARENT, O_WRITER, O_SLOT, O_CSV, O_JSON,
               O_SVG, O_SEED, O_CHAOS, O_RESTORE, O_LEND_DEADLINE, O_PARK };
        static const struct option longopts[] = {
                { "help", no_argument, NULL, 'h' },
                { "actors", required_argument, NULL, O_ACTORS },
                { "ladder", required_argument, NULL, O_LADDER },
                { "duration", required_argument, NULL, O_DURATION },
                { "actor-size", required_argument, NULL, O_SIZE },
                { "dir", required_argument, NULL, O_DIR },
                { "parent", required_argument, NULL, O_PARENT },
                { "writer", required_argument, NULL, O_WRITER },
                { "slot", required_argument, NULL, O_SLOT },
                { "csv", required_argument, NULL, O_CSV },
                { "json", required_argument, NULL, O_JSON },
                { "svg", required_argument, NULL, O_SVG },
                { "seed", required_argument, NULL, O_SEED },
                { "chaos", required_argument, NULL, O_CHAOS },
                { "restore", required_argument, NULL, O_RESTORE },
                { "lend-deadline", required_argument, NULL, O_LEND_DEADLINE },
                { "park", required_argument, NULL, O_PARK },
                {},
        };
        const char *ladder = NULL;
        int c;

        *o = (struct options) { .actors = 2, .duration_usec = 60 * MG_USEC_PER_SEC, .actor_bytes = 64 * MG_MIB,
                                .slot_usec = 300 * MG_USEC_PER_SEC, .seed = 1, .dir = ".",
                                .writer = BI_WRITER_MEMGUARD };
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
                switch (c) {
                case 'h':
                        fputs(usage_text, stdout);
                        exit(0);
                case O_ACTORS:
                        if (parse_u32(optarg, MAX_ACTORS, &o->actors) < 0 || o->actors == 0)
                                usage_error("--actors %s: not a number of actors (1..%d)", optarg, MAX_ACTORS);
                        o->have_actors = true;
                        break;
                case O_LADDER:
                        ladder = optarg;
                        break;
                case O_DURATION:
                        if (parse_duration(optarg, &o->duration_usec) < 0)
                                usage_error("--duration %s: not a duration", optarg);
                        o->have_duration = true;
                        break;
                case O_SIZE: {
                        int r = mgt_size_parse(optarg, 0, 0, &o->actor_bytes);
                        if (r < 0)
                                usage_error("--actor-size %s: %s", optarg, r == -ERANGE ? "too large" : "not a size");
                        if (o->actor_bytes < 8 * MG_MIB || o->actor_bytes > (UINT64_C(1) << 40) ||
                            o->actor_bytes % (2 * MG_MIB))
                                usage_error("--actor-size %s: must be a multiple of 2M from 8M to 1T", optarg);
                        break;
                }
                case O_DIR:
                        o->dir = optarg;
                        break;
                case O_PARENT:
                        o->parent = optarg;
                        break;
                case O_WRITER:
                        if (strcmp(optarg, "memguard") == 0)
                                o->writer = BI_WRITER_MEMGUARD;
                        else if (strcmp(optarg, "buffered") == 0)
                                o->writer = BI_WRITER_BUFFERED;
                        else if (strcmp(optarg, "both") == 0)
                                o->writer = BI_WRITER_BOTH;
                        else
                                usage_error("--writer %s: one of memguard, buffered, both", optarg);
                        break;
                case O_SLOT:
                        if (parse_duration(optarg, &o->slot_usec) < 0)
                                usage_error("--slot %s: not a duration", optarg);
                        break;
                case O_CSV:
                        o->csv = optarg;
                        break;
                case O_JSON:
                        o->json = optarg;
                        break;
                case O_SVG:
                        o->svg = optarg;
                        break;
                case O_CHAOS:
                        if (parse_u32(optarg, MAX_CHAOS, &o->chaos) < 0)
                                usage_error("--chaos %s: not a number of overshoots per step (0..%d)", optarg,
                                            MAX_CHAOS);
                        break;
                case O_PARK:
                        if (parse_u32(optarg, MAX_CHAOS, &o->park) < 0)
                                usage_error("--park %s: not a number of parks per step (0..%d)", optarg, MAX_CHAOS);
                        break;
                case O_LEND_DEADLINE:
                        if (parse_duration(optarg, &o->lend_deadline_usec) < 0)
                                usage_error("--lend-deadline %s: not a duration", optarg);
                        break;
                case O_RESTORE:
                        if (strcmp(optarg, "direct") == 0)
                                o->restore = BI_RESTORE_DIRECT;
                        else if (strcmp(optarg, "cached") == 0)
                                o->restore = BI_RESTORE_CACHED;
                        else if (strcmp(optarg, "lent") == 0)
                                o->restore = BI_RESTORE_LENT;
                        else if (strcmp(optarg, "alternate") == 0)
                                o->restore = BI_RESTORE_ALTERNATE;
                        else if (strcmp(optarg, "rotate") == 0)
                                o->restore = BI_RESTORE_ROTATE;
                        else
                                usage_error("--restore %s: one of direct, cached, lent, alternate, rotate", optarg);
                        break;
                case O_SEED: {
                        char *end;
                        errno = 0;
                        o->seed = strtoull(optarg, &end, 0);
                        if (errno || *end || !*optarg || *optarg == '-')
                                usage_error("--seed %s: not a number", optarg);
                        break;
                }
                case ':':
                        usage_error("option %s needs a value", argv[optind - 1]);
                default:
                        usage_error("unknown option %s", argv[optind - 1]);
                }
        }
        if (optind < argc)
                usage_error("unexpected argument '%s'", argv[optind]);
        if (o->park > o->chaos)
                usage_error("--park %" PRIu32 ": more than the %" PRIu32 " chaos overshoots per step (--chaos)",
                            o->park, o->chaos);
        if (ladder) {
                if (o->have_actors)
                        usage_error("--ladder and --actors exclude each other");
                if (o->have_duration)
                        usage_error("--ladder and --duration exclude each other: the ladder says how long");
                parse_ladder(ladder, o);
        } else {
                o->steps[0] = (struct bi_step) { .actors = o->actors, .usec = o->duration_usec };
                o->n_steps = 1;
        }
}

/* ---- the run ------------------------------------------------------------------ */

static volatile sig_atomic_t interrupted;

static void on_signal(int sig) {
        (void) sig;
        interrupted = 1;
}

struct run_state {
        const struct options *o;
        const char *parent;
        int dirfd;
        mg_set *set;                    /* the worker's: one guard per actor */
        struct child children[MAX_ACTORS];
        size_t n_children;
        uint32_t next_id;
        struct bi_sample *samples;
        size_t n_samples, cap_samples;
        struct bi_kill *kill_log;       /* every kill the worker's guards told */
        size_t n_kill_log, cap_kill_log;
        uint64_t start_usec;
        uint64_t rng;
        uint32_t chaos_sent[MAX_STEPS]; /* overshoots asked, per step */
        /* Held by the loop except while it polls: a park's save takes it
         * around its calls on the worker's guard (park.h). */
        pthread_mutex_t mu;
        int wake[2];                    /* a park's thread is done */
        struct bi_park *parks;          /* every park */
        struct bi_park_job **jobs;      /* and its save and check, by the same index */
        size_t n_parks, cap_parks;
        unsigned parks_asked, images_lost, images_corrupted;
        unsigned chaos_asked, chaos_killed, chaos_stalls, chaos_unrecorded;
        unsigned kills, errors, leaks, failures; /* failures: any flag */
        char first_failure[256];
};

static __attribute__((format(printf, 2, 3))) void fail(struct run_state *s, const char *fmt, ...) {
        va_list ap;
        s->failures++;
        if (s->first_failure[0] == '\0') {
                va_start(ap, fmt);
                vsnprintf(s->first_failure, sizeof(s->first_failure), fmt, ap);
                va_end(ap);
        }
}

static struct child *child_of_guard(struct run_state *s, const mg_guard *g) {
        for (size_t i = 0; i < s->n_children; i++)
                if (s->children[i].guard == g)
                        return &s->children[i];
        return NULL;
}

static void drain(struct run_state *s, struct child *ch);
static uint64_t window_of(uint64_t actor_bytes);

/* ---- parks (--park): the record, the save and the check on threads (park.h) ---- */

static ssize_t park_add(struct run_state *s, uint32_t actor) {
        if (s->n_parks == s->cap_parks) {
                size_t cap = s->cap_parks ? 2 * s->cap_parks : 16;
                struct bi_park *p = realloc(s->parks, cap * sizeof(*p));
                if (!p)
                        return -ENOMEM;
                s->parks = p;
                struct bi_park_job **j = realloc(s->jobs, cap * sizeof(struct bi_park_job *));
                if (!j)
                        return -ENOMEM;
                s->jobs = j;
                s->cap_parks = cap;
        }
        struct bi_park_job *j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        *j = (struct bi_park_job) { .memfd = -1, .bad_page = -1 };
        s->jobs[s->n_parks] = j;
        s->parks[s->n_parks] = (struct bi_park) { .actor = actor, .bad_page = -1 };
        return (ssize_t) s->n_parks++;
}

static __attribute__((format(printf, 3, 4))) void park_lost(struct run_state *s, struct bi_park *p,
                                                            const char *fmt, ...) {
        va_list ap;
        char what[200];
        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        if (!p->lost) {
                p->lost = true;
                s->images_lost++;
        }
        fail(s, "actor %" PRIu32 ": park image lost: %s", p->actor, what);
        fprintf(stderr, "\nmemguard-burnin: actor %" PRIu32 ": park image lost: %s\n", p->actor, what);
}

/* Once saved and killed: the image restored and checked. */
static void park_try_check(struct run_state *s, size_t i) {
        struct bi_park_job *j = s->jobs[i];
        struct bi_park *p = &s->parks[i];
        if (j->running || j->stage != BI_PARK_STAGE_SAVE || !j->save_end_usec || j->save_error < 0 ||
            p->park_end == MG_PARK_OPEN)
                return;
        int r = bi_park_job_start(j, BI_PARK_STAGE_CHECK);
        if (r < 0)
                park_lost(s, p, "cannot start its check: %s", strerror(-r));
}

/* MG_EVENT_PARK of a chaos actor chosen to park: the save starts on a
 * thread; the loop ends the park with the kill once it is done. */
static void park_begin(struct run_state *s, struct child *ch, mg_guard *g, const struct mg_report *rp,
                       uint64_t detect_usec) {
        ssize_t i = park_add(s, ch->id);
        int r;
        if (i < 0) {
                fail(s, "actor %" PRIu32 ": out of memory for its park", ch->id);
                (void) mg_guard_park_end(g, rp->park_id, MG_PARK_KILL, 0);
                return;
        }
        ch->park_idx = i;
        struct bi_park *p = &s->parks[i];
        struct bi_park_job *j = s->jobs[i];
        p->detect_usec = detect_usec;
        p->park_usec = rp->park_usec;
        p->frozen_usec = rp->frozen_usec;
        if (!ch->have_seed)
                drain(s, ch); /* the notice comes before the overshoot */
        *j = (struct bi_park_job) { .memfd = -1, .dirfd = s->dirfd, .len = s->o->actor_bytes, .seed = ch->guest_seed,
                                    .window_bytes = window_of(s->o->actor_bytes),
                                    .lend_deadline_usec = s->o->lend_deadline_usec, .guard = g,
                                    .park_id = rp->park_id, .set_lock = &s->mu, .wake_fd = s->wake[1],
                                    .bad_page = -1 };
        snprintf(j->name, sizeof(j->name), "park-%" PRIu32 ".snap", ch->id);
        if (!ch->have_seed)
                r = -ENODATA;
        else if ((j->memfd = fcntl(ch->guest_fd, F_DUPFD_CLOEXEC, 3)) < 0)
                r = -errno;
        else
                r = bi_park_job_start(j, BI_PARK_STAGE_SAVE);
        if (r < 0) {
                park_lost(s, p, "cannot start its save: %s", r == -ENODATA ? "no seed told" : strerror(-r));
                if (j->memfd >= 0)
                        close(j->memfd);
                j->memfd = -1;
                (void) mg_guard_park_end(g, rp->park_id, MG_PARK_KILL, 0);
                return;
        }
        fprintf(stderr,
                "\nmemguard-burnin: chaos: actor %" PRIu32 " parked, frozen in %.1f ms; saving its guest memory\n",
                ch->id, (double) (rp->frozen_usec - rp->park_usec) / 1e3);
}

/* A park's thread done (or, with block, any running): its results; after
 * the save the park ends with the kill, after the check the image counts. */
static void park_poll(struct run_state *s, bool block) {
        for (size_t i = 0; i < s->n_parks; i++) {
                struct bi_park_job *j = s->jobs[i];
                struct bi_park *p = &s->parks[i];
                if (!j->running || (!block && !atomic_load(&j->done)))
                        continue;
                bi_park_job_join(j);
                if (j->stage == BI_PARK_STAGE_SAVE) {
                        p->save_begin_usec = j->save_begin_usec;
                        p->save_end_usec = j->save_end_usec;
                        if (j->save_error < 0)
                                park_lost(s, p, "mg_snapshot_write: %s", strerror(-j->save_error));
                        for (size_t c = 0; c < s->n_children; c++) {
                                struct child *ch = &s->children[c];
                                if (ch->park_idx != (ssize_t) i || p->park_end != MG_PARK_OPEN)
                                        continue;
                                int r = mg_guard_park_end(ch->guard, j->park_id, MG_PARK_KILL, 0);
                                if (r != 1) {
                                        s->errors++;
                                        fail(s, "actor %" PRIu32 ": mg_guard_park_end: %s", ch->id,
                                             r < 0 ? strerror(-r) : "thawed");
                                }
                        }
                        park_try_check(s, i);
                } else {
                        if (j->check_error < 0) {
                                park_lost(s, p, "mg_snapshot_restore: %s", strerror(-j->check_error));
                        } else if (j->bad_page >= 0) {
                                p->corrupted = true;
                                p->bad_page = j->bad_page;
                                s->images_corrupted++;
                                fail(s, "actor %" PRIu32 ": park image corrupted: page %" PRId64 " differs",
                                     p->actor, j->bad_page);
                        } else {
                                uint64_t fr = 0, sv = 0, fe = 0;
                                (void) bi_park_phase_usec(p, BI_PARK_FREEZE, &fr);
                                (void) bi_park_phase_usec(p, BI_PARK_SAVE, &sv);
                                (void) bi_park_phase_usec(p, BI_PARK_FREE, &fe);
                                fprintf(stderr, "\nmemguard-burnin: park: actor %" PRIu32 " frozen in %.1f ms, "
                                        "saved in %.1f ms, freed in %.1f ms; its image restored in %.1f ms, every "
                                        "page as written\n", p->actor, (double) fr / 1e3, (double) sv / 1e3,
                                        (double) fe / 1e3, (double) j->restore_usec / 1e3);
                        }
                }
        }
}

/* The kill record of an actor chaos chose to park: the park must have
 * been ended by the worker's kill (after the save). */
static void park_killed(struct run_state *s, struct child *ch, const struct mg_kill_record *k) {
        if (ch->park_idx < 0) {
                ssize_t i = park_add(s, ch->id);
                if (i >= 0) {
                        ch->park_idx = i;
                        s->parks[i].park_end = k->report.park_end ? k->report.park_end : MG_PARK_END_NO_FREEZE;
                        park_lost(s, &s->parks[i], "killed unparked (park end %s)",
                                  mg_park_end_to_string(k->report.park_end));
                } else {
                        fail(s, "actor %" PRIu32 ": killed unparked", ch->id);
                }
                return;
        }
        struct bi_park *p = &s->parks[ch->park_idx];
        p->park_end = k->report.park_end;
        p->park_end_usec = k->report.park_end_usec;
        p->empty_usec = k->empty_usec;
        if (k->report.park_end != MG_PARK_END_KILL) {
                s->errors++;
                fail(s, "actor %" PRIu32 ": its park ended %s, not by the worker's kill", ch->id,
                     mg_park_end_to_string(k->report.park_end));
        }
        park_try_check(s, (size_t) ch->park_idx);
}

/* The worker's guards (the main thread, in mg_set_process()). */
static void on_worker_event(mg_guard *g, const struct mg_event *ev, void *ud) {
        struct run_state *s = ud;
        struct child *ch = child_of_guard(s, g);
        uint32_t id = ch ? ch->id : UINT32_MAX;

        switch (ev->type) {
        case MG_EVENT_KILL: {
                const struct mg_kill_record *k = ev->kill;
                struct bi_kill x = { .actor = id, .reason = k->reason, .expected = ch && ch->chaos,
                                     .detect_usec = k->detect_usec, .kill_usec = k->kill_usec,
                                     .empty_usec = k->empty_usec, .used_bytes = k->report.used_bytes };
                /* A park's kill record carries no verdict time (detect_usec
                 * 0 on 6.1 in the VM smoke): MG_EVENT_PARK's record had it. */
                if (ch && ch->park_idx >= 0 && x.detect_usec == 0)
                        x.detect_usec = s->parks[ch->park_idx].detect_usec;
                char text[512];
                (void) mg_kill_record_format(k, text, sizeof(text));
                if (s->n_kill_log == s->cap_kill_log) {
                        size_t cap = s->cap_kill_log ? 2 * s->cap_kill_log : 16;
                        struct bi_kill *p = realloc(s->kill_log, cap * sizeof(*p));
                        if (p) {
                                s->kill_log = p;
                                s->cap_kill_log = cap;
                        }
                }
                if (s->n_kill_log < s->cap_kill_log)
                        s->kill_log[s->n_kill_log++] = x;
                if (ch)
                        ch->recorded = true;
                if (ch && ch->park)
                        park_killed(s, ch, k);
                /* A chaos actor's growers crawl above memory.high, each
                 * throttled in turn, and reclaim takes the actor's own text,
                 * which its threads fault back: held there long enough it
                 * is a stall by the library's rules, which is as true a
                 * verdict on it as the overshoot.  So a stall counts as the
                 * asked kill once the actor has said it grows (the guest
                 * notice comes just before the growers start), never before. */
                if (ch && ch->chaos)
                        drain(s, ch);
                bool growing = ch && ch->chaos && ch->have_seed;
                if (x.expected && !k->empty_timed_out &&
                    (k->reason == MG_KILL_OVERSHOOT || (k->reason == MG_KILL_STALL && growing))) {
                        s->chaos_killed++;
                        s->chaos_stalls += k->reason == MG_KILL_STALL;
                        fprintf(stderr, "\nmemguard-burnin: chaos: actor %" PRIu32 " killed as asked%s: %s\n", id,
                                k->reason == MG_KILL_STALL ? " (a stall while it grew)" : "", text);
                } else {
                        s->kills++;
                        fail(s, "actor %" PRIu32 " killed by the worker's guard%s: %s", id,
                             x.expected ? " (chaos asked an overshoot, not this)" : " unasked", text);
                        fprintf(stderr, "\nmemguard-burnin: actor %" PRIu32 ": unexpected kill: %s\n", id, text);
                }
                break;
        }
        case MG_EVENT_PARK:
                if (ch && ch->park && ch->park_idx < 0) {
                        park_begin(s, ch, g, &ev->kill->report, ev->kill->detect_usec);
                } else {
                        s->errors++;
                        fail(s, "actor %" PRIu32 ": parked unasked", id);
                        (void) mg_guard_park_end(g, ev->kill->report.park_id, MG_PARK_KILL, 0);
                }
                break;
        case MG_EVENT_KERNEL_OOM:
        case MG_EVENT_UNKILLABLE:
        case MG_EVENT_EMPTY_OVER_LIMIT:
                s->kills += ev->type == MG_EVENT_KERNEL_OOM;
                s->errors += ev->type != MG_EVENT_KERNEL_OOM;
                fail(s, "actor %" PRIu32 ": worker's guard: %s", id, mg_event_type_to_string(ev->type));
                break;
        case MG_EVENT_ERROR:
        case MG_EVENT_GONE:
                /* the guard is removed before its cgroup: neither should come */
                s->errors++;
                fail(s, "actor %" PRIu32 ": worker's guard: %s", id,
                     ev->what ? ev->what : mg_event_type_to_string(ev->type));
                break;
        default:
                break;  /* THROTTLED: a chaos overshoot crossing memory.high; no lends here */
        }
}

static void on_worker_log(int level, const char *msg, void *ud) {
        (void) ud;
        if (level <= MG_LOG_ERR)
                fprintf(stderr, "memguard-burnin: worker's guard: %s\n", msg);
}

/* In a forked actor: close every fd but 0-2 and keep[] (sorted), so that
 * it holds none of the worker's guard files of other actors' cgroups (once
 * those are removed, they would read as deleted files). */
static void close_other_fds(const int *keep, size_t n) {
        unsigned lo = 3;
        for (size_t i = 0; i < n; i++) {
                if ((unsigned) keep[i] > lo)
                        (void) close_range(lo, (unsigned) keep[i] - 1, 0);
                if ((unsigned) keep[i] + 1 > lo)
                        lo = (unsigned) keep[i] + 1;
        }
        (void) close_range(lo, ~0u, 0);
}

static int cmp_int(const void *a, const void *b) {
        return *(const int *) a - *(const int *) b;
}

static uint64_t window_of(uint64_t actor_bytes) {
        uint64_t w = actor_bytes / 16; /* the library's default for a guard of this size */
        return w < 8 * MG_MIB ? 8 * MG_MIB : w > 64 * MG_MIB ? 64 * MG_MIB : w;
}

/* The worker's guard of ch: with a park deadline, and room for the freeze,
 * where chaos chose to park it (guards.h). */
static int add_guard(struct run_state *s, struct child *ch, bool park) {
        struct mg_guard_options go;
        int r = park ? bi_worker_park_guard_options(s->o->actor_bytes, PARK_DEADLINE_USEC, &go)
                     : bi_worker_guard_options(s->o->actor_bytes, &go);
        if (r < 0)
                return r;
        go.on_event = on_worker_event;
        go.userdata = s;
        go.log = on_worker_log;
        return mg_set_add(s->set, ch->cgroup, &go, &ch->guard);
}

static int spawn_actor(struct run_state *s) {
        const struct options *o = s->o;
        struct child *ch = &s->children[s->n_children];
        int sp[2], cp[2], r;
        char val[32];

        *ch = (struct child) { .id = s->next_id++, .sample_fd = -1, .control_fd = -1, .guest_fd = -1,
                               .park_idx = -1 };
        if (asprintf(&ch->cgroup, "%s/actor-%" PRIu32, s->parent, ch->id) < 0)
                return -ENOMEM;
        if (mkdir(ch->cgroup, 0755) < 0 && errno != EEXIST) {
                r = -errno;
                free(ch->cgroup);
                return r;
        }
        snprintf(ch->high, sizeof(ch->high), "%" PRIu64, bi_actor_high_bytes(o->actor_bytes));
        snprintf(val, sizeof(val), "%" PRIu64, bi_actor_max_bytes(o->actor_bytes));
        if ((r = mgt_cg_write(ch->cgroup, "memory.high", ch->high)) < 0 ||
            (r = mgt_cg_write(ch->cgroup, "memory.max", val)) < 0)
                goto fail_cg;
        /* The guest memory: the worker's, so it can save a parked actor's. */
        ch->guest_fd = memfd_create("burnin-guest", MFD_CLOEXEC);
        if (ch->guest_fd < 0 || ftruncate(ch->guest_fd, (off_t) o->actor_bytes) < 0) {
                r = -errno;
                goto fail_cg;
        }
        if ((r = add_guard(s, ch, false)) < 0)
                goto fail_cg;
        if (pipe2(sp, O_CLOEXEC) < 0) {
                r = -errno;
                goto fail_guard;
        }
        if (pipe2(cp, O_CLOEXEC) < 0) {
                r = -errno;
                close(sp[0]);
                close(sp[1]);
                goto fail_guard;
        }
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
                r = -errno;
                close(sp[0]), close(sp[1]), close(cp[0]), close(cp[1]);
                goto fail_guard;
        }
        if (pid == 0) {
                int keep[] = { sp[1], cp[0], s->dirfd, ch->guest_fd };
                qsort(keep, 4, sizeof(keep[0]), cmp_int);
                close_other_fds(keep, 4);
                signal(SIGINT, SIG_IGN);        /* the main process stops us */
                signal(SIGTERM, SIG_DFL);
                signal(SIGPIPE, SIG_DFL);
                r = mgt_cg_write(ch->cgroup, "cgroup.procs", "0");
                if (r < 0) {
                        fprintf(stderr, "memguard-burnin: cannot enter %s: %s\n", ch->cgroup, strerror(-r));
                        _exit(1);
                }
                struct bi_actor_config c = {
                        .id = ch->id, .cgroup = ch->cgroup, .dirfd = s->dirfd, .dir = o->dir,
                        .actor_bytes = o->actor_bytes,
                        .window_bytes = window_of(o->actor_bytes), .lend_deadline_usec = o->lend_deadline_usec,
                        .writer = o->writer, .restore = o->restore,
                        .seed = o->seed, .sample_fd = sp[1], .control_fd = cp[0], .guest_fd = ch->guest_fd,
                };
                bi_actor_main(&c);
        }
        close(sp[1]);
        close(cp[0]);
        (void) fcntl(sp[0], F_SETFL, O_NONBLOCK);
        ch->pid = pid;
        ch->sample_fd = sp[0];
        ch->control_fd = cp[1];
        s->n_children++;
        return 0;

fail_guard:
        (void) mg_set_remove(s->set, ch->guard);
fail_cg:
        if (ch->guest_fd >= 0)
                close(ch->guest_fd);
        (void) mgt_cg_rmdir(ch->cgroup, MG_USEC_PER_SEC);
        free(ch->cgroup);
        return r;
}

static void add_sample(struct run_state *s, const struct bi_sample *x) {
        if (s->n_samples == s->cap_samples) {
                size_t cap = s->cap_samples ? 2 * s->cap_samples : 256;
                struct bi_sample *p = realloc(s->samples, cap * sizeof(*p));
                if (!p) {
                        fail(s, "out of memory for samples");
                        return;
                }
                s->samples = p;
                s->cap_samples = cap;
        }
        s->samples[s->n_samples++] = *x;
        if (x->flags & BI_FLAG_KILL)
                s->kills++;
        if (x->flags & BI_FLAG_ERROR)
                s->errors++;
        if (x->flags) {
                fail(s, "actor %" PRIu32 " cycle %" PRIu32 ": %s", x->actor, x->cycle,
                     x->what[0] ? x->what : "regression flag");
                fprintf(stderr, "\nmemguard-burnin: actor %" PRIu32 " cycle %" PRIu32 " (%s): flags 0x%x: %s\n",
                        x->actor, x->cycle, bi_writer_to_string((enum bi_writer) x->writer), x->flags, x->what);
        }
}

static void drain(struct run_state *s, struct child *ch) {
        if (ch->sample_fd < 0)
                return;
        struct bi_sample x;
        while (read(ch->sample_fd, &x, sizeof(x)) == (ssize_t) sizeof(x)) {
                if (x.kind == BI_SAMPLE_GUEST) {
                        ch->guest_seed = x.guest_seed;
                        ch->have_seed = true;
                        continue;
                }
                add_sample(s, &x);
                ch->last_end_usec = x.end_usec;
        }
}

/* What a killed actor may leave: its snapshot (removed at the end of every
 * cycle, and the overshoot comes in the work phase, after it), the
 * helper's scratch file (removed before the helper reports ready), the
 * library's temporary files.  Each found is a leak, removed so that the
 * disk check counts it once. */
static void check_leftovers(struct run_state *s, const struct child *ch) {
        char snap[64], work[64];
        int fd = openat(s->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        struct dirent *e;
        if (!d) {
                if (fd >= 0)
                        close(fd);
                fail(s, "cannot list %s: %s", s->o->dir, strerror(errno));
                return;
        }
        snprintf(snap, sizeof(snap), "actor-%" PRIu32 ".snap", ch->id);
        snprintf(work, sizeof(work), "work-%" PRIu32 "-", ch->id);
        while ((e = readdir(d))) {
                if (strcmp(e->d_name, snap) != 0 && strncmp(e->d_name, work, strlen(work)) != 0 &&
                    strncmp(e->d_name, ".mgsnap-tmp-", 12) != 0)
                        continue;
                s->leaks++;
                fail(s, "actor %" PRIu32 " left %s/%s", ch->id, s->o->dir, e->d_name);
                (void) unlinkat(s->dirfd, e->d_name, 0);
        }
        closedir(d);
}

/* The actor's process is gone (and, if it was killed, its record told or
 * given up on): the cgroup's memory.high, what it left, the cgroup. */
static void finish(struct run_state *s, struct child *ch) {
        char high[64] = "";
        (void) mgt_cg_read(ch->cgroup, "memory.high", high, sizeof(high));
        high[strcspn(high, "\n")] = '\0';
        if (strcmp(high, ch->high) != 0) {
                s->leaks++;
                fail(s, "actor %" PRIu32 ": memory.high %s at the end, %s at the start", ch->id, high, ch->high);
        }
        if (ch->chaos)
                check_leftovers(s, ch);
        uint64_t oom = 0;
        if (mgt_cg_read_key(ch->cgroup, "memory.events", "oom_kill", &oom) == 0 && oom > 0) {
                s->kills++;
                fail(s, "actor %" PRIu32 ": %" PRIu64 " kernel OOM kills", ch->id, oom);
        }
        (void) mg_set_remove(s->set, ch->guard);
        /* its guest memory, charged to the cgroup until it goes */
        if (ch->guest_fd >= 0)
                close(ch->guest_fd);
        int r = mgt_cg_destroy(ch->cgroup, 10 * MG_USEC_PER_SEC);
        if (r < 0)
                fail(s, "cannot remove %s: %s", ch->cgroup, strerror(-r));
        close(ch->sample_fd);
        if (ch->control_fd >= 0)
                close(ch->control_fd);
        free(ch->cgroup);
        *ch = s->children[--s->n_children];
}

/* Reaps an exited child: remaining samples, exit status, then finish().  A
 * chaos actor that died of SIGKILL waits (dead) for its guard's record
 * first.  Returns true if the child left the table. */
static bool reap(struct run_state *s, struct child *ch, bool block, uint64_t now) {
        int status;
        if (ch->dead) {
                if (!ch->recorded && now - ch->dead_usec < RECORD_WAIT_USEC && !block)
                        return false;
                if (!ch->recorded) {
                        s->chaos_unrecorded++;
                        fail(s, "actor %" PRIu32 " died of SIGKILL after a chaos overshoot, but no guard told a "
                                "kill within %" PRIu64 " s", ch->id, RECORD_WAIT_USEC / MG_USEC_PER_SEC);
                        /* When, in the run's seconds: a log alone then tells
                         * a death during the overshoot's growth from one at
                         * the run's end. */
                        char last[64] = "none";
                        if (ch->last_end_usec > s->start_usec)
                                snprintf(last, sizeof(last), "%.1f s",
                                         (double) (ch->last_end_usec - s->start_usec) / 1e6);
                        fprintf(stderr,
                                "\nmemguard-burnin: actor %" PRIu32 " died of SIGKILL at %.1f s, no kill told by "
                                "%.1f s (chaos asked at %.1f s; the end of its last cycle: %s)\n",
                                ch->id, (double) (ch->dead_usec - s->start_usec) / 1e6,
                                (double) (now - s->start_usec) / 1e6, (double) (ch->chaos_usec - s->start_usec) / 1e6,
                                last);
                }
                finish(s, ch);
                return true;
        }
        pid_t p = waitpid(ch->pid, &status, block ? 0 : WNOHANG);
        if (p == 0 || (p < 0 && errno == EINTR))
                return false;
        drain(s, ch);
        if (p > 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && ch->chaos && !ch->killed) {
                ch->dead = true;
                ch->dead_usec = now;
                if (ch->control_fd >= 0)
                        close(ch->control_fd);
                ch->control_fd = -1;
                return false; /* the next pass looks for its record */
        }
        if (p > 0 && WIFSIGNALED(status) && !ch->killed) {
                s->kills++;
                fail(s, "actor %" PRIu32 " killed by signal %d%s", ch->id, WTERMSIG(status),
                     ch->recorded ? " (its guard told the kill)" : "");
        } else if (p > 0 && WEXITSTATUS(status) != 0) {
                s->errors++;
                fail(s, "actor %" PRIu32 " exited with status %d", ch->id, WEXITSTATUS(status));
        } else if (p > 0 && ch->chaos) {
                fail(s, "actor %" PRIu32 " was asked to overshoot but exited", ch->id);
        }
        finish(s, ch);
        return true;
}

/* The step at elapsed, and where in it; n_steps when the ladder is done. */
static size_t step_at(const struct options *o, uint64_t elapsed, uint64_t *ret_in) {
        for (size_t i = 0; i < o->n_steps; i++) {
                if (elapsed < o->steps[i].usec) {
                        *ret_in = elapsed;
                        return i;
                }
                elapsed -= o->steps[i].usec;
        }
        *ret_in = 0;
        return o->n_steps;
}

static size_t active(const struct run_state *s) {
        size_t n = 0;
        for (size_t i = 0; i < s->n_children; i++)
                n += !s->children[i].dead && s->children[i].control_fd >= 0;
        return n;
}

static uint64_t next_rand(struct run_state *s) {
        /* splitmix64 */
        uint64_t z = (s->rng += UINT64_C(0x9e3779b97f4a7c15));
        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

/* Chaos: the k-th of N overshoots of a step is due at (k + 1/2) / N of it,
 * sent to an actor picked at random among those running and not asked
 * before.  One that finds no such actor is tried again on the next pass. */
static void chaos(struct run_state *s, size_t step, uint64_t in_step) {
        const struct options *o = s->o;
        if (o->chaos == 0 || step >= o->n_steps || o->steps[step].actors == 0)
                return;
        uint32_t k = s->chaos_sent[step];
        if (k >= o->chaos || in_step < o->steps[step].usec / o->chaos * k + o->steps[step].usec / o->chaos / 2)
                return;
        size_t cand[MAX_ACTORS], n = 0;
        for (size_t i = 0; i < s->n_children; i++)
                if (!s->children[i].dead && !s->children[i].chaos && s->children[i].control_fd >= 0)
                        cand[n++] = i;
        if (n == 0)
                return;
        struct child *ch = &s->children[cand[next_rand(s) % n]];
        char b = BI_CONTROL_CHAOS;
        bool park = bi_park_pick(k, o->chaos, o->park);
        if (park) {
                /* Its guard anew, with a park deadline: its overshoot is
                 * parked, saved, then killed (park_begin()). */
                (void) mg_set_remove(s->set, ch->guard);
                ch->guard = NULL;
                int r = add_guard(s, ch, true);
                if (r < 0) {
                        s->errors++;
                        fail(s, "cannot guard actor %" PRIu32 " with parks: %s", ch->id, strerror(-r));
                        park = false;
                        if (add_guard(s, ch, false) < 0)
                                return;
                }
        }
        if (write(ch->control_fd, &b, 1) != 1) {
                fail(s, "cannot ask actor %" PRIu32 " to overshoot: %s", ch->id, strerror(errno));
                return;
        }
        ch->chaos = true;
        ch->park = park;
        ch->chaos_usec = mg_mono_usec();
        s->chaos_sent[step]++;
        s->chaos_asked++;
        s->parks_asked += park;
        fprintf(stderr, "\nmemguard-burnin: chaos: actor %" PRIu32 " asked to overshoot%s\n", ch->id,
                park ? " (to be parked)" : "");
}

static void progress(const struct run_state *s, uint64_t now, bool final) {
        static uint64_t last;
        /* Rewritten in place only on a real terminal: a serial console or a
         * log (vmrun: no TERM) gets a line every 10 s. */
        const char *term = getenv("TERM");
        bool tty = isatty(2) && term && strcmp(term, "dumb") != 0;
        if (!final && now - last < (tty ? 500000 : 10000000))
                return;
        last = now;
        fprintf(stderr, "%s[%5.0fs] cycles %zu  errors %u  kills %u  chaos %u/%u  parks %zu/%u  actors %zu%s",
                tty ? "\r" : "", (double) (now - s->start_usec) / 1e6, s->n_samples, s->errors, s->kills,
                s->chaos_killed, s->chaos_asked, s->n_parks, s->parks_asked, active(s), tty && !final ? "   " : "\n");
}

static void loop(struct run_state *s) {
        const struct options *o = s->o;
        for (;;) {
                uint64_t now = mg_mono_usec(), in_step = 0;
                size_t step = interrupted ? o->n_steps : step_at(o, now - s->start_usec, &in_step);
                bool done = step >= o->n_steps;
                uint32_t want = done ? 0 : o->steps[step].actors;

                while (!done && active(s) < want && s->n_children < MAX_ACTORS) {
                        int r = spawn_actor(s);
                        if (r < 0) {
                                s->errors++;
                                fail(s, "cannot start an actor: %s", strerror(-r));
                                interrupted = 1;
                                break;
                        }
                }
                /* Stop the newest actors beyond the step's count: they finish their cycle. */
                for (size_t i = s->n_children; i-- > 0 && active(s) > want;) {
                        struct child *ch = &s->children[i];
                        if (!ch->dead && ch->control_fd >= 0) {
                                close(ch->control_fd);
                                ch->control_fd = -1;
                                ch->stop_usec = now;
                        }
                }
                if (!done)
                        chaos(s, step, in_step);
                for (size_t i = 0; i < s->n_children;) {
                        struct child *ch = &s->children[i];
                        if (!ch->dead)
                                drain(s, ch);
                        uint64_t grace = STOP_GRACE_USEC + (ch->chaos ? BI_CHAOS_WAIT_USEC : 0);
                        if (!ch->dead && ch->control_fd < 0 && !ch->killed && now - ch->stop_usec > grace) {
                                fail(s, "actor %" PRIu32 " did not finish its cycle in %" PRIu64 " s", ch->id,
                                     grace / 1000000);
                                (void) kill(ch->pid, SIGKILL);
                                ch->killed = true;
                        }
                        if (!reap(s, ch, false, now))
                                i++;
                }
                progress(s, now, false);
                if (done && s->n_children == 0)
                        break;
                struct pollfd p[MAX_ACTORS + 2];
                size_t np = 0;
                p[np++] = (struct pollfd) { .fd = mg_set_get_fd(s->set), .events = POLLIN };
                p[np++] = (struct pollfd) { .fd = s->wake[0], .events = POLLIN };
                for (size_t i = 0; i < s->n_children; i++)
                        if (!s->children[i].dead)
                                p[np++] = (struct pollfd) { .fd = s->children[i].sample_fd, .events = POLLIN };
                /* a park's save may take the lock for its lend meanwhile */
                pthread_mutex_unlock(&s->mu);
                (void) poll(p, np, 200);
                pthread_mutex_lock(&s->mu);
                char buf[64];
                while (read(s->wake[0], buf, sizeof(buf)) > 0)
                        ;
                int r = mg_set_process(s->set);
                if (r < 0) {
                        s->errors++;
                        fail(s, "the worker's guard set: %s", strerror(-r));
                }
                park_poll(s, false);
        }
        progress(s, mg_mono_usec(), true);
}

/* Set-up failed (the reason already printed): what main() had made. */
static int setup_failed(struct run_state *s, char *parent) {
        free(parent);
        close(s->dirfd);
        return EXIT_SETUP;
}

static uint64_t disk_used(int dirfd, int *ret_err) {
        struct statfs f;
        if (fstatfs(dirfd, &f) < 0) {
                *ret_err = -errno;
                return 0;
        }
        return ((uint64_t) f.f_blocks - (uint64_t) f.f_bfree) * (uint64_t) f.f_bsize;
}

int main(int argc, char **argv) {
        struct options o;
        struct run_state s = { .o = &o };
        char *parent = NULL;
        bool own_parent = false;
        int r, err = 0;

        parse_args(argc, argv, &o);
        s.rng = o.seed;

        int dirfd = open(o.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0) {
                fprintf(stderr, "memguard-burnin: --dir %s: %s\n", o.dir, strerror(errno));
                return EXIT_SETUP;
        }
        s.dirfd = dirfd;
        if (o.parent) {
                r = mgt_cg_resolve(o.parent, &parent);
                if (r < 0) {
                        fprintf(stderr, "memguard-burnin: --parent %s: %s\n", o.parent,
                                r == -ENOTSUP ? "not a cgroup v2 directory" : strerror(-r));
                        return setup_failed(&s, parent);
                }
        } else {
                r = mgt_cg_is_cgroup2(MGT_CGROUP_ROOT);
                if (r <= 0) {
                        fprintf(stderr, "memguard-burnin: %s is not cgroup v2\n", MGT_CGROUP_ROOT);
                        return setup_failed(&s, parent);
                }
                r = mgt_cg_make_child(MGT_CGROUP_ROOT, "memguard-burnin", &parent);
                if (r < 0) {
                        fprintf(stderr, "memguard-burnin: cannot create a cgroup under %s: %s\n", MGT_CGROUP_ROOT,
                                strerror(-r));
                        return setup_failed(&s, parent);
                }
                own_parent = true;
        }
        r = mgt_cg_enable_memory(parent);
        if (r < 0) {
                fprintf(stderr, "memguard-burnin: cannot enable the memory controller in %s: %s\n", parent,
                        r == -ENOTSUP ? "not available there" : strerror(-r));
                if (own_parent)
                        (void) mgt_cg_rmdir(parent, 1000000);
                return setup_failed(&s, parent);
        }
        s.parent = parent;
        struct mg_set_options so = { .size = sizeof(so), .log = on_worker_log };
        r = mg_set_new(&so, &s.set);
        if (r < 0) {
                fprintf(stderr, "memguard-burnin: cannot make the worker's guard set: %s\n", strerror(-r));
                if (own_parent)
                        (void) mgt_cg_rmdir(parent, 1000000);
                return setup_failed(&s, parent);
        }

        struct sigaction sa = { .sa_handler = on_signal };
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        signal(SIGPIPE, SIG_IGN);

        if (pipe2(s.wake, O_CLOEXEC | O_NONBLOCK) < 0) {
                fprintf(stderr, "memguard-burnin: pipe: %s\n", strerror(errno));
                s.set = mg_set_free(s.set);
                if (own_parent)
                        (void) mgt_cg_rmdir(parent, 1000000);
                return setup_failed(&s, parent);
        }
        pthread_mutex_init(&s.mu, NULL);

        uint64_t disk0 = disk_used(s.dirfd, &err);
        s.start_usec = mg_mono_usec();
        pthread_mutex_lock(&s.mu);
        loop(&s);
        pthread_mutex_unlock(&s.mu);
        /* every park's thread: the saves are done (their actors' kills were
         * told), a check may still run */
        for (bool any = true; any;) {
                park_poll(&s, true);
                any = false;
                for (size_t i = 0; i < s.n_parks; i++)
                        any = any || s.jobs[i]->running;
        }
        uint64_t end_usec = mg_mono_usec();
        s.set = mg_set_free(s.set);

        /* ---- end-of-run checks */
        uint64_t disk1 = disk_used(s.dirfd, &err);
        if (err < 0)
                fail(&s, "statfs %s: %s", o.dir, strerror(-err));
        else if (disk1 > disk0 + DISK_TOLERANCE_BYTES + disk0 / 100)
                fail(&s, "disk usage of %s grew by %" PRIu64 " KiB (tolerance 1 MiB + 1 %%)", o.dir,
                     (disk1 - disk0) / 1024);
        int deleted = bi_count_deleted_fds();
        if (deleted != 0)
                fail(&s, "%d fds of deleted files open in the main process", deleted);
        if (own_parent && (r = mgt_cg_rmdir(parent, 10 * MG_USEC_PER_SEC)) < 0)
                fail(&s, "cannot remove %s: %s", parent, strerror(-r));
        if (s.n_samples == 0)
                fail(&s, "no cycle completed");
        if (!interrupted && s.chaos_killed != s.chaos_asked)
                fail(&s, "chaos asked %u overshoots, the worker's guards killed %u of them", s.chaos_asked,
                     s.chaos_killed);
        unsigned want_chaos = 0;
        for (size_t i = 0; i < o.n_steps; i++)
                want_chaos += o.steps[i].actors ? o.chaos : 0;
        if (!interrupted && s.parks_asked != s.n_parks)
                fail(&s, "chaos chose %u actors to park, %zu were parked", s.parks_asked, s.n_parks);
        if (!interrupted && s.chaos_asked != want_chaos)
                fail(&s, "chaos asked %u overshoots of the %u the ladder called for (no actor to ask)", s.chaos_asked,
                     want_chaos);

        struct bi_run run = { .samples = s.samples, .n = s.n_samples, .start_usec = s.start_usec,
                              .slot_usec = o.slot_usec, .writer = o.writer, .steps = o.steps,
                              .n_steps = o.n_steps, .kills = s.kill_log, .n_kills = s.n_kill_log,
                              .parks = s.parks, .n_parks = s.n_parks };
        printf("memguard-burnin: %zu cycles in %.0f s, actor size %" PRIu64 " MiB, writer %s, restore %s, "
               "disk %+.1f MiB\n",
               s.n_samples, (double) (end_usec - s.start_usec) / 1e6, o.actor_bytes / MG_MIB,
               bi_writer_to_string(o.writer), bi_restore_to_string(o.restore),
               ((double) disk1 - (double) disk0) / (double) MG_MIB);
        bi_print_tables(&run);
        if (o.park)
                bi_print_park_tables(&run);
        unsigned target_fails = bi_print_checks(&run);
        printf("\nchaos: %u overshoots asked, %u killed by the worker's guards as asked (%u of them as a stall while "
               "they grew), %u without a record; kills not asked: %u\n",
               s.chaos_asked, s.chaos_killed, s.chaos_stalls, s.chaos_unrecorded, s.kills);
        if (o.park)
                printf("parks: %zu of %u chosen (saved while frozen, then killed), images lost %u, corrupted %u\n",
                       s.n_parks, s.parks_asked, s.images_lost, s.images_corrupted);
        printf("leaks: %u (files left by killed actors, memory.high not as set), deleted fds in the main "
               "process: %d, disk %+.1f MiB\n",
               s.leaks, deleted, ((double) disk1 - (double) disk0) / (double) MG_MIB);
        if (o.csv && (r = bi_write_csv(&run, o.csv)) < 0)
                fail(&s, "--csv %s: %s", o.csv, strerror(-r));
        if (o.json && (r = bi_write_json(&run, o.json)) < 0)
                fail(&s, "--json %s: %s", o.json, strerror(-r));
        if (o.svg && (r = bi_write_svg(&run, o.svg)) < 0)
                fail(&s, "--svg %s: %s", o.svg, strerror(-r));

        if (interrupted)
                printf("interrupted\n");
        if (s.failures) {
                printf("FAIL: %u failed checks (kills %u, errors %u, leaks %u", s.failures, s.kills, s.errors,
                       s.leaks);
                if (o.park)
                        printf(", parks %zu, images lost %u, corrupted %u", s.n_parks, s.images_lost,
                               s.images_corrupted);
                printf("); first: %s\n", s.first_failure);
        } else {
                printf("PASS: kills only where chaos asked (%u), no errors, memory.high exact, no deleted fds, "
                       "disk back, page cache within the window", s.chaos_killed);
                if (o.park)
                        printf("; parks %zu, images lost %u, corrupted %u", s.n_parks, s.images_lost,
                               s.images_corrupted);
                printf("\n");
        }
        if (target_fails)
                printf("TARGETS: %u failed (above); the regression checks are the line before\n", target_fails);
        free(s.samples);
        free(s.kill_log);
        for (size_t i = 0; i < s.n_parks; i++)
                free(s.jobs[i]);
        free(s.jobs);
        free(s.parks);
        close(s.wake[0]);
        close(s.wake[1]);
        pthread_mutex_destroy(&s.mu);
        free(parent);
        close(s.dirfd);
        return s.failures ? EXIT_REGRESSION : 0;
}
