/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A guard set in an sd-event loop (libsystemd): the set's fd as an I/O
 * source, SIGTERM and SIGINT as signal sources.  The same shape fits any
 * loop that watches an fd: the fd is readable when a tick is due or a
 * watched file changed, and mg_set_process() does the rest.
 *
 *   cc -o sd-event-worker sd-event-worker.c $(pkg-config --cflags --libs memguard libsystemd)
 *   ./sd-event-worker 512M /sys/fs/cgroup/sandboxes/a /sys/fs/cgroup/sandboxes/b
 */
#include <errno.h>
#include <memguard/memguard.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-event.h>

static void on_event(mg_guard *g, const struct mg_event *ev, void *userdata) {
        char report[2048];

        (void) g;
        (void) userdata;
        if (ev->type == MG_EVENT_KILL) {
                mg_kill_record_format(ev->kill, report, sizeof(report));
                fprintf(stderr, "%s\n", report);
        } else {
                fprintf(stderr, "%s: %s\n", ev->cgroup, mg_event_type_to_string(ev->type));
        }
}

static int on_set_fd(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        mg_set *set = userdata;
        int r;

        (void) fd;
        (void) revents;
        r = mg_set_process(set);
        if (r < 0) {
                fprintf(stderr, "mg_set_process: %s\n", strerror(-r));
                return sd_event_exit(sd_event_source_get_event(s), 1);
        }
        return 0;
}

int main(int argc, char **argv) {
        sd_event *e = NULL;
        mg_set *set = NULL;
        uint64_t limit;
        sigset_t mask;
        char *end;
        int r, ret = 1;

        if (argc < 3) {
                fprintf(stderr, "usage: %s SIZE-IN-MIB-WITH-M CGROUP-DIR...\n", argv[0]);
                return 2;
        }
        limit = strtoull(argv[1], &end, 10) << 20;
        if (limit == 0 || strcmp(end, "M") != 0) {
                fprintf(stderr, "%s: not a size in MiB (512M)\n", argv[1]);
                return 2;
        }
        r = mg_set_new(NULL, &set);
        if (r < 0) {
                fprintf(stderr, "mg_set_new: %s\n", strerror(-r));
                return 1;
        }
        for (int i = 2; i < argc; i++) {
                struct mg_guard_options o;

                mg_guard_options_init(&o, limit);
                o.on_event = on_event;
                r = mg_set_add(set, argv[i], &o, NULL);
                if (r < 0) {
                        fprintf(stderr, "%s: %s\n", argv[i], strerror(-r));
                        goto out;
                }
        }
        /* sd-event's signal sources need the signals blocked; mg_set_new()
         * started the set's worker already, which blocks every signal. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        r = sd_event_default(&e);
        if (r >= 0)
                r = sd_event_add_io(e, NULL, mg_set_get_fd(set), EPOLLIN, on_set_fd, set);
        if (r >= 0)
                r = sd_event_add_signal(e, NULL, SIGTERM, NULL, NULL); /* NULL handler: exit the loop */
        if (r >= 0)
                r = sd_event_add_signal(e, NULL, SIGINT, NULL, NULL);
        if (r < 0) {
                fprintf(stderr, "sd-event: %s\n", strerror(-r));
                goto out;
        }
        r = sd_event_loop(e);
        ret = r == 0 || r == 128 + SIGTERM || r == 128 + SIGINT ? 0 : 1;
out:
        sd_event_unref(e);
        mg_set_free(set);
        return ret;
}
