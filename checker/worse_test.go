package checker

import "testing"

func TestWorse(t *testing.T) {
	tests := []struct{ a, b, want Status }{
		{OK, Violated, Violated},
		{Violated, OK, Violated},
		{OK, Unknown, Unknown},
		{Illegal, Unknown, Illegal},
		{OK, Inconclusive, Inconclusive},
		{Inconclusive, Violated, Violated},
		{NotApplicable, OK, OK},
		{"", NotApplicable, NotApplicable},
		{NotApplicable, NotApplicable, NotApplicable},
	}
	for _, tt := range tests {
		if got := Worse(tt.a, tt.b); got != tt.want {
			t.Errorf("Worse(%q, %q) = %q, want %q", tt.a, tt.b, got, tt.want)
		}
	}
}
