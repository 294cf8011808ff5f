// SPDX-License-Identifier: Apache-2.0
//! The Rust side of the bindings' benchmark (bindings/bench/run): the loop of
//! bindings/bench/bench-loop.c through the binding, same modes and output.
//!
//!     bench_loop calls N
//!     bench_loop guards DIR N SECONDS
use cgroupguard::{EventType, Options, Set};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

#[repr(C)]
struct PollFd {
    fd: i32,
    events: i16,
    revents: i16,
}
#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: i64,
}
extern "C" {
    fn poll(fds: *mut PollFd, n: u64, timeout: i32) -> i32;
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}

fn thread_cpu_ns() -> u64 {
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: ts is writable; 3 is CLOCK_THREAD_CPUTIME_ID.
    unsafe { clock_gettime(3, &mut ts) };
    ts.sec as u64 * 1_000_000_000 + ts.nsec as u64
}

fn main() -> std::io::Result<()> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    match a.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["calls", n] => {
            let n: u64 = n.parse().unwrap();
            let set = Set::new()?;
            let t0 = thread_cpu_ns();
            for _ in 0..n {
                set.process()?;
            }
            let d = thread_cpu_ns() - t0;
            println!("lang=rust mode=calls calls={n} ns_per_call={:.1}", d as f64 / n as f64);
        }
        ["guards", dir, n, secs] => {
            let n: usize = n.parse().unwrap();
            let secs: u64 = secs.parse().unwrap();
            let set = Set::new()?;
            let opt = Options::new(64 << 20)?.with_tick(Duration::from_millis(50));
            let mut dirs = Vec::new();
            for i in 0..n {
                let d = std::path::Path::new(dir).join(format!("rs-{i}"));
                if let Err(e) = std::fs::create_dir(&d) {
                    if e.kind() != std::io::ErrorKind::AlreadyExists {
                        return Err(e);
                    }
                }
                set.add(&d, &opt, |_, _, ev| {
                    if ev.kind == EventType::Error {
                        eprintln!("bench: {}: {:?}: errno {:?}", ev.cgroup, ev.what, ev.error);
                    }
                })?;
                dirs.push(d);
            }
            let end = Instant::now() + Duration::from_secs(secs);
            let (cpu0, t0) = (thread_cpu_ns(), Instant::now());
            let mut loops = 0u64;
            while Instant::now() < end {
                let mut p = PollFd {
                    fd: set.as_raw_fd(),
                    events: 1,
                    revents: 0,
                };
                // SAFETY: one valid pollfd.
                unsafe { poll(&mut p, 1, 100) };
                set.process()?;
                loops += 1;
            }
            let (cpu, wall) = (thread_cpu_ns() - cpu0, t0.elapsed());
            let ticks = n as f64 * wall.as_secs_f64() / 0.050;
            println!(
                "lang=rust mode=guards guards={n} seconds={secs} loops={loops} cpu_ms={:.1} ns_per_tick={:.0} ns_per_loop={:.0}",
                cpu as f64 / 1e6,
                cpu as f64 / ticks,
                cpu as f64 / loops as f64
            );
            drop(set);
            for d in dirs {
                let _ = std::fs::remove_dir(d);
            }
        }
        _ => {
            eprintln!("usage: bench_loop calls N | guards DIR N SECONDS");
            std::process::exit(2);
        }
    }
    Ok(())
}
