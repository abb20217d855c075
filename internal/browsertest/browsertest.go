// Package browsertest opens pages in a real headless Chromium for tests:
// it renders a file, collects what the page logged (console errors,
// uncaught exceptions, failed loads, requests made), evaluates JavaScript
// in it and takes screenshots.
//
// Chromium is driven over the DevTools protocol on a pipe
// (--remote-debugging-pipe: commands on fd 3, answers on fd 4, each
// message JSON ended by a NUL byte), so no port is opened and no
// WebSocket client is needed. It is started with its background
// networking, component updates and sync off: a test page fetches nothing
// the test does not see.
package browsertest

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Names of the Chromium binary, tried in order on PATH.
var binaries = []string{"chromium", "chromium-browser", "google-chrome", "headless_shell"}

// RequireEnv is the environment variable that makes a missing Chromium
// fatal rather than a skip (CI sets it).
const RequireEnv = "LOCKBENCH_REQUIRE_BROWSER"

// Binary returns the path of a Chromium binary on PATH, or "".
func Binary() string {
	for _, b := range binaries {
		if p, err := exec.LookPath(b); err == nil {
			return p
		}
	}
	return ""
}

// Flags are the command-line flags Chromium is started with: headless,
// no sandbox (tests run as root in CI), and every background fetch off.
var Flags = []string{
	"--headless",
	"--no-sandbox",
	"--disable-gpu",
	"--disable-background-networking",
	"--disable-component-update",
	"--disable-sync",
	"--no-first-run",
	"--no-default-browser-check",
	"--disable-extensions",
	"--disable-default-apps",
	"--disable-domain-reliability",
	"--disable-client-side-phishing-detection",
	"--metrics-recording-only",
	"--mute-audio",
	"--hide-scrollbars",
	"--remote-debugging-pipe",
}

// Browser is a running headless Chromium.
type Browser struct {
	cmd    *exec.Cmd
	in     *os.File // our end of Chromium's fd 3
	out    *os.File // our end of Chromium's fd 4
	stderr strings.Builder

	mu      sync.Mutex
	nextID  int
	waiting map[int]chan message
	events  []message
	notify  chan struct{}
	done    chan struct{}
	readErr error
}

// message is one DevTools protocol message: a command's answer (ID set)
// or an event (Method set).
type message struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// Start starts Chromium for the test and stops it at the test's end. The
// test is skipped when no Chromium is installed, unless RequireEnv is 1.
func Start(t testing.TB) *Browser {
	t.Helper()
	bin := Binary()
	if bin == "" {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("chromium not on PATH and %s=1 (apt-get install chromium)", RequireEnv)
		}
		t.Skipf("chromium not on PATH: browser test skipped (apt-get install chromium; %s=1 makes this fatal)", RequireEnv)
	}
	b, err := start(bin, t.TempDir())
	if err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Logf("closing chromium: %v", err)
		}
	})
	return b
}

