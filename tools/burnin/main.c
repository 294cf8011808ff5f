/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memguard-burnin: the main process.  Parses the command line, creates the
 * parent cgroup, forks one actor process per actor cgroup as the load ladder
 * asks, collects their samples, and runs the end-of-run checks.  See
 * memguard-burnin.1.
 *
 * Exit: 0 all checks passed, 1 a regression check failed, 2 bad arguments,
 * 3 the run could not be set up (no cgroup v2, no permission, bad --dir).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgdir.h"
#include "../memguard/size.h"
#include "burnin.h"
#include "memguard/memguard.h"
#include "util.h"

#define EXIT_REGRESSION 1
#define EXIT_USAGE 2
#define EXIT_SETUP 3
#define MAX_STEPS 64
#define MAX_ACTORS 256
#define STOP_GRACE_USEC (120 * MG_USEC_PER_SEC) /* a cycle in progress may finish */
#define DISK_TOLERANCE_BYTES MG_MIB               /* + 1 % of the start usage */

struct step {
        uint32_t actors;
        uint64_t usec;
};

struct options {
        struct step steps[MAX_STEPS];
        size_t n_steps;
        uint32_t actors;
        uint64_t duration_usec, actor_bytes, slot_usec, seed;
        bool have_actors, have_duration;
        const char *dir, *parent, *csv, *json, *svg;
        enum bi_writer writer;
};

struct child {
        pid_t pid;
        uint32_t id;
        int sample_fd, control_fd;      /* control_fd closed: asked to stop */
        char *cgroup;
        uint64_t stop_usec;
        bool killed;                    /* by us, after the grace period */
};

