package browsertest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCatchesWhatGoesWrong opens a page that logs a console error, throws,
// and fails to load an image, and expects each to be reported: a check of
// Errors() that finds nothing on a report means something.
func TestCatchesWhatGoesWrong(t *testing.T) {
	b := Start(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "bad.html")
	html := `<!DOCTYPE html><html><head><title>bad</title></head><body>
<p id="p">hello</p><img src="missing.png">
<script>console.error("deliberate", 42); console.log("harmless-log"); undefinedFunction();</script>
</body></html>`
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	p, err := b.Open(ctx, "file://"+page, Viewport{Width: 800, Height: 600})
	if err != nil {
		t.Fatal(err)
	}
	// Log entries may trail the load event by a moment.
	deadline := time.Now().Add(5 * time.Second)
	var errs []string
	for time.Now().Before(deadline) {
		errs = p.Errors()
		if len(errs) >= 3 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	all := strings.Join(errs, "\n")
	for _, want := range []string{"console.error: deliberate 42", "undefinedFunction", "missing.png"} {
		if !strings.Contains(all, want) {
			t.Errorf("errors do not report %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "harmless-log") {
		t.Errorf("a console.log was reported as an error:\n%s", all)
	}
	reqs := strings.Join(p.Requests(), "\n")
	if !strings.Contains(reqs, "missing.png") {
		t.Errorf("requests do not list the image:\n%s", reqs)
	}
	var text string
	if err := p.Eval(ctx, `document.getElementById("p").textContent`, &text); err != nil || text != "hello" {
		t.Errorf("eval = %q, %v; want hello", text, err)
	}
	var shot bytes.Buffer
	if err := p.Screenshot(ctx, &shot, 300); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(shot.Bytes(), []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("screenshot is not a PNG (%d bytes)", shot.Len())
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Eval(ctx, "1", &text); err == nil {
		t.Errorf("eval in a closed page succeeded")
	}
}
