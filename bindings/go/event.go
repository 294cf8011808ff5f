// SPDX-License-Identifier: Apache-2.0

package cgroupguard

/*
#include <stdlib.h>
#include <string.h>
#include "shim.h"
*/
import "C"

import (
	"syscall"
	"time"
	"unsafe"
)

// EventType is what an Event is about (enum mg_event_type; mg_event(3)).
type EventType int

// The types of events. A program built against this package ignores a type
// it does not know, as the library's callers do.
const (
	// EventKill is a kill made: Kill set; the cgroup is empty (or the wait
	// timed out).
	EventKill EventType = 1
	// EventLendBegin is a lend begun: Lend set.
	EventLendBegin EventType = 2
	// EventLendEnd is a lend ended: Lend set; Lend.Restored says
	// memory.high was written back.
	EventLendEnd EventType = 3
	// EventLendExpired is a lend its deadline ended: Lend set, as for
	// EventLendEnd.
	EventLendExpired EventType = 4
	// EventError is an error of a tick: Err and What set; the guard keeps
	// going.
	EventError EventType = 5
	// EventGone is the cgroup vanished; the guard stops.
	EventGone EventType = 6
	// EventKernelOOM is the kernel's OOM killer acting in the cgroup:
	// memory.events.local oom_kill rose by Count.
	EventKernelOOM EventType = 7
	// EventThrottled is the actor held over memory.high with nothing left
	// to reclaim: Throttle set; not a kill.
	EventThrottled EventType = 8
	// EventEmptyOverLimit is over the limit with no process: Report set;
	// not a kill.
	EventEmptyOverLimit EventType = 9
	// EventUnkillable is members that outlived a kill's wait: Unkillable
	// and Kill set.
	EventUnkillable EventType = 10
	// EventKillDryRun is the kill a dry run (Options.DryRun) did not make:
	// Kill set.
	EventKillDryRun EventType = 11
	// EventPreKill is a kill about to be made (Options.PreKillMaxDefer
	// set): Kill set, KillUsec 0. The callback may put it off with
	// Guard.DeferKill.
	EventPreKill EventType = 12
	// EventKillAverted is a deferred kill not made, the actor having left
	// its limit: Kill (the deferred record) and Report (the fresh read)
	// set.
	EventKillAverted EventType = 13
	// EventReclaim is a dose of the reclaim actuator
	// (Options.ReclaimDoseBytes), done: Reclaim set; not a kill.
	EventReclaim EventType = 14
	// EventPark is a kill the guard froze the actor for instead
	// (Options.ParkDeadline set), told once cgroup.events says frozen:
	// Kill set, KillUsec 0 (not sent), Kill.Report.ParkID the id for
	// Guard.ParkEnd, ParkUsec and FrozenUsec set.
	EventPark EventType = 15
	// EventThaw is a park the worker ended with a thaw (ParkThaw): Kill
	// set, Kill.Report.ParkEnd ParkEndThaw; the guard watches the actor as
	// before.
	EventThaw EventType = 16
)

// String is the type's name, as mg_event_type_to_string() gives it.
func (t EventType) String() string {
	return C.GoString(C.mg_event_type_to_string(uint32(t)))
}

// Verdict is what a slow-path read concluded (enum mg_verdict).
type Verdict int

// The verdicts of a slow-path read.
const (
	// VerdictOK is below limit - margin: the fast path.
	VerdictOK Verdict = 0
	// VerdictNear is at the limit, with nothing to act on.
	VerdictNear Verdict = 1
	// VerdictStalling is the stall criteria met for part of the window.
	VerdictStalling Verdict = 2
	// VerdictOvershoot is a kill: used above the limit.
	VerdictOvershoot Verdict = 3
	// VerdictStall is a kill: stuck at its limit for the window.
	VerdictStall Verdict = 4
)

// String is the verdict's name, as mg_verdict_to_string() gives it.
func (v Verdict) String() string { return C.GoString(C.mg_verdict_to_string(uint32(v))) }

