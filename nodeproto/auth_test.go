package nodeproto

import (
	"crypto/tls"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// accepted runs Accept on one end of a loopback connection and node on
// the other; it returns Accept's results, the connection closed when
// Accept refused it (as its caller does).
func accepted(t *testing.T, secret string, node func(conn net.Conn)) (*Link, *Message, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return
		}
		defer conn.Close()
		node(conn)
	}()
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	cfg, err := ServerTLS(secret)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(time.Minute))
	l, m, err := Accept(t.Context(), conn, cfg, secret)
	if err != nil {
		conn.Close()
	}
	return l, m, err
}

// TestAccept: only a node that proves the run's secret gets a link; the
// secret itself never crosses it, and a node with another secret does not
// take the coordinator for its own.
func TestAccept(t *testing.T) {
	secret := NewSecret()
	// waitEnd keeps a forged node's connection open until the coordinator
	// closes it.
	waitEnd := func(l *Link) {
		for {
			if _, err := l.Recv(); err != nil {
				return
			}
		}
	}
	tests := []struct {
		name     string
		node     func(t *testing.T, conn net.Conn) error
		accepted bool
		nodeErr  error
	}{
		{"the secret", func(t *testing.T, conn net.Conn) error {
			l, err := Connect(t.Context(), conn, secret, &Message{Kind: Hello, Node: 3, Token: "tok"})
			if err == nil {
				waitEnd(l)
			}
			return err
		}, true, nil},
		{"plaintext", func(t *testing.T, conn net.Conn) error {
			l := NewLink(conn)
			l.Send(&Message{Kind: Hello, Node: 3})
			waitEnd(l)
			return nil
		}, false, nil},
		{"no proof", func(t *testing.T, conn net.Conn) error {
			l := NewLink(tls.Client(conn, &tls.Config{InsecureSkipVerify: true}))
			l.Send(&Message{Kind: Hello, Node: 3})
			waitEnd(l)
			return nil
		}, false, nil},
		{"the secret in the hello", func(t *testing.T, conn net.Conn) error {
			l := NewLink(tls.Client(conn, &tls.Config{InsecureSkipVerify: true}))
			l.Send(&Message{Kind: Hello, Node: 3, Token: secret, Proof: []byte(secret)})
			waitEnd(l)
			return nil
		}, false, nil},
		{"another secret", func(t *testing.T, conn net.Conn) error {
			_, err := Connect(t.Context(), conn, NewSecret(), &Message{Kind: Hello, Node: 3})
			return err
		}, false, ErrAuth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodeErr := make(chan error, 1)
			l, m, err := accepted(t, secret, func(conn net.Conn) { nodeErr <- tt.node(t, conn) })
			if tt.accepted {
				if err != nil || m.Node != 3 || m.Token != "tok" {
					t.Fatalf("the genuine node: %v, %+v", err, m)
				}
				l.Close()
			} else if !errors.Is(err, ErrAuth) || l != nil || m != nil {
				t.Fatalf("accepted a node without the secret: %v, %v, %+v", err, l, m)
			}
			if err := <-nodeErr; !errors.Is(err, tt.nodeErr) {
				t.Errorf("the node's side: %v, want %v", err, tt.nodeErr)
			}
		})
	}
}

// TestSecret: a secret is checked before use, and read only from a
// regular file; a coordinator writes a fresh one for its owner only, and
// never over a file that exists.
func TestSecret(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	good := NewSecret()
	tests := []struct {
		name, path string
		want       error
	}{
		{"a fresh secret, a line end", write("good", good+"\n"), nil},
		{"too short", write("short", "hunter2"), ErrSecret},
		{"two lines", write("two", good+"\n"+good), ErrSecret},
		{"too long", write("long", strings.Repeat("x", 5000)), ErrSecret},
		{"missing", filepath.Join(dir, "none"), fs.ErrNotExist},
		{"a directory", dir, ErrSecret},
		{"a FIFO", fifo, ErrSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ReadSecretFile(tt.path)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %q, %v; want %v", s, err, tt.want)
			}
			if err == nil && s != good {
				t.Errorf("got %q, want %q", s, good)
			}
		})
	}
	p := filepath.Join(dir, "new")
	s, err := CreateSecretFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the secret's file: %v, %v; want mode 0600", st.Mode(), err)
	}
	if got, err := ReadSecretFile(p); err != nil || got != s {
		t.Errorf("read back %q, %v; want %q", got, err, s)
	}
	if _, err := CreateSecretFile(p); !errors.Is(err, fs.ErrExist) && !errors.Is(err, ErrSecret) {
		t.Errorf("a second secret over the first: %v", err)
	}
	if got, _ := ReadSecretFile(p); got != s {
		t.Errorf("the secret was overwritten")
	}
}

// TestHugeCountMemory (issue 24, row 5): a peer that announces a message
// of 4 GiB after its hello costs the link an error, not the memory: far
// less than a megabyte is allocated while it is refused.
func TestHugeCountMemory(t *testing.T) {
	raw := gobOf(t, &Message{Kind: Hello, Node: 1})
	raw = append(raw, 0xfc, 0xff, 0xff, 0xff, 0xf0) // a count of 4 GiB − 16
	c1, c2 := net.Pipe()
	l := NewLink(c1)
	defer l.Close()
	go func() {
		c2.Write(raw)
		junk := make([]byte, 64<<10)
		for range 64 { // what would follow: 4 MiB of it, until the link stops reading
			if _, err := c2.Write(junk); err != nil {
				return
			}
		}
		c2.Close()
	}()
	defer c2.Close()
	if m, err := l.Hello(); err != nil {
		t.Fatalf("hello: %v, %v", m, err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	m, err := l.Recv()
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, %v; want ErrTooLarge", m, err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("refusing a 4 GiB count allocated %d bytes", grew)
	}
}
