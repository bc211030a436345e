//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/runner"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// misbehaveSuite is long enough for a pod's deletion and a 30-s API outage to fall inside it,
// with samples left after each.
const misbehaveSuite = `
paths: [cross-node]
workloads: [{kind: tcp-rr, size: 64, tool: cnibench}]
repetitions: 6
duration: 1s
warmup: off
`

const (
	misbehaveSamples = 6
	misbehaveUser    = "cnb-misbehave"
	// The object that holds the run's namespace at its end, and its finalizer, which nothing
	// removes.
	holdName      = "cnb-hold"
	holdFinalizer = "cnibench.dev/e2e-hold"
	// apiOutage is how long the API server is cut off from the run.
	apiOutage = 30 * time.Second
	// outageTable is the nft table that cuts it off, in the control plane's namespace.
	outageTable = "cnb_e2e_outage"
)

// runNamespace is the namespace a run names as it deploys.
var runNamespace = regexp.MustCompile(`\(namespace (cnibench-[a-z0-9-]+)\)`)

// clusterMisbehaves runs a suite on a cluster reached only by kubeconfig, as a user
// granted what `cnibench rbac` prints for runs that make their own namespace (and the
// cluster's view role), while the cluster misbehaves three ways: the server pod is deleted
// mid-sample, the API server is cut off from the run for 30 s (its port dropped in the control
// plane's own namespace, for the run's address only), and an object with a finalizer nobody
// removes holds the run's namespace at its end. Every sample must be stored measured, each
// lost attempt named in the output and the run's note, the stuck namespace named with the
// object and the command that frees it, after a bounded wait; once freed, nothing of the run
// is left in the cluster or on the host.
func clusterMisbehaves(ctx context.Context, t *testing.T, dir, clusterName string) {
	began := time.Now()
	w := newWorkload(ctx, t, clusterName)
	spec := readSpec(t, clusterName)
	kubeconfig := userKubeconfig(t, clusterName, misbehaveUser, dir)
	grantOwnNamespaces(ctx, t, w, dir, misbehaveUser)
	suiteFile, results := filepath.Join(dir, "misbehave.yaml"), filepath.Join(dir, "misbehave.db")
	if err := os.WriteFile(suiteFile, []byte(misbehaveSuite), 0o644); err != nil {
		t.Fatal(err)
	}
	hostBefore := snapshot(t)
	s := startCLI(t, "run", "-f", suiteFile, "--kubeconfig", kubeconfig, "--image", spec.Images.Tools, "--no-node-probe", "--results", results)
	defer func() { _ = s.cmd.Process.Kill() }()
	if !s.waitLine(t, "(namespace cnibench-", 3*time.Minute) {
		t.Fatalf("the run ended before deploying:\n%s", s.output())
	}
	ns := runNamespace.FindStringSubmatch(s.output())[1]
	holdNamespace(ctx, t, w, ns)
	if !s.waitLine(t, fmt.Sprintf("[  2/%d]", misbehaveSamples), 3*time.Minute) {
		t.Fatalf("the run ended early:\n%s", s.output())
	}
	if err := w.cs.CoreV1().Pods(ns).Delete(ctx, "cnibench-server-b-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if !s.waitLine(t, "lost: pod cnibench-server-b-0 (server-b) deleted mid-sample", 3*time.Minute) {
		t.Fatalf("the run does not say it lost the server pod:\n%s", s.output())
	}
	cutOffAPI(ctx, t, w, spec, kubeconfig, s)
	exitBegan := time.Now()
	if err := s.wait(t, 5*time.Minute); err == nil {
		t.Errorf("a run that left its namespace stuck exited 0:\n%s", s.output())
	}
	out := s.output()
	t.Logf("the run (%s in all, %s after the outage) said:\n%s", time.Since(began).Round(time.Second), time.Since(exitBegan).Round(time.Second), out)
	checkMisbehaved(ctx, t, results, out, ns)
	freeNamespace(ctx, t, w, ns)
	assertCleanBut(t, hostBefore, kubeletQoS.MatchString)
	t.Logf("the misbehaving cluster's test took %s", time.Since(began).Round(time.Second))
}