// StallSignal says which share of lost time decided a stall (a bit mask).
type StallSignal uint

// The bits of a StallSignal.
const (
	// StallMemory is memory.pressure some.
	StallMemory StallSignal = 1 << 0
	// StallIO is io.pressure some.
	StallIO StallSignal = 1 << 1
	// StallRefault is the refault rule: the actor re-read its whole cache
	// over, no restores booked.
	StallRefault StallSignal = 1 << 2
)

// KillReason is why a guard killed (enum mg_kill_reason).
type KillReason int

// The reasons of a kill.
const (
	// KillOvershoot is used above the limit.
	KillOvershoot KillReason = 1
	// KillStall is stuck at the limit for the stall window.
	KillStall KillReason = 2
)

// String is the reason's name, as mg_kill_reason_to_string() gives it.
func (r KillReason) String() string { return C.GoString(C.mg_kill_reason_to_string(uint32(r))) }

// KillMethod is how a guard killed (enum mg_kill_method).
type KillMethod int

// The methods of a kill.
const (
	// KillCgroupKill is a write of cgroup.kill (5.14+).
	KillCgroupKill KillMethod = 1
	// KillPidfd is pidfd_send_signal to each member.
	KillPidfd KillMethod = 2
)

// ParkEnd is how a park ended (enum mg_park_end; Report.ParkEnd). All but
// ParkEndThaw end in a kill, by the worker's choice or by the guard's
// promise.
type ParkEnd int

// The ends of a park.
const (
	// ParkOpen is a park not ended (EventPark).
	ParkOpen ParkEnd = 0
	// ParkEndKill is the worker's ParkKill.
	ParkEndKill ParkEnd = 1
	// ParkEndThaw is the worker's ParkThaw, thawed (EventThaw).
	ParkEndThaw ParkEnd = 2
	// ParkEndDeadline is a park not ended within Options.ParkDeadline:
	// killed.
	ParkEndDeadline ParkEnd = 3
	// ParkEndBound is used grown past the hard bound of
	// mg_guard_defer_kill(3) while frozen (kernel and socket memory are
	// charged without the tasks running): killed.
	ParkEndBound ParkEnd = 4
	// ParkEndNotFrozen is cgroup.events not saying frozen within
	// Options.KillWait (a task in uninterruptible sleep): killed.
	ParkEndNotFrozen ParkEnd = 5
	// ParkEndOverLimit is a thaw asked for while used was above the
	// (new) limit: killed, never thawed.
	ParkEndOverLimit ParkEnd = 6
	// ParkEndNoFreeze is cgroup.freeze that could not be written (before
	// 5.2: none): killed at once, with no EventPark.
	ParkEndNoFreeze ParkEnd = 7
)

// String is the end's wording, as mg_park_end_to_string() gives it.
func (e ParkEnd) String() string { return C.GoString(C.mg_park_end_to_string(uint32(e))) }

// PSILine is one line of a pressure file: averages in hundredths of a
// percent, total in microseconds.
type PSILine struct {
	Avg10Centipct, Avg60Centipct, Avg300Centipct uint32
	TotalUsec                                    uint64
}

// PSI is a pressure file; HasFull is false for a cpu file without "full"
// (before 5.13).
type PSI struct {
	Some, Full PSILine
	HasFull    bool
}

// MemEvents is memory.events.local.
type MemEvents struct {
	Low, High, Max, OOM, OOMKill, OOMGroupKill uint64
}

