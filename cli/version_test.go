package cli

import (
	"runtime/debug"
	"testing"
)

// TestModuleVersion: the version is lockbench's own, whether lockbench is
// the main module or a dependency of a user's binary that calls Main.
func TestModuleVersion(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}}
	dep := func(v string, replace *debug.Module) []*debug.Module {
		return []*debug.Module{
			{Path: "github.com/redis/go-redis/v9", Version: "v9.7.0"},
			{Path: modulePath, Version: v, Replace: replace},
		}
	}
	tests := []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"go install of a release", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v1.2.3"}}, "v1.2.3"},
		{"a checkout", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}, Settings: vcs}, "devel-0123456789ab-dirty"},
		{"a checkout without VCS information", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}}, "devel"},
		{"a user's binary", debug.BuildInfo{Main: debug.Module{Path: "example.com/shop", Version: "v0.4.0"}, Deps: dep("v1.2.3", nil), Settings: vcs}, "v1.2.3"},
		{"a user's binary, lockbench replaced by a version", debug.BuildInfo{Main: debug.Module{Path: "example.com/shop"}, Deps: dep("v1.2.3", &debug.Module{Path: "example.com/fork", Version: "v1.2.4"})}, "v1.2.4"},
		{"a user's binary, lockbench replaced by a directory", debug.BuildInfo{Main: debug.Module{Path: "example.com/shop", Version: "v0.4.0"}, Deps: dep("v1.2.3", &debug.Module{Path: "../lockbench"}), Settings: vcs}, "devel (../lockbench)"},
		{"a user's binary without lockbench among its modules", debug.BuildInfo{Main: debug.Module{Path: "example.com/shop", Version: "v0.4.0"}, Settings: vcs}, "devel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := moduleVersion(&tt.bi); got != tt.want {
				t.Errorf("moduleVersion = %q, want %q", got, tt.want)
			}
		})
	}
}
