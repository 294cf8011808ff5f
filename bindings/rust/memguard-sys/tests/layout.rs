// SPDX-License-Identifier: Apache-2.0
//! The hand-written declarations of src/lib.rs against the C headers: a C
//! program, generated from the list below and compiled with the system cc
//! and pkg-config's flags for memguard, prints every struct's size and
//! alignment, every listed field's offset and size, and every constant;
//! Rust's size_of/align_of/offset_of must agree on each.  A field the header
//! adds and this list lacks changes the struct's size, which fails too.

use memguard_sys::*;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::mem::{align_of, offset_of, size_of};
use std::process::Command;

fn size_of_val_field<T, F>(_: fn(&T) -> &F) -> usize {
    size_of::<F>()
}

macro_rules! layout {
    ($c:ident, $r:ident; $( $s:ident { $($f:ident $(= $cf:ident)?),* $(,)? } )* ; $($k:ident),* $(,)?) => {
        $(
            writeln!($c, "printf(\"size {0} %zu\\nalign {0} %zu\\n\", sizeof(struct {0}), _Alignof(struct {0}));", stringify!($s)).unwrap();
            $r.insert(format!("size {}", stringify!($s)), size_of::<$s>());
            $r.insert(format!("align {}", stringify!($s)), align_of::<$s>());
            $(
                let cname = layout!(@c $f $($cf)?);
                writeln!($c, "printf(\"offset {0}.{1} %zu\\nfsize {0}.{1} %zu\\n\", offsetof(struct {0}, {1}), sizeof(((struct {0} *) 0)->{1}));", stringify!($s), cname).unwrap();
                $r.insert(format!("offset {}.{}", stringify!($s), cname), offset_of!($s, $f));
                $r.insert(format!("fsize {}.{}", stringify!($s), cname), size_of_val_field(|x: &$s| &x.$f));
            )*
        )*
        $(
            writeln!($c, "printf(\"const {0} %llu\\n\", (unsigned long long) ({0}));", stringify!($k)).unwrap();
            $r.insert(format!("const {}", stringify!($k)), $k as usize);
        )*
    };
    (@c $f:ident) => { stringify!($f) };
    (@c $f:ident $cf:ident) => { stringify!($cf) };
}

