package report

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"html"
	"io"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/internal/profile"
)

// Flame graph geometry: the classic layout, the whole busy time at the bottom and each
// stack's frames above their caller, widths proportional to samples.
const (
	flameWidth  = 1200.0
	flameFrameH = 16.0
	flameTitleH = 24.0
	flameMinW   = 0.3 // narrower frames are left out (their samples stay in the parent's width)
)

// flameNode is a frame of the merged stacks.
type flameNode struct {
	name     string
	count    int
	children map[string]*flameNode
}

func (n *flameNode) child(name string) *flameNode {
	c := n.children[name]
	if c == nil {
		c = &flameNode{name: name, children: map[string]*flameNode{}}
		n.children[name] = c
	}
	return c
}

// depth is how many frames the tallest stack below n has, n included.
func (n *flameNode) depth() int {
	d := 0
	for _, c := range n.children {
		d = max(d, c.depth())
	}
	return d + 1
}

// WriteFlameGraph writes the busy samples of f as a standalone SVG flame graph: one box per
// frame, as wide as the samples it was on the stack of; hovering a box shows its function and
// share. Idle samples are left out, so the width is the time the CPUs worked.
func WriteFlameGraph(w io.Writer, f profile.Folded, title string) error {
	root := &flameNode{name: "all", children: map[string]*flameNode{}}
	for stack, n := range f {
		if profile.Idle(stack) {
			continue
		}
		root.count += n
		node := root
		for _, fr := range strings.Split(stack, ";") {
			node = node.child(fr)
			node.count += n
		}
	}
	depth := root.depth()
	height := flameTitleH + float64(depth)*flameFrameH + 4
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="%s" font-size="11">`+"\n",
		flameWidth, height, flameWidth, height, chartFonts)
	fmt.Fprintf(&b, `<text x="%g" y="16" font-size="13" fill="%s">%s</text>`+"\n", chartPad, inkColour,
		html.EscapeString(fmt.Sprintf("%s (%d busy samples of %d)", title, root.count, f.Total())))
	if root.count > 0 {
		scale := (flameWidth - 2*chartPad) / float64(root.count)
		writeFlameNode(&b, root, root.count, chartPad, height-4-flameFrameH, scale)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeFlameNode draws n at (x, y) and its children above it, widest first from the left.
func writeFlameNode(b *strings.Builder, n *flameNode, total int, x, y, scale float64) {
	width := float64(n.count) * scale
	if width < flameMinW {
		return
	}
	label := profile.Display(n.name)
	tip := fmt.Sprintf("%s (%d samples, %.1f %%)", label, n.count, 100*float64(n.count)/float64(total))
	if strings.HasSuffix(n.name, profile.KernelSuffix) {
		tip += " kernel"
	}
	fmt.Fprintf(b, `<g><title>%s</title><rect x="%.2f" y="%.2f" width="%.2f" height="%g" fill="%s" rx="2"/>`,
		html.EscapeString(tip), x, y, width, flameFrameH-1, flameColour(n.name))
	if fit := int((width - 6) / (11 * charWidth)); fit >= 3 {
		if len(label) > fit {
			label = label[:fit-2] + ".."
		}
		fmt.Fprintf(b, `<text x="%.2f" y="%.2f" fill="%s">%s</text>`, x+3, y+flameFrameH-5, inkColour, html.EscapeString(label))
	}
	b.WriteString("</g>\n")
	kids := make([]*flameNode, 0, len(n.children))
	for _, c := range n.children {
		kids = append(kids, c)
	}
	slices.SortFunc(kids, func(a, c *flameNode) int {
		return cmp.Or(cmp.Compare(c.count, a.count), strings.Compare(a.name, c.name))
	})
	for _, c := range kids {
		writeFlameNode(b, c, total, x, y-flameFrameH, scale)
		x += float64(c.count) * scale
	}
}

// flameColour is warm for kernel frames and cool for user frames, the shade fixed by the
// name so that one function has one colour in every graph of a report.
func flameColour(name string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	v := h.Sum32()
	if strings.HasSuffix(name, profile.KernelSuffix) {
		return fmt.Sprintf("rgb(%d,%d,%d)", 225+v%30, 110+(v>>8)%90, 40+(v>>16)%40)
	}
	return fmt.Sprintf("rgb(%d,%d,%d)", 80+v%50, 150+(v>>8)%60, 200+(v>>16)%55)
}
