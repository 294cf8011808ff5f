// SPDX-License-Identifier: Apache-2.0
//! The binding on a real cgroup v2, in the kernel suite's VM (tests/vm/vmrun;
//! bindings/meson.build): built with `cargo test --features vmtest --test
//! vm --no-run`, run as root with mg-workload at $CGG_WORKLOAD and a disk at
//! /mnt/disk.  Without a cgroup v2 memory controller these tests fail; they
//! never skip.  One test at a time (`--test-threads=1`): each makes its own
//! set on its own thread anyway.
//!
//! Tree: /sys/fs/cgroup/cgg-rs-PID/{overshoot,prekill,lend,snapshot,gone,park,
//! park-over,park-deadline}, +memory from the parent.
//!   - overshoot: no memory.max, guard limit 64 MiB, anon grows to 160 MiB:
//!     killed as an overshoot with its full record; the guard removes itself
//!     inside its kill callback.
//!   - prekill: the same with pre_kill_max_defer 2 s and anon held at 68 MiB
//!     (over the limit, under the hard bound of limit + limit/8): in the
//!     PreKill closure a deferral of 0 is EINVAL, of 3 s ERANGE, of 1 s
//!     done; the kill comes at least 1 s after it was decided, counted in
//!     kills_deferred; outside the closure ENOENT.
//!   - lend: memory.high 50 MiB; lends to max, +1 MiB and with a 300 ms
//!     deadline: each end writes back exactly 52428800; a stale end is ESTALE
//!     and changes nothing; a lend begun inside the closure has its event
//!     delivered after the closure returns.
//!   - snapshot: memory.high 64 MiB; a 32 MiB image written in a lend of the
//!     guard on another thread while the set's thread ticks; memory.high
//!     back to 67108864; the lend's events delivered on the set's thread;
//!     the image restored byte for byte.
//!   - gone: the cgroup removed; the guard removes itself on Gone and nothing
//!     comes from it after.
//!   - park: guard limit 64 MiB with park_deadline 30 s, anon held at 68
//!     MiB: Park once frozen (cgroup.freeze 1, cgroup.events "frozen 1"),
//!     its record with the park's id; park_end before it ENOENT, with
//!     another id ESTALE, a kill with a new limit EINVAL; a thaw to 128 MiB
//!     outside the closure: Thaw, cgroup.freeze 0, the workload alive and
//!     not killed after; parks and parks_thawed 1.
//!   - park-over, park-deadline (one set): the same overshoot; the first
//!     thawed from its Park closure at its own limit, killed instead
//!     (ParkEnd::OverLimit); the second, park_deadline 1 s, left parked and
//!     killed at its deadline (ParkEnd::Deadline); both in parks_expired.
#![cfg(feature = "vmtest")]

use cgroupguard::*;
use std::cell::RefCell;
use std::fs::{self, File};
use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::rc::Rc;
use std::time::{Duration, Instant};

#[repr(C)]
struct PollFd {
    fd: i32,
    events: i16,
    revents: i16,
}
extern "C" {
    fn poll(fds: *mut PollFd, n: u64, timeout: i32) -> i32;
}

fn root() -> PathBuf {
    PathBuf::from(format!("/sys/fs/cgroup/cgg-rs-{}", std::process::id()))
}

struct Cg(PathBuf);

