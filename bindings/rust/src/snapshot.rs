// SPDX-License-Identifier: Apache-2.0
//! Snapshot writes and restores (memguard/snapshot.h).

use std::ffi::{c_char, c_int, c_void, CStr};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::{check, cpath, ffi, LogLevel, Shared};

/// How a snapshot is written or read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SnapshotMethod {
    /// Direct, else dontcache, else windowed.
    #[default]
    Auto,
    /// O_DIRECT.
    Direct,
    /// RWF_DONTCACHE (6.14+).
    Dontcache,
    /// Buffered, dropped behind each window.
    Windowed,
    /// Plain write() + fsync.
    Buffered,
}

impl SnapshotMethod {
    fn to_c(self) -> u32 {
        match self {
            SnapshotMethod::Auto => ffi::MG_SNAPSHOT_AUTO,
            SnapshotMethod::Direct => ffi::MG_SNAPSHOT_DIRECT,
            SnapshotMethod::Dontcache => ffi::MG_SNAPSHOT_DONTCACHE,
            SnapshotMethod::Windowed => ffi::MG_SNAPSHOT_WINDOWED,
            SnapshotMethod::Buffered => ffi::MG_SNAPSHOT_BUFFERED,
        }
    }
    fn from_c(v: u32) -> Self {
        match v {
            ffi::MG_SNAPSHOT_DIRECT => SnapshotMethod::Direct,
            ffi::MG_SNAPSHOT_DONTCACHE => SnapshotMethod::Dontcache,
            ffi::MG_SNAPSHOT_WINDOWED => SnapshotMethod::Windowed,
            ffi::MG_SNAPSHOT_BUFFERED => SnapshotMethod::Buffered,
            _ => SnapshotMethod::Auto,
        }
    }
}

impl std::fmt::Display for SnapshotMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // SAFETY: a static string for any value.
        f.write_str(&unsafe { CStr::from_ptr(ffi::mg_snapshot_method_to_string(self.to_c())) }.to_string_lossy())
    }
}

/// A guard of a set, for a snapshot write on another thread: `Send`, from
/// [`crate::Set::snapshot_guard`].  A write with it after the guard was
/// removed (or its set dropped) is EINVAL; a removal during the write takes
/// the guard out of the set at once, and the write goes on in its lend.
#[derive(Clone)]
pub struct SnapshotGuard {
    pub(crate) shared: Arc<Shared>,
    pub(crate) id: u64,
}

/// Options of a write or restore; zero fields mean the defaults.
///
/// Non-exhaustive (the C struct grows): made with
/// `SnapshotOptions::default()` and the `with_*` methods (or its fields
/// set one by one).
#[derive(Default)]
#[non_exhaustive]
pub struct SnapshotOptions<'a> {
    /// `ffi::MG_SNAPSHOT_NO_SYNC`.
    pub flags: u32,
    /// How to write or read.
    pub method: SnapshotMethod,
    /// The write runs in a lend of this guard; restore ignores it.
    pub guard: Option<&'a SnapshotGuard>,
    /// `UNLIMITED` removes memory.high for the write.
    pub lend_bytes: u64,
    /// The lend's deadline, relative.
    pub lend_deadline: Duration,
    /// Bound on the dirty + writeback page cache the write makes.
    pub window_bytes: u64,
    /// Written to the guard's memory.reclaim once after the write and its
    /// sync, before memory.high comes back (5.19+).
    pub reclaim_bytes: u64,
    /// Checksum granularity, a power of two; default 1 MiB.
    pub chunk_bytes: u32,
    /// Of the published file; default 0600.
    pub mode: u32,
    /// Zero runs shorter than this are written rather than left as holes;
    /// default 64 KiB.
    pub min_hole_bytes: u64,
    /// The write's own log lines (on the calling thread).
    pub log: Option<LogRef<'a>>,
}

