// SPDX-License-Identifier: Apache-2.0
//! Unit tests that need no cgroup.  The library's fixture trees are not
//! reachable from a binding (bindings/README.md); tests/vm.rs runs guards on
//! a real kernel.

use super::*;
use std::cell::RefCell;
use std::fs::File;
use std::io::Write;
use std::rc::Rc;

fn errno(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(-1)
}

/// `o` to the C options and back.
fn through_c(o: &Options) -> Options {
    let c = o.to_c().unwrap();
    // SAFETY: c's reclaim cgroup is null or c's own string, alive here.
    unsafe { Options::from_c(&c.c) }
}

#[test]
fn default_options_are_the_librarys_tuning() {
    // docs/tuning.md's row for 256 MiB.
    let o = Options::new(256 << 20).unwrap();
    let ms = Duration::from_millis;
    assert_eq!(
        o,
        Options {
            limit_bytes: 256 << 20,
            tick: ms(250),
            margin_bytes: 16 << 20,
            stall_window: ms(3000),
            stall_pressure_permyriad: 1000,
            lend_deadline: ms(15000),
            kill_wait: ms(2000),
            post_kill_holdoff: ms(2250),
            refault_window: ms(20000),
            refault_mapped_window: ms(12000),
            dry_run: false,
            pre_kill_max_defer: Duration::ZERO,
            reclaim_dose_bytes: 0,
            reclaim_cgroup: None,
            reclaim_some: Duration::ZERO,
            reclaim_full: Duration::ZERO,
            reclaim_windows: 0,
            reclaim_cooldown: Duration::ZERO,
            reclaim_headroom_bytes: 0,
            park_deadline: Duration::ZERO,
        }
    );
    let dry = Options {
        dry_run: true,
        ..o.clone()
    };
    assert_eq!(through_c(&dry), dry);
    assert_eq!(through_c(&o), o);
    for bad in [0, UNLIMITED] {
        assert_eq!(errno(&Options::new(bad).unwrap_err()), 22);
    }
}

#[test]
fn options_builders_set_their_field_and_reach_c() {
    let s = Duration::from_secs;
    let o = Options::new(256 << 20)
        .unwrap()
        .with_limit_bytes(128 << 20)
        .with_tick(s(1))
        .with_margin_bytes(1 << 20)
        .with_stall_window(s(2))
        .with_stall_pressure_permyriad(500)
        .with_lend_deadline(s(3))
        .with_kill_wait(s(4))
        .with_post_kill_holdoff(s(5))
        .with_refault_window(s(6))
        .with_refault_mapped_window(s(7))
        .with_dry_run(true)
        .with_pre_kill_max_defer(s(8));
    let copt = o.to_c().unwrap();
    let c = &copt.c;
    assert_eq!(
        (
            c.limit_bytes,
            c.tick_usec,
            c.margin_bytes,
            c.stall_window_usec,
            c.stall_pressure_permyriad
        ),
        (128 << 20, 1_000_000, 1 << 20, 2_000_000, 500)
    );
    assert_eq!(
        (c.lend_deadline_usec, c.kill_wait_usec, c.post_kill_holdoff_usec),
        (3_000_000, 4_000_000, 5_000_000)
    );
    assert_eq!(
        (
            c.refault_window_usec,
            c.refault_mapped_window_usec,
            c.flags,
            c.pre_kill_max_defer_usec
        ),
        (6_000_000, 7_000_000, ffi::MG_GUARD_DRY_RUN, 8_000_000)
    );
    assert_eq!(through_c(&o), o);
    // Past u32: saturated, which mg_set_add() refuses (EINVAL) as it does
    // anything above MG_PRE_KILL_MAX_DEFER_USEC.
    assert_eq!(
        o.with_pre_kill_max_defer(s(1 << 20))
            .to_c()
            .unwrap()
            .c
            .pre_kill_max_defer_usec,
        u32::MAX
    );
}

