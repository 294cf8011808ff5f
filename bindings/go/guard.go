// SPDX-License-Identifier: Apache-2.0

package cgroupguard

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"runtime/cgo"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// Options of one guard. Get them from DefaultOptions, which tunes every
// threshold to the limit (docs/tuning.md), then change what you need; a zero
// field means the tuned default.
type Options struct {
	LimitBytes             uint64        // required: what the actor paid for
	Tick                   time.Duration // default 250 ms; 10 ms to 1 h
	MarginBytes            uint64        // fast path below limit - margin; default limit/16
	StallWindow            time.Duration // stall criteria must hold this long
	StallPressurePermyriad uint32        // memory or io some share over the window
	LendDeadline           time.Duration // default lend deadline
	KillWait               time.Duration // how long to wait for the cgroup to empty
	PostKillHoldoff        time.Duration // lagging counters ignored after a kill
	RefaultWindow          time.Duration // the refault stall rule's window
	RefaultMappedWindow    time.Duration // the same, while it faults its pages in (half the cache mapped, or major faults)
	DryRun                 bool          // decide as usual, kill nothing: each kill is EventKillDryRun
	// PreKillMaxDefer is the longest deferral Guard.DeferKill may ask for,
	// at most MaxPreKillDefer; 0 (the default): no EventPreKill, kills
	// are made at once. Above MaxPreKillDefer, Add is EINVAL.
	PreKillMaxDefer time.Duration

	// ReclaimDoseBytes turns the reclaim actuator on: a dose of this many
	// bytes written to memory.reclaim of the target (5.19+; Add is
	// EOPNOTSUPP without it), never while a lend is open, told as
	// EventReclaim. 0 (the default) is off, and then every other Reclaim
	// field must be unset (Add is EINVAL).
	ReclaimDoseBytes uint64
	// ReclaimCgroup is the cgroup dosed and watched: "" for the actor's
	// own, else a path (a background sibling), opened by Add.
	ReclaimCgroup string
	// ReclaimSome and ReclaimFull are the pressure trigger: the target's
	// memory stall, some (and full, if set), must rise by at least this in
	// each of ReclaimWindows consecutive one-second windows; it fires once
	// per episode, at most once per ReclaimCooldown. With neither set and
	// no ReclaimHeadroomBytes: 1 ms some over 3 windows. Past uint32
	// microseconds a threshold can never be reached, and is saturated.
	ReclaimSome, ReclaimFull time.Duration
	ReclaimWindows           uint32        // 1 to MaxReclaimWindows; default 3
	ReclaimCooldown          time.Duration // default 10 s
	// ReclaimHeadroomBytes is the headroom trigger, less than LimitBytes
	// and only on the actor's own cgroup: memory.current within this of
	// the limit while the actor holds file cache gets a dose of what
	// brings it back (at most ReclaimDoseBytes and its cache), at most once
	// a second.
	ReclaimHeadroomBytes uint64

	// ParkDeadline turns parking on: every kill the guard decides and
	// confirms freezes the actor instead (cgroup.freeze, 5.2+), told as
	// EventPark once it is frozen, for the worker to save it and end the
	// park with Guard.ParkEnd (a kill, or a thaw with a new limit). It is
	// the longest a park may last before the guard kills, at most
	// MaxParkDeadline (Add is EINVAL above it); 0 (the default) is off.
	// See mg_guard_park_end(3).
	ParkDeadline time.Duration

	// OnEvent is called on the set's thread with the event copied out
	// (see the package documentation). It may call any method of the set
	// but Close, including Remove of its own guard.
	OnEvent func(g *Guard, ev Event)
	// Log gets the guard's log lines, on the set's thread (or a snapshot
	// write's, under the set's lock).
	Log func(level LogLevel, msg string)
}

// DefaultOptions are the options mg_guard_options_init() tunes to
// limitBytes. EINVAL for 0 or Unlimited.
func DefaultOptions(limitBytes uint64) (Options, error) {
	var c C.struct_mg_guard_options
	if err := errno(C.mg_guard_options_init(&c, C.uint64_t(limitBytes))); err != nil {
		return Options{}, wrap("default options", "", err)
	}
	return optionsFromC(&c), nil
}

