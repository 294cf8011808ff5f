// SPDX-License-Identifier: Apache-2.0
//! Rust binding of memguard, the cgroup v2 memory guard for sandbox and
//! microVM workers (libmemguard, found with pkg-config).
//!
//! A [`Set`] runs many guards, one per actor cgroup, behind one fd: poll
//! [`Set::as_raw_fd`] for reading (mio, tokio's `AsyncFd`, or `poll(2)`), or
//! sleep until [`Set::next_tick_usec`], then call [`Set::process`].  Events
//! reach a boxed closure per guard, as owned values copied out of the
//! library's callback.
//!
//! ```no_run
//! use cgroupguard::{Options, Set, EventType};
//! use std::os::fd::AsRawFd;
//! let set = Set::new()?;
//! let opt = Options::new(256 << 20)?; // the actor paid for 256 MiB
//! set.add("/sys/fs/cgroup/workers/vm-17", &opt, |set, guard, ev| {
//!     if let Some(k) = &ev.kill {
//!         eprintln!("{k}"); // an OOM-style report
//!     }
//!     if ev.kind == EventType::Gone {
//!         set.remove(guard).ok(); // allowed inside its own callback
//!     }
//! })?;
//! loop {
//!     // poll(2) set.as_raw_fd() for reading, or register it with mio or
//!     // tokio's AsyncFd; then:
//!     set.process()?;
//! }
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! # Threads
//!
//! A set, its guards and their callbacks belong to one thread, the one that
//! calls `mg_set_process()`.  [`Set`] is neither `Send` nor `Sync`, so the
//! compiler keeps it on the thread that made it, and callbacks run on that
//! thread, inside [`Set::process`] (or inside the call that caused them,
//! such as [`Set::lend_begin`]'s `LendBegin`).  A callback gets `&Set` and may
//! call anything on it but `process`, including [`Set::remove`] of its own
//! guard.  An event that comes while its guard's closure is already running
//! (a lend begun from inside it) is delivered right after that closure
//! returns.
//!
//! The one cross-thread call is a snapshot write in a lend of a guard of the
//! set, for as long as the write takes: [`Set::snapshot_guard`] gives a
//! `Send` [`SnapshotGuard`] to pass to [`snapshot_write`] on another thread.
//! The write takes the set's lock around each of its calls on the guard
//! (the `.lock` of memguard/snapshot.h), which `process` holds around
//! `mg_set_process()`, so the set's thread goes on ticking meanwhile.  The
//! guard's events and log lines of the write's lend, which the library makes
//! on the writing thread, are queued and delivered on the set's thread by
//! the next `process` (the set's next tick at the latest).
//!
//! A closure must return quickly (every guard of the set waits for it) and
//! must not panic: a panic cannot unwind through the library's C frames, and
//! aborts the process.
//!
//! # Errors
//!
//! Every fallible call returns `std::io::Error` made from the library's
//! negative errno (`raw_os_error()` gives it back), as listed in
//! `<memguard/memguard.h>`.
//!
//! # Confinement
//!
//! `mg_confine_thread()` is declared in [`ffi`] (the memguard-sys crate)
//! but has no safe wrapper: it
//! confines the calling thread to the C library's own system calls, which
//! the Rust standard library and allocator on that thread may exceed (a
//! denied call fails with EPERM, and an allocator or `std::thread` that
//! gets EPERM aborts).  A worker that confines its set's thread calls it
//! itself, after making its sets, knowing what else that thread runs.
//!
//! # Deferring a kill
//!
//! With [`Options::pre_kill_max_defer`] set, a kill the guard has decided
//! is told first as [`EventType::PreKill`]; its closure may put the kill off
//! with [`Set::defer_kill`] (to save the actor's state elsewhere), and the
//! guard kills when the deferral ends unless the actor has left its limit
//! ([`EventType::KillAverted`]).
//!
//! ```no_run
//! use cgroupguard::{EventType, Options, Set};
//! use std::time::Duration;
//! let set = Set::new()?;
//! let opt = Options::new(256 << 20)?.with_pre_kill_max_defer(Duration::from_secs(5));
//! set.add("/sys/fs/cgroup/workers/vm-17", &opt, |set, guard, ev| {
//!     if ev.kind == EventType::PreKill {
//!         // EPERM: past the hard bound, the kill is made when this returns.
//!         let _ = set.defer_kill(guard, Duration::from_secs(2));
//!         // ... start a checkpoint on another thread
//!     }
//! })?;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! # Parking instead of killing
//!
//! With [`Options::park_deadline`] set, a kill the guard has decided
//! (after `PreKill` and its deferral, if asked for) freezes the actor
//! instead (cgroup.freeze): [`EventType::Park`] tells it once the actor is
//! frozen, with the record the kill would carry and the park's id in
//! `kill.report.park_id`.  The worker saves the actor meanwhile and ends the
//! park with [`Set::park_end`]: [`ParkAction::Kill`], or
//! [`ParkAction::Thaw`] with a new limit ([`EventType::Thaw`]; killed
//! instead if used is above that limit).  The guard kills by itself past
//! the deadline, if the actor is not frozen within `kill_wait`, or if used
//! grows past the hard bound while frozen; the record's `report.park_end`
//! ([`ParkEnd`]) says which.
//!
//! ```no_run
//! use cgroupguard::{EventType, Options, ParkAction, Set};
//! use std::time::Duration;
//! let set = Set::new()?;
//! let opt = Options::new(256 << 20)?.with_park_deadline(Duration::from_secs(30));
//! set.add("/sys/fs/cgroup/workers/vm-17", &opt, |set, guard, ev| {
//!     if ev.kind == EventType::Park {
//!         let id = ev.kill.as_ref().map_or(0, |k| k.report.park_id);
//!         // ... save the actor (or start it and end the park later), then:
//!         let _ = set.park_end(guard, id, ParkAction::Kill, 0);
//!     }
//! })?;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! # Linking
//!
//! The raw declarations and the linking are the memguard-sys crate's,
//! re-exported as [`ffi`]: libmemguard found with pkg-config (or
//! `MEMGUARD_LIB_DIR`), shared by default, static with this crate's
//! `static` feature or `MEMGUARD_STATIC=1` (bindings/README.md).

