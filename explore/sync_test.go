package explore_test

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/verbsim/verbsim/explore"
	"github.com/verbsim/verbsim/explore/patterns"
)

var siteLine = regexp.MustCompile(`sync_test\.go:\d+`)

// outcomesOf returns the failure messages (and "pass") of every schedule
// of world's unbounded exhaustive search.
func outcomesOf(t *testing.T, world func(*explore.World)) map[string]bool {
	t.Helper()
	set, _, _ := explore.OutcomesOf(world, explore.Unbounded, "dpor")
	return set
}

// TestSyncObjects: the explorer's synchronisation objects under the
// exhaustive search, one world each: every order they allow is explored,
// and none they forbid.
func TestSyncObjects(t *testing.T) {
	cases := []struct {
		name  string
		world func(w *explore.World)
		want  []string // the outcomes, pass included
	}{
		{"mutex-excludes", func(w *explore.World) {
			var mu explore.Mutex
			in := 0
			for _, n := range []string{"a", "b"} {
				w.Go(n, func(context.Context) {
					mu.Lock()
					in++
					if in != 1 {
						w.Errorf("two goroutines inside")
					}
					in--
					mu.Unlock()
				})
			}
		}, []string{"pass"}},
		{"unguarded-counter", func(w *explore.World) {
			var v explore.Int64
			for _, n := range []string{"a", "b"} {
				w.Go(n, func(context.Context) { x := v.Load(); v.Store(x + 1) })
			}
			w.Finally(func() {
				if v.Load() != 2 {
					w.Errorf("lost update: %d", v.Load())
				}
			})
		}, []string{"pass", "assertion: lost update: 1"}},
		{"select-both-ready", func(w *explore.World) {
			a, b := explore.NewChan[int](1), explore.NewChan[int](1)
			a.Send(1)
			b.Send(2)
			w.Go("s", func(context.Context) {
				got := 0
				explore.Select(a.RecvCase(func(v int, _ bool) { got = v }), b.RecvCase(func(v int, _ bool) { got = v }))
				w.Errorf("took %d", got)
			})
		}, []string{"assertion: took 1", "assertion: took 2"}},
		{"once-runs-once", func(w *explore.World) {
			var once explore.Once
			var mu explore.Mutex
			runs := 0
			for _, n := range []string{"a", "b"} {
				w.Go(n, func(context.Context) {
					once.Do(func() { mu.Lock(); runs++; mu.Unlock() })
					mu.Lock()
					if runs != 1 {
						w.Errorf("Do returned before its function ran: %d", runs)
					}
					mu.Unlock()
				})
			}
		}, []string{"pass"}},
		{"cond-signal", func(w *explore.World) {
			var mu explore.Mutex
			c := explore.NewCond(&mu)
			ready := false
			w.Go("waiter", func(context.Context) {
				mu.Lock()
				for !ready {
					c.Wait()
				}
				mu.Unlock()
			})
			w.Go("signaller", func(context.Context) { mu.Lock(); ready = true; c.Signal(); mu.Unlock() })
		}, []string{"pass"}},
		{"cond-lost-signal", func(w *explore.World) {
			var mu explore.Mutex
			c := explore.NewCond(&mu)
			w.Go("waiter", func(context.Context) { mu.Lock(); c.Wait(); mu.Unlock() }) // BUG: no condition checked
			w.Go("signaller", func(context.Context) { c.Signal() })
		}, []string{"pass", "deadlock: waiter waits in Wait on cond#2 (sync_test.go:__): no Signal or Broadcast to come"}},
		{"rwmutex-writer-waits", func(w *explore.World) {
			var mu explore.RWMutex
			w.Go("reader", func(context.Context) {
				mu.RLock()
				mu.RLock() // a second read lock while a writer waits: Go's RWMutex deadlocks here too
				//lint:ignore SA2001 the nested read lock is the point
				mu.RUnlock()
				mu.RUnlock()
			})
			//lint:ignore SA2001 the lock is the point: it waits for the readers
			w.Go("writer", func(context.Context) { mu.Lock(); mu.Unlock() })
		}, []string{"pass", "deadlock: reader waits in RLock on rwmutex#1 (sync_test.go:__): a writer waits in Lock; writer waits in Lock on rwmutex#1 (sync_test.go:__): read-locked by [reader]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := outcomesOf(t, c.world)
			var list []string
			for k := range got {
				list = append(list, siteLine.ReplaceAllString(k, "sync_test.go:__"))
			}
			for _, want := range c.want {
				found := false
				for _, g := range list {
					found = found || g == want
				}
				if !found {
					t.Errorf("outcome %q not found; got %q", want, list)
				}
			}
			if len(list) != len(c.want) {
				t.Errorf("outcomes %q, want %q", list, c.want)
			}
		})
	}
}

// TestSyncObjectsOutsideWorlds: outside any world the objects are Go's
// own, and a world run plainly uses them so.
func TestSyncObjectsOutsideWorlds(t *testing.T) {
	var mu explore.Mutex
	var wg explore.WaitGroup
	ch := explore.NewChan[int](0)
	sum := 0
	wg.Add(2)
	for i := range 2 {
		go func() {
			defer wg.Done()
			ch.Send(i + 1)
		}()
	}
	for range 2 {
		v, _ := ch.Recv()
		mu.Lock()
		sum += v
		mu.Unlock()
	}
	wg.Wait()
	if sum != 3 {
		t.Fatalf("sum %d", sum)
	}
	if f := explore.RunPlain(patterns.WorkerPool(3, patterns.PoolCorrect)); f != nil {
		t.Fatalf("the worker pool, run plainly: %v", f)
	}
}

// TestUnseenWait: a goroutine of a world that waits on a Go channel or a
// sync.Mutex holds the turn for ever; the explorer says so, naming the
// goroutine, the wait and the line, instead of hanging. (The goroutine is
// let go after, so that nothing outlives the test.)
func TestUnseenWait(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	mu.Lock()
	worlds := map[string]func(*explore.World){
		"a receive from a Go channel": func(w *explore.World) {
			w.Go("waiter", func(context.Context) { <-release })
		},
		"sync.Mutex": func(w *explore.World) {
			//lint:ignore SA2001 the lock is the point: it blocks where the explorer cannot see
			w.Go("locker", func(context.Context) { mu.Lock(); mu.Unlock() })
		},
		"the world function": func(w *explore.World) { <-release },
	}
	defer func() { close(release); mu.Unlock() }()
	for want, world := range worlds {
		res := explore.Explore(world, explore.Options{Strategy: explore.Random, Schedules: 1, NoShrink: true})
		f := res.Failure
		if f == nil || f.Kind != explore.Unseen || !strings.Contains(f.Message, want) || !strings.Contains(f.Message, "sync_test.go:") {
			t.Errorf("%s: %v", want, res)
			continue
		}
		t.Logf("%s", f.Message)
	}
}
