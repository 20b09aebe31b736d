package loadtest

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progress shows the run's counts as it goes: a bar redrawn in place on a terminal, a plain line every
// few seconds elsewhere (a log, CI). It also keeps the run's timeline, one tick a second.
type progress struct {
	out      io.Writer
	r        *rehearsal
	terminal bool
}

func newProgress(out io.Writer, r *rehearsal) *progress {
	p := &progress{out: out, r: r}
	if f, ok := out.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.terminal = true
		}
	}
	return p
}

// run starts the display; the function it returns stops it and draws the final counts.
func (p *progress) run() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		every := 2 * time.Second
		if p.terminal {
			every = 250 * time.Millisecond
		}
		show := time.NewTicker(every)
		second := time.NewTicker(time.Second)
		defer show.Stop()
		defer second.Stop()
		lastReq, lastAt := int64(0), time.Now()
		rate := 0.0
		for {
			select {
			case <-done:
				p.tick()
				p.draw(rate, true)
				return
			case <-second.C:
				p.tick()
				n := p.r.requests.Load()
				rate = float64(n-lastReq) / time.Since(lastAt).Seconds()
				lastReq, lastAt = n, time.Now()
			case <-show.C:
				p.draw(rate, false)
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

func (p *progress) tick() {
	r := p.r
	t := tick{At: time.Since(r.start).Seconds(), Joined: r.joined.Load(), Waiting: r.waiting.Load(), Admitted: r.admitted.Load(),
		Done: r.done.Load(), Errors: r.failed.Load()}
	r.mu.Lock()
	r.timeline = append(r.timeline, t)
	r.mu.Unlock()
}

func (p *progress) draw(rate float64, final bool) {
	r := p.r
	line := fmt.Sprintf("joined %d/%d  waiting %d  admitted %d  done %d  %.0f req/s  errors %d",
		r.joined.Load(), r.visitors, r.waiting.Load(), r.admitted.Load(), r.done.Load(), rate, r.failed.Load())
	if !p.terminal {
		fmt.Fprintf(p.out, "%6.1fs  %s\n", time.Since(r.start).Seconds(), line)
		return
	}
	const width = 30
	filled := int(float64(width) * float64(r.done.Load()) / float64(r.visitors))
	admittedOnly := int(float64(width)*float64(r.admitted.Load())/float64(r.visitors)) - filled
	bar := strings.Repeat("█", filled) + strings.Repeat("▓", max(0, admittedOnly))
	bar += strings.Repeat("░", max(0, width-len([]rune(bar))))
	end := ""
	if final {
		end = "\n"
	}
	fmt.Fprintf(p.out, "\r\x1b[K[%s] %s%s", bar, line, end)
}