// Report is everything one slow-path read saw. Times are CLOCK_MONOTONIC
// microseconds; MaxBytes is Unlimited for "max".
type Report struct {
	TimeUsec            uint64
	LimitBytes          uint64
	MarginBytes         uint64
	CurrentBytes        uint64 // memory.current
	UsedBytes           uint64 // anon + shmem + kernel + sock, one memory.stat read
	HighBytes           uint64
	MaxBytes            uint64
	Stat                Memstat
	MemoryPressure      PSI
	IOPressure          PSI
	Events              MemEvents // memory.events.local
	Stall               time.Duration
	StallSignals        StallSignal
	Verdict             Verdict
	StallRefaultBytes   uint64 // StallRefault: file pages re-read over Stall
	StallReclaimedBytes uint64 // StallRefault: what reclaim took (pgsteal) over Stall
	// The park the read is about (a kill record's, an EventPark's or an
	// EventThaw's; all 0 in any other read): ParkID is the id for
	// Guard.ParkEnd (0: not parked), ParkUsec when cgroup.freeze was
	// written, FrozenUsec when cgroup.events said frozen (0: never; see
	// ParkEnd), ParkEndUsec when the park ended (0: it has not).
	ParkID      uint64
	ParkUsec    uint64
	FrozenUsec  uint64
	ParkEndUsec uint64
	ParkEnd     ParkEnd
}

// KillRecord is what a kill hands out: the read that decided, and when each
// step came (CLOCK_MONOTONIC microseconds). String formats it as an
// OOM-style report.
type KillRecord struct {
	Reason        KillReason
	Method        KillMethod
	Cgroup        string
	DetectUsec    uint64 // first tick that saw the condition
	KillUsec      uint64 // signal sent
	EmptyUsec     uint64 // cgroup.events populated 0; 0 if not seen
	EmptyTimedOut bool   // gave up waiting for populated 0
	Report        Report
}

// LendInfo is the lend an EventLend* is about.
type LendInfo struct {
	OldHighBytes   uint64 // Unlimited for "max"
	NewHighBytes   uint64
	DeadlineUsec   uint64 // absolute CLOCK_MONOTONIC; ^uint64(0): none
	ID             uint64 // Lend.ID
	FoundHighBytes uint64 // at the end: memory.high as read then
	Restored       bool   // at the end: written back to OldHighBytes
}

// ThrottleInfo is an actor held over memory.high with nothing left to
// reclaim.
type ThrottleInfo struct {
	HighBytes, CurrentBytes uint64
	OveragePermyriad        uint32
	EstDelay                time.Duration // the kernel's sleep per 64-page charge batch
	HighEventsPerSec        uint64
	MemorySomePermyriad     uint32
	CPUPermyriad            uint32
}

// UnkillableInfo is the members that outlived a kill's wait: at most 16
// pids, with their /proc/PID/stat states ('D', 'R', ...; '?' unread).
type UnkillableInfo struct {
	KillUsec    uint64
	Wait        time.Duration
	NMembers    uint32
	MoreMembers bool
	Pids        []int32
	States      []byte
}

// ReclaimWhy is what fired a dose of the reclaim actuator (enum
// mg_reclaim_why).
type ReclaimWhy int

// What fires a dose.
const (
	// ReclaimPressure is the pressure trigger, held for
	// Options.ReclaimWindows windows.
	ReclaimPressure ReclaimWhy = 1
	// ReclaimHeadroom is memory.current within
	// Options.ReclaimHeadroomBytes of the limit.
	ReclaimHeadroom ReclaimWhy = 2
)

// MaxReclaimWindows is the most windows the pressure trigger spans
// (MG_RECLAIM_WINDOWS_MAX), the bound of Options.ReclaimWindows.
const MaxReclaimWindows = 8

// MaxReclaimDoseDuration is the longest a dose may take and still count
// (MG_RECLAIM_DOSE_MAX_USEC; ReclaimInfo.Counted).
const MaxReclaimDoseDuration = time.Second

