// SPDX-License-Identifier: Apache-2.0

// Tests that need no cgroup: options, errors, the set's threading, kill
// records, snapshots on a plain directory. The library's fixture trees are
// not reachable from here (see bindings/README.md); vm_test.go runs the
// guards on a real kernel.
package cgroupguard

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestDefaultOptionsAreTheLibrarysTuning(t *testing.T) {
	// docs/tuning.md's row for 256 MiB.
	o, err := DefaultOptions(256 << 20)
	if err != nil {
		t.Fatal(err)
	}
	want := Options{
		LimitBytes: 256 << 20, Tick: 250 * time.Millisecond, MarginBytes: 16 << 20,
		StallWindow: 3 * time.Second, StallPressurePermyriad: 1000,
		LendDeadline: 15 * time.Second, KillWait: 2 * time.Second,
		PostKillHoldoff: 2250 * time.Millisecond, RefaultWindow: 20 * time.Second,
		RefaultMappedWindow: 12 * time.Second,
	}
	if !reflect.DeepEqual(o, want) {
		t.Fatalf("DefaultOptions(256 MiB) = %+v, want %+v", o, want)
	}
	c, err := o.toC()
	if err != nil {
		t.Fatal(err)
	}
	if back := optionsFromC(&c); !reflect.DeepEqual(back, want) {
		t.Fatalf("options through C = %+v, want %+v", back, want)
	}
	o.Tick = -time.Second
	if _, err := o.toC(); err != syscall.EINVAL {
		t.Fatalf("a negative duration: %v, want EINVAL", err)
	}
}

// Every error is an *Error: the operation, the path, and the errno the C
// call returned, which errors.Is and errors.As find.
func TestErrorsCarryOpPathAndErrno(t *testing.T) {
	for _, limit := range []uint64{0, Unlimited} {
		_, err := DefaultOptions(limit)
		var e syscall.Errno
		if !errors.As(err, &e) || e != syscall.EINVAL {
			t.Fatalf("DefaultOptions(%d): %v, want syscall.EINVAL", limit, err)
		}
		var ge *Error
		if !errors.As(err, &ge) || ge.Op != "default options" || ge.Path != "" ||
			err.Error() != "cgroupguard: default options: invalid argument" {
			t.Fatalf("DefaultOptions(%d): %#v", limit, err)
		}
	}
	set, err := Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	opt, _ := DefaultOptions(64 << 20)
	dir := t.TempDir()
	os.Symlink(dir, filepath.Join(dir, "link"))
	for _, c := range []struct {
		path string
		want syscall.Errno
	}{
		{dir, syscall.ENOTSUP}, // a plain directory is not cgroup2
		{filepath.Join(dir, "none"), syscall.ENOENT},
		{filepath.Join(dir, "link"), syscall.ELOOP},
	} {
		g, err := set.Add(c.path, opt)
		if g != nil || !errors.Is(err, c.want) {
			t.Errorf("Add(%s) = %v, %v; want nil, %v", c.path, g, err, c.want)
		}
		var e *Error
		if !errors.As(err, &e) || e.Op != "add" || e.Path != c.path || e.Err != c.want {
			t.Errorf("Add(%s): %#v, want *Error{add, the path, %v}", c.path, err, c.want)
		} else if want := "cgroupguard: add " + c.path + ": " + c.want.Error(); err.Error() != want {
			t.Errorf("Add(%s): %q, want %q", c.path, err, want)
		}
	}
	if n := set.Len(); n != 0 {
		t.Fatalf("Len after failed adds = %d", n)
	}
}

func TestOwnLoopSetBelongsToItsThread(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	set, err := NewSet(&SetOptions{Log: func(LogLevel, string) {}})
	if err != nil {
		t.Fatal(err)
	}
	if fd := set.Fd(); fd < 0 {
		t.Fatalf("Fd = %d", fd)
	}
	if _, ok, err := set.NextTick(); ok || err != nil {
		t.Fatalf("NextTick of an empty set: ok %v, %v", ok, err)
	}
	if n, err := set.Process(); n != 0 || err != nil {
		t.Fatalf("Process = %d, %v", n, err)
	}
	// Another goroutine, on another thread for sure: a programming error,
	// caught by do() (gettid) and by Process's own check (in C).
	for _, call := range []func(){func() { set.Len() }, func() { set.Process() }} {
		res := make(chan interface{})
		go func() {
			runtime.LockOSThread()
			defer func() { res <- recover() }()
			call()
		}()
		if p := <-res; p == nil || !strings.Contains(p.(string), "another thread") {
			t.Fatalf("a call from another thread: %v, want a panic", p)
		}
	}
	if n, err := set.Process(); n != 0 || err != nil {
		t.Fatalf("Process after the panics = %d, %v", n, err)
	}
	set.Close()
	set.Close()
	if _, err := set.Process(); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("Process after Close: %v, want EBADF", err)
	}
}