#[test]
fn reclaim_options_reach_c_and_come_back() {
    let ms = Duration::from_millis;
    let o = Options::new(256 << 20)
        .unwrap()
        .with_reclaim_dose_bytes(16 << 20)
        .with_reclaim_cgroup(Some("/sys/fs/cgroup/w/background".into()))
        .with_reclaim_some(ms(2))
        .with_reclaim_full(ms(1))
        .with_reclaim_windows(5)
        .with_reclaim_cooldown(ms(30_000))
        .with_reclaim_headroom_bytes(8 << 20);
    let copt = o.to_c().unwrap();
    let c = &copt.c;
    assert_eq!(
        (
            c.reclaim_dose_bytes,
            c.reclaim_some_usec,
            c.reclaim_full_usec,
            c.reclaim_windows
        ),
        (16 << 20, 2000, 1000, 5)
    );
    assert_eq!(
        (c.reclaim_cooldown_usec, c.reclaim_headroom_bytes),
        (30_000_000, 8 << 20)
    );
    assert!(!c.reclaim_cgroup.is_null());
    // SAFETY: copt keeps the string alive.
    let cg = unsafe { CStr::from_ptr(c.reclaim_cgroup) };
    assert_eq!(cg.to_bytes(), b"/sys/fs/cgroup/w/background");
    assert_eq!(through_c(&o), o);
    // Off: no string, a null pointer.
    assert!(Options::new(256 << 20)
        .unwrap()
        .to_c()
        .unwrap()
        .c
        .reclaim_cgroup
        .is_null());
    // Past u32 microseconds: saturated (never reached in a one-second window).
    assert_eq!(
        o.clone()
            .with_reclaim_some(Duration::from_secs(1 << 20))
            .to_c()
            .unwrap()
            .c
            .reclaim_some_usec,
        u32::MAX
    );
    // A NUL in the path: EINVAL before the library.
    let nul = o.clone().with_reclaim_cgroup(Some("/sys/fs/cgroup/a\0b".into()));
    assert_eq!(errno(&nul.to_c().err().unwrap()), 22);
}

