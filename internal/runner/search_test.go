package runner

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/suite"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRateSearch runs the search against paths of known capacity, whose loss above it is the
// excess share: it must find the highest rate within the threshold to 1 % of the maximum in
// the trials it has, stop at once when the maximum passes, find 0 when nothing passes, and
// not take a rate its sender could not reach for one the path carried.
func TestRateSearch(t *testing.T) {
	lossAt := func(capacity int64) func(int64) float64 {
		return func(rate int64) float64 {
			if rate <= capacity {
				return 0
			}
			return float64(rate-capacity) / float64(rate) * 100
		}
	}
	const top = 1_000_000_000
	for _, c := range []struct {
		name     string
		capacity int64
		maxLoss  float64
		trials   int
		want     int64 // the true answer; the search must land within 1 % below it
		wantRuns int   // trials made; 0: any up to trials
		sender   int64 // the most the sender can send; 0: anything
	}{
		{"the maximum passes", 2 * top, 0, 10, top, 1, 0},
		{"zero loss at 620M", 620_000_000, 0, 10, 620_000_000, 0, 0},
		// 0.5 % loss allowed: the rate r with (r-C)/r = 0.005 is C/0.995.
		{"0.5 % loss at 400M", 400_000_000, 0.5, 10, 402_010_050, 0, 0},
		{"nothing passes", 0, 0, 10, 0, 0, 0},
		// A lossless path behind a sender that cannot offer more than 700M: the trials above
		// it were not offered in full and fail.
		{"a sender that stalls at 700M", 2 * top, 0, 10, 736_842_105, 0, 700_000_000}, // 700M reaches 95 % of 736.8M
	} {
		s := &rateSearch{max: top, maxLoss: c.maxLoss}
		loss := lossAt(c.capacity)
		sendsUpTo := float64(c.sender)
		if sendsUpTo == 0 {
			sendsUpTo = 1e12
		}
		runs := 0
		for range c.trials {
			rate, more := s.next()
			if !more {
				break
			}
			if rate <= 0 || rate > top || rate%1000 != 0 {
				t.Fatalf("%s: trial at %d bit/s", c.name, rate)
			}
			s.record(rate, loss(rate), min(float64(rate), sendsUpTo))
			runs++
		}
		if s.pass > c.want || c.want-s.pass > top/searchResolution*2 {
			t.Errorf("%s: found %d bit/s after %d trials, want within 2 %% of the maximum below %d", c.name, s.pass, runs, c.want)
		}
		if c.wantRuns > 0 && runs != c.wantRuns {
			t.Errorf("%s: %d trials, want %d", c.name, runs, c.wantRuns)
		}
	}
}

// TestEndpointsHostNetworkOnly checks that a suite whose only path is host-network, which
// deploys no client pod, gets its pairs' ends (it dereferenced the missing client pod).
func TestEndpointsHostNetworkOnly(t *testing.T) {
	pod := func(name, ip string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{PodIP: ip}}
	}
	tg := &target{fixture: &kube.Fixture{
		Spec: kube.FixtureSpec{Servers: [][]kube.Server{{{Name: "iperf3", Port: 5201}}}},
		Pods: map[string][]*corev1.Pod{kube.RoleHostClient: {pod("hc", "10.0.0.11")}, kube.RoleHostServer: {pod("hs", "10.0.0.12")}},
	}}
	ends, err := tg.endpoints(suite.HostNetwork, 0, 1)
	if err != nil || len(ends) != 1 || ends[0].clientPod != "hc" || ends[0].target != "10.0.0.12" || ends[0].port != 5201 {
		t.Errorf("endpoints = %+v, %v", ends, err)
	}
}

// TestEndpointsSecondary: the secondary path's client connects to the server's address on the
// network attachment, not its pod IP, and a server without one is an error naming both.
func TestEndpointsSecondary(t *testing.T) {
	status := `[{"name":"cnb-flannel-node2","interface":"eth0","ips":["10.200.129.4"],"default":true},{"name":"default/cnb-secondary","interface":"net1","ips":["10.200.66.2"]}]`
	pod := func(name, ip, networks string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{kube.AnnotationNetworkStatus: networks}},
			Status: corev1.PodStatus{PodIP: ip}}
	}
	tg := &target{fixture: &kube.Fixture{
		Spec: kube.FixtureSpec{Secondary: "default/cnb-secondary", Servers: [][]kube.Server{{{Name: "iperf3", Port: 5201}}}},
		Pods: map[string][]*corev1.Pod{kube.RoleClient: {pod("c", "10.200.128.3", "")}, kube.RoleServerB: {pod("b", "10.200.129.4", status)}},
	}}
	ends, err := tg.endpoints(suite.Secondary, 0, 1)
	if err != nil || len(ends) != 1 || ends[0].clientPod != "c" || ends[0].target != "10.200.66.2" || ends[0].port != 5201 {
		t.Errorf("endpoints = %+v, %v", ends, err)
	}
	tg.fixture.Pods[kube.RoleServerB][0].Annotations = nil
	if _, err := tg.endpoints(suite.Secondary, 0, 1); err == nil || !strings.Contains(err.Error(), "pod b has no address on network default/cnb-secondary") {
		t.Errorf("a server without the attachment: %v", err)
	}
}
