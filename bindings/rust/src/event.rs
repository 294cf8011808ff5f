// SPDX-License-Identifier: Apache-2.0
//! Events and kill records, copied out of the library's callback into owned
//! values.

use std::ffi::{c_char, CStr, CString};
use std::fmt;
use std::time::Duration;

use crate::ffi;

/// memory.stat in bytes (counters: events), as the library parses it.
pub type Memstat = ffi::mg_memstat;
/// A pressure file: averages in hundredths of a percent, totals in usec.
pub type Psi = ffi::mg_psi;
/// One line of a pressure file.
pub type PsiLine = ffi::mg_psi_line;
/// memory.events.local.
pub type MemEvents = ffi::mg_mem_events;
/// The lend an `EventType::Lend*` is about.
pub type LendInfo = ffi::mg_lend_info;
/// An actor held over memory.high with nothing left to reclaim.
pub type ThrottleInfo = ffi::mg_throttle_info;

macro_rules! c_enum {
    ($(#[$m:meta])* $name:ident, $to_string:ident { $($(#[$vm:meta])* $v:ident = $c:path,)* }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $($(#[$vm])* $v,)*
            /// A value this binding does not know (a newer library's).
            Other(u32),
        }
        impl $name {
            pub(crate) fn from_c(v: u32) -> Self {
                match v {
                    $($c => $name::$v,)*
                    o => $name::Other(o),
                }
            }
            pub(crate) fn to_c(self) -> u32 {
                match self {
                    $($name::$v => $c,)*
                    $name::Other(o) => o,
                }
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                // SAFETY: the library returns a static string for any value.
                let s = unsafe { CStr::from_ptr(ffi::$to_string(self.to_c())) };
                f.write_str(&s.to_string_lossy())
            }
        }
    };
}

c_enum!(
    /// What an event is about.
    EventType, mg_event_type_to_string {
        /// `kill` set; delivered once the cgroup is empty (or the wait timed out).
        Kill = ffi::MG_EVENT_KILL,
        /// `lend` set.
        LendBegin = ffi::MG_EVENT_LEND_BEGIN,
        /// `lend` set; `lend.restored`: memory.high written back.
        LendEnd = ffi::MG_EVENT_LEND_END,
        /// The deadline ended the lend (`lend` set, as for `LendEnd`).
        LendExpired = ffi::MG_EVENT_LEND_EXPIRED,
        /// `error` and `what` set; the guard keeps going.
        Error = ffi::MG_EVENT_ERROR,
        /// The cgroup vanished; the guard stops.
        Gone = ffi::MG_EVENT_GONE,
        /// memory.events.local oom_kill rose by `count`.
        KernelOom = ffi::MG_EVENT_KERNEL_OOM,
        /// `throttle` set: held over memory.high; not a kill.
        Throttled = ffi::MG_EVENT_THROTTLED,
        /// `report` set: over the limit with no process; not a kill.
        EmptyOverLimit = ffi::MG_EVENT_EMPTY_OVER_LIMIT,
        /// `unkillable` and `kill` set: members outlived the kill wait.
        Unkillable = ffi::MG_EVENT_UNKILLABLE,
        /// `kill` set: the kill a dry run (`Options::dry_run`) did not make.
        KillDryRun = ffi::MG_EVENT_KILL_DRY_RUN,
        /// `kill` set (`kill_usec` 0): a kill about to be made, told only
        /// with `Options::pre_kill_max_defer` set; the closure may put it
        /// off with `Set::defer_kill`, else it follows in the same tick.
        PreKill = ffi::MG_EVENT_PRE_KILL,
        /// `kill` and `report` set: a deferred kill not made.
        KillAverted = ffi::MG_EVENT_KILL_AVERTED,
        /// `reclaim` set: a dose of the reclaim actuator
        /// (`Options::reclaim_dose_bytes`), done; not a kill.
        Reclaim = ffi::MG_EVENT_RECLAIM,
        /// `kill` set (`kill_usec` 0, not sent): a kill the guard froze
        /// the actor for instead (`Options::park_deadline`), told once
        /// cgroup.events says frozen; `kill.report.park_id` is the id for
        /// `Set::park_end`.
        Park = ffi::MG_EVENT_PARK,
        /// `kill` set (`report.park_end` `ParkEnd::Thaw`): the worker
        /// ended the park with a thaw; the guard watches the actor as before.
        Thaw = ffi::MG_EVENT_THAW,
    }
);