impl Drop for Cg {
    fn drop(&mut self) {
        let _ = fs::write(self.0.join("cgroup.kill"), "1");
        for _ in 0..100 {
            if fs::remove_dir(&self.0).is_ok() || !self.0.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn mkcg(name: &str) -> Cg {
    let r = root();
    if !r.exists() {
        fs::create_dir(&r).expect("no cgroup v2 to test on");
        fs::write(r.join("cgroup.subtree_control"), "+memory").expect("cannot enable the memory controller");
    }
    let cg = r.join(name);
    fs::create_dir(&cg).unwrap();
    Cg(cg)
}

fn read(p: &Path) -> String {
    fs::read_to_string(p).unwrap().trim().to_string()
}

fn start_in(cg: &Path, args: &[&str]) -> Child {
    let wl = std::env::var("CGG_WORKLOAD").unwrap_or_else(|_| "/mg/mg-workload".into());
    Command::new("/bin/sh")
        .args(["-c", r#"echo $$ >"$1/cgroup.procs" && shift && exec "$@""#, "sh"])
        .arg(cg)
        .arg(wl)
        .args(args)
        .spawn()
        .unwrap()
}

/// Runs the set's loop until done() or d passes.
fn pump(set: &Set, d: Duration, mut done: impl FnMut() -> bool) {
    let end = Instant::now() + d;
    while !done() {
        assert!(Instant::now() < end, "not done within {d:?}");
        let mut p = PollFd {
            fd: set.as_raw_fd(),
            events: 1,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { poll(&mut p, 1, 100) };
        set.process().unwrap();
    }
}

type Log = Rc<RefCell<Vec<Event>>>;

fn last_is(log: &Log, k: EventType) -> bool {
    log.borrow().last().map(|e| e.kind == k).unwrap_or(false)
}

#[test]
fn vm_overshoot_killed_with_its_record() {
    let cg = mkcg("overshoot");
    let set = Set::new().unwrap();
    let log: Log = Rc::default();
    let removed = Rc::new(RefCell::new(None));
    let (l, rm) = (log.clone(), removed.clone());
    let opt = Options::new(64 << 20).unwrap();
    let g = set
        .add(&cg.0, &opt, move |set, g, ev| {
            if ev.kind == EventType::Kill {
                *rm.borrow_mut() = Some(set.remove(g).map(|_| set.len()));
            }
            l.borrow_mut().push(ev.clone());
        })
        .unwrap();
    let mut child = start_in(&cg.0, &["anon", "160", "256", "-1"]);
    pump(&set, Duration::from_secs(60), || {
        log.borrow().iter().any(|e| e.kind == EventType::Kill)
    });
    let ev = log
        .borrow()
        .iter()
        .find(|e| e.kind == EventType::Kill)
        .cloned()
        .unwrap();
    let k = ev.kill.expect("a kill event without its record");
    eprintln!("record: {k}");
    let r = &k.report;
    assert_eq!(k.reason, KillReason::Overshoot);
    assert!(matches!(k.method, KillMethod::CgroupKill | KillMethod::Pidfd));
    assert!(k.cgroup.ends_with("/overshoot"), "{}", k.cgroup);
    assert!(k.detect_usec > 0 && k.kill_usec >= k.detect_usec);
    assert!(!k.empty_timed_out && k.empty_usec >= k.kill_usec);
    assert_eq!((r.limit_bytes, r.margin_bytes), (64 << 20, 4 << 20));
    assert!(r.used_bytes > r.limit_bytes && r.current_bytes > r.limit_bytes, "{r:?}");
    assert!(r.stat.anon > 60 << 20 && r.used_bytes >= r.stat.anon);
    assert_eq!(r.max_bytes, UNLIMITED);
    assert_eq!(r.verdict, Verdict::Overshoot);
    assert!(r.time_usec > 0 && r.time_usec <= k.kill_usec);
    assert!(k.to_string().contains("limit 65536kB"));
    assert_eq!(
        removed.borrow_mut().take().expect("removed in its callback").unwrap(),
        0
    );
    assert_eq!(set.remove(g).unwrap_err().raw_os_error(), Some(22));
    let st = child.wait().unwrap();
    assert_eq!(st.signal(), Some(9), "workload: {st:?}");
}

#[test]
fn vm_pre_kill_deferred_then_killed() {
    let cg = mkcg("prekill");
    let set = Set::new().unwrap();
    let log: Log = Rc::default();
    let deferred = Rc::new(RefCell::new(Vec::new()));
    let (l, d) = (log.clone(), deferred.clone());
    let opt = Options::new(64 << 20)
        .unwrap()
        .with_pre_kill_max_defer(Duration::from_secs(2));
    let g = set
        .add(&cg.0, &opt, move |set, g, ev| {
            if ev.kind == EventType::PreKill {
                let e = |r: std::io::Result<()>| r.map_err(|e| e.raw_os_error().unwrap_or(-1));
                d.borrow_mut().push((
                    e(set.defer_kill(g, Duration::ZERO)),
                    e(set.defer_kill(g, Duration::from_secs(3))),
                    e(set.defer_kill(g, Duration::from_secs(1))),
                ));
            }
            l.borrow_mut().push(ev.clone());
        })
        .unwrap();
    let mut child = start_in(&cg.0, &["anon", "68", "256", "-1"]);
    pump(&set, Duration::from_secs(60), || last_is(&log, EventType::Kill));
    assert_eq!(
        set.defer_kill(g, Duration::from_secs(1)).unwrap_err().raw_os_error(),
        Some(2)
    );
    let ev = log.borrow();
    let pre = ev.iter().find(|e| e.kind == EventType::PreKill).expect("no PreKill");
    let p = pre.kill.as_ref().expect("a PreKill without its record");
    assert_eq!((p.reason, p.kill_usec), (KillReason::Overshoot, 0));
    assert_eq!(*deferred.borrow(), [(Err(22), Err(34), Ok(()))], "EINVAL, ERANGE, done");
    let k = ev.last().unwrap().kill.as_ref().unwrap();
    assert!(
        k.kill_usec >= pre.time_usec + 1_000_000,
        "killed {} us after the PreKill",
        k.kill_usec - pre.time_usec
    );
    assert_eq!(set.guard_stats(g).unwrap().kills_deferred, 1);
    set.remove(g).unwrap();
    let st = child.wait().unwrap();
    assert_eq!(st.signal(), Some(9), "workload: {st:?}");
}

#[test]
fn vm_lend_restores_memory_high_exactly() {
    let cg = mkcg("lend");
    let high = cg.0.join("memory.high");
    fs::write(&high, "52428800").unwrap();
    let set = Set::new().unwrap();
    let log: Log = Rc::default();
    let l = log.clone();
    let g = set
        .add(&cg.0, &Options::new(64 << 20).unwrap(), move |_, _, ev| {
            l.borrow_mut().push(ev.clone())
        })
        .unwrap();

    let l1 = set.lend_begin(g, UNLIMITED, Deadline::None).unwrap();
    assert_eq!(read(&high), "max");
    {
        let ev = log.borrow();
        let b = ev.last().unwrap().lend.unwrap();
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].kind, EventType::LendBegin);
        assert_eq!(
            (b.id, b.old_high_bytes, b.new_high_bytes, b.deadline_usec),
            (l1.id, 52428800, UNLIMITED, u64::MAX)
        );
    }
    set.lend_end(&l1).unwrap();
    pump(&set, Duration::from_secs(30), || last_is(&log, EventType::LendEnd));
    let e = log.borrow().last().unwrap().lend.unwrap();
    assert!(e.id == l1.id && e.restored && e.found_high_bytes == UNLIMITED, "{e:?}");
    assert_eq!(read(&high), "52428800");
    assert_eq!(set.lend_end(&l1).unwrap_err().raw_os_error(), Some(2)); // ENOENT

    let l2 = set.lend_begin(g, 1 << 20, Deadline::Default).unwrap();
    assert!(l2.id > l1.id);
    assert_eq!(set.lend_end(&l1).unwrap_err().raw_os_error(), Some(116)); // ESTALE
    assert!(set.is_lent(g).unwrap());
    assert_eq!(set.open_lend_id(g).unwrap(), l2.id);
    assert_eq!(read(&high), "53477376");
    set.lend_end(&l2).unwrap();
    pump(&set, Duration::from_secs(30), || last_is(&log, EventType::LendEnd));
    assert!(log.borrow().last().unwrap().lend.unwrap().restored);
    assert_eq!(read(&high), "52428800");

    let l3 = set
        .lend_begin(g, UNLIMITED, Deadline::After(Duration::from_millis(300)))
        .unwrap();
    pump(&set, Duration::from_secs(30), || last_is(&log, EventType::LendExpired));
    let e = log.borrow().last().unwrap().lend.unwrap();
    assert!(e.id == l3.id && e.restored, "{e:?}");
    assert_eq!(read(&high), "52428800");
    assert_eq!(set.lend_end(&l3).unwrap_err().raw_os_error(), Some(2));

    // A lend begun inside the closure: its LendBegin comes while the
    // closure runs, and is delivered right after it returns, in order.
    let cg2 = mkcg("lend-nested");
    fs::write(cg2.0.join("memory.high"), "52428800").unwrap();
    let log2: Log = Rc::default();
    let nested = Rc::new(RefCell::new(None));
    let (l, n) = (log2.clone(), nested.clone());
    let g2 = set
        .add(&cg2.0, &Options::new(64 << 20).unwrap(), move |set, g, ev| {
            l.borrow_mut().push(ev.clone());
            if ev.kind == EventType::LendExpired {
                *n.borrow_mut() = Some(set.lend_begin(g, UNLIMITED, Deadline::None).unwrap());
                assert_eq!(
                    l.borrow().last().unwrap().kind,
                    EventType::LendExpired,
                    "delivered inside the closure"
                );
            }
        })
        .unwrap();
    set.lend_begin(g2, UNLIMITED, Deadline::After(Duration::from_millis(300)))
        .unwrap();
    pump(&set, Duration::from_secs(30), || {
        last_is(&log2, EventType::LendBegin) && nested.borrow().is_some()
    });
    let kinds: Vec<EventType> = log2.borrow().iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [EventType::LendBegin, EventType::LendExpired, EventType::LendBegin]
    );
    let inner = nested.borrow_mut().take().unwrap();
    assert_eq!(log2.borrow().last().unwrap().lend.unwrap().id, inner.id);
    assert_eq!(read(&cg2.0.join("memory.high")), "max");
    set.lend_end(&inner).unwrap();
    pump(&set, Duration::from_secs(30), || last_is(&log2, EventType::LendEnd));
    assert_eq!(read(&cg2.0.join("memory.high")), "52428800");
    set.remove(g2).unwrap();
}

#[test]
fn vm_snapshot_written_in_a_lend_and_restored() {
    let cg = mkcg("snapshot");
    let high = cg.0.join("memory.high");
    fs::write(&high, "67108864").unwrap();
    let set = Set::new().unwrap();
    let log: Log = Rc::default();
    let l = log.clone();
    let me = std::thread::current().id();
    let g = set
        .add(&cg.0, &Options::new(256 << 20).unwrap(), move |_, _, ev| {
            assert_eq!(std::thread::current().id(), me, "a callback off the set's thread");
            l.borrow_mut().push(ev.clone());
        })
        .unwrap();
    let sg = set.snapshot_guard(g).unwrap();
    let mut img = vec![0u8; 32 << 20];
    for (i, b) in img.iter_mut().enumerate().step_by(512) {
        *b = (i >> 9) as u8;
    }
    let img = std::sync::Arc::new(img);
    let im = img.clone();
    let writer = std::thread::spawn(move || {
        let dir = File::open("/mnt/disk").unwrap();
        snapshot_write(
            Image::Memory(&im),
            &dir,
            "vm.snap",
            SnapshotOptions::default().with_guard(&sg),
        )
    });
    // The set's thread goes on ticking while the write runs.
    let mut ticks = 0;
    pump(&set, Duration::from_secs(120), || {
        ticks += 1;
        writer.is_finished()
    });
    let st = writer.join().unwrap().unwrap();
    pump(&set, Duration::from_secs(10), || last_is(&log, EventType::LendEnd));
    let ev = log.borrow();
    let b = ev
        .iter()
        .find(|e| e.kind == EventType::LendBegin)
        .unwrap()
        .lend
        .unwrap();
    let e = ev.iter().find(|e| e.kind == EventType::LendEnd).unwrap().lend.unwrap();
    assert!(
        b.id == e.id && e.restored && b.old_high_bytes == 67108864,
        "{b:?} {e:?}"
    );
    assert_eq!(read(&high), "67108864");
    assert!(
        st.lend_bytes > 0
            && st.image_bytes == img.len() as u64
            && st.write_usec > 0
            && st.total_usec >= st.write_usec + st.sync_usec,
        "{st:?}"
    );
    eprintln!(
        "written: method {}, {} data bytes, {} us, {ticks} loop turns meanwhile",
        st.method_used(),
        st.data_bytes,
        st.total_usec
    );
    let mut back = vec![0u8; img.len()];
    let dir = File::open("/mnt/disk").unwrap();
    snapshot_restore(&dir, "vm.snap", Target::Memory(&mut back), SnapshotOptions::default()).unwrap();
    assert!(back == *img, "restored image differs");
    assert!(!set.is_lent(g).unwrap());
}

#[test]
fn vm_guard_removed_inside_its_own_callback() {
    let cg = mkcg("gone");
    let set = Set::new().unwrap();
    let log: Log = Rc::default();
    let removed = Rc::new(RefCell::new(None));
    let (l, rm) = (log.clone(), removed.clone());
    let opt = Options::new(64 << 20).unwrap().with_tick(Duration::from_millis(50));
    set.add(&cg.0, &opt, move |set, g, ev| {
        l.borrow_mut().push(ev.clone());
        if ev.kind == EventType::Gone {
            *rm.borrow_mut() = Some(set.remove(g).map(|_| set.len()));
        }
    })
    .unwrap();
    let ticking = Instant::now() + Duration::from_millis(200);
    pump(&set, Duration::from_secs(5), || Instant::now() > ticking);
    fs::remove_dir(&cg.0).unwrap();
    pump(&set, Duration::from_secs(10), || last_is(&log, EventType::Gone));
    assert_eq!(removed.borrow_mut().take().unwrap().unwrap(), 0);
    let n = log.borrow().len();
    let end = Instant::now() + Duration::from_secs(1);
    pump(&set, Duration::from_secs(2), || Instant::now() > end);
    assert_eq!(
        log.borrow().len(),
        n,
        "an event after the removal: {:?}",
        log.borrow().last()
    );
}

fn has(log: &Log, k: EventType) -> bool {
    log.borrow().iter().any(|e| e.kind == k)
}

/// cgroup.freeze and the "frozen" line of cgroup.events.
fn frozen_state(cg: &Path) -> (String, String) {
    let events = read(&cg.join("cgroup.events"));
    let frozen = events
        .lines()
        .find_map(|l| l.strip_prefix("frozen "))
        .unwrap_or("")
        .to_string();
    (read(&cg.join("cgroup.freeze")), frozen)
}

#[test]
fn vm_park_thawed() {
    let cg = mkcg("park");
    let set = Set::new().unwrap();
    let log: Log = Rc::default();
    let l = log.clone();
    let opt = Options::new(64 << 20)
        .unwrap()
        .with_park_deadline(Duration::from_secs(30));
    let g = set
        .add(&cg.0, &opt, move |_, _, ev| l.borrow_mut().push(ev.clone()))
        .unwrap();
    let errno = |r: std::io::Result<bool>| r.unwrap_err().raw_os_error();
    assert_eq!(errno(set.park_end(g, 1, ParkAction::Kill, 0)), Some(2), "no park open");
    let mut child = start_in(&cg.0, &["anon", "68", "256", "-1"]);
    pump(&set, Duration::from_secs(60), || has(&log, EventType::Park));
    let k = log
        .borrow()
        .iter()
        .find(|e| e.kind == EventType::Park)
        .and_then(|e| e.kill.clone())
        .expect("a Park without its record");
    let r = &k.report;
    assert_eq!(
        (k.reason, k.kill_usec, r.park_end, r.park_end_usec),
        (KillReason::Overshoot, 0, ParkEnd::Open, 0)
    );
    assert!(
        r.park_id != 0 && r.park_usec != 0 && r.frozen_usec >= r.park_usec,
        "{r:?}"
    );
    let id = r.park_id;
    assert_eq!(frozen_state(&cg.0), ("1".into(), "1".into()));
    assert_eq!(set.open_park_id(g).unwrap(), id);
    assert_eq!(errno(set.park_end(g, id + 1, ParkAction::Thaw, 0)), Some(116), "ESTALE");
    assert_eq!(errno(set.park_end(g, id, ParkAction::Kill, 1 << 20)), Some(22));
    assert!(
        !set.park_end(g, id, ParkAction::Thaw, 128 << 20).unwrap(),
        "thawed, not killed"
    );
    {
        let ev = log.borrow();
        let t = ev.last().expect("no Thaw");
        let r = &t.kill.as_ref().expect("a Thaw without its record").report;
        assert_eq!((t.kind, r.park_id, r.park_end), (EventType::Thaw, id, ParkEnd::Thaw));
        assert!(r.park_end_usec != 0);
    }
    assert_eq!(frozen_state(&cg.0).0, "0");
    assert_eq!(set.open_park_id(g).unwrap(), 0);
    assert_eq!(errno(set.park_end(g, id, ParkAction::Kill, 0)), Some(2));
    // 68 MiB under its new limit of 128: watched, not killed.
    let n = log.borrow().len();
    let end = Instant::now() + Duration::from_secs(2);
    pump(&set, Duration::from_secs(3), || Instant::now() >= end);
    assert!(
        log.borrow()[n..]
            .iter()
            .all(|e| e.kind != EventType::Kill && e.kind != EventType::Park),
        "{:?}",
        &log.borrow()[n..]
    );
    assert!(child.try_wait().unwrap().is_none(), "the workload after the thaw");
    let st = set.guard_stats(g).unwrap();
    assert_eq!((st.parks, st.parks_thawed, st.kills_overshoot), (1, 1, 0));
    set.remove(g).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn vm_park_ends_in_a_kill() {
    let (over, late) = (mkcg("park-over"), mkcg("park-deadline"));
    let set = Set::new().unwrap();
    let (log_over, log_late): (Log, Log) = (Rc::default(), Rc::default());
    let thawed = Rc::new(RefCell::new(Vec::new()));
    let (l, t) = (log_over.clone(), thawed.clone());
    let opt = Options::new(64 << 20)
        .unwrap()
        .with_park_deadline(Duration::from_secs(30));
    let g_over = set
        .add(&over.0, &opt, move |set, g, ev| {
            l.borrow_mut().push(ev.clone());
            if ev.kind == EventType::Park {
                // At its own limit, still over it: killed, never thawed.
                let id = ev.kill.as_ref().unwrap().report.park_id;
                t.borrow_mut()
                    .push(set.park_end(g, id, ParkAction::Thaw, 0).map_err(|e| e.raw_os_error()));
            }
        })
        .unwrap();
    let l = log_late.clone();
    let g_late = set
        .add(
            &late.0,
            &opt.clone().with_park_deadline(Duration::from_secs(1)),
            move |_, _, ev| l.borrow_mut().push(ev.clone()),
        )
        .unwrap();
    let mut children = [
        start_in(&over.0, &["anon", "68", "256", "-1"]),
        start_in(&late.0, &["anon", "68", "256", "-1"]),
    ];
    pump(&set, Duration::from_secs(90), || {
        last_is(&log_over, EventType::Kill) && last_is(&log_late, EventType::Kill)
    });
    assert_eq!(*thawed.borrow(), [Ok(true)], "a thaw over the limit is a kill");
    let r = log_over.borrow().last().unwrap().kill.as_ref().unwrap().report;
    assert_eq!(r.park_end, ParkEnd::OverLimit);
    assert!(r.park_id != 0);
    let park_id = log_late
        .borrow()
        .iter()
        .find(|e| e.kind == EventType::Park)
        .expect("no Park past its deadline")
        .kill
        .as_ref()
        .unwrap()
        .report
        .park_id;
    let k = log_late.borrow().last().unwrap().kill.clone().unwrap();
    assert_eq!((k.report.park_end, k.report.park_id), (ParkEnd::Deadline, park_id));
    assert!(
        k.report.park_end_usec - k.report.park_usec >= 1_000_000,
        "{:?}",
        k.report
    );
    assert!(k.to_string().contains("killed at the park's deadline"), "{k}");
    for g in [g_over, g_late] {
        let st = set.guard_stats(g).unwrap();
        assert_eq!((st.parks, st.parks_expired, st.kills_overshoot), (1, 1, 1), "{st:?}");
        set.remove(g).unwrap();
    }
    for c in &mut children {
        let st = c.wait().unwrap();
        assert_eq!(st.signal(), Some(9), "workload: {st:?}");
    }
}
