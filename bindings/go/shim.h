/* SPDX-License-Identifier: Apache-2.0 */
/* C side of the cgo binding: the callbacks memguard calls, which hand a
 * cgo.Handle (never a Go pointer) back to Go. */
#ifndef CGROUPGUARD_SHIM_H
#define CGROUPGUARD_SHIM_H

#include <stdint.h>

#include <memguard/memguard.h>
#include <memguard/snapshot.h>

/* Fills o's callbacks: events and log lines of the guard go to the Go
 * value behind handle. */
void cgg_options_set_callbacks(struct mg_guard_options *o, uintptr_t handle, int with_log);
/* The set's log goes to the Go value behind handle. */
void cgg_set_options_set_log(struct mg_set_options *o, uintptr_t handle);
/* A snapshot write's lock is the set's, behind set_handle (0: none); its log
 * goes to log_handle (0: none). */
void cgg_snapshot_options_set_callbacks(struct mg_snapshot_options *o, uintptr_t set_handle, uintptr_t log_handle);

/* A token of the calling thread (the address of a thread-local), and
 * mg_set_process() only if the calling thread is the one whose token it is:
 * the check costs no system call.  CGG_WRONG_THREAD otherwise. */
#define CGG_WRONG_THREAD (-0x7fff)
uintptr_t cgg_thread_token(void);
int cgg_set_process(mg_set *s, uintptr_t token);

#endif
