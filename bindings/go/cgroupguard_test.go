// SPDX-License-Identifier: Apache-2.0

// Tests that need no cgroup: options, errors, the set's threading, kill
// records, snapshots on a plain directory. The library's fixture trees are
// not reachable from here (see bindings/README.md); vm_test.go runs the
// guards on a real kernel.
package cgroupguard

import (
	"bytes"
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

func TestErrorsAreErrno(t *testing.T) {
	for _, limit := range []uint64{0, Unlimited} {
		_, err := DefaultOptions(limit)
		var e syscall.Errno
		if !errors.As(err, &e) || e != syscall.EINVAL {
			t.Fatalf("DefaultOptions(%d): %v, want syscall.EINVAL", limit, err)
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
		if _, ok := err.(syscall.Errno); !ok {
			t.Errorf("Add(%s): %T, want syscall.Errno", c.path, err)
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
	if _, err := set.Process(); err != syscall.EBADF {
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
		if err != syscall.ENOTSUP {
			t.Fatalf("Add from a goroutine: %v, want ENOTSUP", err)
		}
	}
	if err := set.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Add(dir, opt); err != syscall.EBADF {
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
	if _, err := SnapshotRestore(int(dir.Fd()), "vm.snap", SnapshotImage{Memory: back[:len(back)-page]}, nil); err != syscall.EMSGSIZE {
		t.Fatalf("short target: %v, want EMSGSIZE", err)
	}
	if _, err := SnapshotRestore(int(dir.Fd()), "none", SnapshotImage{Memory: back}, nil); err != syscall.ENOENT {
		t.Fatalf("missing: %v, want ENOENT", err)
	}
	p := filepath.Join(dir.Name(), "vm.snap")
	b, _ := os.ReadFile(p)
	b[len(b)/2] ^= 0x40
	os.WriteFile(p, b, 0600)
	lines = nil
	if _, err := SnapshotRestore(int(dir.Fd()), "vm.snap", SnapshotImage{Memory: back}, o); err != syscall.EBADMSG {
		t.Fatalf("corrupted: %v, want EBADMSG", err)
	}
	if len(lines) == 0 {
		t.Fatal("no log line says what was wrong")
	}
	if _, err := SnapshotWrite(SnapshotImage{Memory: img[:page+1]}, int(dir.Fd()), "x", nil); err != syscall.EINVAL {
		t.Fatalf("a length not a multiple of the page: %v, want EINVAL", err)
	}
	if _, err := SnapshotWrite(SnapshotImage{Memory: img}, int(dir.Fd()), "a/b", nil); err != syscall.EINVAL {
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
	if _, err := set.Stats(); err != syscall.EINVAL {
		t.Fatalf("Stats() of a closed set: %v, want EINVAL", err)
	}
}
