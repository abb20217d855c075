package cpushare

import (
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestWant: a node takes its share only after a whole window of samples
// in which the other processes kept fewer than one task a core ready,
// and every CPU again as soon as the window's average reaches one a core.
func TestWant(t *testing.T) {
	quiet := func(n float64) []float64 { return slices.Repeat([]float64{n}, Window) }
	for _, c := range []struct {
		name    string
		samples []float64
		cores   int
		want    int
	}{
		{"no samples", nil, 2, 4},
		{"a window less one, quiet", quiet(0)[1:], 2, 4},
		{"a quiet window", quiet(0), 2, 1},
		{"the server busy (one task)", quiet(1), 2, 1},
		{"just below a task a core", quiet(1.9), 2, 1},
		{"a task a core", quiet(2), 2, 4},
		{"a hog", quiet(8), 2, 4},
		{"a burst the window absorbs", append(quiet(0)[1:], 15), 2, 1},
		{"a burst it does not", append(quiet(0)[1:], 16), 2, 4},
		{"the oldest samples do not count", append(quiet(9), quiet(0)...), 2, 1},
		{"a hog just begun", append(quiet(0), quiet(9)[:2]...), 2, 4},
		{"no cores said", quiet(0.5), 0, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Want(c.samples, 1, 4, c.cores); got != c.want {
				t.Errorf("Want(%v, share 1, all 4, %d cores) = %d, want %d", c.samples, c.cores, got, c.want)
			}
		})
	}
}

// TestShareFollowsTheSamples: a Share moves this process's GOMAXPROCS to
// its share after a quiet window, back to every CPU when a hog shows, onto
// the share again only after a whole new quiet window, and gives every
// CPU back for good when a sample fails or at End.
func TestShareFollowsTheSamples(t *testing.T) {
	if why := Unshared(); why != "" {
		t.Skip(why)
	}
	all := runtime.GOMAXPROCS(0)
	defer runtime.SetDefaultGOMAXPROCS()
	hog := float64(4 * runtime.NumCPU()) // two of these fill a window's bound
	for _, c := range []struct {
		name string
		end  func(s *Share)
	}{
		{"a sample fails", func(s *Share) { s.Observe(0, false) }},
		{"it ends", func(s *Share) { s.End() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := New(1)
			give := func(n float64, times int) {
				for range times {
					s.Observe(n, true)
				}
			}
			want := func(what string, n int) {
				t.Helper()
				if got := runtime.GOMAXPROCS(0); got != n {
					t.Fatalf("%s: GOMAXPROCS %d, want %d", what, got, n)
				}
			}
			give(0, Window-1)
			want("a window less one, quiet", all)
			give(0, 1)
			want("a quiet window", 1)
			give(hog, 1)
			want("one hog's sample in a quiet window", 1)
			give(hog, 1)
			want("two hog's samples", all)
			// The hog's samples would leave the window after 7 quiet ones;
			// the share comes back after 8, a whole new window.
			give(0, Window-1)
			want("a window less one, quiet, after the hog", all)
			give(0, 1)
			want("a whole quiet window after the hog", 1)
			c.end(s)
			want("after "+c.name, all)
			give(0, 2*Window)
			want("quiet samples after "+c.name, all)
		})
	}
}

// TestPrime: a Share primed on a quiet machine begins on its share, one
// primed beside a hog on every CPU, each after a whole window of samples;
// a nil Share takes none.
func TestPrime(t *testing.T) {
	if why := Unshared(); why != "" {
		t.Skip(why)
	}
	all := runtime.GOMAXPROCS(0)
	defer runtime.SetDefaultGOMAXPROCS()
	for _, c := range []struct {
		name   string
		others float64
		want   int
	}{
		{"a quiet machine", 0, 1},
		{"a hog", float64(4 * runtime.NumCPU()), all},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := New(1)
			defer s.End()
			taken := 0
			s.Prime(func() (float64, bool) {
				if got := runtime.GOMAXPROCS(0); got != all {
					t.Errorf("GOMAXPROCS %d before a whole window was taken, want %d", got, all)
				}
				taken++
				return c.others, true
			})
			if taken != Window {
				t.Fatalf("Prime took %d samples, want a window's %d", taken, Window)
			}
			if got := runtime.GOMAXPROCS(0); got != c.want {
				t.Fatalf("GOMAXPROCS %d after the prime, want %d", got, c.want)
			}
		})
	}
	var none *Share
	none.Prime(func() (float64, bool) {
		t.Fatal("a nil Share took a sample")
		return 0, false
	})
}

// TestNew: no Share (every CPU, and a nil Share does nothing) for no
// share, a share of every CPU, or a GOMAXPROCS the user set.
func TestNew(t *testing.T) {
	if why := Unshared(); why != "" {
		t.Skip(why)
	}
	all := runtime.GOMAXPROCS(0)
	for _, cpus := range []int{0, -1, all, all + 1} {
		if s := New(cpus); s != nil {
			t.Errorf("New(%d) with GOMAXPROCS %d: a Share, want none", cpus, all)
		}
	}
	var none *Share
	none.Observe(0, true)
	none.End()
	if New(1) == nil {
		t.Errorf("New(1) with GOMAXPROCS %d: none, want a Share", all)
	}
	t.Setenv("GOMAXPROCS", strconv.Itoa(all))
	if s := New(1); s != nil {
		t.Error("New(1) with GOMAXPROCS set: a Share, want none (the user's choice stands)")
	}
}