func start(bin, profile string) (*Browser, error) {
	// Chromium reads commands from its fd 3 and writes to its fd 4.
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	args := append([]string{"--user-data-dir=" + profile}, Flags...)
	args = append(args, "about:blank")
	b := &Browser{
		in: cmdW, out: outR,
		waiting: map[int]chan message{},
		notify:  make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	b.cmd = exec.Command(bin, args...)
	b.cmd.ExtraFiles = []*os.File{cmdR, outW}
	b.cmd.Stderr = &lockedWriter{b: &b.stderr, mu: &b.mu}
	if err := b.cmd.Start(); err != nil {
		return nil, err
	}
	cmdR.Close()
	outW.Close()
	go b.read()
	return b, nil
}

// lockedWriter guards a builder shared with the reader.
type lockedWriter struct {
	b  *strings.Builder
	mu *sync.Mutex
}

// Write appends p under the lock.
func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// read dispatches Chromium's messages: answers to their callers, events to
// the event log.
func (b *Browser) read() {
	defer close(b.done)
	r := bufio.NewReader(b.out)
	for {
		raw, err := r.ReadBytes(0)
		if err != nil {
			b.mu.Lock()
			b.readErr = err
			for id, ch := range b.waiting {
				close(ch)
				delete(b.waiting, id)
			}
			b.mu.Unlock()
			return
		}
		var m message
		if err := json.Unmarshal(raw[:len(raw)-1], &m); err != nil {
			continue
		}
		b.mu.Lock()
		if m.ID != 0 {
			if ch, ok := b.waiting[m.ID]; ok {
				ch <- m
				delete(b.waiting, m.ID)
			}
		} else {
			b.events = append(b.events, m)
			select {
			case b.notify <- struct{}{}:
			default:
			}
		}
		b.mu.Unlock()
	}
}

// call sends a command (to the browser when session is empty, else to
// that page) and decodes its result into out, which may be nil.
func (b *Browser) call(ctx context.Context, session, method string, params, out any) error {
	b.mu.Lock()
	if b.readErr != nil {
		b.mu.Unlock()
		return fmt.Errorf("chromium is gone: %v; its stderr:\n%s", b.readErr, b.stderr.String())
	}
	b.nextID++
	id := b.nextID
	ch := make(chan message, 1)
	b.waiting[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	raw, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if _, err := b.in.Write(append(raw, 0)); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: chromium closed the pipe", method)
		}
		if m.Error != nil {
			return fmt.Errorf("%s: %s (%d)", method, m.Error.Message, m.Error.Code)
		}
		if out != nil && len(m.Result) > 0 {
			return json.Unmarshal(m.Result, out)
		}
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		delete(b.waiting, id)
		b.mu.Unlock()
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// Close asks Chromium to quit, and kills it if it does not within a few
// seconds.
func (b *Browser) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = b.call(ctx, "", "Browser.close", nil, nil)
	b.in.Close()
	exited := make(chan error, 1)
	go func() { exited <- b.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = b.cmd.Process.Kill()
		<-exited
	}
	b.out.Close()
	return nil
}

// Page is one tab showing a loaded page.
type Page struct {
	b       *Browser
	target  string
	session string
	closed  bool
	// from is where this page's events begin in the browser's log.
	from int
}

// Viewport is the size of the window a page is laid out in.
type Viewport struct{ Width, Height int }

// Open loads url in a new tab of the given size and waits for its load
// event; ctx bounds the wait.
func (b *Browser) Open(ctx context.Context, url string, vp Viewport) (*Page, error) {
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return nil, err
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached); err != nil {
		return nil, err
	}
	p := &Page{b: b, target: target.TargetID, session: attached.SessionID}
	for _, m := range []string{"Runtime.enable", "Log.enable", "Page.enable", "Network.enable"} {
		if err := b.call(ctx, p.session, m, nil, nil); err != nil {
			return nil, err
		}
	}
	if err := b.call(ctx, p.session, "Emulation.setDeviceMetricsOverride", map[string]any{
		"width": vp.Width, "height": vp.Height, "deviceScaleFactor": 1, "mobile": false,
	}, nil); err != nil {
		return nil, err
	}
	b.mu.Lock()
	p.from = len(b.events)
	b.mu.Unlock()
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := b.call(ctx, p.session, "Page.navigate", map[string]any{"url": url}, &nav); err != nil {
		return nil, err
	}
	if nav.ErrorText != "" {
		return nil, fmt.Errorf("loading %s: %s", url, nav.ErrorText)
	}
	for {
		for _, e := range p.Events() {
			if e.Method == "Page.loadEventFired" {
				return p, nil
			}
		}
		select {
		case <-b.notify:
		case <-b.done:
			return nil, fmt.Errorf("chromium exited while loading %s", url)
		case <-ctx.Done():
			return nil, fmt.Errorf("loading %s: %w", url, ctx.Err())
		}
	}
}

// Close closes the page's tab: a test that opens a page at many window
// sizes need not keep every renderer alive until the browser quits.
func (p *Page) Close(ctx context.Context) error {
	p.closed = true
	return p.b.call(ctx, "", "Target.closeTarget", map[string]any{"targetId": p.target}, nil)
}

// call sends a command to the page; Chromium does not answer one sent to
// a closed tab's session, so that fails here.
func (p *Page) call(ctx context.Context, method string, params, out any) error {
	if p.closed {
		return fmt.Errorf("%s: the page is closed", method)
	}
	return p.b.call(ctx, p.session, method, params, out)
}

// Event is a DevTools event the page raised.
type Event struct {
	// Method names the event ("Runtime.consoleAPICalled").
	Method string
	// Params are the event's parameters, as the protocol defines them.
	Params json.RawMessage
}

// Events returns the events of this page so far.
func (p *Page) Events() []Event {
	p.b.mu.Lock()
	defer p.b.mu.Unlock()
	var out []Event
	for _, m := range p.b.events[p.from:] {
		if m.SessionID == p.session {
			out = append(out, Event{Method: m.Method, Params: m.Params})
		}
	}
	return out
}

