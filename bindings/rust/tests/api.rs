// SPDX-License-Identifier: Apache-2.0
//! The public API as a user crate sees it: the non-exhaustive structs are
//! made through their constructors, defaults and `with_*` methods (a struct
//! expression does not compile outside the crate; the doc test of `Options`
//! checks that), and what they make is what the fields say.

use cgroupguard::*;
use std::time::Duration;

#[test]
fn non_exhaustive_structs_are_made_without_struct_expressions() {
    let mut opt = Options::new(64 << 20)
        .unwrap()
        .with_tick(Duration::from_millis(100))
        .with_dry_run(true)
        .with_pre_kill_max_defer(Duration::from_secs(5));
    opt.margin_bytes = 8 << 20;
    assert_eq!(opt.limit_bytes, 64 << 20);
    assert_eq!(
        (opt.tick, opt.margin_bytes, opt.dry_run),
        (Duration::from_millis(100), 8 << 20, true)
    );
    assert_eq!(opt.pre_kill_max_defer, Duration::from_secs(5));
    let opt = opt
        .with_reclaim_dose_bytes(4 << 20)
        .with_reclaim_cgroup(Some("/sys/fs/cgroup/w/bg".into()))
        .with_reclaim_windows(2);
    assert_eq!(
        (
            opt.reclaim_dose_bytes,
            opt.reclaim_cgroup.as_deref(),
            opt.reclaim_windows
        ),
        (4 << 20, Some(std::path::Path::new("/sys/fs/cgroup/w/bg")), 2)
    );

    let mut r = Report::default();
    assert_eq!((r.used_bytes, r.verdict), (0, Verdict::Ok));
    r.limit_bytes = 64 << 20;
    r.used_bytes = 80 << 20;
    r.verdict = Verdict::Overshoot;
    let mut k = KillRecord::new(KillReason::Overshoot, KillMethod::CgroupKill, "/sys/fs/cgroup/w/a", r);
    k.detect_usec = 1;
    k.kill_usec = 2;
    assert!(k.to_string().contains("/sys/fs/cgroup/w/a"), "{k}");

    let mut ev = Event::new(EventType::PreKill, "/sys/fs/cgroup/w/a");
    ev.kill = Some(k.clone());
    assert_eq!(
        (ev.kind, ev.kill.as_ref(), ev.lend, ev.error),
        (EventType::PreKill, Some(&k), None, None)
    );
    let mut u = UnkillableInfo::default();
    u.pids.push(7);
    assert_eq!(Stats::default().kills_deferred, 0);
    let mut rc = ReclaimInfo::default();
    rc.why = ReclaimWhy::Headroom;
    rc.achieved_bytes = 1 << 20;
    let mut ev = Event::new(EventType::Reclaim, "/sys/fs/cgroup/w/a");
    ev.reclaim = Some(rc.clone());
    assert_eq!(ev.reclaim, Some(rc));
    assert_eq!(Stats::default().reclaimed_bytes, 0);

    let opt = opt.with_park_deadline(Duration::from_secs(30));
    assert_eq!(opt.park_deadline, Duration::from_secs(30));
    let mut r = Report::default();
    assert_eq!((r.park_id, r.park_end), (0, ParkEnd::Open));
    r.park_id = 4;
    r.park_end = ParkEnd::Deadline;
    let mut ev = Event::new(EventType::Park, "/sys/fs/cgroup/w/a");
    ev.kill = Some(KillRecord::new(
        KillReason::Overshoot,
        KillMethod::CgroupKill,
        "/sys/fs/cgroup/w/a",
        r,
    ));
    assert_eq!(ev.kill.map(|k| k.report.park_id), Some(4));
    assert_eq!((Stats::default().parks, ParkAction::Thaw), (0, ParkAction::Thaw));

    let mut lines = 0;
    let mut log = |_: LogLevel, _: &str| lines += 1;
    let so = SnapshotOptions::default()
        .with_method(SnapshotMethod::Buffered)
        .with_flags(ffi::MG_SNAPSHOT_NO_SYNC)
        .with_chunk_bytes(1 << 20)
        .with_log(&mut log);
    assert_eq!(
        (so.method, so.flags, so.chunk_bytes),
        (SnapshotMethod::Buffered, 1, 1 << 20)
    );
    assert!(so.guard.is_none() && so.log.is_some());
}