/// `with_*` setters for a `#[non_exhaustive]` struct: one `fn name(self, v) -> Self` per
/// field, for `Options` here and `SnapshotOptions` in snapshot.rs (defined before the
/// modules, so they see it).
macro_rules! with {
    ($($(#[$m:meta])* $f:ident: $t:ty => $name:ident;)*) => {
        $(
            $(#[$m])*
            #[must_use]
            pub fn $name(mut self, v: $t) -> Self {
                self.$f = v;
                self
            }
        )*
    };
}

mod event;
mod lock;
mod snapshot;

pub use event::*;
pub use snapshot::*;

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::ffi::{c_char, c_int, c_void, CStr, CString, OsStr};
use std::io;
use std::marker::{PhantomData, PhantomPinned};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};
use std::time::Duration;

use lock::ReLock;

/// The raw declarations of `<memguard/memguard.h>` and
/// `<memguard/snapshot.h>`: the memguard-sys crate.
pub use memguard_sys as ffi;

const ENOENT: i32 = 2;
const EINVAL: i32 = 22;
const EDEADLK: i32 = 35;

/// "max" in a cgroup limit file: a lend of `UNLIMITED` removes memory.high.
pub const UNLIMITED: u64 = u64::MAX;

pub(crate) fn check(r: c_int) -> io::Result<c_int> {
    if r < 0 {
        Err(io::Error::from_raw_os_error(-r))
    } else {
        Ok(r)
    }
}

pub(crate) fn cpath(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::from_raw_os_error(EINVAL))
}

fn usec(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// A log line's level, as syslog's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogLevel {
    /// LOG_ERR.
    Err,
    /// LOG_WARNING.
    Warning,
    /// LOG_INFO.
    Info,
    /// LOG_DEBUG.
    Debug,
}

impl LogLevel {
    fn from_c(l: c_int) -> LogLevel {
        match l {
            ffi::MG_LOG_ERR => LogLevel::Err,
            ffi::MG_LOG_WARNING => LogLevel::Warning,
            ffi::MG_LOG_INFO => LogLevel::Info,
            _ => LogLevel::Debug,
        }
    }
}

/// Options of one guard: [`Options::new`] tunes every threshold to the
/// limit (`mg_guard_options_init()`, docs/tuning.md); change what you need,
/// through the fields or the `with_*` methods.  A zero field means the tuned
/// default.
///
/// Non-exhaustive: a later version adds fields as the C struct grows, so it
/// is made with [`Options::new`], not a struct expression:
/// ```
/// # use cgroupguard::Options;
/// # use std::time::Duration;
/// let mut opt = Options::new(64 << 20)?.with_tick(Duration::from_millis(100)).with_dry_run(true);
/// opt.margin_bytes = 8 << 20;
/// # Ok::<(), std::io::Error>(())
/// ```
/// and not with a struct expression:
/// ```compile_fail,E0639
/// let opt = cgroupguard::Options { dry_run: true, ..cgroupguard::Options::new(64 << 20).unwrap() };
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// Required: what the actor paid for.
    pub limit_bytes: u64,
    /// Default 250 ms; 10 ms to 1 h.
    pub tick: Duration,
    /// Fast path below limit - margin; default limit/16.
    pub margin_bytes: u64,
    /// How long the stall criteria must hold.
    pub stall_window: Duration,
    /// The memory `some` stall share over the window (hundredths of a
    /// percent) that is a stall.
    pub stall_pressure_permyriad: u32,
    /// The deadline of a lend begun with `Deadline::Default`.
    pub lend_deadline: Duration,
    /// How long a kill waits for the cgroup to empty; then the record
    /// (timed out), and `EventType::Unkillable`.
    pub kill_wait: Duration,
    /// How long lagging counters are ignored after a kill.
    pub post_kill_holdoff: Duration,
    /// The refault stall rule (docs/design.md): how long an actor at its
    /// limit must keep losing time while it re-reads what it had.
    pub refault_window: Duration,
    /// The same while it faults its pages in (half its cache mapped, or a
    /// major fault every 2 s).
    pub refault_mapped_window: Duration,
    /// Decide as usual, kill nothing: each kill is an `EventType::KillDryRun`.
    pub dry_run: bool,
    /// The longest deferral [`Set::defer_kill`] may ask for, at most 60 s
    /// (`ffi::MG_PRE_KILL_MAX_DEFER_USEC`); zero (the default): no
    /// `EventType::PreKill`, kills are made at once.
    pub pre_kill_max_defer: Duration,
    /// The reclaim actuator's dose, written to memory.reclaim (5.19+; the
    /// add is EOPNOTSUPP without it) and told as `EventType::Reclaim`; zero
    /// (the default) is off, and then every other `reclaim_*` field must be
    /// unset (EINVAL).  Never while a lend is open.
    pub reclaim_dose_bytes: u64,
    /// The cgroup dosed and watched: `None`, the actor's own; else a path
    /// (a background sibling), opened when the guard is added.  Not with
    /// `reclaim_headroom_bytes`.
    pub reclaim_cgroup: Option<PathBuf>,
    /// The pressure trigger: the target's memory `some` stall must rise by
    /// at least this in each of `reclaim_windows` one-second windows.  With
    /// neither this, `reclaim_full` nor `reclaim_headroom_bytes` set, 1 ms
    /// over 3 windows.  Past `u32` microseconds it can never fire, and is
    /// saturated.
    pub reclaim_some: Duration,
    /// The same for the `full` stall (zero: not looked at).
    pub reclaim_full: Duration,
    /// How many consecutive windows the pressure trigger spans, 1 to
    /// `ffi::MG_RECLAIM_WINDOWS_MAX`; default 3.
    pub reclaim_windows: u32,
    /// The least time between two pressure doses; default 10 s.
    pub reclaim_cooldown: Duration,
    /// The headroom trigger (the actor's own cgroup only), less than the
    /// limit: memory.current within this of the limit while the actor holds
    /// file cache gets a dose of what brings it back (at most
    /// `reclaim_dose_bytes` and its cache), at most once a second.
    pub reclaim_headroom_bytes: u64,
    /// Park instead of kill: every kill the guard decides and confirms
    /// freezes the actor (cgroup.freeze, 5.2+), told as `EventType::Park`
    /// once it is frozen, for the worker to save it and end the park with
    /// [`Set::park_end`].  The longest a park may last before the guard
    /// kills, at most 1 h (`ffi::MG_PARK_MAX_USEC`; the add is EINVAL
    /// above); zero (the default) is off.
    pub park_deadline: Duration,
}