// ReclaimInfo is one dose written to memory.reclaim of Target, and what the
// kernel reclaimed from it meanwhile (its pgsteal: the dose's and any other
// reclaim's).
type ReclaimInfo struct {
	Target        string // the cgroup dosed
	Why           ReclaimWhy
	AskedBytes    uint64
	AchievedBytes uint64        // pgsteal's rise over the write, in bytes
	Duration      time.Duration // the write(2), start to end
	// Err is nil, or the write's syscall.Errno: EAGAIN, the kernel took
	// less than asked; ENODEV, the target went (no more doses).
	Err error
	// Counted: no error, done within MaxReclaimDoseDuration, at least 80 %
	// achieved.
	Counted bool
	// ReclaimPressure: the memory stall, some and full (zeros unless
	// Options.ReclaimFull is set), of each window the trigger saw, oldest
	// first.
	SomeStall, FullStall []time.Duration
	// ReclaimHeadroom: memory.current and the file cache (memory.stat
	// file) that fired it.
	CurrentBytes, FileBytes uint64
}

// Event is one event of a guard, copied out of the library's callback.
type Event struct {
	Type       EventType
	Cgroup     string
	TimeUsec   uint64      // CLOCK_MONOTONIC
	Kill       *KillRecord // EventPark, EventThaw too: the park in Kill.Report
	Lend       *LendInfo
	Err        error  // EventError: a syscall.Errno
	What       string // EventError: what failed, e.g. "memory.stat"
	Count      uint64 // EventKernelOOM: kills since the last tick
	Throttle   *ThrottleInfo
	Report     *Report // EventEmptyOverLimit
	Unkillable *UnkillableInfo
	Reclaim    *ReclaimInfo // EventReclaim: the dose
}

func psiLineFromC(c *C.struct_mg_psi_line) PSILine {
	return PSILine{uint32(c.avg10_centipct), uint32(c.avg60_centipct), uint32(c.avg300_centipct), uint64(c.total_usec)}
}

func psiFromC(c *C.struct_mg_psi) PSI {
	return PSI{psiLineFromC(&c.some), psiLineFromC(&c.full), bool(c.has_full)}
}

// reportFromC copies what c.size says exists (a record from an older
// library has fewer fields; the rest stay zero).
func reportFromC(c *C.struct_mg_report) Report {
	var full C.struct_mg_report
	n := uintptr(c.size)
	if n > unsafe.Sizeof(full) {
		n = unsafe.Sizeof(full)
	}
	C.memcpy(unsafe.Pointer(&full), unsafe.Pointer(c), C.size_t(n))
	c = &full
	return Report{
		TimeUsec:            uint64(c.time_usec),
		LimitBytes:          uint64(c.limit_bytes),
		MarginBytes:         uint64(c.margin_bytes),
		CurrentBytes:        uint64(c.current_bytes),
		UsedBytes:           uint64(c.used_bytes),
		HighBytes:           uint64(c.high_bytes),
		MaxBytes:            uint64(c.max_bytes),
		Stat:                memstatFromC(&c.stat),
		MemoryPressure:      psiFromC(&c.memory_pressure),
		IOPressure:          psiFromC(&c.io_pressure),
		Events:              MemEvents{uint64(c.events.low), uint64(c.events.high), uint64(c.events.max), uint64(c.events.oom), uint64(c.events.oom_kill), uint64(c.events.oom_group_kill)},
		Stall:               duration(c.stall_usec),
		StallSignals:        StallSignal(c.stall_signals),
		Verdict:             Verdict(c.verdict),
		StallRefaultBytes:   uint64(c.stall_refault_bytes),
		StallReclaimedBytes: uint64(c.stall_reclaimed_bytes),
		ParkID:              uint64(c.park_id),
		ParkUsec:            uint64(c.park_usec),
		FrozenUsec:          uint64(c.frozen_usec),
		ParkEndUsec:         uint64(c.park_end_usec),
		ParkEnd:             ParkEnd(c.park_end),
	}
}

func killRecordFromC(c *C.struct_mg_kill_record) *KillRecord {
	return &KillRecord{
		Reason:        KillReason(c.reason),
		Method:        KillMethod(c.method),
		Cgroup:        C.GoString(c.cgroup),
		DetectUsec:    uint64(c.detect_usec),
		KillUsec:      uint64(c.kill_usec),
		EmptyUsec:     uint64(c.empty_usec),
		EmptyTimedOut: bool(c.empty_timed_out),
		Report:        reportFromC(&c.report),
	}
}

