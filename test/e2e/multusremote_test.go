//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/kube"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The namespace, user and network of testRemoteSecondary.
const (
	remoteNADNamespace = "cnbmu-remote"
	remoteNADUser      = "cnbmu-remote-user"
	remoteNAD          = "cnbmu-macvlan"
)

// remoteSecondarySuite measures both secondary paths over the user's network, as quickly as a
// check of the plumbing allows.
const remoteSecondarySuite = `
targets: [{name: multus-remote, kubeconfig: %s, image: %q, secondaryNetwork: ` + remoteNAD + `}]
paths: [secondary, secondary-same-node]
workloads: [{kind: tcp-rr, size: 64, tool: cnibench}]
repetitions: 2
duration: 1s
warmup: off
`

// testRemoteSecondary reaches TestMultus' cluster as a user's remote cluster, by the kubeconfig
// of a user granted what `cnibench rbac` prints: first each preflight error, one line before any
// pod (the user lacking get on the network, no such network, a network of another namespace,
// and the cluster without Multus), then a run over a NetworkAttachmentDefinition the test makes
// in the user's namespace (macvlan over the nodes' uplink, addressed by one host-local store
// that both nodes share, as only nodes on one host can), both secondary paths measured and
// every pod's second interface in the network's range.
func testRemoteSecondary(ctx context.Context, t *testing.T) {
	began := time.Now()
	defer func() {
		t.Logf("the remote secondary network's checks took %s", time.Since(began).Round(100*time.Millisecond))
	}()
	dir := t.TempDir()
	w := newWorkload(ctx, t, multusCluster)
	grantNamespace(ctx, t, w, dir, remoteNADNamespace, remoteNADUser)
	spec := readSpec(t, multusCluster)
	subnet := nadSubnet(spec.Plan().Secondary())
	// Under the cluster's directory, which its delete removes after the pods' last DEL.
	config := fmt.Sprintf(`{"cniVersion": "0.4.0", "type": "macvlan", "master": "eth0", "mode": "bridge",
  "ipam": {"type": "host-local", "subnet": %q, "dataDir": %q}}`, subnet, filepath.Join(cluster.DefaultLayout().Dir(multusCluster), "cnbmu-remote-ipam"))
	admin, err := kube.Connect(w.kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{remoteNADNamespace, "kube-system"} {
		nad := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Name: remoteNAD, Namespace: ns}, Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: config}}
		if _, err := admin.NADs.K8sCniCncfIoV1().NetworkAttachmentDefinitions(ns).Create(ctx, nad, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = admin.NADs.K8sCniCncfIoV1().NetworkAttachmentDefinitions(ns).Delete(context.Background(), remoteNAD, metav1.DeleteOptions{})
		})
	}
	user := userKubeconfig(t, multusCluster, remoteNADUser, dir)
	checkSecondaryPreflight(ctx, t, w, user, spec.Images.Tools)

	grantSecondaryNetwork(ctx, t, w, dir)
	suiteText := fmt.Sprintf(remoteSecondarySuite, user, spec.Images.Tools)
	doc := runSuiteOn(ctx, t, suiteText, filepath.Join(dir, "remote-secondary.yaml"), filepath.Join(dir, "remote-secondary.db"),
		"--namespace", remoteNADNamespace, "--no-node-probe")
	got := logRows(t, doc.Rows)
	for _, path := range []string{"secondary", "secondary-same-node"} {
		if r, ok := got["multus-remote "+path+" tcp-rr/64B+cnibench latency_p50_us"]; !ok || r.N != 2 || r.Mean <= 0 {
			t.Errorf("%s: %+v (present %v), want 2 positive samples", path, r, ok)
		}
	}
	if len(doc.Targets) != 1 {
		t.Fatalf("%d targets, want 1", len(doc.Targets))
	}
	fp := doc.Targets[0].Fingerprint
	t.Logf("secondary_network %q, secondary_addresses %q", fp["secondary_network"], fp["secondary_addresses"])
	if want := remoteNADNamespace + "/" + remoteNAD + ": macvlan, ipam host-local"; fp["secondary_network"] != want {
		t.Errorf("fingerprint secondary_network %q, want %q", fp["secondary_network"], want)
	}
	checkAddressesIn(t, fp["secondary_addresses"], subnet)
}

// nadSubnet is the test network's range: a /24 of the cluster's secondary block beyond its
// nodes' shares (10.B.65.0/24, 10.B.66.0/24), so that nothing of it is the host's.
func nadSubnet(block *net.IPNet) *net.IPNet {
	ip := append(net.IP(nil), block.IP.To4()...)
	ip[2] += 36
	return &net.IPNet{IP: ip, Mask: net.CIDRMask(24, 32)}
}