func TestStartedSetTakesCallsFromAnyGoroutine(t *testing.T) {
	set, err := Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	opt, _ := DefaultOptions(64 << 20)
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 8; j++ {
				_, err := set.Add(dir, opt)
				errs <- err
				set.Fd()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, syscall.ENOTSUP) {
			t.Fatalf("Add from a goroutine: %v, want ENOTSUP", err)
		}
	}
	if err := set.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Add(dir, opt); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("Add after Close: %v, want EBADF", err)
	}
	if fd := set.Fd(); fd != -1 {
		t.Fatalf("Fd after Close = %d", fd)
	}
}

// fill gives every field of v a value of its own (1, 2, 3 ...), durations
// in whole microseconds, so a field a copy forgets shows.
func fill(v reflect.Value, n *uint64) {
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).Name == "Cgroup" {
				v.Field(i).SetString("/sys/fs/cgroup/w/vm-7")
				continue
			}
			fill(v.Field(i), n)
		}
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int32, reflect.Int64:
		*n++
		if v.Type() == reflect.TypeOf(time.Duration(0)) {
			v.SetInt(int64(*n) * int64(time.Microsecond))
		} else {
			v.SetInt(int64(*n % 3))
		}
	case reflect.Uint, reflect.Uint32, reflect.Uint64:
		*n++
		v.SetUint(*n)
	}
}

func TestKillRecordKeepsEveryField(t *testing.T) {
	var k KillRecord
	var n uint64
	fill(reflect.ValueOf(&k).Elem(), &n)
	k.Reason, k.Method, k.Report.Verdict = KillOvershoot, KillPidfd, VerdictOvershoot
	if n < 50 {
		t.Fatalf("filled %d fields only", n)
	}
	if back := roundTripKillRecord(&k); !reflect.DeepEqual(*back, k) {
		t.Fatalf("through C:\n%+v\nwant\n%+v", *back, k)
	}
	k.Report.LimitBytes, k.Report.UsedBytes = 64<<20, 96<<20
	if s := k.String(); !strings.Contains(s, "/sys/fs/cgroup/w/vm-7") || !strings.Contains(s, "limit 65536kB") {
		t.Fatalf("String() = %q", s)
	}
}

func TestSnapshotWriteAndRestoreOnAPlainDirectory(t *testing.T) {
	dir, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	page := os.Getpagesize()
	img := make([]byte, 256*page)
	for i := range img[:128*page] { // the second half stays zero
		img[i] = byte(i*7 + i/4096)
	}
	var lines []string
	o := &SnapshotOptions{Log: func(_ LogLevel, m string) { lines = append(lines, m) }}
	st, err := SnapshotWrite(SnapshotImage{Memory: img}, int(dir.Fd()), "vm.snap", o)
	if err != nil {
		t.Fatal(err)
	}
	if st.ImageBytes != uint64(len(img)) || st.DataBytes+st.SkippedBytes != st.ImageBytes || st.LendBytes != 0 {
		t.Fatalf("write stats %+v", st)
	}
	back := make([]byte, len(img))
	if _, err := SnapshotRestore(int(dir.Fd()), "vm.snap", SnapshotImage{Memory: back}, o); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, img) {
		t.Fatal("restored image differs")
	}
	// An fd image, from a file.
	f, err := os.CreateTemp("", "cgg-img")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.Write(img); err != nil {
		t.Fatal(err)
	}
	fdimg := SnapshotImage{Fd: int(f.Fd()), Length: uint64(len(img))}
	if _, err := SnapshotWrite(fdimg, int(dir.Fd()), "fd.snap", nil); err != nil {
		t.Fatal(err)
	}
	for i := range back {
		back[i] = 0xff
	}
	if _, err := SnapshotRestore(int(dir.Fd()), "fd.snap", SnapshotImage{Memory: back}, nil); err != nil || !bytes.Equal(back, img) {
		t.Fatalf("fd image restored: %v, equal %v", err, bytes.Equal(back, img))
	}
	// Wrong length, missing, corrupted.
	if _, err := SnapshotRestore(int(dir.Fd()), "vm.snap", SnapshotImage{Memory: back[:len(back)-page]}, nil); !errors.Is(err, syscall.EMSGSIZE) {
		t.Fatalf("short target: %v, want EMSGSIZE", err)
	}
	if _, err := SnapshotRestore(int(dir.Fd()), "none", SnapshotImage{Memory: back}, nil); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("missing: %v, want ENOENT", err)
	}
	p := filepath.Join(dir.Name(), "vm.snap")
	b, _ := os.ReadFile(p)
	b[len(b)/2] ^= 0x40
	os.WriteFile(p, b, 0600)
	lines = nil
	if _, err := SnapshotRestore(int(dir.Fd()), "vm.snap", SnapshotImage{Memory: back}, o); !errors.Is(err, syscall.EBADMSG) {
		t.Fatalf("corrupted: %v, want EBADMSG", err)
	}
	if len(lines) == 0 {
		t.Fatal("no log line says what was wrong")
	}
	if _, err := SnapshotWrite(SnapshotImage{Memory: img[:page+1]}, int(dir.Fd()), "x", nil); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("a length not a multiple of the page: %v, want EINVAL", err)
	}
	if _, err := SnapshotWrite(SnapshotImage{Memory: img}, int(dir.Fd()), "a/b", nil); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("a name with a slash: %v, want EINVAL", err)
	}
}