/// What a guard, or a set, has counted (`mg_guard_get_stats()`,
/// `mg_set_get_stats()`).  Non-exhaustive (the C struct grows): made with
/// `Stats::default()`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Ticks that read memory.current alone.
    pub fast_ticks: u64,
    /// Ticks that read everything (near the limit).
    pub slow_ticks: u64,
    /// Kills of an overshoot.
    pub kills_overshoot: u64,
    /// Kills of a stall.
    pub kills_stall: u64,
    /// Kills a dry run did not make.
    pub dry_run_kills: u64,
    /// Kills by the kernel's OOM killer seen (memory.events.local).
    pub kernel_oom_kills: u64,
    /// `EventType::Error`s.
    pub errors: u64,
    /// Lends begun.
    pub lends: u64,
    /// Lends their deadline ended.
    pub lend_expiries: u64,
    /// `EventType::Throttled` episodes.
    pub throttles: u64,
    /// `EventType::PreKill`s deferred by [`Set::defer_kill`].
    pub kills_deferred: u64,
    /// Deferred kills not made (`EventType::KillAverted`).
    pub kills_averted: u64,
    /// Doses of the reclaim actuator (`EventType::Reclaim`).
    pub reclaims: u64,
    /// What they achieved (`ReclaimInfo::achieved_bytes`, summed).
    pub reclaimed_bytes: u64,
    /// Parks told (`EventType::Park`).
    pub parks: u64,
    /// Parks the worker thawed (`EventType::Thaw`).
    pub parks_thawed: u64,
    /// Parks the worker ended with `ParkAction::Kill`.
    pub parks_killed: u64,
    /// Parks the guard ended with a kill: the deadline, the bound, not
    /// frozen in time, over the limit at a thaw.
    pub parks_expired: u64,
}

impl Stats {
    fn from_c(c: &ffi::mg_stats) -> Stats {
        Stats {
            fast_ticks: c.fast_ticks,
            slow_ticks: c.slow_ticks,
            kills_overshoot: c.kills_overshoot,
            kills_stall: c.kills_stall,
            dry_run_kills: c.dry_run_kills,
            kernel_oom_kills: c.kernel_oom_kills,
            errors: c.errors,
            lends: c.lends,
            lend_expiries: c.lend_expiries,
            throttles: c.throttles,
            kills_deferred: c.kills_deferred,
            kills_averted: c.kills_averted,
            reclaims: c.reclaims,
            reclaimed_bytes: c.reclaimed_bytes,
            parks: c.parks,
            parks_thawed: c.parks_thawed,
            parks_killed: c.parks_killed,
            parks_expired: c.parks_expired,
        }
    }
}

impl Options {
    with! {
        /// Sets `limit_bytes` (the other fields keep their values).
        limit_bytes: u64 => with_limit_bytes;
        /// Sets `tick`.
        tick: Duration => with_tick;
        /// Sets `margin_bytes`.
        margin_bytes: u64 => with_margin_bytes;
        /// Sets `stall_window`.
        stall_window: Duration => with_stall_window;
        /// Sets `stall_pressure_permyriad`.
        stall_pressure_permyriad: u32 => with_stall_pressure_permyriad;
        /// Sets `lend_deadline`.
        lend_deadline: Duration => with_lend_deadline;
        /// Sets `kill_wait`.
        kill_wait: Duration => with_kill_wait;
        /// Sets `post_kill_holdoff`.
        post_kill_holdoff: Duration => with_post_kill_holdoff;
        /// Sets `refault_window`.
        refault_window: Duration => with_refault_window;
        /// Sets `refault_mapped_window`.
        refault_mapped_window: Duration => with_refault_mapped_window;
        /// Sets `dry_run`.
        dry_run: bool => with_dry_run;
        /// Sets `pre_kill_max_defer`.
        pre_kill_max_defer: Duration => with_pre_kill_max_defer;
        /// Sets `reclaim_dose_bytes`.
        reclaim_dose_bytes: u64 => with_reclaim_dose_bytes;
        /// Sets `reclaim_cgroup`.
        reclaim_cgroup: Option<PathBuf> => with_reclaim_cgroup;
        /// Sets `reclaim_some`.
        reclaim_some: Duration => with_reclaim_some;
        /// Sets `reclaim_full`.
        reclaim_full: Duration => with_reclaim_full;
        /// Sets `reclaim_windows`.
        reclaim_windows: u32 => with_reclaim_windows;
        /// Sets `reclaim_cooldown`.
        reclaim_cooldown: Duration => with_reclaim_cooldown;
        /// Sets `reclaim_headroom_bytes`.
        reclaim_headroom_bytes: u64 => with_reclaim_headroom_bytes;
        /// Sets `park_deadline`.
        park_deadline: Duration => with_park_deadline;
    }

