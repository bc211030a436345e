package kube

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestProbeServiceEachRound creates the probe Service, deletes it, and creates it again, as a
// run with pods per round does once a round: a Service left behind would refuse the second
// create, and deleting one already gone is no error.
func TestProbeServiceEachRound(t *testing.T) {
	ctx := context.Background()
	c := &Client{CS: fake.NewClientset()}
	f := &Fixture{Spec: FixtureSpec{Namespace: "ns", RunID: "r1"}}
	for round := 1; round <= 2; round++ {
		if _, err := c.CreateProbeService(ctx, f, RoleServerB, 5201); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := c.DeleteProbeService(ctx, f); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if _, err := c.CS.CoreV1().Services("ns").Get(ctx, ProbeServiceName, metav1.GetOptions{}); err == nil {
			t.Fatalf("round %d: the probe Service survived its delete", round)
		}
	}
	if err := c.DeleteProbeService(ctx, f); err != nil {
		t.Errorf("deleting a Service already gone: %v", err)
	}
}