c_enum!(
    /// How a park ended (`Report::park_end`).  All but `Thaw` end in a
    /// kill, by the worker's choice or by the guard's promise.
    ParkEnd, mg_park_end_to_string {
        /// Still parked (`EventType::Park`), or no park.
        Open = ffi::MG_PARK_OPEN,
        /// The worker's `ParkAction::Kill`.
        Kill = ffi::MG_PARK_END_KILL,
        /// The worker's `ParkAction::Thaw`, thawed (`EventType::Thaw`).
        Thaw = ffi::MG_PARK_END_THAW,
        /// Not ended within `Options::park_deadline`: killed.
        Deadline = ffi::MG_PARK_END_DEADLINE,
        /// Used grew past the hard bound while frozen (kernel and socket
        /// memory are charged without the tasks running): killed.
        Bound = ffi::MG_PARK_END_BOUND,
        /// cgroup.events did not say frozen within `Options::kill_wait` (a
        /// task in uninterruptible sleep): killed.
        NotFrozen = ffi::MG_PARK_END_NOT_FROZEN,
        /// A thaw was asked while used was above the (new) limit: killed,
        /// never thawed.
        OverLimit = ffi::MG_PARK_END_OVER_LIMIT,
        /// cgroup.freeze could not be written (before 5.2: none): killed at
        /// once, with no `EventType::Park`.
        NoFreeze = ffi::MG_PARK_END_NO_FREEZE,
    }
);

c_enum!(
    /// What a slow-path read concluded.
    Verdict, mg_verdict_to_string {
        /// Below the fast-path line.
        Ok = ffi::MG_VERDICT_OK,
        /// Between the fast-path line and the limit.
        Near = ffi::MG_VERDICT_NEAR,
        /// Stalling, not yet for the whole stall window.
        Stalling = ffi::MG_VERDICT_STALLING,
        /// Used above the limit: a kill.
        Overshoot = ffi::MG_VERDICT_OVERSHOOT,
        /// Stalled for the stall window: a kill.
        Stall = ffi::MG_VERDICT_STALL,
    }
);

c_enum!(
    /// Why a guard killed.
    KillReason, mg_kill_reason_to_string {
        /// Used above the limit.
        Overshoot = ffi::MG_KILL_OVERSHOOT,
        /// Stalled on memory (or refaulting) for the stall window.
        Stall = ffi::MG_KILL_STALL,
    }
);

/// How a guard killed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KillMethod {
    /// cgroup.kill (5.14+).
    CgroupKill,
    /// pidfd_send_signal per member.
    Pidfd,
    /// A value this binding does not know.
    Other(u32),
}

impl KillMethod {
    fn from_c(v: u32) -> Self {
        match v {
            ffi::MG_KILL_CGROUP_KILL => KillMethod::CgroupKill,
            ffi::MG_KILL_PIDFD => KillMethod::Pidfd,
            o => KillMethod::Other(o),
        }
    }
    fn to_c(self) -> u32 {
        match self {
            KillMethod::CgroupKill => ffi::MG_KILL_CGROUP_KILL,
            KillMethod::Pidfd => ffi::MG_KILL_PIDFD,
            KillMethod::Other(o) => o,
        }
    }
}

/// What fired a dose of the reclaim actuator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReclaimWhy {
    /// The pressure trigger held for `Options::reclaim_windows` windows.
    Pressure,
    /// memory.current came within `Options::reclaim_headroom_bytes` of the
    /// limit.
    Headroom,
    /// A value this binding does not know.
    Other(u32),
}

impl ReclaimWhy {
    fn from_c(v: u32) -> Self {
        match v {
            ffi::MG_RECLAIM_PRESSURE => ReclaimWhy::Pressure,
            ffi::MG_RECLAIM_HEADROOM => ReclaimWhy::Headroom,
            o => ReclaimWhy::Other(o),
        }
    }
}

pub(crate) fn usec_to_duration(us: u64) -> Duration {
    Duration::from_micros(us)
}