impl<'a> SnapshotOptions<'a> {
    with! {
        /// Sets `flags`.
        flags: u32 => with_flags;
        /// Sets `method`.
        method: SnapshotMethod => with_method;
        /// Sets `lend_bytes`.
        lend_bytes: u64 => with_lend_bytes;
        /// Sets `lend_deadline`.
        lend_deadline: Duration => with_lend_deadline;
        /// Sets `window_bytes`.
        window_bytes: u64 => with_window_bytes;
        /// Sets `reclaim_bytes`.
        reclaim_bytes: u64 => with_reclaim_bytes;
        /// Sets `chunk_bytes`.
        chunk_bytes: u32 => with_chunk_bytes;
        /// Sets `mode`.
        mode: u32 => with_mode;
        /// Sets `min_hole_bytes`.
        min_hole_bytes: u64 => with_min_hole_bytes;
    }

    /// Writes in a lend of this guard (a restore ignores it).
    #[must_use]
    pub fn with_guard(mut self, g: &'a SnapshotGuard) -> Self {
        self.guard = Some(g);
        self
    }

    /// The call's own log lines (on the calling thread).
    #[must_use]
    pub fn with_log(mut self, log: LogRef<'a>) -> Self {
        self.log = Some(log);
        self
    }
}

/// A log callback borrowed for one call.
pub type LogRef<'a> = &'a mut dyn FnMut(LogLevel, &str);

/// What a write or restore did; the `*_usec` fields are how long each phase
/// took (memguard/snapshot.h).
pub type SnapshotStats = ffi::mg_snapshot_stats;

/// [`SnapshotStats`]'s method as a [`SnapshotMethod`] (the struct is
/// memguard-sys's, so this is a trait: `use cgroupguard::SnapshotStatsExt`).
pub trait SnapshotStatsExt {
    /// The method actually used.
    fn method_used(&self) -> SnapshotMethod;
}

impl SnapshotStatsExt for SnapshotStats {
    fn method_used(&self) -> SnapshotMethod {
        SnapshotMethod::from_c(self.method)
    }
}

/// Guest memory to write, or to restore into.
pub enum Image<'a> {
    /// Mapped guest RAM; its length a multiple of the page size.
    Memory(&'a [u8]),
    /// `length` bytes of a file (memfd, shmem) from `offset`.
    Fd {
        /// The file.
        fd: RawFd,
        /// Where the image starts in it.
        offset: u64,
        /// Its length, a multiple of the page size.
        length: u64,
    },
}

/// Where to restore.
pub enum Target<'a> {
    /// Mapped guest RAM, as long as the image.
    Memory(&'a mut [u8]),
    /// `length` bytes of a file from `offset`, as for [`Image::Fd`].
    Fd {
        /// The file.
        fd: RawFd,
        /// Where the image goes in it.
        offset: u64,
        /// The image's length.
        length: u64,
    },
}