func lendFromC(c *C.struct_mg_lend_info) *LendInfo {
	return &LendInfo{uint64(c.old_high_bytes), uint64(c.new_high_bytes), uint64(c.deadline_usec),
		uint64(c.id), uint64(c.found_high_bytes), bool(c.restored)}
}

func throttleFromC(c *C.struct_mg_throttle_info) *ThrottleInfo {
	return &ThrottleInfo{uint64(c.high_bytes), uint64(c.current_bytes), uint32(c.overage_permyriad),
		duration(c.est_delay_usec), uint64(c.high_events_per_sec), uint32(c.memory_some_permyriad),
		uint32(c.cpu_permyriad)}
}

func unkillableFromC(c *C.struct_mg_unkillable_info) *UnkillableInfo {
	n := int(c.n_pids)
	if n > C.MG_UNKILLABLE_MAX {
		n = C.MG_UNKILLABLE_MAX
	}
	u := &UnkillableInfo{KillUsec: uint64(c.kill_usec), Wait: duration(c.wait_usec),
		NMembers: uint32(c.n_members), MoreMembers: bool(c.more_members),
		Pids: make([]int32, n), States: make([]byte, n)}
	for i := 0; i < n; i++ {
		u.Pids[i] = int32(c.pids[i])
		u.States[i] = byte(c.states[i])
	}
	return u
}

func reclaimFromC(c *C.struct_mg_reclaim_info) *ReclaimInfo {
	n := int(c.windows)
	if n > C.MG_RECLAIM_WINDOWS_MAX {
		n = C.MG_RECLAIM_WINDOWS_MAX
	}
	r := &ReclaimInfo{Target: C.GoString(c.target), Why: ReclaimWhy(c.why),
		AskedBytes: uint64(c.asked_bytes), AchievedBytes: uint64(c.achieved_bytes),
		Duration: duration(c.duration_usec), Counted: bool(c.counted),
		SomeStall: make([]time.Duration, n), FullStall: make([]time.Duration, n),
		CurrentBytes: uint64(c.current_bytes), FileBytes: uint64(c.file_bytes)}
	if c.error < 0 {
		r.Err = syscall.Errno(-c.error)
	}
	for i := 0; i < n; i++ {
		r.SomeStall[i] = duration(c.some_usec[i])
		r.FullStall[i] = duration(c.full_usec[i])
	}
	return r
}

// eventFromC copies everything ev points to: the library's memory is valid
// only during the callback.
func eventFromC(ev *C.struct_mg_event) Event {
	e := Event{
		Type:     EventType(ev._type),
		Cgroup:   C.GoString(ev.cgroup),
		TimeUsec: uint64(ev.time_usec),
		Count:    uint64(ev.count),
	}
	if ev.kill != nil {
		e.Kill = killRecordFromC(ev.kill)
	}
	if ev.lend != nil {
		e.Lend = lendFromC(ev.lend)
	}
	if ev.error < 0 {
		e.Err = syscall.Errno(-ev.error)
	}
	if ev.what != nil {
		e.What = C.GoString(ev.what)
	}
	if ev.throttle != nil {
		e.Throttle = throttleFromC(ev.throttle)
	}
	if ev.report != nil {
		r := reportFromC(ev.report)
		e.Report = &r
	}
	if ev.unkillable != nil {
		e.Unkillable = unkillableFromC(ev.unkillable)
	}
	if ev.reclaim != nil {
		e.Reclaim = reclaimFromC(ev.reclaim)
	}
	return e
}