// A dry run goes through to the library's flag and back; a new set has
// counted nothing, and a closed one is EINVAL.
func TestDryRunAndStats(t *testing.T) {
	o, err := DefaultOptions(256 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if o.DryRun {
		t.Fatal("DryRun is off by default")
	}
	o.DryRun = true
	c, err := o.toC()
	if err != nil {
		t.Fatal(err)
	}
	if !optionsFromC(&c).DryRun {
		t.Fatal("DryRun lost on the way to C and back")
	}
	set, err := NewSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := set.Stats()
	if err != nil || st != (Stats{}) {
		t.Fatalf("Stats() of a new set = %+v, %v", st, err)
	}
	set.Close()
	if _, err := set.Stats(); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("Stats() of a closed set: %v, want EINVAL", err)
	}
}

// Every error path reachable without a cgroup names its operation and its
// path: a guard's calls once it is gone (here a guard the set never had, as
// after Remove), a set's calls once closed, snapshots, Recover.
func TestEveryErrorNamesItsOperation(t *testing.T) {
	set, err := Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	const path = "/sys/fs/cgroup/w/vm-9"
	g := &Guard{set: set, path: path}
	l := &Lend{guard: g, ID: 1}
	check := func(op, path string, err error, want syscall.Errno) {
		t.Helper()
		var e *Error
		if !errors.As(err, &e) || e.Op != op || e.Path != path || !errors.Is(err, want) {
			t.Errorf("%s: %#v, want *Error{%q, %q, %v}", op, err, op, path, want)
		}
	}
	check("remove", path, g.Remove(), syscall.EINVAL)
	_, err = g.Options()
	check("options", path, err, syscall.EINVAL)
	_, err = g.Stats()
	check("stats", path, err, syscall.EINVAL)
	_, err = g.Report()
	check("report", path, err, syscall.EINVAL)
	_, err = g.LendBegin(1<<20, -time.Second)
	check("lend begin", path, err, syscall.EINVAL)
	_, err = g.LendBegin(1<<20, 0)
	check("lend begin", path, err, syscall.EINVAL)
	check("lend end", path, l.End(), syscall.EINVAL)
	check("defer kill", path, g.DeferKill(time.Second), syscall.EINVAL)
	_, err = g.ParkEnd(1, ParkKill, 0)
	check("park end", path, err, syscall.EINVAL)
	opt, _ := DefaultOptions(64 << 20)
	opt.Tick = -time.Second
	_, err = set.Add(path, opt)
	check("add", path, err, syscall.EINVAL)

	set.Close()
	_, err = set.Process()
	check("process", "", err, syscall.EBADF)
	_, _, err = set.NextTick()
	check("next tick", "", err, syscall.EBADF)
	_, err = set.Stats()
	check("stats", "", err, syscall.EINVAL)

	none := filepath.Join(t.TempDir(), "none")
	_, err = Recover(none, false)
	check("recover", none, err, syscall.ENOENT)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Recover of a missing directory: %v is not os.ErrNotExist", err)
	}
	_, err = SnapshotRestore(-100, none, SnapshotImage{Memory: make([]byte, os.Getpagesize())}, nil)
	check("snapshot restore", none, err, syscall.ENOENT)
	_, err = SnapshotWrite(SnapshotImage{Memory: make([]byte, os.Getpagesize())}, -100, "a/b", nil)
	check("snapshot write", "a/b", err, syscall.EINVAL)
	_, err = SnapshotWrite(SnapshotImage{}, -100, "x", &SnapshotOptions{LendDeadline: -1})
	check("snapshot write", "x", err, syscall.EINVAL)
}