// checkSecondaryPreflight runs the secondary path with each setting the preflight refuses and
// wants the run to fail with one error line that says why, no pod made.
func checkSecondaryPreflight(ctx context.Context, t *testing.T, w *workload, user, image string) {
	plain := cluster.DefaultLayout().Kubeconfig(plainCluster)
	for _, c := range []struct {
		name, kubeconfig, namespace, network, want string
	}{
		{"the user may not read the network", user, remoteNADNamespace, remoteNAD,
			"missing RBAC permissions on https://"},
		{"no such network", w.kubeconfig, remoteNADNamespace, "cnbmu-absent",
			`--secondary-network "cnbmu-remote/cnbmu-absent": no NetworkAttachmentDefinition cnbmu-absent in namespace cnbmu-remote on https://`},
		{"a network of another namespace", w.kubeconfig, remoteNADNamespace, "kube-system/" + remoteNAD,
			`--secondary-network "kube-system/cnbmu-macvlan": the run's pods are in namespace cnbmu-remote, and Multus gives a pod another namespace's NetworkAttachmentDefinition only`},
		{"a cluster without Multus", plain, "", "default/" + remoteNAD,
			`--secondary-network "default/cnbmu-macvlan": the cluster at https://`},
	} {
		args := []string{"run", "--kubeconfig", c.kubeconfig, "--image", image, "--secondary-network", c.network,
			"--paths", "secondary", "--repetitions", "2", "--results", filepath.Join(t.TempDir(), "results.db")}
		if c.namespace != "" {
			args = append(args, "--namespace", c.namespace)
		}
		_, stderr, err := cliSplit(ctx, args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		last := lines[len(lines)-1]
		if err == nil || !strings.HasPrefix(last, "error: ") || !strings.Contains(last, c.want) {
			t.Errorf("%s: %v, want the last line an error with %q:\n%s", c.name, err, c.want, stderr)
			continue
		}
		t.Logf("%s: %s", c.name, last)
		if c.name == "the user may not read the network" && !strings.Contains(last, "get network-attachment-definitions") {
			t.Errorf("%s: the missing permission is not named: %s", c.name, last)
		}
		if c.name == "a cluster without Multus" && !strings.Contains(last, "has no Multus: it serves no NetworkAttachmentDefinitions") {
			t.Errorf("%s: %s", c.name, last)
		}
	}
	pods, err := w.cs.CoreV1().Pods(remoteNADNamespace).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("pods made in %s by refused runs: %d, %v", remoteNADNamespace, len(pods.Items), err)
	}
}

// grantSecondaryNetwork adds to the user's permissions what `cnibench rbac --secondary-network`
// prints: get on the one network.
func grantSecondaryNetwork(ctx context.Context, t *testing.T, w *workload, dir string) {
	t.Helper()
	objects, err := cli(ctx, "rbac", "--namespace", remoteNADNamespace, "--user", remoteNADUser, "--secondary-network", remoteNAD)
	if err != nil {
		t.Fatalf("rbac: %v\n%s", err, objects)
	}
	file := filepath.Join(dir, "rbac-secondary.yaml")
	if err := os.WriteFile(file, []byte(objects), 0o644); err != nil {
		t.Fatal(err)
	}
	// The same objects grantNamespace made, which its cleanup deletes.
	if out, err := runCmd(ctx, w.kubectl, "--kubeconfig", w.kubeconfig, "apply", "-f", file); err != nil {
		t.Fatalf("apply the rbac objects: %v\n%s", err, out)
	}
}

// checkAddressesIn reads the fingerprint's "role net1 IP, ..." and wants the client and both
// servers each on net1 with an address of subnet.
func checkAddressesIn(t *testing.T, addresses string, subnet *net.IPNet) {
	t.Helper()
	roles := map[string]bool{}
	for _, entry := range strings.Split(addresses, ", ") {
		f := strings.Fields(entry)
		if len(f) != 3 || f[1] != "net1" || !subnet.Contains(net.ParseIP(f[2])) {
			t.Errorf("secondary address %q, want ROLE net1 IP in %s", entry, subnet)
			continue
		}
		roles[f[0]] = true
	}
	for _, role := range []string{kube.RoleClient, kube.RoleServerA, kube.RoleServerB} {
		if !roles[role] {
			t.Errorf("no secondary address of %s in %q", role, addresses)
		}
	}
}
