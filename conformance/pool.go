package conformance

import (
	"context"
	"sync"
)

// readResult is what one blocked reader got: the value it read (an event)
// and the error.
type readResult[V any] struct {
	v   V
	err error
}

// readerPool is a set of goroutines each blocked once in a reading verb
// (GetEvent, GetAsyncEvent), for the cases about blocking and about several
// readers.
type readerPool[V any] struct {
	cancel  context.CancelFunc
	results chan readResult[V]
	wg      sync.WaitGroup
	release func(V) // acknowledges a value read after the case stopped looking
}

// startReaders starts n goroutines each calling read once with a context
// bounded by Patience. release acknowledges a value nobody consumed. Call
// stop before the case returns.
func startReaders[V any](n int, read func(context.Context) (V, error), release func(V)) *readerPool[V] {
	ctx, cancel := patient()
	p := &readerPool[V]{cancel: cancel, results: make(chan readResult[V], n), release: release}
	for range n {
		p.wg.Go(func() {
			v, err := read(ctx)
			p.results <- readResult[V]{v, err}
		})
	}
	return p
}

// idle waits Grace and returns the result of a reader that returned in that
// time, or nil if none did.
func (p *readerPool[V]) idle() *readResult[V] {
	g, cancel := graceful()
	defer cancel()
	select {
	case r := <-p.results:
		return &r
	case <-g.Done():
		return nil
	}
}

// next waits for the next reader to return; every reader returns within
// Patience.
func (p *readerPool[V]) next() readResult[V] { return <-p.results }

// stop ends the readers still blocked and waits for all of them. A value a
// reader got after the case stopped looking is released, so it does not hold
// up teardown.
func (p *readerPool[V]) stop() {
	p.cancel()
	p.wg.Wait()
	close(p.results)
	for r := range p.results {
		if r.err == nil {
			p.release(r.v)
		}
	}
}