func (r *Report) toC(c *C.struct_mg_report) {
	c.size = C.uint64_t(unsafe.Sizeof(*c))
	c.time_usec = C.uint64_t(r.TimeUsec)
	c.limit_bytes = C.uint64_t(r.LimitBytes)
	c.margin_bytes = C.uint64_t(r.MarginBytes)
	c.current_bytes = C.uint64_t(r.CurrentBytes)
	c.used_bytes = C.uint64_t(r.UsedBytes)
	c.high_bytes = C.uint64_t(r.HighBytes)
	c.max_bytes = C.uint64_t(r.MaxBytes)
	r.Stat.toC(&c.stat)
	for _, p := range []struct {
		g *PSI
		c *C.struct_mg_psi
	}{{&r.MemoryPressure, &c.memory_pressure}, {&r.IOPressure, &c.io_pressure}} {
		for _, l := range []struct {
			g *PSILine
			c *C.struct_mg_psi_line
		}{{&p.g.Some, &p.c.some}, {&p.g.Full, &p.c.full}} {
			l.c.avg10_centipct = C.uint32_t(l.g.Avg10Centipct)
			l.c.avg60_centipct = C.uint32_t(l.g.Avg60Centipct)
			l.c.avg300_centipct = C.uint32_t(l.g.Avg300Centipct)
			l.c.total_usec = C.uint64_t(l.g.TotalUsec)
		}
		p.c.has_full = C.bool(p.g.HasFull)
	}
	c.events = C.struct_mg_mem_events{C.uint64_t(r.Events.Low), C.uint64_t(r.Events.High), C.uint64_t(r.Events.Max),
		C.uint64_t(r.Events.OOM), C.uint64_t(r.Events.OOMKill), C.uint64_t(r.Events.OOMGroupKill)}
	c.stall_usec = C.uint64_t(r.Stall / time.Microsecond)
	c.stall_signals = C.unsigned(r.StallSignals)
	c.verdict = uint32(r.Verdict)
	c.stall_refault_bytes = C.uint64_t(r.StallRefaultBytes)
	c.stall_reclaimed_bytes = C.uint64_t(r.StallReclaimedBytes)
	c.park_id = C.uint64_t(r.ParkID)
	c.park_usec = C.uint64_t(r.ParkUsec)
	c.frozen_usec = C.uint64_t(r.FrozenUsec)
	c.park_end_usec = C.uint64_t(r.ParkEndUsec)
	c.park_end = C.uint32_t(r.ParkEnd)
}

// toC fills c from k; the cgroup string is C memory the caller frees.
func (k *KillRecord) toC(c *C.struct_mg_kill_record) {
	c.size = C.uint64_t(unsafe.Sizeof(*c))
	c.reason = uint32(k.Reason)
	c.method = uint32(k.Method)
	c.cgroup = C.CString(k.Cgroup)
	c.detect_usec = C.uint64_t(k.DetectUsec)
	c.kill_usec = C.uint64_t(k.KillUsec)
	c.empty_usec = C.uint64_t(k.EmptyUsec)
	c.empty_timed_out = C.bool(k.EmptyTimedOut)
	k.Report.toC(&c.report)
}

// String is mg_kill_record_format()'s report: one line a tenant can act on.
func (k *KillRecord) String() string {
	var c C.struct_mg_kill_record
	k.toC(&c)
	defer C.free(unsafe.Pointer(c.cgroup))
	buf := make([]byte, 1024)
	for {
		n := C.mg_kill_record_format(&c, (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)))
		if n < 0 {
			return "cgroupguard: " + syscall.Errno(-n).Error()
		}
		if int(n) < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, int(n)+1)
	}
}