    /// The defaults tuned to `limit_bytes`; EINVAL for 0 or `UNLIMITED`.
    pub fn new(limit_bytes: u64) -> io::Result<Options> {
        let mut c = std::mem::MaybeUninit::<ffi::mg_guard_options>::zeroed();
        // SAFETY: c is a writable struct of the library's layout.
        check(unsafe { ffi::mg_guard_options_init(c.as_mut_ptr(), limit_bytes) })?;
        // SAFETY: initialised by the call (and zeroed before it), which
        // leaves reclaim_cgroup null.
        Ok(unsafe { Options::from_c(&c.assume_init()) })
    }

    /// Copies `c`, its reclaim cgroup included.
    ///
    /// # Safety
    /// `c.reclaim_cgroup` is null or a C string, valid for the call.
    pub(crate) unsafe fn from_c(c: &ffi::mg_guard_options) -> Options {
        Options {
            limit_bytes: c.limit_bytes,
            tick: usec_to_duration(c.tick_usec),
            margin_bytes: c.margin_bytes,
            stall_window: usec_to_duration(c.stall_window_usec),
            stall_pressure_permyriad: c.stall_pressure_permyriad,
            lend_deadline: usec_to_duration(c.lend_deadline_usec),
            kill_wait: usec_to_duration(c.kill_wait_usec),
            post_kill_holdoff: usec_to_duration(c.post_kill_holdoff_usec),
            refault_window: usec_to_duration(c.refault_window_usec),
            refault_mapped_window: usec_to_duration(c.refault_mapped_window_usec),
            dry_run: c.flags & ffi::MG_GUARD_DRY_RUN != 0,
            pre_kill_max_defer: usec_to_duration(c.pre_kill_max_defer_usec.into()),
            reclaim_dose_bytes: c.reclaim_dose_bytes,
            reclaim_cgroup: if c.reclaim_cgroup.is_null() {
                None
            } else {
                Some(PathBuf::from(OsStr::from_bytes(
                    CStr::from_ptr(c.reclaim_cgroup).to_bytes(),
                )))
            },
            reclaim_some: usec_to_duration(c.reclaim_some_usec.into()),
            reclaim_full: usec_to_duration(c.reclaim_full_usec.into()),
            reclaim_windows: c.reclaim_windows,
            reclaim_cooldown: usec_to_duration(c.reclaim_cooldown_usec),
            reclaim_headroom_bytes: c.reclaim_headroom_bytes,
            park_deadline: usec_to_duration(c.park_deadline_usec),
        }
    }

    /// The C options; EINVAL for a reclaim cgroup with a NUL byte.
    pub(crate) fn to_c(&self) -> io::Result<COptions> {
        let reclaim_cgroup = self.reclaim_cgroup.as_deref().map(cpath).transpose()?;
        let c = ffi::mg_guard_options {
            size: std::mem::size_of::<ffi::mg_guard_options>() as u64,
            limit_bytes: self.limit_bytes,
            tick_usec: usec(self.tick),
            margin_bytes: self.margin_bytes,
            stall_window_usec: usec(self.stall_window),
            stall_pressure_permyriad: self.stall_pressure_permyriad,
            lend_deadline_usec: usec(self.lend_deadline),
            kill_wait_usec: usec(self.kill_wait),
            post_kill_holdoff_usec: usec(self.post_kill_holdoff),
            on_event: None,
            userdata: std::ptr::null_mut(),
            log: None,
            log_userdata: std::ptr::null_mut(),
            refault_window_usec: usec(self.refault_window),
            refault_mapped_window_usec: usec(self.refault_mapped_window),
            flags: if self.dry_run { ffi::MG_GUARD_DRY_RUN } else { 0 },
            // Above the bound: EINVAL from mg_set_add().
            pre_kill_max_defer_usec: u32::try_from(usec(self.pre_kill_max_defer)).unwrap_or(u32::MAX),
            reclaim_dose_bytes: self.reclaim_dose_bytes,
            reclaim_cgroup: reclaim_cgroup.as_ref().map_or(std::ptr::null(), |p| p.as_ptr()),
            // A stall of u32::MAX microseconds in a one-second window never
            // comes: saturating keeps what a longer one means.
            reclaim_some_usec: u32::try_from(usec(self.reclaim_some)).unwrap_or(u32::MAX),
            reclaim_full_usec: u32::try_from(usec(self.reclaim_full)).unwrap_or(u32::MAX),
            reclaim_windows: self.reclaim_windows,
            reclaim_cooldown_usec: usec(self.reclaim_cooldown),
            reclaim_headroom_bytes: self.reclaim_headroom_bytes,
            // Above MG_PARK_MAX_USEC (saturated too): EINVAL from mg_set_add().
            park_deadline_usec: usec(self.park_deadline),
        };
        Ok(COptions {
            c,
            _reclaim_cgroup: reclaim_cgroup,
        })
    }
}

/// Options for the library, and the string their `reclaim_cgroup` points
/// to: `c` is valid as long as this lives (a move keeps the string where it
/// is).  The library copies the string when it makes the guard.
pub(crate) struct COptions {
    pub(crate) c: ffi::mg_guard_options,
    _reclaim_cgroup: Option<CString>,
}

/// A guard of a [`Set`]: a handle, valid until the guard is removed (then
/// calls with it are EINVAL).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Guard(u64);

