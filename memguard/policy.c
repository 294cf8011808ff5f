/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "policy.h"

uint64_t mg_used_bytes(const struct mg_memstat *st) {
        return st->anon + st->shmem + st->kernel + st->sock;
}

void mg_policy_reset(struct mg_policy_state *s) {
        s->head = 0;
        s->count = 0;
        s->stalling_since_usec = 0;
}

bool mg_policy_overshoot(const struct mg_policy_params *p, uint64_t current_bytes, uint64_t used_bytes) {
        return used_bytes > p->limit_bytes && current_bytes > p->limit_bytes;
}

/* The newest sample at least age_usec older than the newest, or NULL. */
static const struct mg_sample *sample_older_than(const struct mg_policy_state *s, uint64_t age_usec) {
        const struct mg_sample *x = &s->ring[s->head];

        for (unsigned i = 1; i < s->count; i++) {
                const struct mg_sample *o = &s->ring[(s->head + MG_POLICY_RING - i) % MG_POLICY_RING];
                if (x->time_usec - o->time_usec >= age_usec)
                        return o;
        }
        return NULL;
}

static const struct mg_sample *sample_oldest(const struct mg_policy_state *s) {
        return &s->ring[(s->head + MG_POLICY_RING - (s->count - 1)) % MG_POLICY_RING];
}

static uint64_t delta(uint64_t newer, uint64_t older) {
        return newer > older ? newer - older : 0; /* a counter that went back says nothing */
}

/* The stall criteria over the samples o..x: the actor hit its limit
 * (memory.events.local high or max rose), it re-read pages it had lost
 * (refaults rose: reclaim takes what it still needs), and it spent at least
 * the threshold share of the time stalled on memory.  A writer at its limit
 * stalls on writeback in reclaim but refaults nothing; a reader streaming a
 * file through its cache refaults, but its reclaim is cheap and it waits on
 * io, not memory. */
static bool stalled_between(const struct mg_policy_params *p, const struct mg_sample *o,
                            const struct mg_sample *x) {
        uint64_t span = x->time_usec - o->time_usec;

        if (span == 0 || !o->have_events || !o->have_pressure)
                return false;
        return delta(x->limit_events, o->limit_events) > 0 && delta(x->refaults, o->refaults) > 0 &&
               delta(x->mem_some_usec, o->mem_some_usec) * 10000 >= span * p->stall_pressure_permyriad;
}

enum mg_verdict mg_policy_decide(const struct mg_policy_params *p, struct mg_policy_state *s,
                                 const struct mg_sample *x, uint64_t *ret_stall_usec) {
        const struct mg_sample *o, *m;
        enum mg_verdict v = MG_VERDICT_NEAR;

        /* Samples must be consecutive slow ticks in time order; anything else
         * (a clock that went back) starts the window over. */
        if (s->count > 0 && x->time_usec < s->ring[s->head].time_usec)
                mg_policy_reset(s);
        s->head = s->count == 0 ? 0 : (s->head + 1) % MG_POLICY_RING;
        s->ring[s->head] = *x;
        if (s->count < MG_POLICY_RING)
                s->count++;

        if (mg_policy_overshoot(p, x->current_bytes, x->used_bytes)) {
                v = MG_VERDICT_OVERSHOOT;
        } else if (x->have_events && x->have_pressure && s->count > 1) {
                o = sample_older_than(s, p->stall_window_usec);
                if (stalled_between(p, o ? o : sample_oldest(s), x)) {
                        v = MG_VERDICT_STALLING;
                        /* "Across the whole window": the criteria also hold in
                         * each half of it, not just once at its start. */
                        m = sample_older_than(s, p->stall_window_usec / 2);
                        if (o && m && stalled_between(p, o, m) && stalled_between(p, m, x))
                                v = MG_VERDICT_STALL;
                }
        }

        if (v == MG_VERDICT_STALL || v == MG_VERDICT_STALLING) {
                if (s->stalling_since_usec == 0)
                        s->stalling_since_usec = sample_oldest(s)->time_usec;
        } else {
                s->stalling_since_usec = 0;
        }
        if (ret_stall_usec)
                *ret_stall_usec = s->stalling_since_usec ? x->time_usec - s->stalling_since_usec : 0;
        return v;
}
