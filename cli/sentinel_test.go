package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestSentinelUsage: the Sentinel flags refuse what cannot be right
// before anything is started, and the lock that waits for a replica is
// refused where there is none.
func TestSentinelUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--sentinel=nohost"}, "--sentinel: \"nohost\" is not host:port"},
		{[]string{"--sentinel=127.0.0.1:26379", "--redis=127.0.0.1:6379"}, "give one or the other"},
		{[]string{"--sentinel=127.0.0.1:26379", "--backend=docker"}, "--sentinel applies to --backend=sentinel"},
		{[]string{"--sentinel-master=m"}, "--sentinel-master applies to --sentinel"},
		{[]string{"--impl=lua-wait"}, "waits for a replica"},
		{[]string{"--impl=lua", "--faults=failover"}, "failover needs the Sentinel topology"},
		{[]string{"--sentinel-docker", "--backend=docker"}, "--sentinel-docker applies to --backend=sentinel"},
		{[]string{"--sentinel-docker", "--sentinel=127.0.0.1:26379"}, "give one or the other"},
		{[]string{"--sentinel-docker", "--redis=127.0.0.1:6379"}, "drop --redis"},
		{[]string{"--backend=sentinel", "--redis-image=lockbench/redis:local"}, "--redis-image applies to --backend=docker and --sentinel-docker"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(tt.args, &stdout, &stderr)
			if code != exitUsage {
				t.Errorf("exit %d, want %d (usage); stderr %q", code, exitUsage, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr %q does not say %q", stderr.String(), tt.want)
			}
		})
	}
}
