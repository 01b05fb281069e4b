package main

import (
	"sync"
	"time"

	"github.com/loom-operator/loom/internal/procmem"
)

// memSampler reads a process's resident set size from /proc every
// interval, and keeps the largest it saw. The kernel's own peak (VmHWM)
// is exact; the samples show that it was not a spike outside the phase.
type memSampler struct {
	pid  int
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	maxRSS  int64
	samples int
}

func startMemSampler(pid int, every time.Duration) *memSampler {
	s := &memSampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			s.sample()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *memSampler) sample() {
	m, err := procmem.Read(s.pid)
	if err != nil {
		return // the process has ended
	}
	s.mu.Lock()
	s.maxRSS = max(s.maxRSS, m.RSS)
	s.samples++
	s.mu.Unlock()
}

// finish stops sampling and returns the largest RSS seen and how many
// samples were taken.
func (s *memSampler) finish() (maxRSS int64, samples int) {
	if s == nil {
		return 0, 0
	}
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxRSS, s.samples
}