/// One lend, from [`Set::lend_begin`]; [`Set::lend_end`] ends that lend and
/// no other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lend {
    /// The guard lent.
    pub guard: Guard,
    /// Never 0; told in the lend's events (`LendInfo::id`).
    pub id: u64,
}

/// How [`Set::park_end`] ends a park.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParkAction {
    /// Kill the actor, still frozen: `EventType::Kill` follows once the
    /// cgroup is empty, its `report.park_end` `ParkEnd::Kill`.
    Kill,
    /// Judge the actor at once against a new limit, and thaw it
    /// (`EventType::Thaw`) or, above that limit, kill it
    /// (`ParkEnd::OverLimit`).
    Thaw,
}

/// A lend's deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deadline {
    /// The guard's `lend_deadline`.
    Default,
    /// Until ended.
    None,
    /// This long from now.
    After(Duration),
}

type EventFn = Box<dyn FnMut(&Set, Guard, &Event)>;
type LogFn = Box<dyn FnMut(LogLevel, &str)>;

struct GuardState {
    id: u64,
    ptr: *mut ffi::mg_guard,
    set: *const Set,
    path: String,
    /// None while it runs (taken out of the state for the call).
    on_event: Option<EventFn>,
    log: Option<LogFn>,
    running: bool,
    /// Its closure runs for an `EventType::PreKill` inside the library's
    /// callback: [`Set::defer_kill`] may be called.
    pre_kill: bool,
    removed: bool,
}

enum Pending {
    Event(u64, Box<Event>),
    Log(u64, LogLevel, String),
}

/// What a snapshot write on another thread shares with the set.
pub(crate) struct Shared {
    pub(crate) lock: ReLock,
    /// Guards in the set, by id (pointers as numbers), changed under `lock`.
    pub(crate) live: Mutex<HashMap<u64, usize>>,
    pending: Mutex<VecDeque<Pending>>,
    /// Something in `pending`: checked before taking its lock.
    has_pending: AtomicBool,
    thread: ThreadId,
}

/// A guard set: many guards, one thread, one fd.  See the crate
/// documentation for threads.  Dropping it removes every guard and frees the
/// set, waiting for the restores of lends still open.
///
/// It stays on its thread:
/// ```compile_fail,E0277
/// let set = cgroupguard::Set::new().unwrap();
/// std::thread::spawn(move || set.process());
/// ```
pub struct Set {
    ptr: Cell<*mut ffi::mg_set>,
    shared: Arc<Shared>,
    guards: RefCell<HashMap<u64, *mut GuardState>>,
    next_id: Cell<u64>,
    processing: Cell<bool>,
    log: RefCell<Option<LogFn>>,
    _pin: PhantomPinned,
    _not_send: PhantomData<*mut ()>,
}

impl Shared {
    fn push(&self, p: Pending) {
        let mut q = self.pending.lock().unwrap();
        q.push_back(p);
        self.has_pending.store(true, Ordering::Release);
    }
}

unsafe extern "C" fn on_event(_g: *mut ffi::mg_guard, ev: *const ffi::mg_event, ud: *mut c_void) {
    let st = ud as *mut GuardState;
    let set = &*(*st).set;
    let e = Event::from_c(&*ev);
    if thread::current().id() != set.shared.thread || (*st).running {
        // A snapshot write's thread, or an event of a guard whose closure
        // runs: after it, on the set's thread.
        set.shared.push(Pending::Event((*st).id, Box::new(e)));
        return;
    }
    // Told inside the library's callback, so the closure may defer it
    // (deliver() clears it when the closure returns).
    (*st).pre_kill = e.kind == EventType::PreKill;
    set.deliver(st, &e);
}

unsafe extern "C" fn on_guard_log(level: c_int, msg: *const c_char, ud: *mut c_void) {
    let st = ud as *mut GuardState;
    let set = &*(*st).set;
    let m = CStr::from_ptr(msg).to_string_lossy().into_owned();
    if thread::current().id() != set.shared.thread {
        set.shared.push(Pending::Log((*st).id, LogLevel::from_c(level), m));
        return;
    }
    if let Some(f) = (*st).log.as_mut() {
        f(LogLevel::from_c(level), &m);
    }
}

unsafe extern "C" fn on_set_log(level: c_int, msg: *const c_char, ud: *mut c_void) {
    let set = &*(ud as *const Set);
    let m = CStr::from_ptr(msg).to_string_lossy();
    if let Ok(mut l) = set.log.try_borrow_mut() {
        if let Some(f) = l.as_mut() {
            f(LogLevel::from_c(level), &m);
        }
    }
}

impl Set {
    /// A set for this thread.  Starts the set's restore worker (a thread
    /// that runs none of this program's code).
    pub fn new() -> io::Result<Pin<Box<Set>>> {
        Set::make(None)
    }

    /// The same, with a log for the set's own lines.
    pub fn with_log(log: impl FnMut(LogLevel, &str) + 'static) -> io::Result<Pin<Box<Set>>> {
        Set::make(Some(Box::new(log)))
    }

    fn make(log: Option<LogFn>) -> io::Result<Pin<Box<Set>>> {
        let has_log = log.is_some();
        let set = Box::pin(Set {
            ptr: Cell::new(std::ptr::null_mut()),
            shared: Arc::new(Shared {
                lock: ReLock::new(),
                live: Mutex::new(HashMap::new()),
                pending: Mutex::new(VecDeque::new()),
                has_pending: AtomicBool::new(false),
                thread: thread::current().id(),
            }),
            guards: RefCell::new(HashMap::new()),
            next_id: Cell::new(1),
            processing: Cell::new(false),
            log: RefCell::new(log),
            _pin: PhantomPinned,
            _not_send: PhantomData,
        });
        let o = ffi::mg_set_options {
            size: std::mem::size_of::<ffi::mg_set_options>() as u64,
            log: if has_log { Some(on_set_log) } else { None },
            log_userdata: &*set as *const Set as *mut c_void,
        };
        let mut p = std::ptr::null_mut();
        // SAFETY: o is valid; the userdata is the pinned set, which outlives
        // the C set (freed in Drop).
        check(unsafe { ffi::mg_set_new(&o, &mut p) })?;
        set.ptr.set(p);
        Ok(set)
    }

