// SPDX-License-Identifier: Apache-2.0

package cgroupguard

/*
#cgo pkg-config: memguard
#include <poll.h>
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"context"
	"runtime"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// NoDeadline, as a lend's deadline, means the lend lasts until it is ended.
const NoDeadline = time.Duration(1<<63 - 1)

// Unlimited as a byte count is "max" in a cgroup limit file: a lend of
// Unlimited removes memory.high, a Report's MaxBytes reads Unlimited for
// "max".
const Unlimited = ^uint64(0)

// LogLevel is the level of a log line, as syslog's (enum mg_log_level).
type LogLevel int

// The levels of log lines, syslog's numbers.
const (
	// LogErr is syslog's LOG_ERR (3).
	LogErr LogLevel = 3
	// LogWarning is syslog's LOG_WARNING (4).
	LogWarning LogLevel = 4
	// LogInfo is syslog's LOG_INFO (6).
	LogInfo LogLevel = 6
	// LogDebug is syslog's LOG_DEBUG (7).
	LogDebug LogLevel = 7
)

// usec converts a duration to microseconds; a negative one is an error and
// NoDeadline (or anything past the clock's end) is "none".
func usec(d time.Duration) (C.uint64_t, error) {
	if d < 0 {
		return 0, syscall.EINVAL
	}
	if d == NoDeadline {
		return C.uint64_t(Unlimited), nil
	}
	return C.uint64_t(d / time.Microsecond), nil
}

func duration(us C.uint64_t) time.Duration {
	if uint64(us) >= uint64(NoDeadline/time.Microsecond) {
		return NoDeadline
	}
	return time.Duration(us) * time.Microsecond
}

// logTarget is what a log handle stands for: a set, a guard, or a snapshot
// write.
type logTarget interface {
	logLine(level LogLevel, msg string)
}

// SetOptions are the options of a set. A nil *SetOptions means none.
type SetOptions struct {
	// Log gets the set's own lines (a restore that failed for a guard
	// already removed). Called on the set's thread.
	Log func(level LogLevel, msg string)
}

// Set is a guard set: many guards, one OS thread, one fd. See the package
// documentation for which goroutine may call what.
type Set struct {
	ptr    *C.mg_set
	handle cgo.Handle
	log    func(LogLevel, string)
	tid    int         // the set's thread
	token  C.uintptr_t // cgg_thread_token() of the set's thread
	loop   bool        // Start's: the binding runs the loop
	// Process of a NewSet set is under way (its fast path, below).
	processing int32

	// mu is held around every call on the C set, and is the lock of
	// snapshot writes with a guard of the set.  holder is the thread that
	// holds it (0: none); depth and releaseAtOne are touched by the holder
	// only.
	mu           sync.Mutex
	holder       int32
	depth        int
	releaseAtOne bool

	guards map[*Guard]struct{}
	closed bool
	// exited is closed when the set is closed: for a set of Start's, once
	// its loop has ended.
	exited chan struct{}

	// Start's loop: requests from other goroutines, and the pipe that wakes
	// the loop for them.
	reqMu  sync.Mutex
	reqs   []func()
	wakeR  int
	wakeW  int
	runErr error
}

func (s *Set) logLine(level LogLevel, msg string) {
	if s.log != nil {
		s.log(level, msg)
	}
}

func newCSet(s *Set, o *SetOptions) error {
	var copt C.struct_mg_set_options
	copt.size = C.uint64_t(unsafe.Sizeof(copt))
	s.handle = cgo.NewHandle(s)
	if o != nil && o.Log != nil {
		s.log = o.Log
		C.cgg_set_options_set_log(&copt, C.uintptr_t(s.handle))
	}
	var p *C.mg_set
	if err := errno(C.mg_set_new(&copt, &p)); err != nil {
		s.handle.Delete()
		return err
	}
	s.ptr = p
	s.guards = make(map[*Guard]struct{})
	return nil
}

// NewSet makes a set for a caller that runs its own loop: poll Fd for
// reading, or sleep until NextTick, then call Process. The calling goroutine
// must be locked to its OS thread (runtime.LockOSThread) for the set's life:
// every call on the set, its guards and lends must come from that thread
// (another panics), and the callbacks run on it, inside Process. A
// SnapshotWrite with one of its guards is the exception: it may run on any
// goroutine.
func NewSet(o *SetOptions) (*Set, error) {
	s := &Set{tid: syscall.Gettid(), token: C.cgg_thread_token(), exited: make(chan struct{})}
	if err := newCSet(s, o); err != nil {
		return nil, wrap("new set", "", err)
	}
	return s, nil
}

// Start makes a set whose loop runs on a goroutine of its own, locked to an
// OS thread for the set's life: it polls the set's fd and calls Process, and
// runs the calls other goroutines make on the set. Close ends it.
func Start(o *SetOptions) (*Set, error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		return nil, wrap("start", "", err)
	}
	s := &Set{loop: true, wakeR: p[0], wakeW: p[1], exited: make(chan struct{})}
	started := make(chan error, 1)
	go s.run(o, started)
	if err := <-started; err != nil {
		syscall.Close(p[0])
		syscall.Close(p[1])
		return nil, wrap("start", "", err)
	}
	return s, nil
}

// StartContext is Start with the set's life bound to ctx: when ctx is done
// the set is closed, as by Close (every guard removed, the set freed, its
// loop and its thread ended, its fds closed); Done is closed then. Close
// before that works as for Start. A ctx done already is an error wrapping
// ctx.Err(), and no set.
func StartContext(ctx context.Context, o *SetOptions) (*Set, error) {
	if err := ctx.Err(); err != nil {
		return nil, wrap("start", "", err)
	}
	s, err := Start(o)
	if err != nil {
		return nil, err
	}
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-s.exited:
		}
	}()
	return s, nil
}

// Done is closed once the set is closed (Close, the end of StartContext's
// ctx or of Run): for a set of Start's, after its loop has ended.
func (s *Set) Done() <-chan struct{} { return s.exited }

// Run runs the loop of a set of NewSet on the calling goroutine, which must
// be the set's own (locked) thread: it polls Fd and calls Process until ctx
// is done, then closes the set (as Close) and returns ctx.Err() as it is
// (context.Canceled or context.DeadlineExceeded). An error of Process is
// logged to the set's Log and the loop goes on, as Start's does. Other
// errors: EINVAL for a set of Start's (its loop runs already), EBADF for a
// closed set, EDEADLK from inside a callback.
func (s *Set) Run(ctx context.Context) error {
	if s.loop {
		return wrap("run", "", syscall.EINVAL)
	}
	tid := syscall.Gettid()
	if int(atomic.LoadInt32(&s.holder)) == tid {
		return wrap("run", "", syscall.EDEADLK)
	}
	if tid != s.tid {
		panic("cgroupguard: a Set made by NewSet used from another thread than its own")
	}
	if s.closed {
		return wrap("run", "", syscall.EBADF)
	}
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		return wrap("run", "", err)
	}
	defer syscall.Close(p[0])
	defer syscall.Close(p[1])
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-ctx.Done():
			syscall.Write(p[1], []byte{1})
		case <-stop:
		}
	}()
	fds := [2]C.struct_pollfd{
		{fd: C.int(p[0]), events: C.POLLIN},
		{fd: C.mg_set_get_fd(s.ptr), events: C.POLLIN},
	}
	for {
		if err := ctx.Err(); err != nil {
			s.Close()
			return err
		}
		fds[0].revents, fds[1].revents = 0, 0
		if C.poll(&fds[0], 2, -1) < 0 {
			continue // EINTR
		}
		if fds[1].revents != 0 {
			if _, err := s.Process(); err != nil {
				s.logLine(LogErr, err.Error())
			}
		}
	}
}

func (s *Set) run(o *SetOptions, started chan<- error) {
	// Never unlocked: the thread ends with the goroutine, and with it
	// anything the library left on it.
	runtime.LockOSThread()
	s.tid = syscall.Gettid()
	if err := newCSet(s, o); err != nil {
		started <- err
		return
	}
	started <- nil
	defer close(s.exited)
	fds := [2]C.struct_pollfd{
		{fd: C.int(s.wakeR), events: C.POLLIN},
		{fd: C.mg_set_get_fd(s.ptr), events: C.POLLIN},
	}
	for {
		fds[0].revents, fds[1].revents = 0, 0
		if C.poll(&fds[0], 2, -1) < 0 {
			continue // EINTR
		}
		if fds[0].revents != 0 {
			var b [64]byte
			for {
				if n, _ := syscall.Read(s.wakeR, b[:]); n <= 0 {
					break
				}
			}
			s.reqMu.Lock()
			reqs := s.reqs
			s.reqs = nil
			s.reqMu.Unlock()
			s.lock()
			for _, f := range reqs {
				f()
			}
			s.unlock()
			if s.closed {
				syscall.Close(s.wakeR)
				syscall.Close(s.wakeW)
				return
			}
		}
		if fds[1].revents != 0 {
			s.lock()
			r := C.mg_set_process(s.ptr)
			s.unlock()
			if r < 0 && s.runErr == nil {
				s.runErr = wrap("process", "", errno(r))
				s.logLine(LogErr, s.runErr.Error())
			}
		}
	}
}

// lock takes mu for the calling thread; a thread that holds it already
// (a snapshot write's lock taken again) counts one more.
func (s *Set) lock() {
	s.lockAs(int32(syscall.Gettid()))
}

func (s *Set) lockAs(tid int32) {
	if atomic.LoadInt32(&s.holder) == tid {
		s.depth++
		return
	}
	s.mu.Lock()
	atomic.StoreInt32(&s.holder, tid)
	s.depth = 1
}

func (s *Set) unlock() {
	s.depth--
	if s.depth == 1 && s.releaseAtOne {
		s.releaseAtOne = false
		s.depth = 0
	}
	if s.depth == 0 {
		atomic.StoreInt32(&s.holder, 0)
		s.mu.Unlock()
	}
}

// do runs f on the set's terms: at once from a thread that holds the set's
// lock (inside a callback, or a snapshot write's), on the set's thread under
// the lock otherwise.  A set of Start's takes calls from anywhere; NewSet's
// only from its own thread.
func (s *Set) do(f func()) {
	tid := syscall.Gettid()
	if int(atomic.LoadInt32(&s.holder)) == tid {
		f()
		return
	}
	if tid != s.tid {
		if !s.loop {
			panic("cgroupguard: a Set made by NewSet used from another thread than its own")
		}
		s.post(f)
		return
	}
	s.lockAs(int32(tid))
	f()
	s.unlock()
}

// post hands f to the loop of a set of Start's and waits until it ran.
func (s *Set) post(f func()) {
	done := make(chan struct{})
	s.reqMu.Lock()
	select {
	case <-s.exited:
		s.reqMu.Unlock()
		f() // the set is closed: f sees s.closed and returns its error
		return
	default:
	}
	s.reqs = append(s.reqs, func() { f(); close(done) })
	s.reqMu.Unlock()
	syscall.Write(s.wakeW, []byte{1})
	select {
	case <-done:
	case <-s.exited:
		// The loop ended (Close) before it ran f: f's set is closed.
		select {
		case <-done:
		default:
			f()
		}
	}
}

// Close removes every guard, frees the set and, for a set of Start's, ends
// its loop. It waits for the restores of lends still open (seconds at
// worst, on 6.1 and 6.12). Nothing is told of those ends. Calling it again
// does nothing; calling it from a callback is EDEADLK.
func (s *Set) Close() error {
	if int(atomic.LoadInt32(&s.holder)) == syscall.Gettid() {
		return wrap("close", "", syscall.EDEADLK) // inside a callback, or a snapshot write's lock
	}
	s.do(func() {
		if s.closed {
			return
		}
		s.closed = true
		C.mg_set_free(s.ptr)
		s.ptr = nil
		for g := range s.guards {
			g.forget()
		}
		s.guards = nil
		s.handle.Delete()
		if s.loop {
			syscall.Write(s.wakeW, []byte{1})
		} else {
			close(s.exited)
		}
	})
	if s.loop && syscall.Gettid() != s.tid {
		<-s.exited
	}
	return nil
}

// Fd is the set's epoll fd, to poll for reading (NewSet's loop). -1 once
// closed.
func (s *Set) Fd() int {
	fd := -1
	s.do(func() {
		if !s.closed {
			fd = int(C.mg_set_get_fd(s.ptr))
		}
	})
	return fd
}

// NextTick is the CLOCK_MONOTONIC time, in microseconds, of the next due
// tick; ok is false if none is due.
func (s *Set) NextTick() (usec uint64, ok bool, err error) {
	var t C.uint64_t
	s.do(func() {
		if s.closed {
			err = syscall.EBADF
			return
		}
		err = errno(C.mg_set_get_timeout(s.ptr, &t))
	})
	if err != nil {
		return 0, false, wrap("next tick", "", err)
	}
	return uint64(t), uint64(t) != Unlimited, nil
}

// Process runs every due tick and pending notification; callbacks run in
// it. It returns how many guards acted (a kill, a lend that ended). For
// NewSet's loop; Start's loop calls it itself.
func (s *Set) Process() (int, error) {
	if !s.loop && atomic.LoadInt32(&s.processing) == 0 {
		return s.processFast()
	}
	var r C.int
	s.do(func() {
		if s.closed {
			r = -C.int(syscall.EBADF)
			return
		}
		if atomic.LoadInt32(&s.processing) != 0 {
			r = -C.int(syscall.EDEADLK) // from inside a callback
			return
		}
		r = C.mg_set_process(s.ptr)
	})
	if r < 0 {
		return 0, wrap("process", "", errno(r))
	}
	return int(r), nil
}

// processFast is Process for a set of NewSet's on its own thread, without
// the system call (gettid) that do() makes: the C side checks the thread by
// a thread-local's address.  A call on another thread returns from C at
// once, and panics.  Inside a callback, processing is set and Process takes
// do()'s way (which says EDEADLK: mg_set_process() is not re-entrant).
func (s *Set) processFast() (int, error) {
	s.mu.Lock()
	atomic.StoreInt32(&s.holder, int32(s.tid))
	s.depth = 1
	atomic.StoreInt32(&s.processing, 1)
	r := -C.int(syscall.EBADF)
	if !s.closed {
		r = C.cgg_set_process(s.ptr, s.token)
	}
	atomic.StoreInt32(&s.processing, 0)
	s.unlock()
	if r == C.CGG_WRONG_THREAD {
		panic("cgroupguard: a Set made by NewSet used from another thread than its own")
	}
	if r < 0 {
		return 0, wrap("process", "", errno(r))
	}
	return int(r), nil
}

// Stats is what every guard of the set has counted, those removed since
// included.
func (s *Set) Stats() (Stats, error) {
	var c C.struct_mg_stats
	var r C.int = -C.int(syscall.EINVAL)
	c.size = C.uint64_t(unsafe.Sizeof(c))
	s.do(func() {
		if !s.closed {
			r = C.mg_set_get_stats(s.ptr, &c)
		}
	})
	if err := errno(r); err != nil {
		return Stats{}, wrap("stats", "", err)
	}
	return guardStatsFromC(&c), nil
}

// Len is the number of guards in the set.
func (s *Set) Len() int {
	n := 0
	s.do(func() {
		if !s.closed {
			n = int(C.mg_set_size(s.ptr))
		}
	})
	return n
}

// Add makes a guard of the actor's cgroup v2 directory and adds it to the
// set. Errors are those of mg_guard_new(): ENOTSUP (not cgroup2), ENOENT,
// ELOOP (a symlink), EACCES, EINVAL, E2BIG, ENOMEM.
func (s *Set) Add(cgroupPath string, o Options) (*Guard, error) {
	copt, err := o.toC()
	if err != nil {
		return nil, wrap("add", cgroupPath, err)
	}
	defer freeOptionsC(&copt)
	g := &Guard{set: s, onEvent: o.OnEvent, log: o.Log, path: cgroupPath}
	cpath := C.CString(cgroupPath)
	defer C.free(unsafe.Pointer(cpath))
	s.do(func() {
		if s.closed {
			err = syscall.EBADF
			return
		}
		g.handle = cgo.NewHandle(g)
		withLog := C.int(0)
		if o.Log != nil {
			withLog = 1
		}
		C.cgg_options_set_callbacks(&copt, C.uintptr_t(g.handle), withLog)
		var p *C.mg_guard
		if err = errno(C.mg_set_add(s.ptr, cpath, &copt, &p)); err != nil {
			g.handle.Delete()
			return
		}
		g.ptr = p
		s.guards[g] = struct{}{}
	})
	if err != nil {
		return nil, wrap("add", cgroupPath, err)
	}
	return g, nil
}

//export cggLog
func cggLog(level C.int, msg *C.char, h C.uintptr_t) {
	cgo.Handle(h).Value().(logTarget).logLine(LogLevel(level), C.GoString(msg))
}

//export cggEvent
func cggEvent(_ *C.mg_guard, ev *C.struct_mg_event, h C.uintptr_t) {
	g := cgo.Handle(h).Value().(*Guard)
	e := eventFromC(ev)
	if g.onEvent != nil {
		g.onEvent(g, e)
	}
}

//export cggLock
func cggLock(h C.uintptr_t, lock C.int) {
	s := cgo.Handle(h).Value().(*Set)
	if lock != 0 {
		s.lock()
	} else {
		s.unlock()
	}
}