unsafe extern "C" fn on_log(level: c_int, msg: *const c_char, ud: *mut c_void) {
    let f = &mut *(ud as *mut LogRef<'_>);
    f(LogLevel::from_c(level), &CStr::from_ptr(msg).to_string_lossy());
}

unsafe extern "C" fn on_lock(ud: *mut c_void, lock: bool) {
    let s = &*(ud as *const Shared);
    if lock {
        s.lock.lock()
    } else {
        s.lock.unlock()
    }
}

fn options(o: &SnapshotOptions<'_>) -> ffi::mg_snapshot_options {
    // SAFETY: plain data (null pointers, None callbacks), then filled in.
    let mut c: ffi::mg_snapshot_options = unsafe { std::mem::zeroed() };
    // SAFETY: c is writable.
    unsafe { ffi::mg_snapshot_options_init(&mut c) };
    c.flags = o.flags;
    c.method = o.method.to_c();
    c.lend_bytes = o.lend_bytes;
    c.lend_deadline_usec = u64::try_from(o.lend_deadline.as_micros()).unwrap_or(u64::MAX);
    c.window_bytes = o.window_bytes;
    c.reclaim_bytes = o.reclaim_bytes;
    c.chunk_bytes = o.chunk_bytes;
    c.mode = o.mode;
    c.min_hole_bytes = o.min_hole_bytes;
    c
}

fn stats() -> ffi::mg_snapshot_stats {
    ffi::mg_snapshot_stats {
        size: std::mem::size_of::<ffi::mg_snapshot_stats>() as u64,
        ..Default::default()
    }
}

/// Writes `src` to `dir/name` atomically, inside a lend of `o.guard` if
/// set: memory.high is back to its exact previous value when it returns.
/// Errors are listed in memguard/snapshot.h.
pub fn snapshot_write(
    src: Image<'_>,
    dir: &impl AsRawFd,
    name: impl AsRef<Path>,
    mut o: SnapshotOptions<'_>,
) -> io::Result<SnapshotStats> {
    let cname = cpath(name.as_ref())?;
    let mut log = o.log.take();
    let mut c = options(&o);
    if let Some(l) = log.as_mut() {
        c.log = Some(on_log);
        c.log_userdata = l as *mut LogRef<'_> as *mut c_void;
    }
    let s = match src {
        Image::Memory(b) => ffi::mg_snapshot_source {
            kind: ffi::MG_SNAPSHOT_MEMORY,
            fd: -1,
            addr: b.as_ptr() as *const c_void,
            offset: 0,
            length: b.len() as u64,
        },
        Image::Fd { fd, offset, length } => ffi::mg_snapshot_source {
            kind: ffi::MG_SNAPSHOT_FD,
            fd,
            addr: std::ptr::null(),
            offset,
            length,
        },
    };
    let mut st = stats();
    let Some(g) = o.guard else {
        // SAFETY: everything c and s point to lives through the call.
        check(unsafe { ffi::mg_snapshot_write(&s, dir.as_raw_fd(), cname.as_ptr(), &c, &mut st) })?;
        return Ok(st);
    };
    // The write's first call on the guard holds it (under the set's lock).
    // Between the check that it is still in its set and that hold, the set's
    // thread must not free it: the lock is taken here and given up at the
    // end of that first nested hold, or after the write if it failed first.
    let shared = &*g.shared;
    shared.lock.lock();
    let ptr = shared.live.lock().unwrap().get(&g.id).copied();
    let Some(ptr) = ptr else {
        shared.lock.unlock();
        return Err(io::Error::from_raw_os_error(crate::EINVAL));
    };
    c.guard = ptr as *mut ffi::mg_guard;
    c.lock = Some(on_lock);
    c.lock_userdata = shared as *const Shared as *mut c_void;
    shared.lock.release_after_next();
    // SAFETY: as above; shared outlives the call (g borrows its Arc).
    let r = unsafe { ffi::mg_snapshot_write(&s, dir.as_raw_fd(), cname.as_ptr(), &c, &mut st) };
    shared.lock.release_if_still_held();
    check(r)?;
    Ok(st)
}

/// Reads `dir/name` into `dst`, verifying every checksum.  EBADMSG: not a
/// valid snapshot for this system; EMSGSIZE: `dst`'s length differs.
pub fn snapshot_restore(
    dir: &impl AsRawFd,
    name: impl AsRef<Path>,
    dst: Target<'_>,
    mut o: SnapshotOptions<'_>,
) -> io::Result<SnapshotStats> {
    let cname = cpath(name.as_ref())?;
    let mut log = o.log.take();
    let mut c = options(&o);
    if let Some(l) = log.as_mut() {
        c.log = Some(on_log);
        c.log_userdata = l as *mut LogRef<'_> as *mut c_void;
    }
    let t = match dst {
        Target::Memory(b) => ffi::mg_snapshot_target {
            kind: ffi::MG_SNAPSHOT_MEMORY,
            fd: -1,
            addr: b.as_mut_ptr() as *mut c_void,
            offset: 0,
            length: b.len() as u64,
        },
        Target::Fd { fd, offset, length } => ffi::mg_snapshot_target {
            kind: ffi::MG_SNAPSHOT_FD,
            fd,
            addr: std::ptr::null_mut(),
            offset,
            length,
        },
    };
    let mut st = stats();
    // SAFETY: everything c and t point to lives through the call.
    check(unsafe { ffi::mg_snapshot_restore(dir.as_raw_fd(), cname.as_ptr(), &t, &c, &mut st) })?;
    Ok(st)
}
