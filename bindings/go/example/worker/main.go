// SPDX-License-Identifier: Apache-2.0

// A worker that guards its actors' cgroups: one set for all of them, the
// set's loop on its own OS thread, kill records sent to the worker's main
// goroutine through a channel of its own choosing.
//
//	go run ./example/worker -limit 268435456 /sys/fs/cgroup/workers/vm-1 ...
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	"memguard/cgroupguard"
)

func main() {
	limit := flag.Uint64("limit", 256<<20, "what each actor paid for, in bytes")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: worker [-limit BYTES] CGROUP-DIR...")
		os.Exit(2)
	}
	// A lend left by a worker that crashed mid-snapshot is ended first.
	for _, cg := range flag.Args() {
		if _, err := cgroupguard.Recover(cg, false); err != nil {
			log.Printf("%s: recover: %v", cg, err)
		}
	}
	set, err := cgroupguard.Start(&cgroupguard.SetOptions{
		Log: func(level cgroupguard.LogLevel, msg string) { log.Print(msg) },
	})
	if err != nil {
		log.Fatal(err)
	}
	defer set.Close()

	// The callback runs on the set's thread and must not block it: the
	// Event is Go values already, the channel is buffered, and a record that
	// does not fit is logged here rather than waited for.
	kills := make(chan *cgroupguard.KillRecord, 64)
	opt, err := cgroupguard.DefaultOptions(*limit)
	if err != nil {
		log.Fatal(err)
	}
	opt.OnEvent = func(g *cgroupguard.Guard, ev cgroupguard.Event) {
		switch ev.Type {
		case cgroupguard.EventKill:
			select {
			case kills <- ev.Kill:
			default:
				log.Printf("%s: %s", ev.Cgroup, ev.Kill)
			}
		case cgroupguard.EventGone:
			g.Remove() // allowed inside its own callback
		case cgroupguard.EventError:
			log.Printf("%s: %s: %v", ev.Cgroup, ev.What, ev.Err)
		}
	}
	for _, cg := range flag.Args() {
		if _, err := set.Add(cg, opt); err != nil {
			log.Fatal(err) // "cgroupguard: add CGROUP: ...": errors.Is(err, syscall.ENOTSUP) ...
		}
	}

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	for {
		select {
		case k := <-kills:
			fmt.Println(k) // tell the tenant why
		case <-stop:
			return
		}
	}
}
