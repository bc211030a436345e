package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReadmeNamesEveryCommand fails when a command of the tree is missing from README.md's
// list of commands (its "In short" section), so that a new command is documented where users
// look first.
func TestReadmeNamesEveryCommand(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, list, ok := strings.Cut(string(data), "- **Commands**:")
	if !ok {
		t.Fatal(`README.md has no "- **Commands**:" list`)
	}
	list, _, _ = strings.Cut(list, "\n- **")
	for _, cmd := range newRootCommand().Commands() {
		if cmd.Hidden || cmd.Name() == "help" || cmd.Name() == "completion" {
			continue
		}
		if !strings.Contains(list, "`"+cmd.Name()+"`") {
			t.Errorf("README.md's command list does not name `%s`", cmd.Name())
		}
	}
}

// TestLayoutNamesEveryPackage fails when a package of the module is missing from the layout in
// docs/contributing.md: each is listed by its path, or by its folder's name on its parent's
// line (testsupport's hostsnap/ and seedstore/).
func TestLayoutNamesEveryPackage(t *testing.T) {
	data, err := os.ReadFile("../../docs/contributing.md")
	if err != nil {
		t.Fatal(err)
	}
	_, layout, _ := strings.Cut(string(data), "## Layout")
	layout, _, _ = strings.Cut(layout, "\n## ")
	lines := map[string]string{} // a listed path: its line
	for _, l := range strings.Split(layout, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			lines[strings.TrimSuffix(f[0], "/")] = l
		}
	}
	for _, dir := range packageDirs(t) {
		parent, base := filepath.Split(dir)
		if _, ok := lines[dir]; ok || strings.Contains(lines[filepath.Clean(parent)], " "+base+"/") {
			continue
		}
		t.Errorf("docs/contributing.md's layout does not list %s/", dir)
	}
}

// packageDirs lists the module's folders holding production Go files, relative to its root.
func packageDirs(t *testing.T) []string {
	var out []string
	for _, top := range []string{"cmd", "internal"} {
		err := filepath.WalkDir(filepath.Join("../..", top), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			dir, _ := filepath.Rel("../..", filepath.Dir(path))
			if !slices.Contains(out, dir) {
				out = append(out, dir)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}