func optionsFromC(c *C.struct_mg_guard_options) Options {
	return Options{
		LimitBytes:             uint64(c.limit_bytes),
		Tick:                   duration(c.tick_usec),
		MarginBytes:            uint64(c.margin_bytes),
		StallWindow:            duration(c.stall_window_usec),
		StallPressurePermyriad: uint32(c.stall_pressure_permyriad),
		LendDeadline:           duration(c.lend_deadline_usec),
		KillWait:               duration(c.kill_wait_usec),
		PostKillHoldoff:        duration(c.post_kill_holdoff_usec),
		RefaultWindow:          duration(c.refault_window_usec),
		RefaultMappedWindow:    duration(c.refault_mapped_window_usec),
		DryRun:                 c.flags&C.MG_GUARD_DRY_RUN != 0,
		PreKillMaxDefer:        duration(C.uint64_t(c.pre_kill_max_defer_usec)),
		ReclaimDoseBytes:       uint64(c.reclaim_dose_bytes),
		ReclaimCgroup:          C.GoString(c.reclaim_cgroup),
		ReclaimSome:            duration(C.uint64_t(c.reclaim_some_usec)),
		ReclaimFull:            duration(C.uint64_t(c.reclaim_full_usec)),
		ReclaimWindows:         uint32(c.reclaim_windows),
		ReclaimCooldown:        duration(c.reclaim_cooldown_usec),
		ReclaimHeadroomBytes:   uint64(c.reclaim_headroom_bytes),
		ParkDeadline:           duration(c.park_deadline_usec),
	}
}

// usec32 is usec for the options the library keeps as 32-bit microseconds:
// a value past them saturates.
func usec32(d time.Duration) (C.uint32_t, error) {
	v, err := usec(d)
	if err != nil {
		return 0, err
	}
	if v > C.uint64_t(^C.uint32_t(0)) {
		return ^C.uint32_t(0), nil
	}
	return C.uint32_t(v), nil
}

// toC fills the C options from o. A ReclaimCgroup is C memory, which the
// caller frees with freeOptionsC once the library has made the guard (it
// keeps a copy); on error nothing is allocated.
func (o *Options) toC() (C.struct_mg_guard_options, error) {
	var c C.struct_mg_guard_options
	if strings.IndexByte(o.ReclaimCgroup, 0) >= 0 {
		// C would read the path up to the NUL: another cgroup.
		return c, syscall.EINVAL
	}
	c.size = C.uint64_t(unsafe.Sizeof(c))
	c.limit_bytes = C.uint64_t(o.LimitBytes)
	c.margin_bytes = C.uint64_t(o.MarginBytes)
	c.stall_pressure_permyriad = C.uint32_t(o.StallPressurePermyriad)
	c.reclaim_dose_bytes = C.uint64_t(o.ReclaimDoseBytes)
	c.reclaim_windows = C.uint32_t(o.ReclaimWindows)
	c.reclaim_headroom_bytes = C.uint64_t(o.ReclaimHeadroomBytes)
	if o.DryRun {
		c.flags = C.MG_GUARD_DRY_RUN
	}
	for _, f := range []struct {
		d   time.Duration
		ret *C.uint64_t
	}{
		{o.Tick, &c.tick_usec},
		{o.StallWindow, &c.stall_window_usec},
		{o.LendDeadline, &c.lend_deadline_usec},
		{o.KillWait, &c.kill_wait_usec},
		{o.PostKillHoldoff, &c.post_kill_holdoff_usec},
		{o.RefaultWindow, &c.refault_window_usec},
		{o.RefaultMappedWindow, &c.refault_mapped_window_usec},
		{o.ReclaimCooldown, &c.reclaim_cooldown_usec},
		{o.ParkDeadline, &c.park_deadline_usec},
	} {
		v, err := usec(f.d)
		if err != nil {
			return c, err
		}
		*f.ret = v
	}
	for _, f := range []struct {
		d   time.Duration
		ret *C.uint32_t
	}{
		// Past 32 bits they saturate: PreKillMaxDefer is then above its
		// bound as well (the library says EINVAL), and a stall threshold
		// of 2^32-1 us is no more reached in a one-second window than a
		// longer one.
		{o.PreKillMaxDefer, &c.pre_kill_max_defer_usec},
		{o.ReclaimSome, &c.reclaim_some_usec},
		{o.ReclaimFull, &c.reclaim_full_usec},
	} {
		v, err := usec32(f.d)
		if err != nil {
			return c, err
		}
		*f.ret = v
	}
	if o.ReclaimCgroup != "" {
		c.reclaim_cgroup = C.CString(o.ReclaimCgroup)
	}
	return c, nil
}

