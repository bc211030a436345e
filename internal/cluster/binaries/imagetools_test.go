package binaries

import (
	"slices"
	"testing"
)

// TestImageToolsAreBuilt holds the tools image's table to the components: each tool is a
// binary its component builds, so that the image never asks the cache for a file no build makes.
func TestImageToolsAreBuilt(t *testing.T) {
	for _, tool := range ImageTools() {
		comp, err := Lookup(tool.Component)
		if err != nil {
			t.Errorf("%s: %v", tool.Binary, err)
			continue
		}
		if !slices.Contains(comp.Binaries, tool.Binary) {
			t.Errorf("%s: component %s builds %v, not it", tool.Binary, tool.Component, comp.Binaries)
		}
	}
}
