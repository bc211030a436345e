package cluster

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestRemoveHostLinkTakenByTheKernel deletes a veth's namespace and at once its root end, as
// delete does: the kernel destroys the pair in the background, so the link may vanish between
// removeHostLink's check and its delete, which must count as done (an e2e run's delete failed on
// "Cannot find device" before). Twenty rounds make the race likely; the link must be gone after
// each.
func TestRemoveHostLinkTakenByTheKernel(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces and links (CI runs as root)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ns, host, peer = "cnbtest-rhl", "cnbtestrhl0", "cnbtestrhl1"
	sh := func(args ...string) {
		t.Helper()
		if out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", args, err, out)
		}
	}
	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "delete", ns).Run()
		_ = exec.Command("ip", "link", "delete", host).Run()
	})
	for round := range 20 {
		sh("ip", "netns", "add", ns)
		sh("ip", "link", "add", host, "type", "veth", "peer", "name", peer, "netns", ns)
		sh("ip", "netns", "delete", ns)
		if err := removeHostLink(ctx, host); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if _, err := os.Stat("/sys/class/net/" + host); err == nil {
			t.Fatalf("round %d: %s still there", round, host)
		}
	}
}
