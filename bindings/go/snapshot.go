// SPDX-License-Identifier: Apache-2.0

package cgroupguard

/*
#include <stdlib.h>
#include "shim.h"

// The source and target structs are built here, on the C side, so that no
// Go memory holds a Go pointer when it is passed (cgo's pointer rules): the
// image's address is an argument, valid for the call.
static int cgg_snapshot_write(uint32_t kind, int fd, const void *addr, uint64_t offset, uint64_t length,
                              int dirfd, const char *name, const struct mg_snapshot_options *o,
                              struct mg_snapshot_stats *ret) {
        struct mg_snapshot_source src = { .kind = kind, .fd = fd, .addr = addr, .offset = offset, .length = length };
        return mg_snapshot_write(&src, dirfd, name, o, ret);
}

static int cgg_snapshot_restore(int dirfd, const char *name, uint32_t kind, int fd, void *addr, uint64_t offset,
                                uint64_t length, const struct mg_snapshot_options *o, struct mg_snapshot_stats *ret) {
        struct mg_snapshot_target dst = { .kind = kind, .fd = fd, .addr = addr, .offset = offset, .length = length };
        return mg_snapshot_restore(dirfd, name, &dst, o, ret);
}
*/
import "C"

import (
	"runtime"
	"runtime/cgo"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// SnapshotMethod is how a snapshot is written or read.
type SnapshotMethod uint32

// The methods of a snapshot write or restore (MG_SNAPSHOT_*).
const (
	// SnapshotAuto is direct, else dontcache, else windowed.
	SnapshotAuto SnapshotMethod = 0
	// SnapshotDirect is O_DIRECT: no page cache at all.
	SnapshotDirect SnapshotMethod = 1
	// SnapshotDontcache is pwritev2(RWF_DONTCACHE), 6.14+, waited per window.
	SnapshotDontcache SnapshotMethod = 2
	// SnapshotWindowed is buffered, written back and dropped behind each window.
	SnapshotWindowed SnapshotMethod = 3
	// SnapshotBuffered is plain write() + fsync, the baseline.
	SnapshotBuffered SnapshotMethod = 4
)

// String is the method's name, as mg_snapshot_method_to_string() gives it.
func (m SnapshotMethod) String() string {
	return C.GoString(C.mg_snapshot_method_to_string(uint32(m)))
}

// SnapshotNoSync, in SnapshotOptions.Flags, skips the fdatasync of the file
// and the fsync of the directory (MG_SNAPSHOT_NO_SYNC).
const SnapshotNoSync = 1 << 0

// SnapshotImage is guest memory: Memory (mapped guest RAM, its length a
// multiple of the page size) or, if Memory is nil, Length bytes of the file
// Fd from Offset (memfd or shmem guest RAM).
type SnapshotImage struct {
	Memory []byte
	Fd     int
	Offset uint64
	Length uint64
}

// SnapshotOptions of a write or restore; a zero field means the default
// (memguard/snapshot.h). A nil *SnapshotOptions means all defaults.
type SnapshotOptions struct {
	Flags        uint32 // SnapshotNoSync
	Method       SnapshotMethod
	Guard        *Guard // the write runs in a lend of it; restore ignores it
	LendBytes    uint64 // Unlimited removes memory.high for the write
	LendDeadline time.Duration
	WindowBytes  uint64
	ReclaimBytes uint64
	ChunkBytes   uint32
	Mode         uint32 // of the published file; default 0600
	MinHoleBytes uint64
	Log          func(level LogLevel, msg string)
}

// SnapshotStats say what a write or restore did; the *Usec fields are how
// long each phase took, in microseconds (memguard/snapshot.h).
type SnapshotStats struct {
	Method                SnapshotMethod
	PageSize              uint32
	ImageBytes            uint64
	DataBytes             uint64
	SkippedBytes          uint64
	HoleBytes             uint64
	ZeroBytes             uint64
	FileBytes             uint64
	AllocatedBytes        uint64
	WindowBytes           uint64
	LendBytes             uint64
	ReclaimedRequestBytes uint64
	ReclaimError          error // of the memory.reclaim write: nil, EAGAIN, ...
	Ranges                uint32
	LendBeginUsec         uint64
	WriteUsec, SyncUsec   uint64
	ReclaimUsec           uint64
	LendEndUsec           uint64
	PublishUsec           uint64
	ReadUsec, ZeroUsec    uint64
	TotalUsec             uint64
}

type logFunc func(LogLevel, string)

func (f logFunc) logLine(level LogLevel, msg string) { f(level, msg) }

func statsFromC(c *C.struct_mg_snapshot_stats) SnapshotStats {
	s := SnapshotStats{
		Method: SnapshotMethod(c.method), PageSize: uint32(c.page_size), ImageBytes: uint64(c.image_bytes),
		DataBytes: uint64(c.data_bytes), SkippedBytes: uint64(c.skipped_bytes), HoleBytes: uint64(c.hole_bytes),
		ZeroBytes: uint64(c.zero_bytes), FileBytes: uint64(c.file_bytes), AllocatedBytes: uint64(c.allocated_bytes),
		WindowBytes: uint64(c.window_bytes), LendBytes: uint64(c.lend_bytes),
		ReclaimedRequestBytes: uint64(c.reclaimed_request_bytes), Ranges: uint32(c.ranges),
		LendBeginUsec: uint64(c.lend_begin_usec), WriteUsec: uint64(c.write_usec), SyncUsec: uint64(c.sync_usec),
		ReclaimUsec: uint64(c.reclaim_usec), LendEndUsec: uint64(c.lend_end_usec), PublishUsec: uint64(c.publish_usec),
		ReadUsec: uint64(c.read_usec), ZeroUsec: uint64(c.zero_usec), TotalUsec: uint64(c.total_usec),
	}
	if c.reclaim_error < 0 {
		s.ReclaimError = syscall.Errno(-c.reclaim_error)
	}
	return s
}

// snapshotOptions fills c from o; the handles it returns are the caller's to
// delete once the call is over.
func snapshotOptions(o *SnapshotOptions, c *C.struct_mg_snapshot_options) (set *Set, logH cgo.Handle, err error) {
	C.mg_snapshot_options_init(c)
	if o == nil {
		return nil, 0, nil
	}
	c.flags = C.uint32_t(o.Flags)
	c.method = C.uint32_t(o.Method)
	c.lend_bytes = C.uint64_t(o.LendBytes)
	if c.lend_deadline_usec, err = usec(o.LendDeadline); err != nil {
		return nil, 0, err
	}
	c.window_bytes = C.uint64_t(o.WindowBytes)
	c.reclaim_bytes = C.uint64_t(o.ReclaimBytes)
	c.chunk_bytes = C.uint32_t(o.ChunkBytes)
	c.mode = C.uint32_t(o.Mode)
	c.min_hole_bytes = C.uint64_t(o.MinHoleBytes)
	var sh C.uintptr_t
	if o.Guard != nil {
		set = o.Guard.set
		sh = C.uintptr_t(set.handle)
	}
	if o.Log != nil {
		logH = cgo.NewHandle(logFunc(o.Log))
	}
	C.cgg_snapshot_options_set_callbacks(c, sh, C.uintptr_t(logH))
	return set, logH, nil
}

func image(img *SnapshotImage) (kind C.uint32_t, addr unsafe.Pointer, length C.uint64_t) {
	if img.Memory != nil {
		if len(img.Memory) > 0 {
			addr = unsafe.Pointer(&img.Memory[0])
		}
		return C.MG_SNAPSHOT_MEMORY, addr, C.uint64_t(len(img.Memory))
	}
	return C.MG_SNAPSHOT_FD, nil, C.uint64_t(img.Length)
}

// SnapshotWrite writes src to dirfd/name (dirfd may be unix AT_FDCWD, -100)
// atomically, inside a lend of o.Guard if set: memory.high is back to its
// exact previous value when it returns. It runs on the calling goroutine
// (any goroutine, for as long as the write takes) and takes the guard's set's
// lock around each of its calls on the guard, so the set goes on ticking. The
// guard stays alive until the write returns, even if it is removed meanwhile.
// Errors are listed in memguard/snapshot.h.
func SnapshotWrite(src SnapshotImage, dirfd int, name string, o *SnapshotOptions) (SnapshotStats, error) {
	var copt C.struct_mg_snapshot_options
	set, logH, err := snapshotOptions(o, &copt)
	if err != nil {
		return SnapshotStats{}, wrap("snapshot write", name, err)
	}
	if logH != 0 {
		defer logH.Delete()
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var st C.struct_mg_snapshot_stats
	st.size = C.uint64_t(unsafe.Sizeof(st))
	kind, addr, length := image(&src)

	var r C.int
	if set == nil {
		r = C.cgg_snapshot_write(kind, C.int(src.Fd), addr, C.uint64_t(src.Offset), length, C.int(dirfd), cname, &copt, &st)
		if r < 0 {
			return SnapshotStats{}, wrap("snapshot write", name, errno(r))
		}
		return statsFromC(&st), nil
	}
	// With a guard: the write's first call on the guard holds it (under the
	// set's lock).  Between the check that the guard is still in its set and
	// that hold the set's thread must not free it, so the lock is taken here
	// and given up at the end of that first call (releaseAtOne), or after
	// the write if it failed before making it.  The lock knows its holder
	// by thread: the goroutine must not move between taking it here and the
	// write's calls.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := int32(syscall.Gettid())
	set.lock()
	if set.closed || o.Guard.ptr == nil {
		set.unlock()
		return SnapshotStats{}, wrap("snapshot write", name, syscall.EINVAL)
	}
	copt.guard = o.Guard.ptr
	set.releaseAtOne = true
	r = C.cgg_snapshot_write(kind, C.int(src.Fd), addr, C.uint64_t(src.Offset), length, C.int(dirfd), cname, &copt, &st)
	if atomic.LoadInt32(&set.holder) == tid && set.releaseAtOne {
		set.releaseAtOne = false
		set.unlock()
	}
	if r < 0 {
		return SnapshotStats{}, wrap("snapshot write", name, errno(r))
	}
	return statsFromC(&st), nil
}

// SnapshotRestore reads dirfd/name into dst, verifying every checksum.
// EBADMSG: not a valid snapshot for this system; EMSGSIZE: dst's length
// differs from the image's.
func SnapshotRestore(dirfd int, name string, dst SnapshotImage, o *SnapshotOptions) (SnapshotStats, error) {
	var copt C.struct_mg_snapshot_options
	if o != nil {
		oo := *o
		oo.Guard = nil // restore takes no lend
		o = &oo
	}
	_, logH, err := snapshotOptions(o, &copt)
	if err != nil {
		return SnapshotStats{}, wrap("snapshot restore", name, err)
	}
	if logH != 0 {
		defer logH.Delete()
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var st C.struct_mg_snapshot_stats
	st.size = C.uint64_t(unsafe.Sizeof(st))
	kind, addr, length := image(&dst)
	r := C.cgg_snapshot_restore(C.int(dirfd), cname, kind, C.int(dst.Fd), addr, C.uint64_t(dst.Offset), length, &copt, &st)
	if r < 0 {
		return SnapshotStats{}, wrap("snapshot restore", name, errno(r))
	}
	return statsFromC(&st), nil
}
