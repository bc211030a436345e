package hostsnap

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestListPathsSeesLeftoversTwoLevelsDeep(t *testing.T) {
	root := filepath.Join(t.TempDir(), "containers")
	for _, d := range []string{"a/b/c"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/nowhere", filepath.Join(root, "pod.log")); err != nil {
		t.Fatal(err)
	}
	got, err := listPaths([]string{root, filepath.Join(root, "missing")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"path " + root, "path " + root + "/a", "path " + root + "/a/b", "path " + root + "/pod.log"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}