// freeOptionsC frees what toC allocated in c.
func freeOptionsC(c *C.struct_mg_guard_options) {
	C.free(unsafe.Pointer(c.reclaim_cgroup))
	c.reclaim_cgroup = nil
}

// Guard guards one actor's cgroup, in a Set. Its methods may be called from
// any goroutine (see the package documentation); after Remove, or the set's
// Close, they return EINVAL.
type Guard struct {
	set     *Set
	ptr     *C.mg_guard // nil once removed
	handle  cgo.Handle
	onEvent func(*Guard, Event)
	log     func(LogLevel, string)
	path    string
}

func (g *Guard) logLine(level LogLevel, msg string) {
	if g.log != nil {
		g.log(level, msg)
	}
}

// forget drops the guard's C side; called with the set's lock held, once the
// library will not call its callbacks again.
func (g *Guard) forget() {
	g.ptr = nil
	g.handle.Delete()
}

// Path is the cgroup path the guard was made with.
func (g *Guard) Path() string { return g.path }

// Set is the set the guard belongs to.
func (g *Guard) Set() *Set { return g.set }

// call runs f with the guard's C pointer on the set's terms; EINVAL if the
// guard was removed. Its error is op's, on the guard's path.
func (g *Guard) call(op string, f func(p *C.mg_guard) C.int) error {
	var r C.int
	g.set.do(func() {
		if g.ptr == nil {
			r = -C.int(syscall.EINVAL)
			return
		}
		r = f(g.ptr)
	})
	return wrap(op, g.path, errno(r))
}

// Remove takes the guard out of its set at once (no more events or logs from
// it) and frees it; allowed inside its own callback. A lend it holds is
// ended through the set's restore worker, untold (see mg_set_remove()).
func (g *Guard) Remove() error {
	return g.call("remove", func(p *C.mg_guard) C.int {
		r := C.mg_set_remove(g.set.ptr, p)
		if r >= 0 {
			delete(g.set.guards, g)
			g.forget()
		}
		return r
	})
}

// Options are the options in force, every default filled in.
func (g *Guard) Options() (Options, error) {
	var c C.struct_mg_guard_options
	c.size = C.uint64_t(unsafe.Sizeof(c))
	err := g.call("options", func(p *C.mg_guard) C.int { return C.mg_guard_get_options(p, &c) })
	if err != nil {
		return Options{}, err
	}
	o := optionsFromC(&c)
	o.OnEvent, o.Log = g.onEvent, g.log
	return o, nil
}

// Stats is what a guard, or a set, has counted (mg_guard_get_stats(),
// mg_set_get_stats()).
type Stats struct {
	FastTicks, SlowTicks        uint64
	KillsOvershoot, KillsStall  uint64
	DryRunKills, KernelOOMKills uint64
	Errors, Lends, LendExpiries uint64
	Throttles                   uint64
	KillsDeferred, KillsAverted uint64
	Reclaims                    uint64 // EventReclaim
	ReclaimedBytes              uint64 // their ReclaimInfo.AchievedBytes
	Parks                       uint64 // EventPark
	ParksThawed                 uint64 // EventThaw
	ParksKilled                 uint64 // ended by ParkEnd with ParkKill
	// ParksExpired is parks the guard ended with a kill: the deadline,
	// the bound, not frozen in time, over the limit at a thaw.
	ParksExpired uint64
}

func guardStatsFromC(c *C.struct_mg_stats) Stats {
	return Stats{
		FastTicks: uint64(c.fast_ticks), SlowTicks: uint64(c.slow_ticks),
		KillsOvershoot: uint64(c.kills_overshoot), KillsStall: uint64(c.kills_stall),
		DryRunKills: uint64(c.dry_run_kills), KernelOOMKills: uint64(c.kernel_oom_kills),
		Errors: uint64(c.errors), Lends: uint64(c.lends), LendExpiries: uint64(c.lend_expiries),
		Throttles: uint64(c.throttles), KillsDeferred: uint64(c.kills_deferred),
		KillsAverted: uint64(c.kills_averted),
		Reclaims:     uint64(c.reclaims), ReclaimedBytes: uint64(c.reclaimed_bytes),
		Parks: uint64(c.parks), ParksThawed: uint64(c.parks_thawed),
		ParksKilled: uint64(c.parks_killed), ParksExpired: uint64(c.parks_expired),
	}
}