// TestFor: each process's share, and none when the user set GOMAXPROCS or
// the share would be every CPU.
func TestFor(t *testing.T) {
	if v, set := os.LookupEnv("GOMAXPROCS"); set {
		t.Skipf("GOMAXPROCS=%s is set for the test itself", v)
	}
	n := runtime.GOMAXPROCS(0)
	for _, c := range []struct {
		nodes, all int
		want       int
	}{
		{2, n, max(1, n/2)},
		{3 * n, n, 1},
		{1, n, 0},
		{0, n, 0},
		{2, 1, 0}, // one CPU: the share would be all of it
	} {
		runtime.GOMAXPROCS(c.all)
		got := For(c.nodes)
		runtime.SetDefaultGOMAXPROCS()
		if c.all >= 2 && c.nodes >= 2 && n < 2 {
			continue // one CPU here: nothing to share
		}
		if got != c.want {
			t.Errorf("For(%d) with GOMAXPROCS %d = %d, want %d", c.nodes, c.all, got, c.want)
		}
	}
	t.Setenv("GOMAXPROCS", strconv.Itoa(n))
	if got := For(2); got != 0 {
		t.Errorf("with GOMAXPROCS set, For(2) = %d, want 0 (the user's choice stands)", got)
	}
}

// TestFromEnv: the share is read once and removed; anything but a count of
// CPUs from 1 to fewer than GOMAXPROCS is an error that names the
// variable; a GOMAXPROCS the user set stands.
func TestFromEnv(t *testing.T) {
	if why := Unshared(); why != "" {
		t.Skip(why)
	}
	all := runtime.GOMAXPROCS(0)
	t.Setenv(Env, "") // restored after the test
	os.Unsetenv(Env)
	if n, err := FromEnv(); n != 0 || err != nil {
		t.Errorf("unset: %d, %v; want 0, nil", n, err)
	}
	t.Setenv(Env, "1")
	if n, err := FromEnv(); n != 1 || err != nil {
		t.Errorf("%s=1: %d, %v; want 1, nil", Env, n, err)
	}
	if _, set := os.LookupEnv(Env); set {
		t.Errorf("%s is still set after it was read", Env)
	}
	for _, v := range []string{"", "0", "-1", "two", "1.5", strconv.Itoa(all), "99999999999999999999"} {
		t.Setenv(Env, v)
		if n, err := FromEnv(); err == nil || !strings.Contains(err.Error(), Env) {
			t.Errorf("%s=%q: %d, %v; want an error naming %s", Env, v, n, err, Env)
		}
	}
	t.Setenv(Env, "1")
	t.Setenv("GOMAXPROCS", strconv.Itoa(all))
	if n, err := FromEnv(); n != 0 || err != nil {
		t.Errorf("%s=1 with GOMAXPROCS set: %d, %v; want 0, nil (the user's choice stands)", Env, n, err)
	}
}

// TestFamily: a child process of this test finds this process (its
// parent) and its sibling that runs the same program, and neither itself
// nor a sibling that runs another program (a server its parent started).
func TestFamily(t *testing.T) {
	if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/children"); err != nil {
		t.Skipf("this kernel does not list a process's children in /proc: %v", err)
	}
	start := func(cmd *exec.Cmd) *exec.Cmd {
		t.Helper()
		if err := cmd.Start(); err != nil {
			t.Skipf("cannot start %s: %v", cmd.Path, err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	same := exec.Command(os.Args[0], "-test.run=^$")
	same.Env = append(os.Environ(), "CPUSHARE_FAMILY=wait")
	stdin, err := same.StdinPipe() // it waits for its stdin to close
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	start(same)
	other := start(exec.Command("sleep", "60"))
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "CPUSHARE_FAMILY=say")
	out, err := child.Output()
	if err != nil {
		t.Fatalf("the child: %v", err)
	}
	var got []int
	for _, f := range strings.Fields(string(out)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("the child said %q", out)
		}
		got = append(got, pid)
	}
	if len(got) < 2 || got[0] != child.Process.Pid {
		t.Fatalf("the child said %q; want its own pid %d, then its family", out, child.Process.Pid)
	}
	self, family := got[0], got[1:]
	if family[0] != os.Getpid() {
		t.Errorf("family %v: want its parent, %d, first", family, os.Getpid())
	}
	if !slices.Contains(family, same.Process.Pid) {
		t.Errorf("family %v: want its sibling of the same program, %d, in it", family, same.Process.Pid)
	}
	if slices.Contains(family, other.Process.Pid) {
		t.Errorf("family %v: its sibling of another program, %d, is in it", family, other.Process.Pid)
	}
	if slices.Contains(family, self) {
		t.Errorf("family %v: the child itself, %d, is in it", family, self)
	}
}

func TestMain(m *testing.M) {
	switch os.Getenv("CPUSHARE_FAMILY") {
	case "say":
		os.Stdout.WriteString(strconv.Itoa(os.Getpid()))
		for _, pid := range Family() {
			os.Stdout.WriteString(" " + strconv.Itoa(pid))
		}
		os.Stdout.WriteString("\n")
		os.Exit(0)
	case "wait":
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}