// Memstat is memory.stat, in bytes (counters: events). Keys the kernel did
// not print read as 0; KernelDerived says Kernel was summed from its parts
// (kernels before 5.18 have no such key).
type Memstat struct {
	Anon                   uint64
	File                   uint64
	Kernel                 uint64
	KernelStack            uint64
	Pagetables             uint64
	SecPagetables          uint64
	Percpu                 uint64
	Sock                   uint64
	Vmalloc                uint64
	Shmem                  uint64
	FileMapped             uint64
	FileDirty              uint64
	FileWriteback          uint64
	Slab                   uint64
	SlabReclaimable        uint64
	SlabUnreclaimable      uint64
	ActiveAnon             uint64
	InactiveAnon           uint64
	ActiveFile             uint64
	InactiveFile           uint64
	Unevictable            uint64
	WorkingsetRefaultAnon  uint64
	WorkingsetRefaultFile  uint64
	WorkingsetActivateAnon uint64
	WorkingsetActivateFile uint64
	WorkingsetRestoreAnon  uint64
	WorkingsetRestoreFile  uint64
	Pgscan                 uint64
	Pgsteal                uint64
	Pgfault                uint64
	Pgmajfault             uint64
	KernelDerived          bool
}

func memstatFromC(c *C.struct_mg_memstat) Memstat {
	return Memstat{
		Anon:                   uint64(c.anon),
		File:                   uint64(c.file),
		Kernel:                 uint64(c.kernel),
		KernelStack:            uint64(c.kernel_stack),
		Pagetables:             uint64(c.pagetables),
		SecPagetables:          uint64(c.sec_pagetables),
		Percpu:                 uint64(c.percpu),
		Sock:                   uint64(c.sock),
		Vmalloc:                uint64(c.vmalloc),
		Shmem:                  uint64(c.shmem),
		FileMapped:             uint64(c.file_mapped),
		FileDirty:              uint64(c.file_dirty),
		FileWriteback:          uint64(c.file_writeback),
		Slab:                   uint64(c.slab),
		SlabReclaimable:        uint64(c.slab_reclaimable),
		SlabUnreclaimable:      uint64(c.slab_unreclaimable),
		ActiveAnon:             uint64(c.active_anon),
		InactiveAnon:           uint64(c.inactive_anon),
		ActiveFile:             uint64(c.active_file),
		InactiveFile:           uint64(c.inactive_file),
		Unevictable:            uint64(c.unevictable),
		WorkingsetRefaultAnon:  uint64(c.workingset_refault_anon),
		WorkingsetRefaultFile:  uint64(c.workingset_refault_file),
		WorkingsetActivateAnon: uint64(c.workingset_activate_anon),
		WorkingsetActivateFile: uint64(c.workingset_activate_file),
		WorkingsetRestoreAnon:  uint64(c.workingset_restore_anon),
		WorkingsetRestoreFile:  uint64(c.workingset_restore_file),
		Pgscan:                 uint64(c.pgscan),
		Pgsteal:                uint64(c.pgsteal),
		Pgfault:                uint64(c.pgfault),
		Pgmajfault:             uint64(c.pgmajfault),
		KernelDerived:          bool(c.kernel_derived),
	}
}