// numberedStats gives guardStatsFromC a C struct whose every counter is its
// place after .size (1, 2, ...), for the tests: a counter the copy forgets
// or takes from another field shows.
func numberedStats() Stats {
	var c C.struct_mg_stats
	n := int(unsafe.Sizeof(c) / unsafe.Sizeof(c.size))
	w := unsafe.Slice((*C.uint64_t)(unsafe.Pointer(&c)), n)
	for i := range w {
		w[i] = C.uint64_t(i)
	}
	return guardStatsFromC(&c)
}

// Stats is what the guard has counted since it was made.
func (g *Guard) Stats() (Stats, error) {
	var c C.struct_mg_stats
	c.size = C.uint64_t(unsafe.Sizeof(c))
	if err := g.call("stats", func(p *C.mg_guard) C.int { return C.mg_guard_get_stats(p, &c) }); err != nil {
		return Stats{}, err
	}
	return guardStatsFromC(&c), nil
}

// Report reads everything the slow path reads, and the verdict it would
// give now, without acting.
func (g *Guard) Report() (Report, error) {
	var c C.struct_mg_report
	c.size = C.uint64_t(unsafe.Sizeof(c))
	if err := g.call("report", func(p *C.mg_guard) C.int { return C.mg_guard_report(p, &c) }); err != nil {
		return Report{}, err
	}
	return reportFromC(&c), nil
}

// IsKilling says the guard killed and waits for the cgroup to empty.
func (g *Guard) IsKilling() bool {
	var b bool
	g.call("is killing", func(p *C.mg_guard) C.int { b = bool(C.mg_guard_is_killing(p)); return 0 })
	return b
}

// IsLent says a lend is open (its restore under way included).
func (g *Guard) IsLent() bool {
	var b bool
	g.call("is lent", func(p *C.mg_guard) C.int { b = bool(C.mg_guard_is_lent(p)); return 0 })
	return b
}

// OpenLendID is the id of the open lend, 0 if none: for a lend this program
// did not begin (one taken over from a record of a process that died).
func (g *Guard) OpenLendID() uint64 {
	var id C.uint64_t
	g.call("lend id", func(p *C.mg_guard) C.int { id = C.mg_guard_get_lend_id(p); return 0 })
	return uint64(id)
}

// MaxPreKillDefer is the bound of Options.PreKillMaxDefer
// (MG_PRE_KILL_MAX_DEFER_USEC): a deferral is for saving state before the
// kill (a checkpoint, a flush), not for work that needs a lend.
const MaxPreKillDefer = 60 * time.Second

// DeferKill puts off the kill an EventPreKill tells of, by d (relative, at
// most Options.PreKillMaxDefer), for the actor to save its state; it is
// mg_guard_defer_kill(). Call it from inside the OnEvent call of that event,
// on the goroutine the callback runs on (a call from another goroutine runs
// after the callback returned, and is ENOENT). Called again in the same
// callback, the last call counts. If the callback returns without it, the
// kill follows in the same tick. When the deferral ends the guard reads the
// cgroup again and kills unless the actor has left its limit
// (EventKillAverted).
//
// Errors (an *Error wrapping the errno): EINVAL for d of 0, less than a
// microsecond or negative, or a guard removed; ENOENT outside an
// EventPreKill callback of g; ERANGE for d above Options.PreKillMaxDefer
// (NoDeadline included); EPERM if the actor is past the hard bound of
// mg_guard_defer_kill(3): the kill is made when the callback returns.
func (g *Guard) DeferKill(d time.Duration) error {
	if d <= 0 {
		return wrap("defer kill", g.path, syscall.EINVAL)
	}
	u, _ := usec(d)
	return g.call("defer kill", func(p *C.mg_guard) C.int { return C.mg_guard_defer_kill(p, u) })
}

// MaxParkDeadline is the bound of Options.ParkDeadline (MG_PARK_MAX_USEC).
const MaxParkDeadline = time.Hour

// ParkAction is how Guard.ParkEnd ends a park (enum mg_park_action).
type ParkAction int