#[test]
fn ffi_declarations_match_the_header() {
    let mut c = String::from(
        "#include <stddef.h>\n#include <stdio.h>\n#include <memguard/memguard.h>\n#include <memguard/snapshot.h>\nint main(void) {\n",
    );
    let mut r: BTreeMap<String, usize> = BTreeMap::new();
    layout!(c, r;
        mg_memstat { anon, file, kernel, kernel_stack, pagetables, sec_pagetables, percpu, sock, vmalloc, shmem,
            file_mapped, file_dirty, file_writeback, slab, slab_reclaimable, slab_unreclaimable, active_anon,
            inactive_anon, active_file, inactive_file, unevictable, workingset_refault_anon, workingset_refault_file,
            workingset_activate_anon, workingset_activate_file, workingset_restore_anon, workingset_restore_file,
            pgscan, pgsteal, pgfault, pgmajfault, kernel_derived }
        mg_psi_line { avg10_centipct, avg60_centipct, avg300_centipct, total_usec }
        mg_psi { some, full, has_full }
        mg_mem_events { low, high, max, oom, oom_kill, oom_group_kill }
        mg_report { size, time_usec, limit_bytes, margin_bytes, current_bytes, used_bytes, high_bytes, max_bytes,
            stat, memory_pressure, io_pressure, events, stall_usec, stall_signals, verdict, stall_refault_bytes,
            stall_reclaimed_bytes, park_id, park_usec, frozen_usec, park_end_usec, park_end }
        mg_kill_record { size, reason, method, cgroup, detect_usec, kill_usec, empty_usec, empty_timed_out, report }
        mg_throttle_info { high_bytes, current_bytes, overage_permyriad, est_delay_usec, high_events_per_sec,
            memory_some_permyriad, cpu_permyriad }
        mg_unkillable_info { kill_usec, wait_usec, n_members, more_members, n_pids, pids, states }
        mg_lend_info { old_high_bytes, new_high_bytes, deadline_usec, id, found_high_bytes, restored }
        mg_reclaim_info { target, why, asked_bytes, achieved_bytes, duration_usec, error, counted, windows, some_usec,
            full_usec, current_bytes, file_bytes }
        mg_event { type_ = type, cgroup, time_usec, kill, lend, error, what, count, throttle, report, unkillable,
            reclaim }
        mg_guard_options { size, limit_bytes, tick_usec, margin_bytes, stall_window_usec, stall_pressure_permyriad,
            lend_deadline_usec, kill_wait_usec, post_kill_holdoff_usec, on_event, userdata, log, log_userdata,
            refault_window_usec, refault_mapped_window_usec, flags, pre_kill_max_defer_usec, reclaim_dose_bytes,
            reclaim_cgroup, reclaim_some_usec, reclaim_full_usec, reclaim_windows, reclaim_cooldown_usec,
            reclaim_headroom_bytes, park_deadline_usec }
        mg_stats { size, fast_ticks, slow_ticks, kills_overshoot, kills_stall, dry_run_kills, kernel_oom_kills, errors,
            lends, lend_expiries, throttles, kills_deferred, kills_averted, reclaims, reclaimed_bytes,
            parks, parks_thawed, parks_killed, parks_expired }
        mg_set_options { size, log, log_userdata }
        mg_snapshot_source { kind, fd, addr, offset, length }
        mg_snapshot_target { kind, fd, addr, offset, length }
        mg_snapshot_options { size, flags, method, guard, lend_bytes, lend_deadline_usec, window_bytes, reclaim_bytes,
            chunk_bytes, mode, min_hole_bytes, lock, lock_userdata, log, log_userdata }
        mg_snapshot_stats { size, method, page_size, image_bytes, data_bytes, skipped_bytes, hole_bytes, zero_bytes,
            file_bytes, allocated_bytes, window_bytes, lend_bytes, reclaimed_request_bytes, reclaim_error, ranges,
            lend_begin_usec, write_usec, sync_usec, reclaim_usec, lend_end_usec, publish_usec, read_usec, zero_usec,
            total_usec }
        ;
        MG_UNKILLABLE_MAX, MG_RECLAIM_WINDOWS_MAX, MG_RECLAIM_DOSE_MAX_USEC,
        MG_VERDICT_OK, MG_VERDICT_NEAR, MG_VERDICT_STALLING, MG_VERDICT_OVERSHOOT, MG_VERDICT_STALL,
        MG_STALL_MEMORY, MG_STALL_IO, MG_STALL_REFAULT,
        MG_KILL_OVERSHOOT, MG_KILL_STALL, MG_KILL_CGROUP_KILL, MG_KILL_PIDFD,
        MG_EVENT_KILL, MG_EVENT_LEND_BEGIN, MG_EVENT_LEND_END, MG_EVENT_LEND_EXPIRED, MG_EVENT_ERROR, MG_EVENT_GONE,
        MG_EVENT_KERNEL_OOM, MG_EVENT_THROTTLED, MG_EVENT_EMPTY_OVER_LIMIT, MG_EVENT_UNKILLABLE,
        MG_EVENT_KILL_DRY_RUN, MG_EVENT_PRE_KILL, MG_EVENT_KILL_AVERTED, MG_EVENT_RECLAIM, MG_EVENT_PARK, MG_EVENT_THAW,
        MG_GUARD_DRY_RUN, MG_RECLAIM_PRESSURE, MG_RECLAIM_HEADROOM,
        MG_DRY_RUN_HOLDOFF_USEC, MG_PRE_KILL_MAX_DEFER_USEC, MG_PARK_MAX_USEC,
        MG_PARK_OPEN, MG_PARK_END_KILL, MG_PARK_END_THAW, MG_PARK_END_DEADLINE, MG_PARK_END_BOUND,
        MG_PARK_END_NOT_FROZEN, MG_PARK_END_OVER_LIMIT, MG_PARK_END_NO_FREEZE, MG_PARK_KILL, MG_PARK_THAW,
        MG_LOG_ERR, MG_LOG_WARNING, MG_LOG_INFO, MG_LOG_DEBUG,
        MG_RECOVER_EXPIRED, MG_CONFINE_SUPERVISOR,
        MG_SNAPSHOT_MEMORY, MG_SNAPSHOT_FD,
        MG_SNAPSHOT_AUTO, MG_SNAPSHOT_DIRECT, MG_SNAPSHOT_DONTCACHE, MG_SNAPSHOT_WINDOWED, MG_SNAPSHOT_BUFFERED,
        MG_SNAPSHOT_NO_SYNC,
    );
    // The enums' own size, for the fields Rust declares as c_uint.
    for e in [
        "mg_verdict",
        "mg_kill_reason",
        "mg_kill_method",
        "mg_event_type",
        "mg_reclaim_why",
        "mg_park_end",
        "mg_park_action",
    ] {
        writeln!(c, "printf(\"size enum {0} %zu\\n\", sizeof(enum {0}));", e).unwrap();
        r.insert(format!("size enum {e}"), size_of::<std::ffi::c_uint>());
    }
    writeln!(
        c,
        "printf(\"const MG_UNLIMITED %llu\\n\", (unsigned long long) MG_UNLIMITED);"
    )
    .unwrap();
    c.push_str("return 0;\n}\n");

    let dir = std::env::temp_dir().join(format!("cgg-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("layout.c");
    let exe = dir.join("layout");
    std::fs::write(&src, &c).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let st = Command::new(&cc)
        .args(env!("MEMGUARD_SYS_CFLAGS").split_whitespace())
        .args(["-std=c11", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .expect("cannot run cc");
    assert!(st.success(), "cc failed on {}", src.display());
    let out = Command::new(&exe).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();

    let mut checked = 0;
    let mut bad = Vec::new();
    for line in text.lines() {
        let (key, v) = line.rsplit_once(' ').unwrap();
        let v: u128 = v.parse().unwrap();
        if key == "const MG_UNLIMITED" {
            assert_eq!(v, MG_UNLIMITED as u128);
            checked += 1;
            continue;
        }
        match r.get(key) {
            Some(&rv) if rv as u128 == v => checked += 1,
            Some(&rv) => bad.push(format!("{key}: C {v}, Rust {rv}")),
            None => bad.push(format!("{key}: not in the Rust list")),
        }
    }
    assert!(
        bad.is_empty(),
        "memguard-sys differs from the header:\n{}",
        bad.join("\n")
    );
    assert_eq!(checked, r.len() + 1, "every Rust entry was printed by C");
    eprintln!("layout: {checked} sizes, offsets and constants agree");
}