/// Everything one slow-path read saw.  Times are CLOCK_MONOTONIC usec;
/// `max_bytes` is `UNLIMITED` for "max".  Non-exhaustive (the C struct
/// grows): made with `Report::default()` (every field zero, verdict `Ok`,
/// `park_end` `Open`).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Report {
    /// When it was read.
    pub time_usec: u64,
    /// The guard's limit.
    pub limit_bytes: u64,
    /// The guard's margin (the fast-path line is limit - margin).
    pub margin_bytes: u64,
    /// memory.current.
    pub current_bytes: u64,
    /// anon + shmem + kernel + sock, one memory.stat read.
    pub used_bytes: u64,
    /// memory.high.
    pub high_bytes: u64,
    /// memory.max.
    pub max_bytes: u64,
    /// memory.stat.
    pub stat: Memstat,
    /// memory.pressure.
    pub memory_pressure: Psi,
    /// io.pressure.
    pub io_pressure: Psi,
    /// memory.events.local.
    pub events: MemEvents,
    /// How long the stall criteria have held.
    pub stall: Duration,
    /// `ffi::MG_STALL_*` bits.
    pub stall_signals: u32,
    /// What the read concluded.
    pub verdict: Verdict,
    /// `MG_STALL_REFAULT`: file pages re-read over `stall`.
    pub stall_refault_bytes: u64,
    /// `MG_STALL_REFAULT`: what reclaim took (pgsteal) over `stall`.
    pub stall_reclaimed_bytes: u64,
    /// The park this read is about (a kill record's, a `Park`'s or a
    /// `Thaw`'s; the park fields are all zero in any other read): the id
    /// for `Set::park_end`, 0 if not parked.
    pub park_id: u64,
    /// When cgroup.freeze was written.
    pub park_usec: u64,
    /// When cgroup.events said frozen; 0: never (see `park_end`).
    pub frozen_usec: u64,
    /// When the park ended; 0: it has not.
    pub park_end_usec: u64,
    /// How it ended.
    pub park_end: ParkEnd,
}

impl Default for Report {
    fn default() -> Report {
        Report::from_c(&ffi::mg_report {
            size: std::mem::size_of::<ffi::mg_report>() as u64,
            ..Default::default()
        })
    }
}

/// Copies what `c.size` says exists: a record of an older library has fewer
/// fields, the rest read as zero.
fn sized<T: Copy + Default>(c: &T, size: u64) -> T {
    let mut full = T::default();
    let n = (size as usize).min(std::mem::size_of::<T>());
    // SAFETY: both are plain data of type T; n is within both.
    unsafe { std::ptr::copy_nonoverlapping(c as *const T as *const u8, &mut full as *mut T as *mut u8, n) };
    full
}

impl Report {
    pub(crate) fn from_c(c: &ffi::mg_report) -> Report {
        let c = sized(c, c.size);
        Report {
            time_usec: c.time_usec,
            limit_bytes: c.limit_bytes,
            margin_bytes: c.margin_bytes,
            current_bytes: c.current_bytes,
            used_bytes: c.used_bytes,
            high_bytes: c.high_bytes,
            max_bytes: c.max_bytes,
            stat: c.stat,
            memory_pressure: c.memory_pressure,
            io_pressure: c.io_pressure,
            events: c.events,
            stall: usec_to_duration(c.stall_usec),
            stall_signals: c.stall_signals,
            verdict: Verdict::from_c(c.verdict),
            stall_refault_bytes: c.stall_refault_bytes,
            stall_reclaimed_bytes: c.stall_reclaimed_bytes,
            park_id: c.park_id,
            park_usec: c.park_usec,
            frozen_usec: c.frozen_usec,
            park_end_usec: c.park_end_usec,
            park_end: ParkEnd::from_c(c.park_end),
        }
    }

    pub(crate) fn to_c(self) -> ffi::mg_report {
        ffi::mg_report {
            size: std::mem::size_of::<ffi::mg_report>() as u64,
            time_usec: self.time_usec,
            limit_bytes: self.limit_bytes,
            margin_bytes: self.margin_bytes,
            current_bytes: self.current_bytes,
            used_bytes: self.used_bytes,
            high_bytes: self.high_bytes,
            max_bytes: self.max_bytes,
            stat: self.stat,
            memory_pressure: self.memory_pressure,
            io_pressure: self.io_pressure,
            events: self.events,
            stall_usec: self.stall.as_micros() as u64,
            stall_signals: self.stall_signals,
            verdict: self.verdict.to_c(),
            stall_refault_bytes: self.stall_refault_bytes,
            stall_reclaimed_bytes: self.stall_reclaimed_bytes,
            park_id: self.park_id,
            park_usec: self.park_usec,
            frozen_usec: self.frozen_usec,
            park_end_usec: self.park_end_usec,
            park_end: self.park_end.to_c(),
        }
    }
}

/// What a kill hands out: the read that decided and when each step came
/// (CLOCK_MONOTONIC usec).  `Display` is `mg_kill_record_format()`'s
/// OOM-style report.
///
/// Non-exhaustive (the C record grows): made with [`KillRecord::new`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct KillRecord {
    /// Why.
    pub reason: KillReason,
    /// How.
    pub method: KillMethod,
    /// The actor's cgroup.
    pub cgroup: String,
    /// First tick that saw the condition.
    pub detect_usec: u64,
    /// Signal sent.
    pub kill_usec: u64,
    /// cgroup.events populated 0; 0 if not seen.
    pub empty_usec: u64,
    /// Gave up waiting for populated 0.
    pub empty_timed_out: bool,
    /// The read that decided.
    pub report: Report,
}

