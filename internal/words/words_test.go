package words

import "testing"

func TestCommas(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {1234567, "1,234,567"}, {-5000, "-5,000"}} {
		if got := Commas(tt.n); got != tt.want {
			t.Errorf("Commas(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestCount(t *testing.T) {
	for _, tt := range []struct {
		n     int
		forms []string
		want  string
	}{
		{0, []string{"cell"}, "0 cells"},
		{1, []string{"cell"}, "1 cell"},
		{2, []string{"cell"}, "2 cells"},
		{1500, []string{"key"}, "1,500 keys"},
		{1, []string{"process", "processes"}, "1 process"},
		{3, []string{"process", "processes"}, "3 processes"},
	} {
		if got := Count(tt.n, tt.forms...); got != tt.want {
			t.Errorf("Count(%d, %v) = %q, want %q", tt.n, tt.forms, got, tt.want)
		}
	}
}
