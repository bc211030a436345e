package main

import (
	"os"
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