unsafe fn string(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

impl KillRecord {
    /// A record with these, its times zero and `empty_timed_out` false (for
    /// a caller's own tests, or to format a record it keeps).
    pub fn new(reason: KillReason, method: KillMethod, cgroup: impl Into<String>, report: Report) -> KillRecord {
        KillRecord {
            reason,
            method,
            cgroup: cgroup.into(),
            detect_usec: 0,
            kill_usec: 0,
            empty_usec: 0,
            empty_timed_out: false,
            report,
        }
    }

    pub(crate) unsafe fn from_c(c: &ffi::mg_kill_record) -> KillRecord {
        KillRecord {
            reason: KillReason::from_c(c.reason),
            method: KillMethod::from_c(c.method),
            cgroup: string(c.cgroup),
            detect_usec: c.detect_usec,
            kill_usec: c.kill_usec,
            empty_usec: c.empty_usec,
            empty_timed_out: c.empty_timed_out,
            report: Report::from_c(&c.report),
        }
    }

    /// The C record; `cgroup` must outlive it.
    pub(crate) fn to_c(&self, cgroup: &CString) -> ffi::mg_kill_record {
        ffi::mg_kill_record {
            size: std::mem::size_of::<ffi::mg_kill_record>() as u64,
            reason: self.reason.to_c(),
            method: self.method.to_c(),
            cgroup: cgroup.as_ptr(),
            detect_usec: self.detect_usec,
            kill_usec: self.kill_usec,
            empty_usec: self.empty_usec,
            empty_timed_out: self.empty_timed_out,
            report: self.report.to_c(),
        }
    }
}

impl fmt::Display for KillRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cg = CString::new(self.cgroup.replace('\0', "?")).unwrap();
        let c = self.to_c(&cg);
        let mut buf = vec![0u8; 1024];
        loop {
            // SAFETY: c and cg are alive; buf has buf.len() bytes.
            let n = unsafe { ffi::mg_kill_record_format(&c, buf.as_mut_ptr() as *mut c_char, buf.len()) };
            if n < 0 {
                return write!(f, "cgroupguard: {}", std::io::Error::from_raw_os_error(-n));
            }
            if (n as usize) < buf.len() {
                return f.write_str(&String::from_utf8_lossy(&buf[..n as usize]));
            }
            buf.resize(n as usize + 1, 0);
        }
    }
}

/// Members that outlived a kill's wait: at most 16 pids with their
/// /proc/PID/stat states (b'D', b'R' ...; b'?' where unread).
/// Non-exhaustive: made with `UnkillableInfo::default()`.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct UnkillableInfo {
    /// When the kill was sent.
    pub kill_usec: u64,
    /// How long the guard waited.
    pub wait: Duration,
    /// Members left.
    pub n_members: u32,
    /// More than `pids` holds.
    pub more_members: bool,
    /// Their pids, at most 16.
    pub pids: Vec<i32>,
    /// Their states, one per pid.
    pub states: Vec<u8>,
}

/// One dose of the reclaim actuator written to memory.reclaim, and what the
/// kernel reclaimed from the target meanwhile (its pgsteal: the dose's and
/// any other reclaim's).  Non-exhaustive: made with `ReclaimInfo::default()`
/// (every field zero or empty, `why` `Other(0)`).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ReclaimInfo {
    /// The cgroup dosed.
    pub target: String,
    /// What fired it.
    pub why: ReclaimWhy,
    /// The dose.
    pub asked_bytes: u64,
    /// pgsteal's rise over the write, in bytes.
    pub achieved_bytes: u64,
    /// The write(2), start to end.
    pub duration: Duration,
    /// The write's errno, positive: EAGAIN, the kernel took less than
    /// asked; ENODEV, the target went (no more doses).
    pub error: Option<i32>,
    /// A dose that counts: no error, done within
    /// `ffi::MG_RECLAIM_DOSE_MAX_USEC`, at least 80 % achieved.
    pub counted: bool,
    /// `ReclaimWhy::Pressure`: the memory `some` stall of each window the
    /// trigger saw, oldest first.
    pub some_stall: Vec<Duration>,
    /// The same for `full` (zeros unless `Options::reclaim_full` is set).
    pub full_stall: Vec<Duration>,
    /// `ReclaimWhy::Headroom`: the memory.current that fired it.
    pub current_bytes: u64,
    /// `ReclaimWhy::Headroom`: the file cache (memory.stat file) then.
    pub file_bytes: u64,
}

