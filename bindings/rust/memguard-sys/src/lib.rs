// SPDX-License-Identifier: Apache-2.0
//! Raw FFI of libmemguard, the cgroup v2 memory guard: hand-written
//! declarations of <memguard/memguard.h> and <memguard/snapshot.h>, and the
//! linking (build.rs: pkg-config, or `MEMGUARD_LIB_DIR`; the shared library,
//! or with the `static` feature or `MEMGUARD_STATIC=1` libmemguard.a and its
//! dependencies).  The safe binding is the `cgroupguard` crate.
//!
//! tests/layout.rs compiles a C program against the headers and compares
//! every struct's size and field offsets, and every enum value, with these.
//! The comments of the header are the documentation of every item here.
#![allow(non_camel_case_types, missing_docs)]

use std::ffi::{c_char, c_int, c_uint, c_void};

pub const MG_UNLIMITED: u64 = u64::MAX;
pub const MG_UNKILLABLE_MAX: usize = 16;
pub const MG_RECLAIM_WINDOWS_MAX: usize = 8;

#[repr(C)]
pub struct mg_guard {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct mg_set {
    _opaque: [u8; 0],
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct mg_memstat {
    pub anon: u64,
    pub file: u64,
    pub kernel: u64,
    pub kernel_stack: u64,
    pub pagetables: u64,
    pub sec_pagetables: u64,
    pub percpu: u64,
    pub sock: u64,
    pub vmalloc: u64,
    pub shmem: u64,
    pub file_mapped: u64,
    pub file_dirty: u64,
    pub file_writeback: u64,
    pub slab: u64,
    pub slab_reclaimable: u64,
    pub slab_unreclaimable: u64,
    pub active_anon: u64,
    pub inactive_anon: u64,
    pub active_file: u64,
    pub inactive_file: u64,
    pub unevictable: u64,
    pub workingset_refault_anon: u64,
    pub workingset_refault_file: u64,
    pub workingset_activate_anon: u64,
    pub workingset_activate_file: u64,
    pub workingset_restore_anon: u64,
    pub workingset_restore_file: u64,
    pub pgscan: u64,
    pub pgsteal: u64,
    pub pgfault: u64,
    pub pgmajfault: u64,
    pub kernel_derived: bool,
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct mg_psi_line {
    pub avg10_centipct: u32,
    pub avg60_centipct: u32,
    pub avg300_centipct: u32,
    pub total_usec: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct mg_psi {
    pub some: mg_psi_line,
    pub full: mg_psi_line,
    pub has_full: bool,
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct mg_mem_events {
    pub low: u64,
    pub high: u64,
    pub max: u64,
    pub oom: u64,
    pub oom_kill: u64,
    pub oom_group_kill: u64,
}

// C enums are ints here: a value a newer library adds is not undefined
// behaviour in Rust.
pub const MG_VERDICT_OK: c_uint = 0;
pub const MG_VERDICT_NEAR: c_uint = 1;
pub const MG_VERDICT_STALLING: c_uint = 2;
pub const MG_VERDICT_OVERSHOOT: c_uint = 3;
pub const MG_VERDICT_STALL: c_uint = 4;

pub const MG_STALL_MEMORY: c_uint = 1 << 0;
pub const MG_STALL_IO: c_uint = 1 << 1;
pub const MG_STALL_REFAULT: c_uint = 1 << 2;

#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct mg_report {
    pub size: u64,
    pub time_usec: u64,
    pub limit_bytes: u64,
    pub margin_bytes: u64,
    pub current_bytes: u64,
    pub used_bytes: u64,
    pub high_bytes: u64,
    pub max_bytes: u64,
    pub stat: mg_memstat,
    pub memory_pressure: mg_psi,
    pub io_pressure: mg_psi,
    pub events: mg_mem_events,
    pub stall_usec: u64,
    pub stall_signals: c_uint,
    pub verdict: c_uint,
    pub stall_refault_bytes: u64,
    pub stall_reclaimed_bytes: u64,
    pub park_id: u64,
    pub park_usec: u64,
    pub frozen_usec: u64,
    pub park_end_usec: u64,
    pub park_end: u32,
}

pub const MG_PARK_OPEN: c_uint = 0;
pub const MG_PARK_END_KILL: c_uint = 1;
pub const MG_PARK_END_THAW: c_uint = 2;
pub const MG_PARK_END_DEADLINE: c_uint = 3;
pub const MG_PARK_END_BOUND: c_uint = 4;
pub const MG_PARK_END_NOT_FROZEN: c_uint = 5;
pub const MG_PARK_END_OVER_LIMIT: c_uint = 6;
pub const MG_PARK_END_NO_FREEZE: c_uint = 7;

pub const MG_KILL_OVERSHOOT: c_uint = 1;
pub const MG_KILL_STALL: c_uint = 2;
pub const MG_KILL_CGROUP_KILL: c_uint = 1;
pub const MG_KILL_PIDFD: c_uint = 2;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mg_kill_record {
    pub size: u64,
    pub reason: c_uint,
    pub method: c_uint,
    pub cgroup: *const c_char,
    pub detect_usec: u64,
    pub kill_usec: u64,
    pub empty_usec: u64,
    pub empty_timed_out: bool,
    pub report: mg_report,
}

pub const MG_EVENT_KILL: c_uint = 1;
pub const MG_EVENT_LEND_BEGIN: c_uint = 2;
pub const MG_EVENT_LEND_END: c_uint = 3;
pub const MG_EVENT_LEND_EXPIRED: c_uint = 4;
pub const MG_EVENT_ERROR: c_uint = 5;
pub const MG_EVENT_GONE: c_uint = 6;
pub const MG_EVENT_KERNEL_OOM: c_uint = 7;
pub const MG_EVENT_THROTTLED: c_uint = 8;
pub const MG_EVENT_EMPTY_OVER_LIMIT: c_uint = 9;
pub const MG_EVENT_UNKILLABLE: c_uint = 10;
pub const MG_EVENT_KILL_DRY_RUN: c_uint = 11;
pub const MG_EVENT_PRE_KILL: c_uint = 12;
pub const MG_EVENT_KILL_AVERTED: c_uint = 13;
pub const MG_EVENT_RECLAIM: c_uint = 14;
pub const MG_EVENT_PARK: c_uint = 15;
pub const MG_EVENT_THAW: c_uint = 16;

#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct mg_throttle_info {
    pub high_bytes: u64,
    pub current_bytes: u64,
    pub overage_permyriad: u32,
    pub est_delay_usec: u64,
    pub high_events_per_sec: u64,
    pub memory_some_permyriad: u32,
    pub cpu_permyriad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct mg_unkillable_info {
    pub kill_usec: u64,
    pub wait_usec: u64,
    pub n_members: u32,
    pub more_members: bool,
    pub n_pids: u32,
    pub pids: [i32; MG_UNKILLABLE_MAX],
    pub states: [c_char; MG_UNKILLABLE_MAX],
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct mg_lend_info {
    pub old_high_bytes: u64,
    pub new_high_bytes: u64,
    pub deadline_usec: u64,
    pub id: u64,
    pub found_high_bytes: u64,
    pub restored: bool,
}

pub const MG_RECLAIM_PRESSURE: c_uint = 1;
pub const MG_RECLAIM_HEADROOM: c_uint = 2;
pub const MG_RECLAIM_DOSE_MAX_USEC: u64 = 1_000_000;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mg_reclaim_info {
    pub target: *const c_char,
    pub why: c_uint,
    pub asked_bytes: u64,
    pub achieved_bytes: u64,
    pub duration_usec: u64,
    pub error: c_int,
    pub counted: bool,
    pub windows: u32,
    pub some_usec: [u64; MG_RECLAIM_WINDOWS_MAX],
    pub full_usec: [u64; MG_RECLAIM_WINDOWS_MAX],
    pub current_bytes: u64,
    pub file_bytes: u64,
}

#[repr(C)]
pub struct mg_event {
    pub type_: c_uint,
    pub cgroup: *const c_char,
    pub time_usec: u64,
    pub kill: *const mg_kill_record,
    pub lend: *const mg_lend_info,
    pub error: c_int,
    pub what: *const c_char,
    pub count: u64,
    pub throttle: *const mg_throttle_info,
    pub report: *const mg_report,
    pub unkillable: *const mg_unkillable_info,
    pub reclaim: *const mg_reclaim_info,
}

pub type mg_event_fn = Option<unsafe extern "C" fn(g: *mut mg_guard, ev: *const mg_event, userdata: *mut c_void)>;

pub const MG_LOG_ERR: c_int = 3;
pub const MG_LOG_WARNING: c_int = 4;
pub const MG_LOG_INFO: c_int = 6;
pub const MG_LOG_DEBUG: c_int = 7;
pub type mg_log_fn = Option<unsafe extern "C" fn(level: c_int, msg: *const c_char, userdata: *mut c_void)>;

#[repr(C)]
pub struct mg_guard_options {
    pub size: u64,
    pub limit_bytes: u64,
    pub tick_usec: u64,
    pub margin_bytes: u64,
    pub stall_window_usec: u64,
    pub stall_pressure_permyriad: u32,
    pub lend_deadline_usec: u64,
    pub kill_wait_usec: u64,
    pub post_kill_holdoff_usec: u64,
    pub on_event: mg_event_fn,
    pub userdata: *mut c_void,
    pub log: mg_log_fn,
    pub log_userdata: *mut c_void,
    pub refault_window_usec: u64,
    pub refault_mapped_window_usec: u64,
    pub flags: u32,
    pub pre_kill_max_defer_usec: u32,
    pub reclaim_dose_bytes: u64,
    pub reclaim_cgroup: *const c_char,
    pub reclaim_some_usec: u32,
    pub reclaim_full_usec: u32,
    pub reclaim_windows: u32,
    pub reclaim_cooldown_usec: u64,
    pub reclaim_headroom_bytes: u64,
    pub park_deadline_usec: u64,
}

pub const MG_GUARD_DRY_RUN: u32 = 1 << 0;
pub const MG_DRY_RUN_HOLDOFF_USEC: u64 = 60_000_000;
pub const MG_PRE_KILL_MAX_DEFER_USEC: u32 = 60_000_000;
pub const MG_PARK_MAX_USEC: u64 = 3_600_000_000;

pub const MG_PARK_KILL: c_uint = 1;
pub const MG_PARK_THAW: c_uint = 2;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct mg_stats {
    pub size: u64,
    pub fast_ticks: u64,
    pub slow_ticks: u64,
    pub kills_overshoot: u64,
    pub kills_stall: u64,
    pub dry_run_kills: u64,
    pub kernel_oom_kills: u64,
    pub errors: u64,
    pub lends: u64,
    pub lend_expiries: u64,
    pub throttles: u64,
    pub kills_deferred: u64,
    pub kills_averted: u64,
    pub reclaims: u64,
    pub reclaimed_bytes: u64,
    pub parks: u64,
    pub parks_thawed: u64,
    pub parks_killed: u64,
    pub parks_expired: u64,
}

pub const MG_RECOVER_EXPIRED: c_uint = 1 << 0;
pub const MG_CONFINE_SUPERVISOR: c_uint = 1 << 0;
pub const MG_CONFINE_PATHS: c_uint = 1 << 1;

#[repr(C)]
pub struct mg_set_options {
    pub size: u64,
    pub log: mg_log_fn,
    pub log_userdata: *mut c_void,
}

pub const MG_SNAPSHOT_MEMORY: u32 = 1;
pub const MG_SNAPSHOT_FD: u32 = 2;

#[repr(C)]
pub struct mg_snapshot_source {
    pub kind: u32,
    pub fd: c_int,
    pub addr: *const c_void,
    pub offset: u64,
    pub length: u64,
}

#[repr(C)]
pub struct mg_snapshot_target {
    pub kind: u32,
    pub fd: c_int,
    pub addr: *mut c_void,
    pub offset: u64,
    pub length: u64,
}

pub const MG_SNAPSHOT_AUTO: c_uint = 0;
pub const MG_SNAPSHOT_DIRECT: c_uint = 1;
pub const MG_SNAPSHOT_DONTCACHE: c_uint = 2;
pub const MG_SNAPSHOT_WINDOWED: c_uint = 3;
pub const MG_SNAPSHOT_BUFFERED: c_uint = 4;
pub const MG_SNAPSHOT_NO_SYNC: u32 = 1 << 0;

pub type mg_snapshot_lock_fn = Option<unsafe extern "C" fn(userdata: *mut c_void, lock: bool)>;

#[repr(C)]
pub struct mg_snapshot_options {
    pub size: u64,
    pub flags: u32,
    pub method: u32,
    pub guard: *mut mg_guard,
    pub lend_bytes: u64,
    pub lend_deadline_usec: u64,
    pub window_bytes: u64,
    pub reclaim_bytes: u64,
    pub chunk_bytes: u32,
    pub mode: u32,
    pub min_hole_bytes: u64,
    pub lock: mg_snapshot_lock_fn,
    pub lock_userdata: *mut c_void,
    pub log: mg_log_fn,
    pub log_userdata: *mut c_void,
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct mg_snapshot_stats {
    pub size: u64,
    pub method: u32,
    pub page_size: u32,
    pub image_bytes: u64,
    pub data_bytes: u64,
    pub skipped_bytes: u64,
    pub hole_bytes: u64,
    pub zero_bytes: u64,
    pub file_bytes: u64,
    pub allocated_bytes: u64,
    pub window_bytes: u64,
    pub lend_bytes: u64,
    pub reclaimed_request_bytes: u64,
    pub reclaim_error: i32,
    pub ranges: u32,
    pub lend_begin_usec: u64,
    pub write_usec: u64,
    pub sync_usec: u64,
    pub reclaim_usec: u64,
    pub lend_end_usec: u64,
    pub publish_usec: u64,
    pub read_usec: u64,
    pub zero_usec: u64,
    pub total_usec: u64,
}

extern "C" {
    pub fn mg_guard_options_init(o: *mut mg_guard_options, limit_bytes: u64) -> c_int;
    pub fn mg_guard_new(cgroup_path: *const c_char, o: *const mg_guard_options, ret: *mut *mut mg_guard) -> c_int;
    pub fn mg_guard_free(g: *mut mg_guard) -> *mut mg_guard;
    pub fn mg_guard_tick(g: *mut mg_guard) -> c_int;
    pub fn mg_guard_get_tick_usec(g: *const mg_guard) -> u64;
    pub fn mg_guard_get_options(g: *const mg_guard, ret: *mut mg_guard_options) -> c_int;
    pub fn mg_guard_is_killing(g: *const mg_guard) -> bool;
    pub fn mg_guard_get_path(g: *const mg_guard) -> *const c_char;
    pub fn mg_guard_get_userdata(g: *const mg_guard) -> *mut c_void;
    pub fn mg_guard_report(g: *mut mg_guard, ret: *mut mg_report) -> c_int;
    pub fn mg_guard_lend_begin(g: *mut mg_guard, extra_bytes: u64, deadline_usec: u64, ret_lend_id: *mut u64) -> c_int;
    pub fn mg_guard_lend_end(g: *mut mg_guard, lend_id: u64) -> c_int;
    pub fn mg_guard_is_lent(g: *const mg_guard) -> bool;
    pub fn mg_guard_get_lend_id(g: *const mg_guard) -> u64;
    pub fn mg_guard_recover(cgroup_path: *const c_char, flags: c_uint) -> c_int;
    pub fn mg_set_new(o: *const mg_set_options, ret: *mut *mut mg_set) -> c_int;
    pub fn mg_set_free(s: *mut mg_set) -> *mut mg_set;
    pub fn mg_set_add(
        s: *mut mg_set,
        cgroup_path: *const c_char,
        o: *const mg_guard_options,
        ret: *mut *mut mg_guard,
    ) -> c_int;
    pub fn mg_set_remove(s: *mut mg_set, g: *mut mg_guard) -> c_int;
    pub fn mg_set_size(s: *const mg_set) -> usize;
    pub fn mg_guard_get_stats(g: *const mg_guard, ret: *mut mg_stats) -> c_int;
    pub fn mg_set_get_stats(s: *const mg_set, ret: *mut mg_stats) -> c_int;
    pub fn mg_guard_defer_kill(g: *mut mg_guard, usec: u64) -> c_int;
    pub fn mg_guard_park_end(g: *mut mg_guard, park_id: u64, action: c_uint, new_limit_bytes: u64) -> c_int;
    pub fn mg_guard_get_park_id(g: *const mg_guard) -> u64;
    pub fn mg_set_get_fd(s: *const mg_set) -> c_int;
    pub fn mg_set_get_timeout(s: *const mg_set, ret_usec: *mut u64) -> c_int;
    pub fn mg_set_process(s: *mut mg_set) -> c_int;
    pub fn mg_verdict_to_string(v: c_uint) -> *const c_char;
    pub fn mg_kill_reason_to_string(r: c_uint) -> *const c_char;
    pub fn mg_event_type_to_string(t: c_uint) -> *const c_char;
    pub fn mg_park_end_to_string(e: c_uint) -> *const c_char;
    pub fn mg_kill_record_format(k: *const mg_kill_record, buf: *mut c_char, len: usize) -> c_int;
    pub fn mg_confine_thread(flags: c_uint) -> c_int;
    pub fn mg_snapshot_options_init(o: *mut mg_snapshot_options) -> c_int;
    pub fn mg_snapshot_write(
        src: *const mg_snapshot_source,
        dirfd: c_int,
        name: *const c_char,
        o: *const mg_snapshot_options,
        ret: *mut mg_snapshot_stats,
    ) -> c_int;
    pub fn mg_snapshot_restore(
        dirfd: c_int,
        name: *const c_char,
        dst: *const mg_snapshot_target,
        o: *const mg_snapshot_options,
        ret: *mut mg_snapshot_stats,
    ) -> c_int;
    pub fn mg_snapshot_method_to_string(m: c_uint) -> *const c_char;
}