    fn lock(&self) -> lock::Held<'_> {
        self.shared.lock.hold()
    }

    fn state(&self, g: Guard) -> io::Result<*mut GuardState> {
        self.guards
            .borrow()
            .get(&g.0)
            .copied()
            .ok_or_else(|| io::Error::from_raw_os_error(EINVAL))
    }

    /// Calls the guard's closure; frees its state if it removed itself.
    unsafe fn deliver(&self, st: *mut GuardState, e: &Event) {
        let Some(mut f) = (*st).on_event.take() else {
            (*st).pre_kill = false;
            return;
        };
        (*st).running = true;
        f(self, Guard((*st).id), e);
        (*st).running = false;
        (*st).pre_kill = false;
        if (*st).removed {
            drop(Box::from_raw(st));
        } else {
            (*st).on_event = Some(f);
        }
    }

    fn deliver_pending(&self) {
        while self.shared.has_pending.load(Ordering::Acquire) {
            let p = {
                let mut q = self.shared.pending.lock().unwrap();
                let p = q.pop_front();
                self.shared.has_pending.store(!q.is_empty(), Ordering::Release);
                p
            };
            let Some(p) = p else { break };
            let (id, st) = match &p {
                Pending::Event(id, _) | Pending::Log(id, _, _) => (*id, self.guards.borrow().get(id).copied()),
            };
            let Some(st) = st else { continue }; // removed since
                                                 // SAFETY: a state in the map is alive; the set's thread.
            unsafe {
                match p {
                    Pending::Event(_, e) if !(*st).running => self.deliver(st, &e),
                    Pending::Event(_, e) => {
                        // Still running (a nested call delivered pending
                        // events): keep it for after.
                        self.shared.push(Pending::Event(id, e));
                        break;
                    }
                    Pending::Log(_, level, m) => {
                        if let Some(f) = (*st).log.as_mut() {
                            f(level, &m);
                        }
                    }
                }
            }
        }
    }

    /// Adds a guard of the actor's cgroup v2 directory, with a closure for
    /// its events.  Errors of `mg_guard_new()`: ENOTSUP (not cgroup2),
    /// ENOENT, ELOOP (a symlink), EACCES, EINVAL, E2BIG, ENOMEM.
    pub fn add(
        &self,
        cgroup: impl AsRef<Path>,
        opt: &Options,
        on_event: impl FnMut(&Set, Guard, &Event) + 'static,
    ) -> io::Result<Guard> {
        self.add_inner(cgroup.as_ref(), opt, Box::new(on_event), None)
    }

    /// [`Set::add`] with a closure for the guard's log lines too.
    pub fn add_with_log(
        &self,
        cgroup: impl AsRef<Path>,
        opt: &Options,
        on_event: impl FnMut(&Set, Guard, &Event) + 'static,
        log: impl FnMut(LogLevel, &str) + 'static,
    ) -> io::Result<Guard> {
        self.add_inner(cgroup.as_ref(), opt, Box::new(on_event), Some(Box::new(log)))
    }

    fn add_inner(&self, cgroup: &Path, opt: &Options, f: EventFn, log: Option<LogFn>) -> io::Result<Guard> {
        let path = cpath(cgroup)?;
        let mut copt = opt.to_c()?;
        let id = self.next_id.get();
        let has_log = log.is_some();
        let st = Box::into_raw(Box::new(GuardState {
            id,
            ptr: std::ptr::null_mut(),
            set: self,
            path: cgroup.to_string_lossy().into_owned(),
            on_event: Some(f),
            log,
            running: false,
            pre_kill: false,
            removed: false,
        }));
        let c = &mut copt.c;
        c.on_event = Some(on_event);
        c.userdata = st as *mut c_void;
        if has_log {
            c.log = Some(on_guard_log);
            c.log_userdata = st as *mut c_void;
        }
        let _l = self.lock();
        let mut p = std::ptr::null_mut();
        // SAFETY: c (with what copt keeps) and path are valid for the call;
        // st lives until removed.
        let r = unsafe { ffi::mg_set_add(self.ptr.get(), path.as_ptr(), c, &mut p) };
        if let Err(e) = check(r) {
            // SAFETY: the library did not keep st.
            drop(unsafe { Box::from_raw(st) });
            return Err(e);
        }
        // SAFETY: st is ours.
        unsafe { (*st).ptr = p };
        self.next_id.set(id + 1);
        self.guards.borrow_mut().insert(id, st);
        self.shared.live.lock().unwrap().insert(id, p as usize);
        Ok(Guard(id))
    }

    /// Removes the guard at once (no more events or logs from it) and frees
    /// it; allowed inside its own callback, whose closure is dropped when it
    /// returns.  A lend it holds is ended through the set's restore worker,
    /// untold.
    pub fn remove(&self, g: Guard) -> io::Result<()> {
        let st = self.state(g)?;
        let _l = self.lock();
        // SAFETY: st is in the map, so alive; the set's thread.
        unsafe {
            check(ffi::mg_set_remove(self.ptr.get(), (*st).ptr))?;
            self.guards.borrow_mut().remove(&g.0);
            self.shared.live.lock().unwrap().remove(&g.0);
            (*st).ptr = std::ptr::null_mut();
            if (*st).running {
                (*st).removed = true; // freed by deliver() once it returns
            } else {
                drop(Box::from_raw(st));
            }
        }
        Ok(())
    }

    fn with_guard<T>(&self, g: Guard, f: impl FnOnce(*mut ffi::mg_guard) -> T) -> io::Result<T> {
        let st = self.state(g)?;
        let _l = self.lock();
        // SAFETY: st is alive while in the map.
        Ok(f(unsafe { (*st).ptr }))
    }

    /// Runs every due tick and pending notification; callbacks run in it.
    /// Returns how many guards acted.  EDEADLK from inside a callback.
    pub fn process(&self) -> io::Result<usize> {
        if self.processing.replace(true) {
            return Err(io::Error::from_raw_os_error(EDEADLK));
        }
        let r = {
            let _l = self.lock();
            // SAFETY: the set's own thread (Set is !Send).
            let r = unsafe { ffi::mg_set_process(self.ptr.get()) };
            self.deliver_pending();
            r
        };
        self.deliver_pending();
        self.processing.set(false);
        Ok(check(r)? as usize)
    }

    /// The CLOCK_MONOTONIC usec of the next due tick, None if none.
    pub fn next_tick_usec(&self) -> io::Result<Option<u64>> {
        let mut t = 0;
        let _l = self.lock();
        // SAFETY: t is writable.
        check(unsafe { ffi::mg_set_get_timeout(self.ptr.get(), &mut t) })?;
        Ok(if t == u64::MAX { None } else { Some(t) })
    }

    /// The number of guards.
    pub fn len(&self) -> usize {
        self.guards.borrow().len()
    }

    /// No guards.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The cgroup path the guard was made with.
    pub fn path(&self, g: Guard) -> io::Result<String> {
        // SAFETY: st is alive while in the map.
        Ok(unsafe { (*self.state(g)?).path.clone() })
    }

    /// Reads everything the slow path reads, and the verdict it would give
    /// now, without acting.
    pub fn report(&self, g: Guard) -> io::Result<Report> {
        let mut c = ffi::mg_report {
            size: std::mem::size_of::<ffi::mg_report>() as u64,
            ..Default::default()
        };
        // SAFETY: c is a report of our size.
        check(self.with_guard(g, |p| unsafe { ffi::mg_guard_report(p, &mut c) })?)?;
        Ok(Report::from_c(&c))
    }

    /// What the guard has counted since it was made.
    pub fn guard_stats(&self, g: Guard) -> io::Result<Stats> {
        let mut c = ffi::mg_stats {
            size: std::mem::size_of::<ffi::mg_stats>() as u64,
            ..Default::default()
        };
        // SAFETY: c is a stats struct of our size.
        check(self.with_guard(g, |p| unsafe { ffi::mg_guard_get_stats(p, &mut c) })?)?;
        Ok(Stats::from_c(&c))
    }

    /// What every guard of the set has counted, those removed since included.
    pub fn stats(&self) -> io::Result<Stats> {
        let mut c = ffi::mg_stats {
            size: std::mem::size_of::<ffi::mg_stats>() as u64,
            ..Default::default()
        };
        // SAFETY: a live set; c is a stats struct of our size.
        check(unsafe { ffi::mg_set_get_stats(self.ptr.get(), &mut c) })?;
        Ok(Stats::from_c(&c))
    }

    /// The options in force, every default filled in.
    pub fn options(&self, g: Guard) -> io::Result<Options> {
        // SAFETY: all zero is valid options (null pointers, no callbacks).
        let mut c: ffi::mg_guard_options = unsafe { std::mem::zeroed() };
        c.size = std::mem::size_of::<ffi::mg_guard_options>() as u64;
        // SAFETY: c is options of our size; the reclaim cgroup it gets is the
        // guard's copy, alive while the guard is, and copied here under the
        // set's lock.
        self.with_guard(g, |p| unsafe {
            check(ffi::mg_guard_get_options(p, &mut c))?;
            Ok(Options::from_c(&c))
        })?
    }

    /// Killed, and waiting for the cgroup to empty.
    pub fn is_killing(&self, g: Guard) -> io::Result<bool> {
        // SAFETY: a live guard.
        self.with_guard(g, |p| unsafe { ffi::mg_guard_is_killing(p) })
    }

    /// A lend is open (its restore under way included).
    pub fn is_lent(&self, g: Guard) -> io::Result<bool> {
        // SAFETY: a live guard.
        self.with_guard(g, |p| unsafe { ffi::mg_guard_is_lent(p) })
    }

    /// The id of the open lend, 0 if none: for one taken over from a record.
    pub fn open_lend_id(&self, g: Guard) -> io::Result<u64> {
        // SAFETY: a live guard.
        self.with_guard(g, |p| unsafe { ffi::mg_guard_get_lend_id(p) })
    }

    /// Raises memory.high by `extra_bytes` (`UNLIMITED`: "max") and pauses
    /// kills, around a snapshot write.  EBUSY if a lend is open, or the
    /// errno of the memory.high write.
    pub fn lend_begin(&self, g: Guard, extra_bytes: u64, deadline: Deadline) -> io::Result<Lend> {
        let d = match deadline {
            Deadline::Default => 0,
            Deadline::None => u64::MAX,
            Deadline::After(d) => usec(d).max(1),
        };
        let mut id = 0;
        // SAFETY: a live guard; id writable.
        check(self.with_guard(g, |p| unsafe { ffi::mg_guard_lend_begin(p, extra_bytes, d, &mut id) })?)?;
        self.deliver_pending_outside_process();
        Ok(Lend { guard: g, id })
    }

    /// Ends this lend: the set's restore worker writes the exact previous
    /// memory.high back (unless changed from outside meanwhile) and
    /// `LendEnd` tells when it is done, from a later `process`.  ENOENT if no
    /// lend is open, ESTALE if another one is (left alone).
    pub fn lend_end(&self, lend: &Lend) -> io::Result<()> {
        // SAFETY: a live guard.
        check(self.with_guard(lend.guard, |p| unsafe { ffi::mg_guard_lend_end(p, lend.id) })?)?;
        self.deliver_pending_outside_process();
        Ok(())
    }

    /// Puts off the kill an [`EventType::PreKill`] is telling, by `by`
    /// (`mg_guard_defer_kill()`); only from that event's closure, for its
    /// own guard.  The guard kills when the deferral ends unless a fresh
    /// read shows the actor has left its limit (`EventType::KillAverted`);
    /// called again in the same closure, the last call counts.
    ///
    /// Errors: EINVAL for a guard not in the set or a deferral under a
    /// microsecond; ENOENT outside a `PreKill` closure of `g`; ERANGE above
    /// the guard's [`Options::pre_kill_max_defer`]; EPERM if the actor is
    /// past the hard bound (anon + shmem above limit + limit/8, or within
    /// limit/32 of memory.max): the kill is made when the closure returns.
    pub fn defer_kill(&self, g: Guard, by: Duration) -> io::Result<()> {
        let st = self.state(g)?;
        let us = usec(by);
        if us == 0 {
            return Err(io::Error::from_raw_os_error(EINVAL));
        }
        // SAFETY: st is alive while in the map; the set's thread.
        if !unsafe { (*st).pre_kill } {
            return Err(io::Error::from_raw_os_error(ENOENT));
        }
        // SAFETY: a live guard, inside its PRE_KILL callback.
        check(self.with_guard(g, |p| unsafe { ffi::mg_guard_defer_kill(p, us) })?)?;
        Ok(())
    }

    /// Ends the park `park_id` (`report.park_id` of the `EventType::Park`
    /// record) of `g`, from that event's closure or later
    /// (`mg_guard_park_end()`).  `ParkAction::Kill` kills the actor
    /// (`new_limit_bytes` must be 0); `ParkAction::Thaw` judges it at once
    /// against `new_limit_bytes` (0: the limit it had; else the guard's
    /// limit from now on, its margin keeping its share: raise memory.max
    /// and memory.high first) and thaws it, or kills it if it is above.
    /// Returns whether a kill was made (`EventType::Kill` follows); false is
    /// a thaw (`EventType::Thaw` told).
    ///
    /// Errors: EINVAL for a guard not in the set, an id of 0, a new limit
    /// with `Kill` or of `UNLIMITED`; ENOENT if no park is open (it ended,
    /// by its deadline say); ESTALE if another park is open (left alone);
    /// or the errno of a read or write, and the park goes on (try again).
    pub fn park_end(&self, g: Guard, park_id: u64, action: ParkAction, new_limit_bytes: u64) -> io::Result<bool> {
        let a = match action {
            ParkAction::Kill => ffi::MG_PARK_KILL,
            ParkAction::Thaw => ffi::MG_PARK_THAW,
        };
        // SAFETY: a live guard.
        let r = check(self.with_guard(g, |p| unsafe { ffi::mg_guard_park_end(p, park_id, a, new_limit_bytes) })?)?;
        self.deliver_pending_outside_process();
        Ok(r == 1)
    }

    /// The id of the open park, 0 if none.
    pub fn open_park_id(&self, g: Guard) -> io::Result<u64> {
        // SAFETY: a live guard.
        self.with_guard(g, |p| unsafe { ffi::mg_guard_get_park_id(p) })
    }

    fn deliver_pending_outside_process(&self) {
        if !self.processing.get() {
            self.deliver_pending();
        }
    }

    /// A handle for a snapshot write in a lend of `g` on another thread
    /// ([`snapshot_write`]).
    pub fn snapshot_guard(&self, g: Guard) -> io::Result<SnapshotGuard> {
        self.state(g)?;
        Ok(SnapshotGuard {
            shared: self.shared.clone(),
            id: g.0,
        })
    }
}