// grantOwnNamespaces binds user to what `cnibench rbac` prints for runs that make their own
// namespace, and to the cluster's view role (a platform team's read access, with which the
// run can name what holds its namespace); both are removed after the test.
func grantOwnNamespaces(ctx context.Context, t *testing.T, w *workload, dir, user string) {
	t.Helper()
	applyRBAC(ctx, t, w, filepath.Join(dir, user+"-rbac.yaml"), "--user", user)
	view := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user + "-view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}}
	if _, err := w.cs.RbacV1().ClusterRoleBindings().Create(ctx, view, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), view.Name, metav1.DeleteOptions{})
	})
}

// holdNamespace puts an object in the run's namespace whose finalizer nothing removes: the
// namespace stays Terminating after the run deletes it, as a controller that stopped would
// leave it.
func holdNamespace(ctx context.Context, t *testing.T, w *workload, ns string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: holdName, Namespace: ns, Finalizers: []string{holdFinalizer}}}
	// The run names its namespace right before it creates it.
	var err error
	if perr := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err = w.cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		return err == nil, nil
	}); perr != nil {
		t.Fatalf("hold namespace %s: %v", ns, err)
	}
}

// cutOffAPI drops the API server's port, in the control plane's own namespace, for the
// address the run reaches it from (the root namespace's end of the cluster's veth), both ways,
// for apiOutage; a kubectl call through the same kubeconfig must fail meanwhile and work after.
// The run must still be going when the outage begins.
func cutOffAPI(ctx context.Context, t *testing.T, w *workload, spec cluster.Spec, kubeconfig string, s *started) {
	t.Helper()
	host, netns := spec.Plan().HostIP().String(), spec.CtlNetns()
	rules := fmt.Sprintf(`table inet %[1]s {
	chain in { type filter hook input priority -200; ip saddr %[2]s tcp dport 6443 drop; }
	chain out { type filter hook output priority -200; ip daddr %[2]s tcp sport 6443 drop; }
}
`, outageTable, host)
	ruleFile := filepath.Join(t.TempDir(), "outage.nft")
	if err := os.WriteFile(ruleFile, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	restore := func() {
		_, _ = runCmd(context.Background(), "ip", "netns", "exec", netns, "nft", "delete", "table", "inet", outageTable)
	}
	if !s.running() {
		t.Fatalf("the run ended before the outage:\n%s", s.output())
	}
	if out, err := runCmd(ctx, "ip", "netns", "exec", netns, "nft", "-f", ruleFile); err != nil {
		t.Fatalf("cut the API server off: %v\n%s", err, out)
	}
	defer restore()
	cutAt := time.Now()
	readyz := func() error {
		_, err := runCmd(ctx, w.kubectl, "--kubeconfig", kubeconfig, "get", "--raw", "/readyz", "--request-timeout", "3s")
		return err
	}
	if err := readyz(); err == nil {
		t.Fatal("kubectl reached the API server through the outage")
	}
	select {
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	case <-time.After(time.Until(cutAt.Add(apiOutage))): // the outage itself: its length is the fault
	}
	restore()
	t.Logf("API server cut off for %s", time.Since(cutAt).Round(100*time.Millisecond))
	if err := readyz(); err != nil {
		t.Errorf("kubectl after the outage: %v", err)
	}
	if out, _ := runCmd(ctx, "ip", "netns", "exec", netns, "nft", "list", "tables"); strings.Contains(out, outageTable) {
		t.Errorf("the outage's table outlived it in %s: %s", netns, out)
	}
}

// checkMisbehaved reads the run's output and store: every sample measured and stored, the
// pod's deletion named as a lost attempt, retried, and the API outage as a broken connection,
// in the output and the run's note, and the stuck namespace named with its object and the fix.
func checkMisbehaved(ctx context.Context, t *testing.T, results, out, ns string) {
	t.Helper()
	run, samples := onlyRun(ctx, t, results, out)
	measured := 0
	for _, smp := range samples {
		if smp.Path == runner.SetupPath {
			continue
		}
		measured++
		if smp.Error != "" || len(smp.Metrics) == 0 {
			t.Errorf("sample %d: error %q, %d metrics; want every sample measured after its retry", smp.Seq, smp.Error, len(smp.Metrics))
		}
	}
	if measured != misbehaveSamples {
		t.Errorf("%d samples stored, want %d", measured, misbehaveSamples)
	}
	podLost := regexp.MustCompile(`1 sample of tcp-rr/64B\S* cross-node on \S+ lost: pod cnibench-server-b-0 \(server-b\) deleted mid-sample, made again in [0-9.]+s; retried`)
	// The outage shows as a lost attempt when it failed one; an exec of counters it cut short
	// is read again within the attempt, which then costs nothing. The account of the broken
	// connection is there either way.
	apiLost := regexp.MustCompile(`1 sample of tcp-rr/64B\S* cross-node on \S+ lost: the (API server at \S+ stopped answering; it answered again \d+s after the attempt failed|connection to the API server at \S+ broke( \([^;]*\))?); retried`)
	broke := regexp.MustCompile(`the connection to the API server at \S+ broke (once|\d+ times) during the run \(`)
	stuck := fmt.Sprintf("namespace %s stuck Terminating: finalizer %s on configmaps %s; remove it with kubectl --namespace %s patch configmaps %s --type=merge -p '{\"metadata\":{\"finalizers\":null}}'",
		ns, holdFinalizer, holdName, ns, holdName)
	// An attempt failed by anything but the pod's deletion was failed by the outage, and must
	// be named as lost to it (CI once saw one named as nothing).
	outageFailed := false
	for _, line := range strings.Split(out, "\n") {
		outageFailed = outageFailed || strings.Contains(line, "failed, trying again") && !strings.Contains(line, "deleted mid-sample")
	}
	for what, text := range map[string]string{"output": out, "note": run.Note} {
		if !podLost.MatchString(text) || !broke.MatchString(text) || outageFailed && !apiLost.MatchString(text) || !strings.Contains(text, stuck) {
			t.Errorf("the run's %s does not name what it lost (the pod %v, the API server's connection %v, the attempt the outage failed %v) and what it left (%v):\n%s",
				what, podLost.MatchString(text), broke.MatchString(text), !outageFailed || apiLost.MatchString(text), strings.Contains(text, stuck), text)
		}
	}
	t.Logf("the outage failed an attempt: %v", outageFailed)
	if run.Status != "complete" {
		t.Errorf("run status %q, want complete: every sample was measured", run.Status)
	}
}

// freeNamespace runs the fix the run printed for its stuck namespace, as its user would, and
// waits until nothing of the run is left in the cluster.
func freeNamespace(ctx context.Context, t *testing.T, w *workload, ns string) {
	t.Helper()
	_, err := runCmd(ctx, w.kubectl, "--kubeconfig", w.kubeconfig, "--namespace", ns, "patch", "configmaps", holdName,
		"--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	if err != nil {
		t.Fatalf("the printed fix: %v", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := w.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("namespace %s still there a minute after the fix: %v", ns, err)
	}
	nss, err := w.cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nss.Items {
		if strings.HasPrefix(n.Name, "cnibench-") {
			t.Errorf("namespace %s (%s) survived the run", n.Name, n.Status.Phase)
		}
	}
	if pods, err := w.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: kube.LabelRun}); err != nil || len(pods.Items) > 0 {
		t.Errorf("pods of a run survived: %d, %v", len(pods.Items), err)
	}
}
