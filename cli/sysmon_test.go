package cli

import (
	"slices"
	"testing"
)

func TestEnvWithQuietSysmon(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     []string
		want    []string
		changed bool
	}{
		{"no GODEBUG", []string{"HOME=/h"}, []string{"HOME=/h", "GODEBUG=" + quietSysmonSetting}, true},
		{"empty GODEBUG", []string{"GODEBUG=", "A=1"}, []string{"GODEBUG=" + quietSysmonSetting, "A=1"}, true},
		{"other settings kept", []string{"GODEBUG=gctrace=1,madvdontneed=1"}, []string{"GODEBUG=gctrace=1,madvdontneed=1," + quietSysmonSetting}, true},
		{"operator's schedtrace wins", []string{"GODEBUG=gctrace=1,schedtrace=1000"}, []string{"GODEBUG=gctrace=1,schedtrace=1000"}, false},
		{"schedtrace=0 opts out", []string{"GODEBUG=schedtrace=0"}, []string{"GODEBUG=schedtrace=0"}, false},
		{"scheddetail is not schedtrace", []string{"GODEBUG=scheddetail=1"}, []string{"GODEBUG=scheddetail=1," + quietSysmonSetting}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := envWithQuietSysmon(slices.Clone(tc.env))
			if changed != tc.changed || !slices.Equal(got, tc.want) {
				t.Errorf("envWithQuietSysmon(%q) = %q, %v; want %q, %v", tc.env, got, changed, tc.want, tc.changed)
			}
		})
	}
}