impl AsRawFd for Set {
    /// The set's epoll fd, to poll for reading.
    fn as_raw_fd(&self) -> RawFd {
        // SAFETY: the set is alive.
        unsafe { ffi::mg_set_get_fd(self.ptr.get()) }
    }
}

impl Drop for Set {
    fn drop(&mut self) {
        let _l = self.shared.lock.hold();
        // SAFETY: the set's thread; nothing calls the closures after this.
        unsafe { ffi::mg_set_free(self.ptr.get()) };
        self.shared.live.lock().unwrap().clear();
        for (_, st) in self.guards.borrow_mut().drain() {
            // SAFETY: every state in the map is ours, and not running (a
            // callback cannot drop the set).
            drop(unsafe { Box::from_raw(st) });
        }
    }
}

/// Ends a lend a process that died left on the cgroup (its record), writing
/// the recorded memory.high back; run it on each cgroup at start-up, before
/// adding guards.  `expired_only` leaves a lend whose deadline has not
/// passed (EBUSY).  Says whether memory.high was written.  A park record (a
/// park whose process died, the actor still frozen) is left for the guard
/// added next, which takes the park over; a stale one is removed.
pub fn recover(cgroup: impl AsRef<Path>, expired_only: bool) -> io::Result<bool> {
    let p = cpath(cgroup.as_ref())?;
    let flags = if expired_only { ffi::MG_RECOVER_EXPIRED } else { 0 };
    // SAFETY: p is a C string.
    Ok(check(unsafe { ffi::mg_guard_recover(p.as_ptr(), flags) })? == 1)
}

#[cfg(test)]
mod tests;
