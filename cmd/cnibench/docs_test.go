package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocCommandsParse parses every cnibench command line quoted in a shell block of README.md
// and docs/ with the real command tree: a flag renamed, removed or given a value of the wrong
// type, or a command that no longer exists, fails here. Usage synopses (with [optional] parts,
// alternatives or "...") are left out: they are not commands to run.
func TestDocCommandsParse(t *testing.T) {
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range append(files, "../../README.md") {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range docCommands(string(data)) {
			checked++
			args := strings.Fields(line)[1:]
			root := newRootCommand()
			cmd, rest, err := root.Find(args)
			if err != nil || cmd == root {
				t.Errorf("%s: %q: no such command: %v", filepath.Base(f), line, err)
				continue
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("%s: %q: %v", filepath.Base(f), line, err)
				continue
			}
			if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
				t.Errorf("%s: %q: %v", filepath.Base(f), line, err)
			}
		}
	}
	t.Logf("%d documented commands parsed", checked)
	if checked < 20 {
		t.Errorf("only %d documented commands found", checked)
	}
}

// docCommands lists the cnibench command lines of a Markdown text's sh blocks, continuation
// lines joined and comments removed.
func docCommands(md string) []string {
	var out []string
	inSh, pending := false, ""
	for _, l := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "```") {
			inSh = !inSh && (trimmed == "```sh" || trimmed == "```bash")
			continue
		}
		if !inSh {
			// Inline code in the prose: `cnibench run --precision off`.
			for _, span := range inlineCode.FindAllStringSubmatch(l, -1) {
				out = append(out, docCommand("bin/"+strings.TrimPrefix(span[1], "bin/"))...)
			}
			continue
		}
		if i := strings.Index(trimmed, " #"); i >= 0 {
			trimmed = strings.TrimSpace(trimmed[:i])
		}
		if cont := strings.HasSuffix(trimmed, `\`); cont {
			pending += strings.TrimSuffix(trimmed, `\`) + " "
			continue
		}
		out = append(out, docCommand(pending+trimmed)...)
		pending = ""
	}
	return out
}

// inlineCode finds a cnibench command in a Markdown code span.
var inlineCode = regexp.MustCompile("`((?:bin/)?cnibench [^`]+)`")

// docCommand returns the cnibench commands of one shell line: none for a usage synopsis.
func docCommand(line string) []string {
	var out []string
	for _, part := range strings.Split(line, "&&") {
		part = strings.TrimSpace(part)
		// The agent's command lines are TestAgentArgvParses's; prose quotes them in part.
		if !strings.HasPrefix(part, "bin/cnibench ") || strings.HasPrefix(part, "bin/cnibench agent ") ||
			strings.ContainsAny(part, "[|'\"$<>") || strings.Contains(part, "...") {
			continue
		}
		out = append(out, part)
	}
	return out
}