/// The library checks the reclaim options before it opens the cgroup: a
/// plain directory is ENOTSUP for options it takes, EINVAL for those it
/// refuses, so what the binding hands it, the cgroup string included, shows.
#[test]
fn reclaim_options_are_checked_by_the_library() {
    let set = Set::new().unwrap();
    let dir = std::env::temp_dir().join(format!("cgg-rs-reclaim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let o = Options::new(64 << 20).unwrap();
    let on = o.clone().with_reclaim_dose_bytes(4 << 20);
    let bg = Some(PathBuf::from("/sys/fs/cgroup/w/background"));
    for (what, opt, want) in [
        ("off", o.clone(), 95 /* ENOTSUP */),
        ("seed 002's defaults", on.clone(), 95),
        ("a target", on.clone().with_reclaim_cgroup(bg.clone()), 95),
        ("headroom alone", on.clone().with_reclaim_headroom_bytes(8 << 20), 95),
        ("a target without a dose", o.clone().with_reclaim_cgroup(bg.clone()), 22),
        (
            "an empty target",
            on.clone().with_reclaim_cgroup(Some(PathBuf::new())),
            22,
        ),
        (
            "a target with headroom",
            on.clone()
                .with_reclaim_cgroup(bg.clone())
                .with_reclaim_headroom_bytes(8 << 20),
            22,
        ),
        ("windows past the most", on.clone().with_reclaim_windows(9), 22),
        (
            "headroom at the limit",
            on.clone().with_reclaim_headroom_bytes(64 << 20),
            22,
        ),
        (
            "a cooldown without a dose",
            o.clone().with_reclaim_cooldown(Duration::from_secs(1)),
            22,
        ),
    ] {
        let e = set.add(&dir, &opt, |_, _, _| {}).unwrap_err();
        assert_eq!(errno(&e), want, "{what}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn reclaim_event_keeps_every_field() {
    let target = CString::new("/sys/fs/cgroup/w/background").unwrap();
    let mut info = ffi::mg_reclaim_info {
        target: target.as_ptr(),
        why: ffi::MG_RECLAIM_PRESSURE,
        asked_bytes: 1,
        achieved_bytes: 2,
        duration_usec: 3,
        error: -11,
        counted: true,
        windows: 3,
        some_usec: [10, 11, 12, 13, 14, 15, 16, 17],
        full_usec: [20, 21, 22, 23, 24, 25, 26, 27],
        current_bytes: 4,
        file_bytes: 5,
    };
    let cg = CString::new("/sys/fs/cgroup/w/vm-7").unwrap();
    let ev = |info: &ffi::mg_reclaim_info| ffi::mg_event {
        type_: ffi::MG_EVENT_RECLAIM,
        cgroup: cg.as_ptr(),
        time_usec: 9,
        kill: std::ptr::null(),
        lend: std::ptr::null(),
        error: 0,
        what: std::ptr::null(),
        count: 0,
        throttle: std::ptr::null(),
        report: std::ptr::null(),
        unkillable: std::ptr::null(),
        reclaim: info,
    };
    let us = Duration::from_micros;
    // SAFETY: the event and what it points to are alive.
    let e = unsafe { Event::from_c(&ev(&info)) };
    assert_eq!((e.kind, e.kill.is_none()), (EventType::Reclaim, true));
    let mut want = ReclaimInfo {
        target: "/sys/fs/cgroup/w/background".into(),
        why: ReclaimWhy::Pressure,
        asked_bytes: 1,
        achieved_bytes: 2,
        duration: us(3),
        error: Some(11),
        counted: true,
        some_stall: vec![us(10), us(11), us(12)],
        full_stall: vec![us(20), us(21), us(22)],
        current_bytes: 4,
        file_bytes: 5,
    };
    assert_eq!(e.reclaim.as_ref(), Some(&want));
    assert_eq!(EventType::Reclaim.to_string(), "reclaim");
    // A headroom dose: no windows; more windows than the array: cut to it.
    info.why = ffi::MG_RECLAIM_HEADROOM;
    info.error = 0;
    info.windows = 0;
    // SAFETY: as above.
    let e = unsafe { Event::from_c(&ev(&info)) };
    want.why = ReclaimWhy::Headroom;
    want.error = None;
    want.some_stall.clear();
    want.full_stall.clear();
    assert_eq!(e.reclaim.as_ref(), Some(&want));
    info.windows = 100;
    // SAFETY: as above.
    let e = unsafe { Event::from_c(&ev(&info)) };
    assert_eq!(e.reclaim.unwrap().some_stall.len(), ffi::MG_RECLAIM_WINDOWS_MAX);
}

/// A guard state the library knows nothing of (a null guard: every C call
/// with it is EINVAL), to drive the binding's side of a callback.
fn detached(set: &Set, f: impl FnMut(&Set, Guard, &Event) + 'static) -> (Guard, *mut GuardState) {
    let id = set.next_id.get();
    set.next_id.set(id + 1);
    let st = Box::into_raw(Box::new(GuardState {
        id,
        ptr: std::ptr::null_mut(),
        set,
        path: "/detached".into(),
        on_event: Some(Box::new(f)),
        log: None,
        running: false,
        pre_kill: false,
        removed: false,
    }));
    set.guards.borrow_mut().insert(id, st);
    (Guard(id), st)
}

#[test]
fn defer_kill_only_inside_a_pre_kill_closure() {
    let set = Set::new().unwrap();
    let sec = Duration::from_secs(1);
    // Not a guard of the set.
    assert_eq!(errno(&set.defer_kill(Guard(1), sec).unwrap_err()), 22);
    let got = Rc::new(RefCell::new(Vec::new()));
    let g2 = got.clone();
    let (g, st) = detached(&set, move |set, g, ev| {
        g2.borrow_mut().push((
            ev.kind,
            // Zero and under a microsecond: EINVAL, before anything else.
            set.defer_kill(g, Duration::ZERO).map_err(|e| errno(&e)),
            set.defer_kill(g, Duration::from_nanos(999)).map_err(|e| errno(&e)),
            // Reaches mg_guard_defer_kill() only inside a PreKill told by
            // the library's callback: there the null guard is C's EINVAL.
            set.defer_kill(g, sec).map_err(|e| errno(&e)),
        ));
    });
    assert_eq!(errno(&set.defer_kill(g, Duration::ZERO).unwrap_err()), 22);
    // Outside a PreKill closure: ENOENT, as the library says.
    assert_eq!(errno(&set.defer_kill(g, sec).unwrap_err()), 2);

    let k = fill_record();
    let cg = CString::new(k.cgroup.clone()).unwrap();
    let rec = k.to_c(&cg);
    let ev = |type_| ffi::mg_event {
        type_,
        cgroup: cg.as_ptr(),
        time_usec: 1,
        kill: &rec,
        lend: std::ptr::null(),
        error: 0,
        what: std::ptr::null(),
        count: 0,
        throttle: std::ptr::null(),
        report: std::ptr::null(),
        unkillable: std::ptr::null(),
        reclaim: std::ptr::null(),
    };
    // SAFETY: the events and what they point to live through the calls; st
    // is in the set's map (freed by the set's Drop).
    unsafe {
        on_event(std::ptr::null_mut(), &ev(ffi::MG_EVENT_PRE_KILL), st as *mut c_void);
        on_event(std::ptr::null_mut(), &ev(ffi::MG_EVENT_KILL), st as *mut c_void);
        // A PreKill delivered from the queue (as for an event of a guard
        // whose closure runs): the library's callback has returned.
        set.shared.push(Pending::Event(
            g.0,
            Box::new(Event::from_c(&ev(ffi::MG_EVENT_PRE_KILL))),
        ));
    }
    set.deliver_pending();
    assert_eq!(
        *got.borrow(),
        [
            (EventType::PreKill, Err(22), Err(22), Err(22)),
            (EventType::Kill, Err(22), Err(22), Err(2)),
            (EventType::PreKill, Err(22), Err(22), Err(2)),
        ]
    );
    // After the closure: ENOENT again.
    assert_eq!(errno(&set.defer_kill(g, sec).unwrap_err()), 2);
}

#[test]
fn a_new_set_has_counted_nothing() {
    let set = Set::new().unwrap();
    assert_eq!(set.stats().unwrap(), Stats::default());
    assert_eq!(errno(&set.guard_stats(Guard(1)).unwrap_err()), 22);
}

#[test]
fn add_errors_are_errnos_and_leave_nothing() {
    let set = Set::new().unwrap();
    let dir = std::env::temp_dir().join(format!("cgg-rs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let _ = std::os::unix::fs::symlink(&dir, dir.join("link"));
    let opt = Options::new(64 << 20).unwrap();
    let dropped = Rc::new(Cell::new(0));
    for (p, want) in [
        (dir.clone(), 95 /* ENOTSUP */),
        (dir.join("none"), 2),
        (dir.join("link"), 40 /* ELOOP */),
    ] {
        struct Count(Rc<Cell<i32>>);
        impl Drop for Count {
            fn drop(&mut self) {
                self.0.set(self.0.get() + 1);
            }
        }
        let c = Count(dropped.clone());
        let e = set
            .add(&p, &opt, move |_, _, _| {
                let _ = &c;
            })
            .unwrap_err();
        assert_eq!(errno(&e), want, "{}", p.display());
    }
    assert_eq!(dropped.get(), 3, "the closures of failed adds are dropped");
    assert!(set.is_empty());
    assert!(set.as_raw_fd() >= 0);
    assert_eq!(set.next_tick_usec().unwrap(), None);
    assert_eq!(set.process().unwrap(), 0);
    assert_eq!(errno(&set.remove(Guard(1)).unwrap_err()), 22);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn fill_record() -> KillRecord {
    let mut n = 0u64;
    let mut next = || {
        n += 1;
        n
    };
    let mut stat = Memstat::default();
    // SAFETY: mg_memstat is u64s then a bool: fill the u64s one by one.
    let words = (std::mem::size_of::<Memstat>() - 8) / 8;
    let p = &mut stat as *mut Memstat as *mut u64;
    for i in 0..words {
        unsafe { *p.add(i) = next() };
    }
    stat.kernel_derived = true;
    let mut line = || PsiLine {
        avg10_centipct: next() as u32,
        avg60_centipct: next() as u32,
        avg300_centipct: next() as u32,
        total_usec: next(),
    };
    let memory_pressure = Psi {
        some: line(),
        full: line(),
        has_full: true,
    };
    let io_pressure = Psi {
        some: line(),
        full: line(),
        has_full: true,
    };
    KillRecord {
        reason: KillReason::Stall,
        method: KillMethod::Pidfd,
        cgroup: "/sys/fs/cgroup/w/vm-7".into(),
        detect_usec: next(),
        kill_usec: next(),
        empty_usec: next(),
        empty_timed_out: true,
        report: Report {
            time_usec: next(),
            limit_bytes: 64 << 20,
            margin_bytes: next(),
            current_bytes: next(),
            used_bytes: 96 << 20,
            high_bytes: next(),
            max_bytes: next(),
            stat,
            memory_pressure,
            io_pressure,
            events: MemEvents {
                low: next(),
                high: next(),
                max: next(),
                oom: next(),
                oom_kill: next(),
                oom_group_kill: next(),
            },
            stall: Duration::from_micros(next()),
            stall_signals: 5,
            verdict: Verdict::Stall,
            stall_refault_bytes: next(),
            stall_reclaimed_bytes: next(),
            park_id: next(),
            park_usec: next(),
            frozen_usec: next(),
            park_end_usec: next(),
            park_end: ParkEnd::Deadline,
        },
    }
}

#[test]
fn kill_record_keeps_every_field() {
    let k = fill_record();
    let cg = CString::new(k.cgroup.clone()).unwrap();
    let c = k.to_c(&cg);
    // SAFETY: c is a valid record, cg alive.
    let back = unsafe { KillRecord::from_c(&c) };
    assert_eq!(back, k);
    let s = k.to_string();
    assert!(
        s.contains("/sys/fs/cgroup/w/vm-7") && s.contains("limit 65536kB"),
        "{s}"
    );
    assert!(s.contains(", killed at the park's deadline,"), "{s}");
    // A record of an older, shorter library: what it lacks reads as zero.
    let mut r = k.report.to_c();
    r.size = 16;
    let short = Report::from_c(&r);
    assert_eq!(short.time_usec, k.report.time_usec);
    assert_eq!(short.limit_bytes, 0);
}

#[test]
fn snapshot_write_and_restore_on_a_plain_directory() {
    let dir = std::env::temp_dir().join(format!("cgg-rs-snap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let d = File::open(&dir).unwrap();
    let page = 4096;
    let mut img = vec![0u8; 256 * page];
    for (i, b) in img[..128 * page].iter_mut().enumerate() {
        *b = (i * 7 + i / 4096) as u8;
    }
    let st = snapshot_write(Image::Memory(&img), &d, "vm.snap", SnapshotOptions::default()).unwrap();
    assert_eq!(st.image_bytes, img.len() as u64);
    assert_eq!(st.data_bytes + st.skipped_bytes, st.image_bytes);
    assert_eq!(st.lend_bytes, 0);
    let mut back = vec![0xffu8; img.len()];
    snapshot_restore(&d, "vm.snap", Target::Memory(&mut back), SnapshotOptions::default()).unwrap();
    assert!(back == img, "restored image differs");

    // An fd image.
    let fp = dir.join("img");
    File::create(&fp).unwrap().write_all(&img).unwrap();
    let f = File::open(&fp).unwrap();
    snapshot_write(
        Image::Fd {
            fd: f.as_raw_fd(),
            offset: 0,
            length: img.len() as u64,
        },
        &d,
        "fd.snap",
        SnapshotOptions::default(),
    )
    .unwrap();
    back.fill(0xff);
    snapshot_restore(&d, "fd.snap", Target::Memory(&mut back), SnapshotOptions::default()).unwrap();
    assert!(back == img);

    let e = snapshot_restore(
        &d,
        "vm.snap",
        Target::Memory(&mut back[page..]),
        SnapshotOptions::default(),
    )
    .unwrap_err();
    assert_eq!(errno(&e), 90); // EMSGSIZE
    let e = snapshot_restore(&d, "none", Target::Memory(&mut back), SnapshotOptions::default()).unwrap_err();
    assert_eq!(errno(&e), 2);
    let p = dir.join("vm.snap");
    let mut b = std::fs::read(&p).unwrap();
    let mid = b.len() / 2;
    b[mid] ^= 0x40;
    std::fs::write(&p, b).unwrap();
    let mut lines = Vec::new();
    let mut log = |_: LogLevel, m: &str| lines.push(m.to_string());
    let e = snapshot_restore(
        &d,
        "vm.snap",
        Target::Memory(&mut back),
        SnapshotOptions::default().with_log(&mut log),
    )
    .unwrap_err();
    assert_eq!(errno(&e), 74); // EBADMSG
    assert!(!lines.is_empty(), "no log line says what was wrong");
    let e = snapshot_write(Image::Memory(&img[..page + 1]), &d, "x", SnapshotOptions::default()).unwrap_err();
    assert_eq!(errno(&e), 22);
    let e = snapshot_write(Image::Memory(&img), &d, "a/b", SnapshotOptions::default()).unwrap_err();
    assert_eq!(errno(&e), 22);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn set_is_neither_send_nor_sync_and_snapshot_guard_is_send() {
    fn send<T: Send>() {}
    send::<SnapshotGuard>();
    // Set: !Send and !Sync (PhantomData<*mut ()>), which the compiler
    // enforces; checked by the doc test in lib.rs's `compile_fail`.
}

/// Parking: off by default, the deadline through C and back, and the
/// library's check of it before it opens the cgroup (a plain directory:
/// ENOTSUP for a deadline it takes, EINVAL above `MG_PARK_MAX_USEC`).
#[test]
fn park_deadline_reaches_c_and_is_checked_by_the_library() {
    let o = Options::new(64 << 20).unwrap();
    assert_eq!(o.park_deadline, Duration::ZERO);
    let on = o.clone().with_park_deadline(Duration::from_secs(90));
    assert_eq!(on.to_c().unwrap().c.park_deadline_usec, 90_000_000);
    assert_eq!(through_c(&on), on);
    let set = Set::new().unwrap();
    let dir = std::env::temp_dir().join(format!("cgg-rs-park-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let max = Duration::from_micros(ffi::MG_PARK_MAX_USEC);
    for (d, want) in [
        (Duration::from_secs(1), 95 /* ENOTSUP */),
        (max, 95),
        (max + Duration::from_micros(1), 22),
        (Duration::MAX, 22), // saturated past u64 microseconds
    ] {
        let e = set
            .add(&dir, &o.clone().with_park_deadline(d), |_, _, _| {})
            .unwrap_err();
        assert_eq!(errno(&e), want, "{d:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn park_end_of_a_guard_not_in_the_set() {
    let set = Set::new().unwrap();
    for (action, limit) in [(ParkAction::Kill, 0), (ParkAction::Thaw, 512 << 20)] {
        assert_eq!(errno(&set.park_end(Guard(1), 1, action, limit).unwrap_err()), 22);
    }
    assert_eq!(errno(&set.open_park_id(Guard(1)).unwrap_err()), 22);
}

/// A `Park` and a `Thaw` through the binding's copy: the record with the
/// park's fields; the ends' names are the library's.
#[test]
fn park_events_keep_the_park() {
    let mut k = fill_record();
    k.kill_usec = 0;
    k.report.park_id = 3;
    k.report.park_usec = 1_000_000;
    k.report.frozen_usec = 1_040_000;
    k.report.park_end_usec = 0;
    k.report.park_end = ParkEnd::Open;
    let cg = CString::new(k.cgroup.clone()).unwrap();
    for kind in [ffi::MG_EVENT_PARK, ffi::MG_EVENT_THAW] {
        let rec = k.to_c(&cg);
        let ev = ffi::mg_event {
            type_: kind,
            cgroup: cg.as_ptr(),
            time_usec: k.report.frozen_usec,
            kill: &rec,
            lend: std::ptr::null(),
            error: 0,
            what: std::ptr::null(),
            count: 0,
            throttle: std::ptr::null(),
            report: std::ptr::null(),
            unkillable: std::ptr::null(),
            reclaim: std::ptr::null(),
        };
        // SAFETY: the event and what it points to are alive.
        let e = unsafe { Event::from_c(&ev) };
        assert_eq!(e.kind, EventType::from_c(kind));
        assert_eq!(e.kill.as_ref(), Some(&k));
        k.report.park_end_usec = 3_500_000;
        k.report.park_end = ParkEnd::Thaw;
    }
    assert_eq!(
        (EventType::Park.to_string(), EventType::Thaw.to_string()),
        ("park".into(), "thaw".into())
    );
    for (e, c, name) in [
        (ParkEnd::Open, ffi::MG_PARK_OPEN, "parked"),
        (ParkEnd::Kill, ffi::MG_PARK_END_KILL, "killed at the worker's request"),
        (ParkEnd::Thaw, ffi::MG_PARK_END_THAW, "thawed"),
        (
            ParkEnd::Deadline,
            ffi::MG_PARK_END_DEADLINE,
            "killed at the park's deadline",
        ),
        (
            ParkEnd::Bound,
            ffi::MG_PARK_END_BOUND,
            "killed: used grew past the bound while frozen",
        ),
        (
            ParkEnd::NotFrozen,
            ffi::MG_PARK_END_NOT_FROZEN,
            "killed: not frozen within the kill wait",
        ),
        (
            ParkEnd::OverLimit,
            ffi::MG_PARK_END_OVER_LIMIT,
            "killed: over its limit at the thaw",
        ),
        (
            ParkEnd::NoFreeze,
            ffi::MG_PARK_END_NO_FREEZE,
            "not parked: cgroup.freeze cannot be written",
        ),
        (ParkEnd::Other(99), 99, "?"),
    ] {
        assert_eq!((ParkEnd::from_c(c), e.to_c(), e.to_string()), (e, c, name.to_string()));
    }
    // The park in the formatted record: how long, frozen or not, how it
    // ended; a park cgroup.freeze refused is told as such.
    k.report.park_end = ParkEnd::NotFrozen;
    k.report.frozen_usec = 0;
    k.report.park_end_usec = 3_000_000;
    let s = k.to_string();
    assert!(
        s.contains(", parked 2000ms (never frozen), killed: not frozen within the kill wait,"),
        "{s}"
    );
    k.report.park_end = ParkEnd::NoFreeze;
    let s = k.to_string();
    assert!(s.contains(", not parked: cgroup.freeze cannot be written,"), "{s}");
    k.report.park_id = 0;
    assert!(!k.to_string().contains("park"));
}

/// Every counter of mg_stats lands in its own field, in the header's order.
#[test]
fn stats_keep_every_counter() {
    let mut c = ffi::mg_stats::default();
    let n = std::mem::size_of::<ffi::mg_stats>() / 8;
    // SAFETY: mg_stats is u64s only.
    let w = unsafe { std::slice::from_raw_parts_mut(&mut c as *mut ffi::mg_stats as *mut u64, n) };
    for (i, v) in w.iter_mut().enumerate() {
        *v = i as u64;
    }
    let s = Stats::from_c(&c);
    assert_eq!(
        (s.fast_ticks, s.kills_averted, s.reclaims, s.reclaimed_bytes),
        (1, 12, 13, 14)
    );
    assert_eq!(
        (s.parks, s.parks_thawed, s.parks_killed, s.parks_expired),
        (15, 16, 17, 18)
    );
    assert_eq!(n, 19, "a counter of mg_stats not in Stats");
}
