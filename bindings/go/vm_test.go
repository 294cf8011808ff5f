// SPDX-License-Identifier: Apache-2.0

//go:build vmtest

// The binding on a real cgroup v2, in the kernel suite's VM (tests/vm/vmrun;
// bindings/meson.build): built with `go test -c -tags vmtest`, run as root
// with mg-workload at $CGG_WORKLOAD and a disk at /mnt/disk. A host without
// a cgroup v2 memory controller fails these tests; they never skip.
//
// Tree: /sys/fs/cgroup/cgg-go-PID/{overshoot,lend,snapshot,gone,prekill,
// park,park-over,park-deadline}, each with +memory from the parent.
//   - overshoot: no memory.max, guard limit 64 MiB, anon grows to 160 MiB:
//     killed as an overshoot, its record complete, the guard removed from
//     inside its own kill callback.
//   - lend: memory.high 50 MiB; lends to max, +1 MiB and with a 300 ms
//     deadline: each end writes back exactly 52428800, a stale end is
//     ESTALE and changes nothing.  Driven by a loop of the test's own.
//   - snapshot: memory.high 64 MiB; a 32 MiB image written in a lend of the
//     guard from another goroutine while the set runs, memory.high back to
//     67108864, the image restored byte for byte.
//   - gone: the cgroup removed; the guard removes itself on EventGone and
//     nothing comes from it after.
//   - prekill: guard limit 64 MiB with PreKillMaxDefer 2 s, anon held at
//     68 MiB (over the limit, under the hard bound of limit + limit/8):
//     DeferKill outside the callback is ENOENT; inside the EventPreKill
//     callback ERANGE above the option, EINVAL below a microsecond, then a
//     300 ms deferral; the kill follows it (the actor stays over), counted
//     in KillsDeferred.
//   - park: guard limit 64 MiB with ParkDeadline 30 s, anon held at 68 MiB:
//     EventPark once frozen (cgroup.freeze 1, cgroup.events "frozen 1"),
//     its record with the park's id; ParkEnd before it ENOENT, with
//     another id ESTALE, a kill with a new limit EINVAL; a thaw to 128 MiB
//     from the test's goroutine: EventThaw, cgroup.freeze 0, the workload
//     alive and not killed after; Parks and ParksThawed 1.
//   - park-over, park-deadline (one set): the same overshoot; the first
//     thawed from its EventPark callback at its own limit, killed instead
//     (ParkEndOverLimit); the second, ParkDeadline 1 s, left parked and
//     killed at its deadline (ParkEndDeadline); both counted in
//     ParksExpired.
package cgroupguard

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

var vmRoot = fmt.Sprintf("/sys/fs/cgroup/cgg-go-%d", os.Getpid())

