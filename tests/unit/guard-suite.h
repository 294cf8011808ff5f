/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The guard suite, in three binaries (test-guard.c: a guard alone;
 * test-set.c: guards in a set; test-sizes.c: the sized structs): each that
 * includes this header gets, for itself, a fixture (fx), a recorder (seen)
 * fed by on_event() and on_log(), the suite's setup() and teardown(),
 * new_guard() and tick_at().
 */
#include <criterion/criterion.h>
#include <string.h>

#include "fixture.h"
#include "guard.h"
#include "lend.h"
#include "tick.h"
#include "util.h"

static struct fixture fx;
static struct fixture_seen seen;

static inline void on_log(int level, const char *msg, void *ud) {
        (void) ud;
        fixture_record_log(&seen, level, msg);
}

static inline void on_event(mg_guard *g, const struct mg_event *ev, void *ud) {
        (void) g;
        (void) ud;
        fixture_record(&seen, ev);
}

static inline void setup(void) {
        memset(&seen, 0, sizeof(seen));
        fixture_init(&fx);
}

static inline void teardown(void) {
        fixture_cleanup(&fx);
}

/* A guard for a 256 MiB actor on the fixture, clock injected. */
static inline mg_guard *new_guard(void) {
        struct mg_guard_options o;
        mg_guard *g = NULL;
        cr_assert_eq(mg_guard_options_init(&o, 256 * MG_MIB), 0);
        o.on_event = on_event;
        o.log = on_log;
        cr_assert_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fx.io, &g), 0);
        mg_guard_set_clock(g, fixture_clock, &fx);
        fixture_map_fds(&fx, &g->cg);
        fixture_reset_counts(&fx);
        return g;
}

static inline int tick_at(mg_guard *g, uint64_t dt_usec) {
        fx.now_usec += dt_usec;
        return mg_guard_tick(g);
}