// The constants are Go literals, for godoc; each equals the library's.
func TestConstantsAreTheLibrarys(t *testing.T) {
	goValues := map[string]int64{
		"EventKill": int64(EventKill), "EventLendBegin": int64(EventLendBegin),
		"EventLendEnd": int64(EventLendEnd), "EventLendExpired": int64(EventLendExpired),
		"EventError": int64(EventError), "EventGone": int64(EventGone),
		"EventKernelOOM": int64(EventKernelOOM), "EventThrottled": int64(EventThrottled),
		"EventEmptyOverLimit": int64(EventEmptyOverLimit), "EventUnkillable": int64(EventUnkillable),
		"EventKillDryRun": int64(EventKillDryRun), "EventPreKill": int64(EventPreKill),
		"EventKillAverted": int64(EventKillAverted), "EventReclaim": int64(EventReclaim),
		"EventPark": int64(EventPark), "EventThaw": int64(EventThaw),
		"ParkOpen": int64(ParkOpen), "ParkEndKill": int64(ParkEndKill), "ParkEndThaw": int64(ParkEndThaw),
		"ParkEndDeadline": int64(ParkEndDeadline), "ParkEndBound": int64(ParkEndBound),
		"ParkEndNotFrozen": int64(ParkEndNotFrozen), "ParkEndOverLimit": int64(ParkEndOverLimit),
		"ParkEndNoFreeze": int64(ParkEndNoFreeze),
		"ParkKill":        int64(ParkKill), "ParkThaw": int64(ParkThaw),
		"MaxParkDeadline": int64(MaxParkDeadline / time.Microsecond),
		"ReclaimPressure": int64(ReclaimPressure), "ReclaimHeadroom": int64(ReclaimHeadroom),
		"MaxReclaimWindows":      MaxReclaimWindows,
		"MaxReclaimDoseDuration": int64(MaxReclaimDoseDuration / time.Microsecond),
		"VerdictOK":              int64(VerdictOK), "VerdictNear": int64(VerdictNear),
		"VerdictStalling": int64(VerdictStalling), "VerdictOvershoot": int64(VerdictOvershoot),
		"VerdictStall": int64(VerdictStall),
		"StallMemory":  int64(StallMemory), "StallIO": int64(StallIO), "StallRefault": int64(StallRefault),
		"KillOvershoot": int64(KillOvershoot), "KillStall": int64(KillStall),
		"KillCgroupKill": int64(KillCgroupKill), "KillPidfd": int64(KillPidfd),
		"LogErr": int64(LogErr), "LogWarning": int64(LogWarning), "LogInfo": int64(LogInfo),
		"LogDebug":     int64(LogDebug),
		"SnapshotAuto": int64(SnapshotAuto), "SnapshotDirect": int64(SnapshotDirect),
		"SnapshotDontcache": int64(SnapshotDontcache), "SnapshotWindowed": int64(SnapshotWindowed),
		"SnapshotBuffered": int64(SnapshotBuffered), "SnapshotNoSync": int64(SnapshotNoSync),
		"MaxPreKillDefer": int64(MaxPreKillDefer / time.Microsecond),
	}
	c := cValues()
	for name, v := range goValues {
		cv, ok := c[name]
		if !ok {
			t.Errorf("%s: no C value to check it against", name)
		} else if v != cv {
			t.Errorf("%s = %d, the library's is %d", name, v, cv)
		}
	}
	for name := range c {
		if _, ok := goValues[name]; !ok {
			t.Errorf("%s: C value not checked", name)
		}
	}
	// The library's names follow the values.
	if s := EventPreKill.String(); s != "pre-kill" {
		t.Errorf("EventPreKill.String() = %q, want pre-kill", s)
	}
	if s := EventReclaim.String(); s != "reclaim" {
		t.Errorf("EventReclaim.String() = %q, want reclaim", s)
	}
	if s := EventPark.String(); s != "park" {
		t.Errorf("EventPark.String() = %q, want park", s)
	}
	if s := EventThaw.String(); s != "thaw" {
		t.Errorf("EventThaw.String() = %q, want thaw", s)
	}
	for e, want := range map[ParkEnd]string{
		ParkOpen: "parked", ParkEndThaw: "thawed", ParkEndDeadline: "killed at the park's deadline",
		ParkEndNoFreeze: "not parked: cgroup.freeze cannot be written", ParkEnd(99): "?",
	} {
		if s := e.String(); s != want {
			t.Errorf("ParkEnd(%d).String() = %q, want %q", int(e), s, want)
		}
	}
}