func (m *Memstat) toC(c *C.struct_mg_memstat) {
	c.anon = C.uint64_t(m.Anon)
	c.file = C.uint64_t(m.File)
	c.kernel = C.uint64_t(m.Kernel)
	c.kernel_stack = C.uint64_t(m.KernelStack)
	c.pagetables = C.uint64_t(m.Pagetables)
	c.sec_pagetables = C.uint64_t(m.SecPagetables)
	c.percpu = C.uint64_t(m.Percpu)
	c.sock = C.uint64_t(m.Sock)
	c.vmalloc = C.uint64_t(m.Vmalloc)
	c.shmem = C.uint64_t(m.Shmem)
	c.file_mapped = C.uint64_t(m.FileMapped)
	c.file_dirty = C.uint64_t(m.FileDirty)
	c.file_writeback = C.uint64_t(m.FileWriteback)
	c.slab = C.uint64_t(m.Slab)
	c.slab_reclaimable = C.uint64_t(m.SlabReclaimable)
	c.slab_unreclaimable = C.uint64_t(m.SlabUnreclaimable)
	c.active_anon = C.uint64_t(m.ActiveAnon)
	c.inactive_anon = C.uint64_t(m.InactiveAnon)
	c.active_file = C.uint64_t(m.ActiveFile)
	c.inactive_file = C.uint64_t(m.InactiveFile)
	c.unevictable = C.uint64_t(m.Unevictable)
	c.workingset_refault_anon = C.uint64_t(m.WorkingsetRefaultAnon)
	c.workingset_refault_file = C.uint64_t(m.WorkingsetRefaultFile)
	c.workingset_activate_anon = C.uint64_t(m.WorkingsetActivateAnon)
	c.workingset_activate_file = C.uint64_t(m.WorkingsetActivateFile)
	c.workingset_restore_anon = C.uint64_t(m.WorkingsetRestoreAnon)
	c.workingset_restore_file = C.uint64_t(m.WorkingsetRestoreFile)
	c.pgscan = C.uint64_t(m.Pgscan)
	c.pgsteal = C.uint64_t(m.Pgsteal)
	c.pgfault = C.uint64_t(m.Pgfault)
	c.pgmajfault = C.uint64_t(m.Pgmajfault)
	c.kernel_derived = C.bool(m.KernelDerived)
}

// reclaimEventThroughC hands eventFromC an MG_EVENT_RECLAIM made from r, with
// windows and err as given (the window arrays hold r's stalls, then zeros),
// for the tests: a field the copy forgets comes back zero.
func reclaimEventThroughC(r *ReclaimInfo, windows uint32, err int) Event {
	var c C.struct_mg_reclaim_info
	c.target = C.CString(r.Target)
	defer C.free(unsafe.Pointer(c.target))
	c.why = uint32(r.Why)
	c.asked_bytes = C.uint64_t(r.AskedBytes)
	c.achieved_bytes = C.uint64_t(r.AchievedBytes)
	c.duration_usec = C.uint64_t(r.Duration / time.Microsecond)
	c.error = C.int(err)
	c.counted = C.bool(r.Counted)
	c.windows = C.uint32_t(windows)
	for i := 0; i < len(r.SomeStall) && i < C.MG_RECLAIM_WINDOWS_MAX; i++ {
		c.some_usec[i] = C.uint64_t(r.SomeStall[i] / time.Microsecond)
	}
	for i := 0; i < len(r.FullStall) && i < C.MG_RECLAIM_WINDOWS_MAX; i++ {
		c.full_usec[i] = C.uint64_t(r.FullStall[i] / time.Microsecond)
	}
	c.current_bytes = C.uint64_t(r.CurrentBytes)
	c.file_bytes = C.uint64_t(r.FileBytes)
	cg := C.CString("/sys/fs/cgroup/w/vm-7")
	defer C.free(unsafe.Pointer(cg))
	var ev C.struct_mg_event
	ev._type = C.MG_EVENT_RECLAIM
	ev.cgroup = cg
	ev.reclaim = &c
	return eventFromC(&ev)
}

// killEventThroughC hands eventFromC an event of type t whose .kill is k in
// C (as MG_EVENT_PARK and MG_EVENT_THAW carry the park's record), for the
// tests: a field the copy forgets comes back zero.
func killEventThroughC(t EventType, k *KillRecord) Event {
	var c C.struct_mg_kill_record
	k.toC(&c)
	defer C.free(unsafe.Pointer(c.cgroup))
	var ev C.struct_mg_event
	ev._type = uint32(t)
	ev.cgroup = c.cgroup
	ev.time_usec = C.uint64_t(k.Report.FrozenUsec)
	ev.kill = &c
	return eventFromC(&ev)
}

// roundTripKillRecord passes k through the C record and back, for the tests:
// a field either copy forgets comes back zero.
func roundTripKillRecord(k *KillRecord) *KillRecord {
	var c C.struct_mg_kill_record
	k.toC(&c)
	defer C.free(unsafe.Pointer(c.cgroup))
	return killRecordFromC(&c)
}
