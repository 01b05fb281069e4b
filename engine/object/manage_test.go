package object

import "testing"

func TestModesOfAChild(t *testing.T) {
	for _, tc := range []struct {
		name                string
		ann                 map[string]string
		setManage, setDrift string
		manage, drift       string
	}{
		{"defaults", nil, "", "", ManageFull, DriftRepair},
		{"the set's defaults", nil, ManageCreateOnly, DriftWarn, ManageCreateOnly, DriftWarn},
		{"the child's annotations win", map[string]string{AnnotationManage: ManageObserve, AnnotationDrift: DriftRepair}, ManagePatch, DriftWarn, ManageObserve, DriftRepair},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ManageOf(tc.ann, tc.setManage); got != tc.manage {
				t.Errorf("ManageOf = %q, want %q", got, tc.manage)
			}
			if got := DriftOf(tc.ann, tc.setDrift); got != tc.drift {
				t.Errorf("DriftOf = %q, want %q", got, tc.drift)
			}
		})
	}
	if err := CheckManage("obsrve"); err == nil || err.Error() != `loom.dev/manage is "obsrve"; it must be one of full, create-only, observe, patch (did you mean "observe"?)` {
		t.Errorf("CheckManage(obsrve) = %v", err)
	}
	if err := CheckManage("xyzzy-plugh"); err == nil || err.Error() != `loom.dev/manage is "xyzzy-plugh"; it must be one of full, create-only, observe, patch` {
		t.Errorf("CheckManage(xyzzy-plugh) = %v", err)
	}
	for _, v := range Manages {
		if err := CheckManage(v); err != nil {
			t.Errorf("CheckManage(%q) = %v", v, err)
		}
	}
	if !IsSuspended(map[string]string{AnnotationSuspend: "true"}) || IsSuspended(map[string]string{AnnotationSuspend: "false"}) {
		t.Error("IsSuspended")
	}
}