// openFds counts the process's open fds.
func openFds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// A set of StartContext's is closed when its context is done: its guards,
// its fds and its loop's thread released, Done closed, later calls EBADF.
func TestStartContextClosesTheSetWhenDone(t *testing.T) {
	before := openFds(t)
	ctx, cancel := context.WithCancel(context.Background())
	set, err := StartContext(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	opt, _ := DefaultOptions(64 << 20)
	if _, err := set.Add(t.TempDir(), opt); !errors.Is(err, syscall.ENOTSUP) {
		t.Fatalf("Add before the cancel: %v, want ENOTSUP", err)
	}
	select {
	case <-set.Done():
		t.Fatal("Done before the cancel")
	default:
	}
	if openFds(t) <= before {
		t.Fatal("a running set holds no fd")
	}
	cancel()
	select {
	case <-set.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the set not closed 10 s after its context was cancelled")
	}
	if fd := set.Fd(); fd != -1 {
		t.Fatalf("Fd after the cancel = %d", fd)
	}
	if _, err := set.Add(t.TempDir(), opt); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("Add after the cancel: %v, want EBADF", err)
	}
	if err := set.Close(); err != nil {
		t.Fatalf("Close after the cancel: %v", err)
	}
	if n := openFds(t); n != before {
		t.Fatalf("%d fds open after the cancel, %d before the start", n, before)
	}

	// Close first, then the cancel: nothing more happens.
	ctx, cancel = context.WithTimeout(context.Background(), time.Hour)
	set, err = StartContext(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	set.Close()
	<-set.Done()
	cancel()

	// A context done already starts nothing.
	if set, err := StartContext(ctx, nil); set != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("StartContext with a cancelled context = %v, %v", set, err)
	}
}

// Run runs a NewSet set's loop until its context is done, then closes it.
func TestRunReturnsWhenContextDone(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := openFds(t)
	set, err := NewSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	if err := set.Run(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run = %v, want DeadlineExceeded", err)
	}
	if d := time.Since(t0); d < 100*time.Millisecond || d > 10*time.Second {
		t.Fatalf("Run returned after %v", d)
	}
	select {
	case <-set.Done():
	default:
		t.Fatal("the set not closed when Run returned")
	}
	if n := openFds(t); n != before {
		t.Fatalf("%d fds open after Run, %d before NewSet", n, before)
	}
	if err := set.Run(context.Background()); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("Run of a closed set: %v, want EBADF", err)
	}

	// Cancelled from another goroutine while it waits.
	set, err = NewSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if err := set.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want Canceled", err)
	}
	if fd := set.Fd(); fd != -1 {
		t.Fatalf("Fd after Run = %d", fd)
	}

	// A set of Start's runs its own loop.
	started, err := Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer started.Close()
	if err := started.Run(context.Background()); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("Run of a set of Start's: %v, want EINVAL", err)
	}
}