func mkcg(t *testing.T, name string) string {
	t.Helper()
	if _, err := os.Stat(vmRoot); err != nil {
		if err := os.Mkdir(vmRoot, 0755); err != nil {
			t.Fatalf("no cgroup v2 to test on: %v", err)
		}
		if err := os.WriteFile(filepath.Join(vmRoot, "cgroup.subtree_control"), []byte("+memory"), 0); err != nil {
			t.Fatalf("cannot enable the memory controller: %v", err)
		}
	}
	cg := filepath.Join(vmRoot, name)
	if err := os.Mkdir(cg, 0755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.WriteFile(filepath.Join(cg, "cgroup.kill"), []byte("1"), 0)
		for i := 0; i < 100; i++ {
			if err := syscall.Rmdir(cg); err == nil || err == syscall.ENOENT {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	return cg
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func writeFile(t *testing.T, p, v string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(v), 0); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
}

// startIn starts mg-workload in cgroup cg: the shell joins it, then execs.
func startIn(t *testing.T, cg string, args ...string) *exec.Cmd {
	t.Helper()
	wl := os.Getenv("CGG_WORKLOAD")
	if wl == "" {
		wl = "/mg/mg-workload"
	}
	sh := append([]string{"-c", `echo $$ >"$1/cgroup.procs" && shift && exec "$@"`, "sh", cg, wl}, args...)
	cmd := exec.Command("/bin/sh", sh...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func waitEvent(t *testing.T, ch <-chan Event, want EventType, d time.Duration) Event {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case ev := <-ch:
			t.Logf("event %v %s", ev.Type, ev.Cgroup)
			if ev.Type == want {
				return ev
			}
			if ev.Type == EventError {
				t.Logf("  error %v on %s", ev.Err, ev.What)
			}
		case <-deadline:
			t.Fatalf("no %v within %v", want, d)
		}
	}
}

func TestVMOvershootKilledWithItsRecord(t *testing.T) {
	cg := mkcg(t, "overshoot")
	set, err := Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	opt, _ := DefaultOptions(64 << 20)
	events := make(chan Event, 64)
	removed := make(chan error, 1)
	opt.OnEvent = func(g *Guard, ev Event) {
		if ev.Type == EventKill {
			removed <- g.Remove() // inside its own callback
		}
		events <- ev
	}
	g, err := set.Add(cg, opt)
	if err != nil {
		t.Fatal(err)
	}
	cmd := startIn(t, cg, "anon", "160", "256", "-1")
	ev := waitEvent(t, events, EventKill, 60*time.Second)
	k := ev.Kill
	if k == nil {
		t.Fatal("EventKill without a record")
	}
	t.Logf("record: %s", k)
	r := k.Report
	for _, c := range []struct {
		ok   bool
		what string
	}{
		{k.Reason == KillOvershoot, "reason overshoot"},
		{k.Method == KillCgroupKill || k.Method == KillPidfd, "a kill method"},
		{k.Cgroup == cg || strings.HasSuffix(k.Cgroup, "/overshoot"), "the cgroup"},
		{k.DetectUsec > 0 && k.KillUsec >= k.DetectUsec, "detect <= kill"},
		{!k.EmptyTimedOut && k.EmptyUsec >= k.KillUsec, "empty after the kill"},
		{r.LimitBytes == 64<<20 && r.MarginBytes == 4<<20, "limit and margin"},
		{r.UsedBytes > r.LimitBytes && r.CurrentBytes > r.LimitBytes, "used and current above the limit"},
		{r.Stat.Anon > 60<<20 && r.UsedBytes >= r.Stat.Anon, "anon in used"},
		{r.MaxBytes == Unlimited, "memory.max is max"},
		{r.Verdict == VerdictOvershoot, "verdict overshoot"},
		{r.TimeUsec > 0 && r.TimeUsec <= k.KillUsec, "the read before the kill"},
		{strings.Contains(k.String(), "limit 65536kB"), "String() names the limit"},
	} {
		if !c.ok {
			t.Errorf("kill record: not %s: %+v", c.what, *k)
		}
	}
	if err := <-removed; err != nil {
		t.Fatalf("Remove inside its own kill callback: %v", err)
	}
	if n := set.Len(); n != 0 {
		t.Fatalf("Len after the removal = %d", n)
	}
	if err := g.Remove(); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("Remove again: %v, want EINVAL", err)
	}
	werr := cmd.Wait()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("workload: %v, want killed by SIGKILL", werr)
	}
}

// pump runs the set's loop on this thread until done() or d passes.
func pump(t *testing.T, set *Set, d time.Duration, done func() bool) {
	t.Helper()
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(ep)
	if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, set.Fd(),
		&syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(set.Fd())}); err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(d)
	evs := make([]syscall.EpollEvent, 1)
	for !done() {
		if time.Now().After(end) {
			t.Fatalf("not done within %v", d)
		}
		syscall.EpollWait(ep, evs, 100)
		if _, err := set.Process(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestVMLendRestoresMemoryHighExactly(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cg := mkcg(t, "lend")
	high := filepath.Join(cg, "memory.high")
	writeFile(t, high, "52428800")
	set, err := NewSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	opt, _ := DefaultOptions(64 << 20)
	var got []Event
	opt.OnEvent = func(_ *Guard, ev Event) { got = append(got, ev) }
	g, err := set.Add(cg, opt)
	if err != nil {
		t.Fatal(err)
	}
	last := func(want EventType) func() bool {
		return func() bool { return len(got) > 0 && got[len(got)-1].Type == want }
	}

	l1, err := g.LendBegin(Unlimited, NoDeadline)
	if err != nil {
		t.Fatal(err)
	}
	if v := readFile(t, high); v != "max" {
		t.Fatalf("memory.high in the lend = %s, want max", v)
	}
	if len(got) != 1 || got[0].Type != EventLendBegin || got[0].Lend.ID != l1.ID ||
		got[0].Lend.OldHighBytes != 52428800 || got[0].Lend.NewHighBytes != Unlimited ||
		got[0].Lend.DeadlineUsec != Unlimited {
		t.Fatalf("lend begin events: %+v", got)
	}
	if err := l1.End(); err != nil {
		t.Fatal(err)
	}
	pump(t, set, 30*time.Second, last(EventLendEnd))
	if e := got[len(got)-1].Lend; e.ID != l1.ID || !e.Restored || e.FoundHighBytes != Unlimited {
		t.Fatalf("lend end: %+v", *e)
	}
	if v := readFile(t, high); v != "52428800" {
		t.Fatalf("memory.high after the lend = %s, want 52428800", v)
	}
	if err := l1.End(); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("a second end: %v, want ENOENT", err)
	}

	l2, err := g.LendBegin(1<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	if l2.ID <= l1.ID {
		t.Fatalf("lend ids %d then %d", l1.ID, l2.ID)
	}
	if err := l1.End(); !errors.Is(err, syscall.ESTALE) {
		t.Fatalf("the old lend's end during a new one: %v, want ESTALE", err)
	}
	if !g.IsLent() || g.OpenLendID() != l2.ID || readFile(t, high) != "53477376" {
		t.Fatalf("the stale end changed the open lend: lent %v id %d high %s", g.IsLent(), g.OpenLendID(), readFile(t, high))
	}
	if err := l2.End(); err != nil {
		t.Fatal(err)
	}
	pump(t, set, 30*time.Second, last(EventLendEnd))
	if v := readFile(t, high); v != "52428800" || !got[len(got)-1].Lend.Restored {
		t.Fatalf("memory.high after the second lend = %s", v)
	}

	l3, err := g.LendBegin(Unlimited, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	pump(t, set, 30*time.Second, last(EventLendExpired))
	if e := got[len(got)-1].Lend; e.ID != l3.ID || !e.Restored {
		t.Fatalf("expired lend: %+v", *e)
	}
	if v := readFile(t, high); v != "52428800" {
		t.Fatalf("memory.high after the deadline = %s, want 52428800", v)
	}
	if err := l3.End(); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("end after the deadline: %v, want ENOENT", err)
	}
}

func TestVMSnapshotWrittenInALendAndRestored(t *testing.T) {
	cg := mkcg(t, "snapshot")
	high := filepath.Join(cg, "memory.high")
	writeFile(t, high, "67108864")
	set, err := Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	opt, _ := DefaultOptions(256 << 20)
	events := make(chan Event, 64)
	opt.OnEvent = func(_ *Guard, ev Event) { events <- ev }
	g, err := set.Add(cg, opt)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.Open("/mnt/disk")
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	img := make([]byte, 32<<20)
	for i := 0; i < len(img); i += 512 {
		img[i] = byte(i >> 9)
	}
	type result struct {
		st  SnapshotStats
		err error
	}
	done := make(chan result)
	go func() { // another goroutine than the set's, as a worker's would be
		st, err := SnapshotWrite(SnapshotImage{Memory: img}, int(dir.Fd()), "vm.snap", &SnapshotOptions{Guard: g})
		done <- result{st, err}
	}()
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	b := waitEvent(t, events, EventLendBegin, 10*time.Second)
	e := waitEvent(t, events, EventLendEnd, 10*time.Second)
	if b.Lend.ID != e.Lend.ID || !e.Lend.Restored || b.Lend.OldHighBytes != 67108864 {
		t.Fatalf("lend events: begin %+v end %+v", *b.Lend, *e.Lend)
	}
	if v := readFile(t, high); v != "67108864" {
		t.Fatalf("memory.high after the write = %s, want 67108864", v)
	}
	st := res.st
	if st.LendBytes == 0 || st.ImageBytes != uint64(len(img)) || st.WriteUsec == 0 || st.TotalUsec < st.WriteUsec+st.SyncUsec {
		t.Fatalf("stats %+v", st)
	}
	t.Logf("written: method %v, %d data bytes, %d us", st.Method, st.DataBytes, st.TotalUsec)
	back := make([]byte, len(img))
	if _, err := SnapshotRestore(int(dir.Fd()), "vm.snap", SnapshotImage{Memory: back}, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, img) {
		t.Fatal("restored image differs")
	}
	if g.IsLent() {
		t.Fatal("still lent after the write")
	}
}

func TestVMGuardRemovedInsideItsOwnCallback(t *testing.T) {
	cg := mkcg(t, "gone")
	set, err := Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	opt, _ := DefaultOptions(64 << 20)
	opt.Tick = 50 * time.Millisecond
	events := make(chan Event, 64)
	type removal struct {
		err error
		n   int
	}
	removed := make(chan removal, 1)
	opt.OnEvent = func(g *Guard, ev Event) {
		events <- ev
		if ev.Type == EventGone {
			err := g.Remove()
			removed <- removal{err, g.Set().Len()}
		}
	}
	if _, err := set.Add(cg, opt); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := syscall.Rmdir(cg); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, events, EventGone, 10*time.Second)
	r := <-removed
	if r.err != nil || r.n != 0 {
		t.Fatalf("Remove inside the callback: %v, %d guards left", r.err, r.n)
	}
	select {
	case ev := <-events:
		t.Fatalf("an event after the removal: %+v", ev)
	case <-time.After(time.Second):
	}
}

func TestVMPreKillDeferred(t *testing.T) {
	cg := mkcg(t, "prekill")
	set, err := Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	opt, _ := DefaultOptions(64 << 20)
	opt.PreKillMaxDefer = 2 * time.Second
	events := make(chan Event, 64)
	type deferral struct {
		tooLong, tooShort, ok error
		at                    time.Time
	}
	deferred := make(chan deferral, 1)
	first := true
	opt.OnEvent = func(g *Guard, ev Event) {
		if ev.Type == EventPreKill && first {
			first = false
			deferred <- deferral{g.DeferKill(3 * time.Second), g.DeferKill(time.Nanosecond),
				g.DeferKill(300 * time.Millisecond), time.Now()}
		}
		events <- ev
	}
	g, err := set.Add(cg, opt)
	if err != nil {
		t.Fatal(err)
	}
	var e *Error
	if err := g.DeferKill(time.Second); !errors.As(err, &e) || e.Op != "defer kill" || e.Path != cg ||
		!errors.Is(err, syscall.ENOENT) {
		t.Fatalf("DeferKill outside a pre-kill callback: %#v, want ENOENT", err)
	}
	cmd := startIn(t, cg, "anon", "68", "256", "-1")
	pre := waitEvent(t, events, EventPreKill, 60*time.Second)
	if pre.Kill == nil || pre.Kill.KillUsec != 0 || pre.Kill.Reason != KillOvershoot {
		t.Fatalf("pre-kill record: %+v", pre.Kill)
	}
	d := <-deferred
	if !errors.Is(d.tooLong, syscall.ERANGE) || !errors.Is(d.tooShort, syscall.EINVAL) || d.ok != nil {
		t.Fatalf("DeferKill in the callback: 3 s %v (want ERANGE), 1 ns %v (want EINVAL), 300 ms %v (want nil)",
			d.tooLong, d.tooShort, d.ok)
	}
	kill := waitEvent(t, events, EventKill, 30*time.Second)
	if since := time.Since(d.at); since < 300*time.Millisecond {
		t.Fatalf("killed %v after the deferral of 300 ms", since)
	}
	if kill.Kill == nil || kill.Kill.Reason != KillOvershoot {
		t.Fatalf("kill record: %+v", kill.Kill)
	}
	st, err := g.Stats()
	if err != nil || st.KillsDeferred != 1 || st.KillsOvershoot != 1 {
		t.Fatalf("stats %+v, %v: want one kill deferred, one made", st, err)
	}
	cmd.Wait()
}

// frozenState is cgroup.freeze and the "frozen" line of cgroup.events.
func frozenState(t *testing.T, cg string) (freeze, frozen string) {
	t.Helper()
	for _, l := range strings.Split(readFile(t, filepath.Join(cg, "cgroup.events")), "\n") {
		if strings.HasPrefix(l, "frozen ") {
			frozen = strings.TrimPrefix(l, "frozen ")
		}
	}
	return readFile(t, filepath.Join(cg, "cgroup.freeze")), frozen
}

func TestVMParkThawed(t *testing.T) {
	cg := mkcg(t, "park")
	set, err := Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	opt, _ := DefaultOptions(64 << 20)
	opt.ParkDeadline = 30 * time.Second
	events := make(chan Event, 64)
	opt.OnEvent = func(g *Guard, ev Event) { events <- ev }
	g, err := set.Add(cg, opt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.ParkEnd(1, ParkKill, 0); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("ParkEnd with no park open: %v, want ENOENT", err)
	}
	cmd := startIn(t, cg, "anon", "68", "256", "-1")
	park := waitEvent(t, events, EventPark, 60*time.Second)
	k := park.Kill
	if k == nil || k.KillUsec != 0 || k.Reason != KillOvershoot || k.Report.ParkID == 0 ||
		k.Report.ParkUsec == 0 || k.Report.FrozenUsec < k.Report.ParkUsec || k.Report.ParkEndUsec != 0 ||
		k.Report.ParkEnd != ParkOpen {
		t.Fatalf("park record: %+v", k)
	}
	id := k.Report.ParkID
	if freeze, frozen := frozenState(t, cg); freeze != "1" || frozen != "1" {
		t.Fatalf("parked: cgroup.freeze %q, frozen %q", freeze, frozen)
	}
	if got := g.OpenParkID(); got != id {
		t.Fatalf("OpenParkID = %d, the event's %d", got, id)
	}
	if _, err := g.ParkEnd(id+1, ParkThaw, 0); !errors.Is(err, syscall.ESTALE) {
		t.Fatalf("ParkEnd of another id: %v, want ESTALE", err)
	}
	if _, err := g.ParkEnd(id, ParkKill, 1<<20); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("ParkKill with a new limit: %v, want EINVAL", err)
	}
	if killed, err := g.ParkEnd(id, ParkThaw, 128<<20); killed || err != nil {
		t.Fatalf("a thaw to 128 MiB: killed %v, %v", killed, err)
	}
	thaw := waitEvent(t, events, EventThaw, 10*time.Second)
	if thaw.Kill == nil || thaw.Kill.Report.ParkID != id || thaw.Kill.Report.ParkEnd != ParkEndThaw ||
		thaw.Kill.Report.ParkEndUsec == 0 {
		t.Fatalf("thaw record: %+v", thaw.Kill)
	}
	if freeze, _ := frozenState(t, cg); freeze != "0" {
		t.Fatalf("thawed: cgroup.freeze %q", freeze)
	}
	if id := g.OpenParkID(); id != 0 {
		t.Fatalf("OpenParkID after the thaw = %d", id)
	}
	if _, err := g.ParkEnd(id, ParkKill, 0); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("ParkEnd after the thaw: %v, want ENOENT", err)
	}
	// 68 MiB under its new limit of 128: watched, not killed.
	select {
	case ev := <-events:
		if ev.Type == EventKill || ev.Type == EventPark {
			t.Fatalf("after the thaw: %v", ev.Type)
		}
	case <-time.After(2 * time.Second):
	}
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the workload after the thaw: %v", err)
	}
	st, err := g.Stats()
	if err != nil || st.Parks != 1 || st.ParksThawed != 1 || st.KillsOvershoot != 0 {
		t.Fatalf("stats %+v, %v: want one park, thawed", st, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
}

func TestVMParkEndsInAKill(t *testing.T) {
	over, late := mkcg(t, "park-over"), mkcg(t, "park-deadline")
	set, err := Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	events := make(chan Event, 64)
	thawed := make(chan error, 1)
	opt, _ := DefaultOptions(64 << 20)
	opt.ParkDeadline = 30 * time.Second
	opt.OnEvent = func(g *Guard, ev Event) {
		events <- ev // first: the kill may be told inside ParkEnd
		if ev.Type == EventPark {
			// At its own limit, still over it: killed, never thawed.
			killed, err := g.ParkEnd(ev.Kill.Report.ParkID, ParkThaw, 0)
			if err == nil && !killed {
				err = errors.New("thawed over its limit")
			}
			thawed <- err
		}
	}
	gOver, err := set.Add(over, opt)
	if err != nil {
		t.Fatal(err)
	}
	lateEvents := make(chan Event, 64)
	opt.ParkDeadline = time.Second
	opt.OnEvent = func(g *Guard, ev Event) { lateEvents <- ev }
	gLate, err := set.Add(late, opt)
	if err != nil {
		t.Fatal(err)
	}
	cmdOver := startIn(t, over, "anon", "68", "256", "-1")
	cmdLate := startIn(t, late, "anon", "68", "256", "-1")

	waitEvent(t, events, EventPark, 60*time.Second)
	if err := <-thawed; err != nil {
		t.Fatalf("a thaw over the limit: %v", err)
	}
	kill := waitEvent(t, events, EventKill, 30*time.Second)
	if kill.Kill == nil || kill.Kill.Report.ParkEnd != ParkEndOverLimit || kill.Kill.Report.ParkID == 0 {
		t.Fatalf("kill record of a thaw over the limit: %+v", kill.Kill)
	}

	park := waitEvent(t, lateEvents, EventPark, 60*time.Second)
	kill = waitEvent(t, lateEvents, EventKill, 30*time.Second)
	r := kill.Kill.Report
	if r.ParkEnd != ParkEndDeadline || r.ParkID != park.Kill.Report.ParkID ||
		r.ParkEndUsec-r.ParkUsec < uint64(time.Second/time.Microsecond) {
		t.Fatalf("kill record of a park past its deadline: %+v", kill.Kill)
	}
	if !strings.Contains(kill.Kill.String(), "killed at the park's deadline") {
		t.Fatalf("the record's line: %s", kill.Kill)
	}
	for _, g := range []*Guard{gOver, gLate} {
		st, err := g.Stats()
		if err != nil || st.Parks != 1 || st.ParksExpired != 1 || st.KillsOvershoot != 1 {
			t.Fatalf("%s: stats %+v, %v: want one park, ended by the guard in a kill", g.Path(), st, err)
		}
	}
	for _, cmd := range []*exec.Cmd{cmdOver, cmdLate} {
		werr := cmd.Wait()
		ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("workload: %v, want killed by SIGKILL (frozen)", werr)
		}
	}
}
