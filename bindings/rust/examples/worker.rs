// SPDX-License-Identifier: Apache-2.0
//! A worker that guards its actors' cgroups: one set, driven by poll(2) on
//! its fd (any loop works: mio, tokio's AsyncFd), kill records printed.
//!
//!     cargo run --example worker -- 268435456 /sys/fs/cgroup/workers/vm-1 ...
use cgroupguard::{recover, EventType, Options, Set};
use std::os::fd::AsRawFd;

#[repr(C)]
struct PollFd {
    fd: i32,
    events: i16,
    revents: i16,
}
extern "C" {
    fn poll(fds: *mut PollFd, n: u64, timeout: i32) -> i32;
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(limit), cgroups) = (
        args.next().and_then(|l| l.parse::<u64>().ok()),
        args.collect::<Vec<_>>(),
    ) else {
        eprintln!("usage: worker LIMIT-BYTES CGROUP-DIR...");
        std::process::exit(2);
    };
    let set = Set::with_log(|_, msg| eprintln!("{msg}"))?;
    let opt = Options::new(limit)?;
    for cg in &cgroups {
        // A lend left by a worker that crashed mid-snapshot is ended first.
        if let Err(e) = recover(cg, false) {
            eprintln!("{cg}: recover: {e}");
        }
        set.add(cg, &opt, |set, guard, ev| match ev.kind {
            EventType::Kill => println!("{}", ev.kill.as_ref().unwrap()), // tell the tenant why
            EventType::Gone => {
                set.remove(guard).ok(); // allowed inside its own callback
            }
            EventType::Error => eprintln!("{}: {:?}: errno {:?}", ev.cgroup, ev.what, ev.error),
            _ => {}
        })
        .map_err(|e| {
            eprintln!("{cg}: {e}"); // ENOTSUP, ENOENT ...: raw_os_error() has the errno
            e
        })?;
    }
    while !set.is_empty() {
        let mut p = PollFd {
            fd: set.as_raw_fd(),
            events: 1,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { poll(&mut p, 1, -1) };
        set.process()?;
    }
    Ok(())
}