// Errors returns what went wrong in the page: console.error and
// console.assert calls, uncaught exceptions, and browser log entries at
// error level (a refused load, a blocked fetch, a policy violation).
func (p *Page) Errors() []string {
	var out []string
	for _, e := range p.Events() {
		switch e.Method {
		case "Runtime.consoleAPICalled":
			var c struct {
				Type string `json:"type"`
				Args []struct {
					Value       any    `json:"value"`
					Description string `json:"description"`
				} `json:"args"`
			}
			if json.Unmarshal(e.Params, &c) == nil && (c.Type == "error" || c.Type == "assert") {
				var parts []string
				for _, a := range c.Args {
					if a.Description != "" {
						parts = append(parts, a.Description)
					} else {
						parts = append(parts, fmt.Sprint(a.Value))
					}
				}
				out = append(out, "console."+c.Type+": "+strings.Join(parts, " "))
			}
		case "Runtime.exceptionThrown":
			var x struct {
				Details struct {
					Text      string `json:"text"`
					Exception struct {
						Description string `json:"description"`
					} `json:"exception"`
				} `json:"exceptionDetails"`
			}
			if json.Unmarshal(e.Params, &x) == nil {
				out = append(out, "exception: "+x.Details.Text+" "+x.Details.Exception.Description)
			}
		case "Log.entryAdded":
			var l struct {
				Entry struct {
					Level  string `json:"level"`
					Source string `json:"source"`
					Text   string `json:"text"`
					URL    string `json:"url"`
				} `json:"entry"`
			}
			if json.Unmarshal(e.Params, &l) == nil && l.Entry.Level == "error" {
				out = append(out, fmt.Sprintf("log (%s): %s %s", l.Entry.Source, l.Entry.Text, l.Entry.URL))
			}
		}
	}
	return out
}

// Requests returns the URL of every request the page made, the page's
// own included.
func (p *Page) Requests() []string {
	var out []string
	for _, e := range p.Events() {
		if e.Method != "Network.requestWillBeSent" {
			continue
		}
		var r struct {
			Request struct {
				URL string `json:"url"`
			} `json:"request"`
		}
		if json.Unmarshal(e.Params, &r) == nil {
			out = append(out, r.Request.URL)
		}
	}
	return out
}

// Eval evaluates a JavaScript expression in the page and decodes its
// value (which must be JSON-serializable) into out.
func (p *Page) Eval(ctx context.Context, expr string, out any) error {
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := p.call(ctx, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res); err != nil {
		return err
	}
	if res.Exception != nil {
		return fmt.Errorf("evaluating %q: %s", expr, res.Exception.Text)
	}
	if len(res.Result.Value) == 0 {
		return errors.New("evaluating " + expr + ": no value")
	}
	return json.Unmarshal(res.Result.Value, out)
}

// Screenshot writes a PNG of the page's top height pixels (its whole
// length when height is 0) at the viewport's width to w.
func (p *Page) Screenshot(ctx context.Context, w io.Writer, height int) error {
	var size struct {
		Width  float64 `json:"w"`
		Height float64 `json:"h"`
	}
	if err := p.Eval(ctx, `({w: document.documentElement.clientWidth, h: document.documentElement.scrollHeight})`, &size); err != nil {
		return err
	}
	if height <= 0 || float64(height) > size.Height {
		height = int(size.Height)
	}
	return p.capture(ctx, w, 0, 0, size.Width, float64(height), 1)
}

// capture writes a PNG of the page's region at (x, y), w×h CSS pixels,
// drawn at scale, to out.
func (p *Page) capture(ctx context.Context, out io.Writer, x, y, w, h, scale float64) error {
	var shot struct {
		Data string `json:"data"`
	}
	if err := p.call(ctx, "Page.captureScreenshot", map[string]any{
		"format": "png", "captureBeyondViewport": true,
		"clip": map[string]any{"x": x, "y": y, "width": w, "height": h, "scale": scale},
	}, &shot); err != nil {
		return err
	}
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		return err
	}
	_, err = out.Write(png)
	return err
}

// ScreenshotOf writes a PNG of the first element selector matches, as the
// page lays it out, at twice its size (a chart that reads on its own), to
// w.
func (p *Page) ScreenshotOf(ctx context.Context, w io.Writer, selector string) error {
	var r struct {
		X, Y, Width, Height float64
		Found               bool
	}
	expr := `(() => { const e = document.querySelector(` + strconv.Quote(selector) + `); if (!e) return {Found: false};
		const b = e.getBoundingClientRect();
		return {Found: true, X: b.left + window.scrollX, Y: b.top + window.scrollY, Width: b.width, Height: b.height}; })()`
	if err := p.Eval(ctx, expr, &r); err != nil {
		return err
	}
	if !r.Found || r.Width <= 0 || r.Height <= 0 {
		return fmt.Errorf("browsertest: no element %s to capture", selector)
	}
	return p.capture(ctx, w, r.X, r.Y, r.Width, r.Height, 2)
}
