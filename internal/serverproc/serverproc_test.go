package serverproc

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestWait(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		readyAt int // the call of ready that succeeds; 0 never
		want    error
		output  string // what the error carries
	}{
		{name: "serves", script: "exec sleep 30", readyAt: 3},
		{name: "exits", script: "echo port taken; exit 1", want: ErrExited, output: "port taken"},
		{name: "times out", script: "echo starting; exec sleep 30", output: "did not serve within"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Start(exec.Command("sh", "-c", tt.script))
			if err != nil {
				t.Fatal(err)
			}
			calls := 0
			err = p.Wait("sh", "nowhere", 300*time.Millisecond, 10*time.Millisecond, func() error {
				calls++
				if calls == tt.readyAt {
					return nil
				}
				return errors.New("not yet")
			})
			if tt.readyAt > 0 {
				if err != nil || calls != tt.readyAt {
					t.Fatalf("Wait = %v after %d calls, want nil after %d", err, calls, tt.readyAt)
				}
				p.Kill()
			} else if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) || !strings.Contains(err.Error(), tt.output) {
				t.Fatalf("Wait = %v, want an error (%v) carrying %q", err, tt.want, tt.output)
			}
			// Whatever Wait said, the process is gone now.
			select {
			case <-p.exited:
			case <-time.After(5 * time.Second):
				t.Fatalf("the process still runs")
			}
		})
	}
}

func TestOutputKeepsTheLastMiB(t *testing.T) {
	var b syncBuffer
	chunk := strings.Repeat("a", 1000) + "\n"
	for range 2 * keep / len(chunk) {
		b.Write([]byte(chunk))
	}
	b.Write([]byte("the end"))
	if s := b.String(); len(s) != keep || !strings.HasSuffix(s, "the end") {
		t.Errorf("kept %d bytes ending %q, want %d ending in the last write", len(s), s[len(s)-10:], keep)
	}
}
