// SPDX-License-Identifier: Apache-2.0

// Package cgroupguard embeds memguard, the cgroup v2 memory guard for sandbox
// and microVM workers, in a Go program. It is a cgo binding of libmemguard
// (`#cgo pkg-config: memguard`); it is not awnumar/memguard, which guards
// secrets in process memory.
//
// A Set runs many guards, one per actor cgroup, from one OS thread. Start runs
// the set's loop on a goroutine of its own, locked to its OS thread; NewSet
// gives a set to a caller that runs its own loop (Fd, NextTick, Process, or
// Run) on a goroutine it has locked with runtime.LockOSThread.
//
// # Contexts
//
// StartContext(ctx, opts) is Start with the set closed when ctx is done (every
// guard removed, the loop, its thread and its fds released); Set.Done is
// closed then. Set.Run(ctx) runs a NewSet set's loop on its own thread until
// ctx is done, closes the set, and returns ctx.Err(). Start and Close work as
// before.
//
//	set, err := cgroupguard.Start(nil)
//	opt, err := cgroupguard.DefaultOptions(256 << 20) // the actor paid for 256 MiB
//	opt.OnEvent = func(g *cgroupguard.Guard, ev cgroupguard.Event) {
//		if ev.Type == cgroupguard.EventKill {
//			log.Print(ev.Kill) // an OOM-style report
//		}
//	}
//	g, err := set.Add("/sys/fs/cgroup/workers/vm-17", opt)
//
// # Threads
//
// libmemguard gives a set, its guards and their callbacks to one thread, the
// one that calls mg_set_process(). The binding keeps that rule for any
// goroutine: every method of Set, Guard and Lend may be called from any
// goroutine. With Start, a call from another goroutine is handed to the set's
// thread and waited for; a call from inside a callback runs at once. With
// NewSet, calls must come from the thread that made the set (a call from
// another panics), since the binding cannot run code on a thread it does not
// own. Go values reach C only as cgo.Handle numbers; C keeps no Go pointer.
//
// SnapshotWrite with a guard of a set is the one call that runs on the
// caller's goroutine, for as long as the write takes: it takes the set's lock
// around each of its calls on the guard (the write's .lock of
// memguard/snapshot.h), so the set's thread goes on ticking every guard
// meanwhile. The set's thread holds that lock around each mg_set_process().
//
// # Events: a callback, not a channel
//
// Options.OnEvent is called on the set's thread, from inside Process, with
// the event copied into Go values: nothing in an Event refers to memory of the
// library, so it may be kept, sent on a channel or logged later. A callback
// rather than a channel, because:
//
//   - the kill record and the lend's end are facts about the tick that made
//     them; a callback sees them in that tick, and may act in it: remove the
//     guard (allowed inside its own callback: no event comes from it after),
//     begin or end a lend, read a report;
//   - a channel needs a policy when it is full, and both choices are wrong for
//     a guard: blocking the set's thread stops the ticks, and so the kills, of
//     every guard of the set; dropping loses kill records;
//   - a program that wants a channel forwards to one from the callback, with
//     the buffer and the policy it chooses.
//
// # Before a kill
//
// With Options.PreKillMaxDefer set, a kill the guard has decided is told
// first as EventPreKill; Guard.DeferKill, called inside that callback, puts
// it off (at most PreKillMaxDefer, itself at most MaxPreKillDefer) for the
// actor to save its state. At the deferral's end the guard reads again: the
// kill is made, or, if the actor has left its limit, EventKillAverted. See
// mg_guard_defer_kill(3).
//
// # Parking instead of killing
//
// With Options.ParkDeadline set, a kill the guard has decided (after
// EventPreKill and its deferral, if asked for) freezes the actor instead
// (cgroup.freeze): EventPark tells it once the actor is frozen, with the
// record the kill would carry and the park's id in Kill.Report.ParkID. The
// worker saves the actor meanwhile and ends the park with Guard.ParkEnd:
// ParkKill, or ParkThaw with a new limit (EventThaw; killed instead if used
// is above that limit). The guard kills by itself past the deadline, if the
// actor is not frozen within KillWait, or if used grows past the hard bound
// while frozen; the record's Report.ParkEnd says which. See
// mg_guard_park_end(3).
//
//	opt.ParkDeadline = 30 * time.Second
//	opt.OnEvent = func(g *cgroupguard.Guard, ev cgroupguard.Event) {
//		if ev.Type == cgroupguard.EventPark {
//			id := ev.Kill.Report.ParkID
//			go func() {
//				// ... save the actor, then:
//				g.ParkEnd(id, cgroupguard.ParkKill, 0)
//			}()
//		}
//	}
//
// A callback must return quickly (every guard of the set waits for it), and
// must not panic: a panic cannot unwind through the C frames of Process and
// ends the program.
//
// # Errors
//
// Every call that can fail returns an *Error: the operation (Op: "add",
// "lend end", "defer kill", ...), the path it was about (Path: the cgroup, or
// a snapshot's name; empty for a set's own calls) and, in Err, the cause: the
// negative errno of the C call as a syscall.Errno, as listed in
// <memguard/memguard.h>, or a context's error. errors.Is(err, syscall.ENOENT)
// and errors.As(err, &e) (e a *Error, or a syscall.Errno) work; compare with
// errors.Is, not ==. Event.Err, ReclaimInfo.Err and SnapshotStats.ReclaimError,
// facts rather than failures of a call, are bare syscall.Errno values.
//
// # What Go cannot do: confinement
//
// mg_confine_thread() is not bound. It loads a seccomp allowlist on the
// calling thread (and threads it starts) that covers what the library's C code
// calls once guards run. A Go program does not control what runs on an OS
// thread: the runtime runs the scheduler, the garbage collector's work and
// signal handling on every thread, including one locked with LockOSThread, and
// makes system calls the list does not have (tgkill to preempt goroutines on
// other threads, rt_sigaction, clone for new threads, epoll_create1 for the
// netpoller). A denied call there is not an error the guard reports but a
// fatal runtime error, at an arbitrary later time. A seccomp filter for a Go
// program has to be made for the whole program and its runtime, which is not
// memguard's list. What stays confined: each set's restore worker, a C thread
// that runs no Go code and confines itself at start (where libseccomp was
// found). A worker that wants the guard itself confined runs it in a C process
// of its own (`memguard watch`).
//
// # Finding the library
//
// cgo runs pkg-config for memguard: for an installed library nothing is
// needed; against a meson build tree, set
// PKG_CONFIG_PATH=BUILD/meson-uninstalled and, at run time,
// LD_LIBRARY_PATH=BUILD/memguard (or build with
// CGO_LDFLAGS=-Wl,-rpath,BUILD/memguard, as bindings/run-tests does).
//
// # Using it from another module
//
// The module path memguard/cgroupguard names no host: "go get" cannot fetch
// it. A program uses it from a checkout of memguard (CHECKOUT below) with a
// replace directive in the program's go.mod (Go accepts a path without a dot
// when it is replaced by a directory):
//
//	require memguard/cgroupguard v0.0.0
//	replace memguard/cgroupguard => CHECKOUT/bindings/go
//
// "go mod vendor" then copies the package, its shim.c and shim.h included,
// into vendor/memguard/cgroupguard, and builds go on from there. Or copy the
// directory's *.go files (not the tests), shim.c and shim.h into a package
// of the program's own module (without go.mod), and import it by the path it
// has there.
//
// Either way the package has no Go dependencies, and cgo needs the library
// as above: pkg-config finds memguard.pc (installed, or
// PKG_CONFIG_PATH=BUILD/meson-uninstalled for a build tree), and the binary
// finds libmemguard.so.0 at run time (installed, LD_LIBRARY_PATH, or
// CGO_LDFLAGS=-Wl,-rpath,DIR). Without pkg-config, set CGO_CFLAGS to the
// include directories of memguard/memguard.h and of the generated
// memguard/version.h (an install's include directory; for a build tree
// "-ICHECKOUT/include -IBUILD/include"), CGO_LDFLAGS="-LDIR -lmemguard" (DIR:
// BUILD/memguard for a build tree), and PKG_CONFIG=true, a command that
// prints nothing, for the #cgo pkg-config line.
package cgroupguard