// DeferKill's errors that need no kernel: its argument, a guard gone, and
// the option that enables EventPreKill, through C and back and refused above
// its bound. Outside a pre-kill callback of a live guard (ENOENT), inside
// one (ERANGE, EINVAL, a deferral made) is TestVMPreKillDeferred.
func TestDeferKillArguments(t *testing.T) {
	set, err := Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	const path = "/sys/fs/cgroup/w/vm-3"
	g := &Guard{set: set, path: path}
	for _, d := range []time.Duration{0, -time.Second, time.Second, NoDeadline} {
		err := g.DeferKill(d)
		var e *Error
		if !errors.As(err, &e) || e.Op != "defer kill" || e.Path != path || e.Err != syscall.EINVAL {
			t.Errorf("DeferKill(%v) of a guard gone: %#v, want EINVAL", d, err)
		}
	}

	o, err := DefaultOptions(256 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if o.PreKillMaxDefer != 0 {
		t.Fatalf("PreKillMaxDefer is %v by default, want 0 (off)", o.PreKillMaxDefer)
	}
	o.PreKillMaxDefer = 2500 * time.Millisecond
	c, err := o.toC()
	if err != nil {
		t.Fatal(err)
	}
	if c.pre_kill_max_defer_usec != 2500000 || optionsFromC(&c).PreKillMaxDefer != o.PreKillMaxDefer {
		t.Fatalf("PreKillMaxDefer through C: %d us", c.pre_kill_max_defer_usec)
	}
	dir := t.TempDir()
	for _, c := range []struct {
		d    time.Duration
		want syscall.Errno
	}{
		{MaxPreKillDefer, syscall.ENOTSUP}, // accepted: then the plain directory is refused
		{MaxPreKillDefer + time.Microsecond, syscall.EINVAL},
		{time.Hour * 2, syscall.EINVAL}, // past uint32 microseconds
		{-time.Second, syscall.EINVAL},
	} {
		o.PreKillMaxDefer = c.d
		if _, err := set.Add(dir, o); !errors.Is(err, c.want) {
			t.Errorf("Add with PreKillMaxDefer %v: %v, want %v", c.d, err, c.want)
		}
	}
}

// The reclaim options: off by default, every field through C and back (the
// target's path as a C string, freed after), saturated or refused where C
// cannot hold them; then the library's own checks, which come before it
// opens the cgroup (a plain directory: ENOTSUP for options it takes, EINVAL
// for those it refuses), so what reaches it shows.
func TestReclaimOptions(t *testing.T) {
	o, err := DefaultOptions(256 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if o.ReclaimDoseBytes != 0 || o.ReclaimCgroup != "" || o.ReclaimSome != 0 || o.ReclaimFull != 0 ||
		o.ReclaimWindows != 0 || o.ReclaimCooldown != 0 || o.ReclaimHeadroomBytes != 0 {
		t.Fatalf("the reclaim actuator is on by default: %+v", o)
	}
	o.ReclaimDoseBytes = 16 << 20
	o.ReclaimCgroup = "/sys/fs/cgroup/w/background"
	o.ReclaimSome = 2 * time.Millisecond
	o.ReclaimFull = time.Millisecond
	o.ReclaimWindows = 5
	o.ReclaimCooldown = 30 * time.Second
	o.ReclaimHeadroomBytes = 8 << 20
	c, err := o.toC()
	if err != nil {
		t.Fatal(err)
	}
	if c.reclaim_dose_bytes != 16<<20 || c.reclaim_some_usec != 2000 || c.reclaim_full_usec != 1000 ||
		c.reclaim_windows != 5 || c.reclaim_cooldown_usec != 30000000 || c.reclaim_headroom_bytes != 8<<20 {
		t.Errorf("reclaim options in C: %+v", c)
	}
	if back := optionsFromC(&c); !reflect.DeepEqual(back, o) {
		t.Errorf("options through C = %+v, want %+v", back, o)
	}
	freeOptionsC(&c)
	if c.reclaim_cgroup != nil {
		t.Error("freeOptionsC left the pointer")
	}
	o.ReclaimSome = 2 * time.Hour // past uint32 microseconds
	if c, err := o.toC(); err != nil || c.reclaim_some_usec != 1<<32-1 {
		t.Errorf("ReclaimSome of 2 h: %d us, %v; want saturated", c.reclaim_some_usec, err)
	} else {
		freeOptionsC(&c)
	}
	o.ReclaimSome = -time.Millisecond
	if _, err := o.toC(); err != syscall.EINVAL {
		t.Errorf("a negative ReclaimSome: %v, want EINVAL", err)
	}
	o.ReclaimSome = 0
	o.ReclaimCgroup = "/sys/fs/cgroup/w\x00/background"
	if _, err := o.toC(); err != syscall.EINVAL {
		t.Errorf("a NUL in ReclaimCgroup: %v, want EINVAL", err)
	}

	set, err := Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	dir := t.TempDir()
	off, _ := DefaultOptions(64 << 20)
	const bg = "/sys/fs/cgroup/w/background"
	for _, c := range []struct {
		what string
		set  func(o *Options)
		want syscall.Errno
	}{
		{"off", func(o *Options) {}, syscall.ENOTSUP},
		{"seed 002's defaults", func(o *Options) { o.ReclaimDoseBytes = 4 << 20 }, syscall.ENOTSUP},
		{"a target", func(o *Options) { o.ReclaimDoseBytes, o.ReclaimCgroup = 4<<20, bg }, syscall.ENOTSUP},
		{"headroom alone", func(o *Options) { o.ReclaimDoseBytes, o.ReclaimHeadroomBytes = 4<<20, 8<<20 }, syscall.ENOTSUP},
		{"a target without a dose", func(o *Options) { o.ReclaimCgroup = bg }, syscall.EINVAL},
		{"a target with headroom", func(o *Options) {
			o.ReclaimDoseBytes, o.ReclaimCgroup, o.ReclaimHeadroomBytes = 4<<20, bg, 8<<20
		}, syscall.EINVAL},
		{"windows past the most", func(o *Options) {
			o.ReclaimDoseBytes, o.ReclaimWindows = 4<<20, MaxReclaimWindows+1
		}, syscall.EINVAL},
		{"headroom at the limit", func(o *Options) { o.ReclaimDoseBytes, o.ReclaimHeadroomBytes = 4<<20, 64<<20 }, syscall.EINVAL},
		{"a cooldown without a dose", func(o *Options) { o.ReclaimCooldown = time.Second }, syscall.EINVAL},
	} {
		o := off
		c.set(&o)
		if _, err := set.Add(dir, o); !errors.Is(err, c.want) {
			t.Errorf("Add with %s: %v, want %v", c.what, err, c.want)
		}
	}
}

// A reclaim event's info, copied out of C: every field, the windows as many
// as it says (cut to MaxReclaimWindows), the error as a syscall.Errno.
func TestReclaimEventKeepsEveryField(t *testing.T) {
	var r ReclaimInfo
	var n uint64
	fill(reflect.ValueOf(&r).Elem(), &n)
	us := time.Microsecond
	r.Target, r.Why, r.Err = "/sys/fs/cgroup/w/background", ReclaimPressure, syscall.EAGAIN
	r.SomeStall = []time.Duration{10 * us, 11 * us, 12 * us}
	r.FullStall = []time.Duration{20 * us, 21 * us, 22 * us}
	ev := reclaimEventThroughC(&r, 3, -int(syscall.EAGAIN))
	if ev.Type != EventReclaim || ev.Cgroup != "/sys/fs/cgroup/w/vm-7" || ev.Kill != nil {
		t.Fatalf("event %+v", ev)
	}
	if ev.Reclaim == nil || !reflect.DeepEqual(*ev.Reclaim, r) {
		t.Fatalf("through C:\n%+v\nwant\n%+v", ev.Reclaim, r)
	}
	// A headroom dose: no windows, no error.
	r.Why, r.Err, r.SomeStall, r.FullStall = ReclaimHeadroom, nil, []time.Duration{}, []time.Duration{}
	if ev := reclaimEventThroughC(&r, 0, 0); !reflect.DeepEqual(*ev.Reclaim, r) {
		t.Fatalf("headroom through C:\n%+v\nwant\n%+v", ev.Reclaim, r)
	}
	if ev := reclaimEventThroughC(&r, 100, 0); len(ev.Reclaim.SomeStall) != MaxReclaimWindows ||
		len(ev.Reclaim.FullStall) != MaxReclaimWindows {
		t.Fatalf("100 windows: %d and %d kept, want %d", len(ev.Reclaim.SomeStall), len(ev.Reclaim.FullStall),
			MaxReclaimWindows)
	}
}

// Parking: the option off by default, through C and back, refused above
// MaxParkDeadline by the library (before it opens the cgroup: a plain
// directory is ENOTSUP for a deadline it takes, EINVAL for one it refuses).
func TestParkOptions(t *testing.T) {
	o, err := DefaultOptions(256 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if o.ParkDeadline != 0 {
		t.Fatalf("ParkDeadline is %v by default, want 0 (off)", o.ParkDeadline)
	}
	o.ParkDeadline = 90 * time.Second
	c, err := o.toC()
	if err != nil {
		t.Fatal(err)
	}
	if c.park_deadline_usec != 90000000 {
		t.Errorf("ParkDeadline in C: %d us", c.park_deadline_usec)
	}
	if back := optionsFromC(&c); !reflect.DeepEqual(back, o) {
		t.Errorf("options through C = %+v, want %+v", back, o)
	}
	o.ParkDeadline = -time.Second
	if _, err := o.toC(); err != syscall.EINVAL {
		t.Errorf("a negative ParkDeadline: %v, want EINVAL", err)
	}

	set, err := Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	dir := t.TempDir()
	for _, c := range []struct {
		d    time.Duration
		want syscall.Errno
	}{
		{time.Second, syscall.ENOTSUP},
		{MaxParkDeadline, syscall.ENOTSUP},
		{MaxParkDeadline + time.Microsecond, syscall.EINVAL},
		{-time.Second, syscall.EINVAL},
	} {
		o, _ := DefaultOptions(64 << 20)
		o.ParkDeadline = c.d
		if _, err := set.Add(dir, o); !errors.Is(err, c.want) {
			t.Errorf("Add with ParkDeadline %v: %v, want %v", c.d, err, c.want)
		}
	}
}

// ParkEnd and OpenParkID of a guard gone: EINVAL and 0, named. A live
// guard's park is the VM's (mg_guard_park_end(3)).
func TestParkEndOfAGuardGone(t *testing.T) {
	set, err := Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	const path = "/sys/fs/cgroup/w/vm-4"
	g := &Guard{set: set, path: path}
	for _, c := range []struct {
		id     uint64
		action ParkAction
		limit  uint64
	}{{1, ParkKill, 0}, {1, ParkThaw, 512 << 20}, {0, ParkThaw, 0}, {1, ParkAction(3), 0}} {
		killed, err := g.ParkEnd(c.id, c.action, c.limit)
		var e *Error
		if killed || !errors.As(err, &e) || e.Op != "park end" || e.Path != path || e.Err != syscall.EINVAL {
			t.Errorf("ParkEnd(%d, %d, %d) of a guard gone: %v, %#v; want false, EINVAL", c.id, c.action, c.limit,
				killed, err)
		}
	}
	if id := g.OpenParkID(); id != 0 {
		t.Errorf("OpenParkID of a guard gone = %d", id)
	}
}

// The park's fields of a record, through C and out of an EventPark and an
// EventThaw, and the park in mg_kill_record_format()'s line.
func TestParkRecord(t *testing.T) {
	var k KillRecord
	var n uint64
	fill(reflect.ValueOf(&k).Elem(), &n)
	k.Reason, k.Method, k.KillUsec = KillOvershoot, KillCgroupKill, 0
	k.Report.ParkID, k.Report.ParkUsec, k.Report.FrozenUsec = 3, 1000000, 1040000
	k.Report.ParkEndUsec, k.Report.ParkEnd = 0, ParkOpen
	for _, typ := range []EventType{EventPark, EventThaw} {
		ev := killEventThroughC(typ, &k)
		if ev.Type != typ || ev.Kill == nil || ev.Cgroup != k.Cgroup || ev.TimeUsec != 1040000 {
			t.Fatalf("%v through C: %+v", typ, ev)
		}
		if !reflect.DeepEqual(*ev.Kill, k) {
			t.Fatalf("%v's record through C:\n%+v\nwant\n%+v", typ, *ev.Kill, k)
		}
		k.Report.ParkEndUsec, k.Report.ParkEnd = 3500000, ParkEndThaw
	}

	k.Report.LimitBytes, k.Report.UsedBytes = 64<<20, 96<<20
	for _, c := range []struct {
		id      uint64
		end     ParkEnd
		endUsec uint64
		frozen  uint64
		want    string
	}{
		{3, ParkEndDeadline, 3500000, 1040000, ", parked 2500ms (frozen), killed at the park's deadline,"},
		{3, ParkEndNotFrozen, 3000000, 0, ", parked 2000ms (never frozen), killed: not frozen within the kill wait,"},
		{3, ParkEndNoFreeze, 1000000, 0, ", not parked: cgroup.freeze cannot be written,"},
		{0, ParkOpen, 0, 0, ""},
	} {
		k.Report.ParkID, k.Report.ParkEnd, k.Report.ParkEndUsec, k.Report.FrozenUsec = c.id, c.end, c.endUsec, c.frozen
		s := k.String()
		if c.want == "" && strings.Contains(s, "park") || !strings.Contains(s, c.want) {
			t.Errorf("a record of park %d ended %v: %q, want it to say %q", c.id, c.end, s, c.want)
		}
	}
}

// Every counter of mg_stats lands in its own field of Stats, in the
// header's order (the park counts last).
func TestStatsKeepEveryCounter(t *testing.T) {
	st := numberedStats()
	v := reflect.ValueOf(st)
	for i := 0; i < v.NumField(); i++ {
		if got := v.Field(i).Uint(); got != uint64(i+1) {
			t.Errorf("Stats.%s = %d, want %d (its place in mg_stats)", v.Type().Field(i).Name, got, i+1)
		}
	}
	if st.ParksExpired != uint64(v.NumField()) {
		t.Errorf("ParksExpired = %d: not the last counter of mg_stats", st.ParksExpired)
	}
}
