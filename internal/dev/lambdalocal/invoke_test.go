package lambdalocal

import (
	"sync"
	"testing"
	"time"
)

func TestPoolReusesIdleGoroutinesAndLetsThemGo(t *testing.T) {
	p := &pool{work: make(chan func()), idle: 200 * time.Millisecond}

	// Given 100 functions run one after another
	for range 100 {
		done := make(chan struct{})
		p.run(func() { close(done) })
		<-done
		time.Sleep(time.Millisecond) // let the goroutine get back to waiting
	}
	// Then one goroutine ran them all
	if n := int(p.live.Load()); n != 1 {
		t.Fatalf("%d goroutines for 100 sequential runs, want 1", n)
	}

	// When 8 run at once, 8 goroutines run them
	var started, release sync.WaitGroup
	started.Add(8)
	release.Add(1)
	for range 8 {
		p.run(func() { started.Done(); release.Wait() })
	}
	started.Wait()
	if n := int(p.live.Load()); n != 8 {
		t.Errorf("%d goroutines for 8 concurrent runs, want 8", n)
	}
	release.Done()

	// And idle goroutines exit
	deadline := time.Now().Add(5 * time.Second)
	for p.live.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := int(p.live.Load()); n > 0 {
		t.Errorf("%d goroutines left after the idle timeout", n)
	}
}
