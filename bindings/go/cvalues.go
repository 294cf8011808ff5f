// SPDX-License-Identifier: Apache-2.0

package cgroupguard

/*
#include "shim.h"
*/
import "C"

// cValues are the C values of the constants this package spells as Go
// literals (so that godoc shows them), by their Go names, for the test that
// keeps the two equal: a test file cannot use cgo.
func cValues() map[string]int64 {
	return map[string]int64{
		"EventKill":              C.MG_EVENT_KILL,
		"EventLendBegin":         C.MG_EVENT_LEND_BEGIN,
		"EventLendEnd":           C.MG_EVENT_LEND_END,
		"EventLendExpired":       C.MG_EVENT_LEND_EXPIRED,
		"EventError":             C.MG_EVENT_ERROR,
		"EventGone":              C.MG_EVENT_GONE,
		"EventKernelOOM":         C.MG_EVENT_KERNEL_OOM,
		"EventThrottled":         C.MG_EVENT_THROTTLED,
		"EventEmptyOverLimit":    C.MG_EVENT_EMPTY_OVER_LIMIT,
		"EventUnkillable":        C.MG_EVENT_UNKILLABLE,
		"EventKillDryRun":        C.MG_EVENT_KILL_DRY_RUN,
		"EventPreKill":           C.MG_EVENT_PRE_KILL,
		"EventKillAverted":       C.MG_EVENT_KILL_AVERTED,
		"EventReclaim":           C.MG_EVENT_RECLAIM,
		"EventPark":              C.MG_EVENT_PARK,
		"EventThaw":              C.MG_EVENT_THAW,
		"ParkOpen":               C.MG_PARK_OPEN,
		"ParkEndKill":            C.MG_PARK_END_KILL,
		"ParkEndThaw":            C.MG_PARK_END_THAW,
		"ParkEndDeadline":        C.MG_PARK_END_DEADLINE,
		"ParkEndBound":           C.MG_PARK_END_BOUND,
		"ParkEndNotFrozen":       C.MG_PARK_END_NOT_FROZEN,
		"ParkEndOverLimit":       C.MG_PARK_END_OVER_LIMIT,
		"ParkEndNoFreeze":        C.MG_PARK_END_NO_FREEZE,
		"ParkKill":               C.MG_PARK_KILL,
		"ParkThaw":               C.MG_PARK_THAW,
		"MaxParkDeadline":        C.MG_PARK_MAX_USEC, // microseconds
		"ReclaimPressure":        C.MG_RECLAIM_PRESSURE,
		"ReclaimHeadroom":        C.MG_RECLAIM_HEADROOM,
		"MaxReclaimWindows":      C.MG_RECLAIM_WINDOWS_MAX,
		"MaxReclaimDoseDuration": C.MG_RECLAIM_DOSE_MAX_USEC, // microseconds
		"VerdictOK":              C.MG_VERDICT_OK,
		"VerdictNear":            C.MG_VERDICT_NEAR,
		"VerdictStalling":        C.MG_VERDICT_STALLING,
		"VerdictOvershoot":       C.MG_VERDICT_OVERSHOOT,
		"VerdictStall":           C.MG_VERDICT_STALL,
		"StallMemory":            C.MG_STALL_MEMORY,
		"StallIO":                C.MG_STALL_IO,
		"StallRefault":           C.MG_STALL_REFAULT,
		"KillOvershoot":          C.MG_KILL_OVERSHOOT,
		"KillStall":              C.MG_KILL_STALL,
		"KillCgroupKill":         C.MG_KILL_CGROUP_KILL,
		"KillPidfd":              C.MG_KILL_PIDFD,
		"LogErr":                 C.MG_LOG_ERR,
		"LogWarning":             C.MG_LOG_WARNING,
		"LogInfo":                C.MG_LOG_INFO,
		"LogDebug":               C.MG_LOG_DEBUG,
		"SnapshotAuto":           C.MG_SNAPSHOT_AUTO,
		"SnapshotDirect":         C.MG_SNAPSHOT_DIRECT,
		"SnapshotDontcache":      C.MG_SNAPSHOT_DONTCACHE,
		"SnapshotWindowed":       C.MG_SNAPSHOT_WINDOWED,
		"SnapshotBuffered":       C.MG_SNAPSHOT_BUFFERED,
		"SnapshotNoSync":         C.MG_SNAPSHOT_NO_SYNC,
		"MaxPreKillDefer":        C.MG_PRE_KILL_MAX_DEFER_USEC, // microseconds
	}
}
