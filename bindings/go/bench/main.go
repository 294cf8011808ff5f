// SPDX-License-Identifier: Apache-2.0

// The Go side of the bindings' benchmark (bindings/bench/run): the loop of
// bindings/bench/bench-loop.c through the binding, same modes and output.
//
//	bench calls N
//	bench guards DIR N SECONDS
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"memguard/cgroupguard"
)

const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID

func threadCPU() time.Duration {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

type pollfd struct {
	fd            int32
	events, revts int16
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func main() {
	runtime.LockOSThread()
	a := os.Args[1:]
	switch {
	case len(a) == 2 && a[0] == "calls":
		n, _ := strconv.Atoi(a[1])
		set, err := cgroupguard.NewSet(nil)
		must(err)
		t0 := threadCPU()
		for i := 0; i < n; i++ {
			set.Process()
		}
		d := threadCPU() - t0
		fmt.Printf("lang=go mode=calls calls=%d ns_per_call=%.1f\n", n, float64(d.Nanoseconds())/float64(n))
		set.Close()
	case len(a) == 4 && a[0] == "guards":
		n, _ := strconv.Atoi(a[2])
		secs, _ := strconv.Atoi(a[3])
		set, err := cgroupguard.NewSet(nil)
		must(err)
		opt, err := cgroupguard.DefaultOptions(64 << 20)
		must(err)
		opt.Tick = 50 * time.Millisecond
		opt.OnEvent = func(_ *cgroupguard.Guard, ev cgroupguard.Event) {
			if ev.Type == cgroupguard.EventError {
				fmt.Fprintf(os.Stderr, "bench: %s: %s: %v\n", ev.Cgroup, ev.What, ev.Err)
			}
		}
		var dirs []string
		for i := 0; i < n; i++ {
			d := filepath.Join(a[1], fmt.Sprintf("go-%d", i))
			if err := os.Mkdir(d, 0755); err != nil && !os.IsExist(err) {
				must(err)
			}
			dirs = append(dirs, d)
			_, err := set.Add(d, opt)
			must(err)
		}
		end := time.Now().Add(time.Duration(secs) * time.Second)
		cpu0, t0 := threadCPU(), time.Now()
		loops := 0
		p := pollfd{fd: int32(set.Fd()), events: 1}
		for time.Now().Before(end) {
			p.revts = 0
			syscall.Syscall(syscall.SYS_POLL, uintptr(unsafe.Pointer(&p)), 1, 100)
			set.Process()
			loops++
		}
		cpu, wall := threadCPU()-cpu0, time.Since(t0)
		ticks := float64(n) * float64(wall) / float64(50*time.Millisecond)
		fmt.Printf("lang=go mode=guards guards=%d seconds=%d loops=%d cpu_ms=%.1f ns_per_tick=%.0f ns_per_loop=%.0f\n",
			n, secs, loops, float64(cpu)/1e6, float64(cpu)/ticks, float64(cpu)/float64(loops))
		set.Close()
		for _, d := range dirs {
			syscall.Rmdir(d)
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: bench calls N | guards DIR N SECONDS")
		os.Exit(2)
	}
}
