package main

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/lockbench/lockbench/workload"
)

// progress draws a live line on stderr while a sale runs, only when stderr
// is a terminal: logs and pipes get the summary alone.
type progress struct {
	mu  sync.Mutex
	w   io.Writer
	on  bool
	len int
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.on = true
		}
	}
	return p
}

func (p *progress) update(s workload.Progress) {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	line := fmt.Sprintf("%-12s %6.1fs  sold %d/%d  buyers %d arrived, %d done  faults %d",
		s.Impl, s.Elapsed.Seconds(), s.Sold, s.Stock, s.Arrived, s.Finished, s.Faults)
	fmt.Fprintf(p.w, "\r%-*s", p.len, line)
	p.len = len(line)
}

func (p *progress) clear() {
	if !p.on || p.len == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "\r%*s\r", p.len, "")
	p.len = 0
}