// The ends a worker may give a park.
const (
	// ParkKill kills the actor, still frozen: EventKill follows once the
	// cgroup is empty, its record's Report.ParkEnd ParkEndKill.
	ParkKill ParkAction = 1
	// ParkThaw judges the actor at once against a new limit, and thaws it
	// (EventThaw) or, above that limit, kills it (ParkEndOverLimit).
	ParkThaw ParkAction = 2
)

// ParkEnd ends the park id (Report.ParkID of the EventPark's record),
// from the EventPark callback or later; it is mg_guard_park_end().
// ParkKill kills the actor (newLimitBytes must be 0); ParkThaw judges it at
// once against newLimitBytes (0: the limit it had; else the guard's limit
// from now on, its margin keeping its share: raise memory.max and
// memory.high first) and thaws it, or kills it if it is above. killed says
// a kill was made (EventKill follows); false is a thaw (EventThaw told).
//
// Errors (an *Error wrapping the errno): EINVAL for an id of 0, an action
// not ParkKill or ParkThaw, a new limit with ParkKill or of Unlimited, or a
// guard removed; ENOENT if no park is open (it ended, by its deadline say);
// ESTALE if another park is open (left alone); or the errno of a read or
// write, and the park goes on (try again).
func (g *Guard) ParkEnd(id uint64, action ParkAction, newLimitBytes uint64) (killed bool, err error) {
	var r C.int
	err = g.call("park end", func(p *C.mg_guard) C.int {
		r = C.mg_guard_park_end(p, C.uint64_t(id), uint32(action), C.uint64_t(newLimitBytes))
		return r
	})
	return err == nil && r == 1, err
}

// OpenParkID is the id of the open park, 0 if none (mg_guard_get_park_id()).
func (g *Guard) OpenParkID() uint64 {
	var id C.uint64_t
	g.call("park id", func(p *C.mg_guard) C.int { id = C.mg_guard_get_park_id(p); return 0 })
	return uint64(id)
}

// Lend is one lend of memory.high, from Guard.LendBegin. Its End ends that
// lend and no other.
type Lend struct {
	guard *Guard
	ID    uint64 // never 0; told in the lend's events (LendInfo.ID)
}

// LendBegin raises memory.high by extraBytes (Unlimited: "max") and pauses
// kills, around a snapshot write. deadline is relative: 0 takes the
// options' default, NoDeadline means none; after it the guard restores
// memory.high by itself (EventLendExpired). EBUSY if a lend is open, or the
// errno of the memory.high write.
func (g *Guard) LendBegin(extraBytes uint64, deadline time.Duration) (*Lend, error) {
	d, err := usec(deadline)
	if err != nil {
		return nil, wrap("lend begin", g.path, err)
	}
	var id C.uint64_t
	if err := g.call("lend begin", func(p *C.mg_guard) C.int { return C.mg_guard_lend_begin(p, C.uint64_t(extraBytes), d, &id) }); err != nil {
		return nil, err
	}
	return &Lend{guard: g, ID: uint64(id)}, nil
}

// End ends this lend: the set's restore worker writes the exact previous
// memory.high back (unless someone changed it during the lend), and
// EventLendEnd tells when it is done, from a later Process. ENOENT if no
// lend is open (this one expired or ended), ESTALE if another lend is open:
// that one is left alone.
func (l *Lend) End() error {
	return l.guard.call("lend end", func(p *C.mg_guard) C.int { return C.mg_guard_lend_end(p, C.uint64_t(l.ID)) })
}

// Recover ends a lend a process that died left on the cgroup (its record),
// writing the recorded memory.high back; run it on each cgroup at start-up,
// before Add. expiredOnly leaves a lend whose deadline has not passed (EBUSY).
// It says whether memory.high was written. A park record (a park whose
// process died, the actor still frozen) is left for Add, whose guard takes
// the park over; a stale one is removed.
func Recover(cgroupPath string, expiredOnly bool) (bool, error) {
	cpath := C.CString(cgroupPath)
	defer C.free(unsafe.Pointer(cpath))
	var flags C.unsigned
	if expiredOnly {
		flags = C.MG_RECOVER_EXPIRED
	}
	r := C.mg_guard_recover(cpath, flags)
	return r == 1, wrap("recover", cgroupPath, errno(r))
}
