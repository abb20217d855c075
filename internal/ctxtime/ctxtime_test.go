package ctxtime

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	if err := Sleep(t.Context(), time.Millisecond); err != nil {
		t.Errorf("Sleep ran out: %v, want nil", err)
	}
	cause := errors.New("stop")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(cause)
	if err := Sleep(ctx, time.Hour); !errors.Is(err, cause) {
		t.Errorf("Sleep on an ended context: %v, want its cause", err)
	}
}
