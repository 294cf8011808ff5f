/* SPDX-License-Identifier: Apache-2.0 */
#include <stdbool.h>

#include "shim.h"
#include "_cgo_export.h"

static void on_event(mg_guard *g, const struct mg_event *ev, void *userdata) {
        cggEvent(g, (struct mg_event *) ev, (uintptr_t) userdata);
}

static void on_log(int level, const char *msg, void *userdata) {
        cggLog(level, (char *) msg, (uintptr_t) userdata);
}

static void on_lock(void *userdata, bool lock) {
        cggLock((uintptr_t) userdata, lock ? 1 : 0);
}

void cgg_options_set_callbacks(struct mg_guard_options *o, uintptr_t handle, int with_log) {
        o->on_event = on_event;
        o->userdata = (void *) handle;
        if (with_log) {
                o->log = on_log;
                o->log_userdata = (void *) handle;
        }
}

void cgg_set_options_set_log(struct mg_set_options *o, uintptr_t handle) {
        o->log = on_log;
        o->log_userdata = (void *) handle;
}

void cgg_snapshot_options_set_callbacks(struct mg_snapshot_options *o, uintptr_t set_handle, uintptr_t log_handle) {
        if (set_handle) {
                o->lock = on_lock;
                o->lock_userdata = (void *) set_handle;
        }
        if (log_handle) {
                o->log = on_log;
                o->log_userdata = (void *) log_handle;
        }
}

static __thread char thread_anchor;

uintptr_t cgg_thread_token(void) {
        return (uintptr_t) &thread_anchor;
}

int cgg_set_process(mg_set *s, uintptr_t token) {
        if ((uintptr_t) &thread_anchor != token)
                return CGG_WRONG_THREAD;
        return mg_set_process(s);
}