static const char usage_text[] =
        "usage: memguard-burnin [--actors N | --ladder N:DUR,...] [--duration DUR] [--actor-size SIZE]\n"
        "                       [--dir DIR] [--parent CGROUP] [--writer memguard|buffered|both]\n"
        "                       [--slot DUR] [--csv FILE] [--json FILE] [--svg FILE] [--seed N]\n"
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
                struct step *st = &o->steps[o->n_steps];
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
               O_SVG, O_SEED };
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
        if (ladder) {
                if (o->have_actors)
                        usage_error("--ladder and --actors exclude each other");
                if (o->have_duration)
                        usage_error("--ladder and --duration exclude each other: the ladder says how long");
                parse_ladder(ladder, o);
        } else {
                o->steps[0] = (struct step) { .actors = o->actors, .usec = o->duration_usec };
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
        struct child children[MAX_ACTORS];
        size_t n_children;
        uint32_t next_id;
        struct bi_sample *samples;
        size_t n_samples, cap_samples;
        uint64_t start_usec;
        unsigned kills, errors, failures; /* failures: any flag */
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

static int spawn_actor(struct run_state *s) {
        const struct options *o = s->o;
        struct child *ch = &s->children[s->n_children];
        int sp[2], cp[2], r;
        char val[32];

        *ch = (struct child) { .id = s->next_id++, .sample_fd = -1, .control_fd = -1 };
        if (asprintf(&ch->cgroup, "%s/actor-%" PRIu32, s->parent, ch->id) < 0)
                return -ENOMEM;
        if (mkdir(ch->cgroup, 0755) < 0 && errno != EEXIST)
                return -errno;
        /* memory.high at 90 % of the actor size; memory.max leaves room for the lend */
        snprintf(val, sizeof(val), "%" PRIu64, o->actor_bytes / 10 * 9 / 4096 * 4096);
        if ((r = mgt_cg_write(ch->cgroup, "memory.high", val)) < 0)
                return r;
        snprintf(val, sizeof(val), "%" PRIu64, 2 * o->actor_bytes);
        if ((r = mgt_cg_write(ch->cgroup, "memory.max", val)) < 0)
                return r;
        if (pipe2(sp, O_CLOEXEC) < 0)
                return -errno;
        if (pipe2(cp, O_CLOEXEC) < 0) {
                r = -errno;
                close(sp[0]);
                close(sp[1]);
                return r;
        }
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
                r = -errno;
                close(sp[0]), close(sp[1]), close(cp[0]), close(cp[1]);
                return r;
        }
        if (pid == 0) {
                /* The main process has one thread, so the child may do anything. */
                close(sp[0]);
                close(cp[1]);
                for (size_t k = 0; k < s->n_children; k++) {
                        close(s->children[k].sample_fd);
                        if (s->children[k].control_fd >= 0)
                                close(s->children[k].control_fd);
                }
                signal(SIGINT, SIG_IGN);        /* the main process stops us */
                signal(SIGTERM, SIG_DFL);
                r = mgt_cg_write(ch->cgroup, "cgroup.procs", "0");
                if (r < 0) {
                        fprintf(stderr, "memguard-burnin: cannot enter %s: %s\n", ch->cgroup, strerror(-r));
                        _exit(1);
                }
                struct bi_actor_config c = {
                        .id = ch->id, .cgroup = ch->cgroup, .dirfd = s->dirfd, .dir = o->dir,
                        .actor_bytes = o->actor_bytes, .writer = o->writer, .seed = o->seed,
                        .sample_fd = sp[1], .control_fd = cp[0],
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
        struct bi_sample x;
        while (read(ch->sample_fd, &x, sizeof(x)) == (ssize_t) sizeof(x))
                add_sample(s, &x);
}

/* Reaps an exited child: remaining samples, exit status, kernel OOM kills,
 * the cgroup.  Returns true if it was reaped. */
static bool reap(struct run_state *s, struct child *ch, bool block) {
        int status;
        pid_t p = waitpid(ch->pid, &status, block ? 0 : WNOHANG);
        if (p == 0 || (p < 0 && errno == EINTR))
                return false;
        drain(s, ch);
        if (p > 0 && WIFSIGNALED(status) && !ch->killed) {
                s->kills++;
                fail(s, "actor %" PRIu32 " killed by signal %d", ch->id, WTERMSIG(status));
        } else if (p > 0 && WEXITSTATUS(status) != 0) {
                s->errors++;
                fail(s, "actor %" PRIu32 " exited with status %d", ch->id, WEXITSTATUS(status));
        }
        uint64_t oom = 0;
        if (mgt_cg_read_key(ch->cgroup, "memory.events", "oom_kill", &oom) == 0 && oom > 0) {
                s->kills++;
                fail(s, "actor %" PRIu32 ": %" PRIu64 " kernel OOM kills", ch->id, oom);
        }
        int r = mgt_cg_destroy(ch->cgroup, 10 * MG_USEC_PER_SEC);
        if (r < 0)
                fail(s, "cannot remove %s: %s", ch->cgroup, strerror(-r));
        close(ch->sample_fd);
        if (ch->control_fd >= 0)
                close(ch->control_fd);
        free(ch->cgroup);
        *ch = s->children[--s->n_children];
        return true;
}

static uint32_t desired_actors(const struct options *o, uint64_t elapsed, bool *ret_done) {
        for (size_t i = 0; i < o->n_steps; i++) {
                if (elapsed < o->steps[i].usec) {
                        *ret_done = false;
                        return o->steps[i].actors;
                }
                elapsed -= o->steps[i].usec;
        }
        *ret_done = true;
        return 0;
}

static size_t active(const struct run_state *s) {
        size_t n = 0;
        for (size_t i = 0; i < s->n_children; i++)
                n += s->children[i].control_fd >= 0;
        return n;
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
        fprintf(stderr, "%s[%5.0fs] cycles %zu  errors %u  kills %u  actors %zu%s", tty ? "\r" : "",
                (double) (now - s->start_usec) / 1e6, s->n_samples, s->errors, s->kills, active(s),
                tty && !final ? "   " : "\n");
}

static void loop(struct run_state *s) {
        const struct options *o = s->o;
        for (;;) {
                uint64_t now = mg_mono_usec();
                bool done = false; /* stays unset when interrupted */
                uint32_t want = interrupted ? 0 : desired_actors(o, now - s->start_usec, &done);
                done = done || interrupted;

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
                        if (ch->control_fd >= 0) {
                                close(ch->control_fd);
                                ch->control_fd = -1;
                                ch->stop_usec = now;
                        }
                }
                for (size_t i = 0; i < s->n_children;) {
                        struct child *ch = &s->children[i];
                        drain(s, ch);
                        if (ch->control_fd < 0 && !ch->killed && now - ch->stop_usec > STOP_GRACE_USEC) {
                                fail(s, "actor %" PRIu32 " did not finish its cycle in %" PRIu64 " s", ch->id,
                                     STOP_GRACE_USEC / 1000000);
                                (void) kill(ch->pid, SIGKILL);
                                ch->killed = true;
                        }
                        if (!reap(s, ch, false))
                                i++;
                }
                progress(s, now, false);
                if (done && s->n_children == 0)
                        break;
                struct pollfd p[MAX_ACTORS];
                for (size_t i = 0; i < s->n_children; i++)
                        p[i] = (struct pollfd) { .fd = s->children[i].sample_fd, .events = POLLIN };
                (void) poll(p, s->n_children, 200);
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

        struct sigaction sa = { .sa_handler = on_signal };
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        signal(SIGPIPE, SIG_IGN);

        uint64_t disk0 = disk_used(s.dirfd, &err);
        s.start_usec = mg_mono_usec();
        loop(&s);
        uint64_t end_usec = mg_mono_usec();

        /* ---- end-of-run checks */
        uint64_t disk1 = disk_used(s.dirfd, &err);
        if (err < 0)
                fail(&s, "statfs %s: %s", o.dir, strerror(-err));
        else if (disk1 > disk0 + DISK_TOLERANCE_BYTES + disk0 / 100)
                fail(&s, "disk usage of %s grew by %" PRIu64 " KiB (tolerance 1 MiB + 1 %%)", o.dir,
                     (disk1 - disk0) / 1024);
        r = bi_count_deleted_fds();
        if (r != 0)
                fail(&s, "%d fds of deleted files open in the main process", r);
        if (own_parent && (r = mgt_cg_rmdir(parent, 10 * MG_USEC_PER_SEC)) < 0)
                fail(&s, "cannot remove %s: %s", parent, strerror(-r));
        if (s.n_samples == 0)
                fail(&s, "no cycle completed");

        struct bi_run run = { .samples = s.samples, .n = s.n_samples, .start_usec = s.start_usec,
                              .slot_usec = o.slot_usec, .writer = o.writer };
        printf("memguard-burnin: %zu cycles in %.0f s, actor size %" PRIu64 " MiB, writer %s, disk %+.1f MiB\n",
               s.n_samples, (double) (end_usec - s.start_usec) / 1e6, o.actor_bytes / MG_MIB,
               bi_writer_to_string(o.writer), ((double) disk1 - (double) disk0) / (double) MG_MIB);
        bi_print_tables(&run);
        if (o.csv && (r = bi_write_csv(&run, o.csv)) < 0)
                fail(&s, "--csv %s: %s", o.csv, strerror(-r));
        if (o.json && (r = bi_write_json(&run, o.json)) < 0)
                fail(&s, "--json %s: %s", o.json, strerror(-r));
        if (o.svg && (r = bi_write_svg(&run, o.svg)) < 0)
                fail(&s, "--svg %s: %s", o.svg, strerror(-r));

        if (interrupted)
                printf("interrupted\n");
        if (s.failures) {
                printf("FAIL: %u failed checks (kills %u, errors %u); first: %s\n", s.failures, s.kills, s.errors,
                       s.first_failure);
        } else {
                printf("PASS: no kills, no errors, memory.high exact, no deleted fds, disk back, page cache "
                       "within the window\n");
        }
        free(s.samples);
        free(parent);
        close(s.dirfd);
        return s.failures ? EXIT_REGRESSION : 0;
}