impl Default for ReclaimInfo {
    fn default() -> ReclaimInfo {
        ReclaimInfo {
            target: String::new(),
            why: ReclaimWhy::Other(0),
            asked_bytes: 0,
            achieved_bytes: 0,
            duration: Duration::ZERO,
            error: None,
            counted: false,
            some_stall: Vec::new(),
            full_stall: Vec::new(),
            current_bytes: 0,
            file_bytes: 0,
        }
    }
}

impl ReclaimInfo {
    pub(crate) unsafe fn from_c(c: &ffi::mg_reclaim_info) -> ReclaimInfo {
        let n = (c.windows as usize).min(ffi::MG_RECLAIM_WINDOWS_MAX);
        ReclaimInfo {
            target: string(c.target),
            why: ReclaimWhy::from_c(c.why),
            asked_bytes: c.asked_bytes,
            achieved_bytes: c.achieved_bytes,
            duration: usec_to_duration(c.duration_usec),
            error: if c.error < 0 { Some(-c.error) } else { None },
            counted: c.counted,
            some_stall: c.some_usec[..n].iter().map(|&us| usec_to_duration(us)).collect(),
            full_stall: c.full_usec[..n].iter().map(|&us| usec_to_duration(us)).collect(),
            current_bytes: c.current_bytes,
            file_bytes: c.file_bytes,
        }
    }
}

/// One event of a guard, copied out of the library's callback.
/// Non-exhaustive (the C event grows): made with [`Event::new`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Event {
    /// What it is about; says which of the rest are set.
    pub kind: EventType,
    /// The guard's cgroup.
    pub cgroup: String,
    /// CLOCK_MONOTONIC usec.
    pub time_usec: u64,
    /// `Kill`, `KillDryRun`, `PreKill`, `KillAverted`, `Unkillable`,
    /// `Park`, `Thaw`.
    pub kill: Option<KillRecord>,
    /// `LendBegin`, `LendEnd`, `LendExpired`.
    pub lend: Option<LendInfo>,
    /// `EventType::Error`: the errno, positive.
    pub error: Option<i32>,
    /// `EventType::Error`: what failed, e.g. "memory.stat".
    pub what: Option<String>,
    /// `EventType::KernelOom`: kills since the last tick.
    pub count: u64,
    /// `EventType::Throttled`.
    pub throttle: Option<ThrottleInfo>,
    /// `EventType::EmptyOverLimit`: the read that saw it;
    /// `EventType::KillAverted`: the fresh read that averted the kill.
    pub report: Option<Report>,
    /// `EventType::Unkillable`.
    pub unkillable: Option<UnkillableInfo>,
    /// `EventType::Reclaim`: the dose.
    pub reclaim: Option<ReclaimInfo>,
}

impl Event {
    /// An event of this kind with nothing else set (for a caller's own
    /// tests of its closures).
    pub fn new(kind: EventType, cgroup: impl Into<String>) -> Event {
        Event {
            kind,
            cgroup: cgroup.into(),
            time_usec: 0,
            kill: None,
            lend: None,
            error: None,
            what: None,
            count: 0,
            throttle: None,
            report: None,
            unkillable: None,
            reclaim: None,
        }
    }

    /// Copies everything `ev` points to (valid only during the callback).
    pub(crate) unsafe fn from_c(ev: &ffi::mg_event) -> Event {
        Event {
            kind: EventType::from_c(ev.type_),
            cgroup: string(ev.cgroup),
            time_usec: ev.time_usec,
            kill: ev.kill.as_ref().map(|k| KillRecord::from_c(k)),
            lend: ev.lend.as_ref().copied(),
            error: if ev.error < 0 { Some(-ev.error) } else { None },
            what: if ev.what.is_null() { None } else { Some(string(ev.what)) },
            count: ev.count,
            throttle: ev.throttle.as_ref().copied(),
            report: ev.report.as_ref().map(Report::from_c),
            unkillable: ev.unkillable.as_ref().map(|u| {
                let n = (u.n_pids as usize).min(ffi::MG_UNKILLABLE_MAX);
                UnkillableInfo {
                    kill_usec: u.kill_usec,
                    wait: usec_to_duration(u.wait_usec),
                    n_members: u.n_members,
                    more_members: u.more_members,
                    pids: u.pids[..n].to_vec(),
                    states: u.states[..n].iter().map(|&c| c as u8).collect(),
                }
            }),
            reclaim: ev.reclaim.as_ref().map(|r| ReclaimInfo::from_c(r)),
        }
    }
}
