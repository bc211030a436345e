//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/cluster/pki"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// auditMark is where a cluster's audit log ends now: what a run does afterwards is read from
// there.
func auditMark(t *testing.T, clusterName string) int64 {
	t.Helper()
	fi, err := os.Stat(cluster.AuditLog(cluster.DefaultLayout(), clusterName))
	if err != nil {
		t.Fatalf("the cluster's audit log: %v", err)
	}
	return fi.Size()
}

// auditEvent is what the check reads of an audit.k8s.io/v1 Event.
type auditEvent struct {
	Verb string
	User struct {
		Username string
	}
	ObjectRef struct {
		Resource, Subresource, Namespace, Name string
	}
	ResponseStatus struct {
		Code int
	}
}

// reviews are the resources a user creates to ask what it may do: they persist nothing.
var reviews = []string{"selfsubjectaccessreviews", "selfsubjectrulesreviews"}

// checkAuditedWithin reads the changes a user made through the cluster's API server since
// mark (its requests that succeeded) and fails on any outside namespace (a review of its own
// permissions aside). It returns how many there were inside.
func checkAuditedWithin(t *testing.T, clusterName string, mark int64, user, namespace string) int {
	t.Helper()
	f, err := os.Open(cluster.AuditLog(cluster.DefaultLayout(), clusterName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(mark, 0); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	inside, reviewed := 0, 0
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit log line %q: %v", sc.Text(), err)
		}
		// A refused request changed nothing (the test's own probe that the user may not make
		// a namespace is one).
		if e.User.Username != user || e.ResponseStatus.Code >= 300 {
			continue
		}
		switch {
		case e.ObjectRef.Namespace == namespace:
			inside++
		case slices.Contains(reviews, e.ObjectRef.Resource):
			reviewed++
		default:
			t.Errorf("user %s: %s %s/%s %s in namespace %q (HTTP %d), outside %s", user, e.Verb, e.ObjectRef.Resource,
				e.ObjectRef.Subresource, e.ObjectRef.Name, e.ObjectRef.Namespace, e.ResponseStatus.Code, namespace)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s's audit log: user %s made %d changes in %s and %d reviews of its own permissions", clusterName, user, inside, namespace, reviewed)
	return inside
}

// objectsOutside lists every API object a cluster-admin can list, as "resource namespace/name",
// but those of namespace and the kinds that change by themselves (events, leases).
func objectsOutside(ctx context.Context, t *testing.T, w *workload, namespace string) []string {
	t.Helper()
	kinds, err := runCmd(ctx, w.kubectl, "--kubeconfig", w.kubeconfig, "api-resources", "--verbs=list", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	var list []string
	for _, k := range strings.Fields(kinds) {
		if k != "events" && k != "events.events.k8s.io" && k != "leases.coordination.k8s.io" {
			list = append(list, k)
		}
	}
	out, err := runCmd(ctx, w.kubectl, "--kubeconfig", w.kubeconfig, "get", strings.Join(list, ","), "-A", "--no-headers",
		"-o", "custom-columns=KIND:.kind,NS:.metadata.namespace,NAME:.metadata.name")
	if err != nil {
		t.Fatal(err)
	}
	var objs []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[1] != namespace && f[2] != namespace {
			objs = append(objs, strings.Join(f, " "))
		}
	}
	slices.Sort(objs)
	return objs
}

// userKubeconfig writes a kubeconfig of the cluster for user, with a client certificate from
// the cluster's own CA: a real user the cluster knows, granted nothing yet.
func userKubeconfig(t *testing.T, clusterName, user, dir string) string {
	t.Helper()
	layout := cluster.DefaultLayout()
	pkiDir := filepath.Join(layout.Dir(clusterName), "pki")
	caCert, err1 := os.ReadFile(layout.CAFile(clusterName))
	caKey, err2 := os.ReadFile(filepath.Join(pkiDir, "ca.key"))
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	ca, err := pki.LoadCA(caCert, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Issue(pki.Request{CommonName: user, Client: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(layout.Kubeconfig(clusterName))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		a.ClientCertificateData, a.ClientKeyData = pair.CertPEM, pair.KeyPEM
	}
	path := filepath.Join(dir, clusterName+"-"+user+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// grantNamespace makes namespace ns and applies what `cnibench rbac` prints for user there,
// as a platform team would; both go when the test ends.
func grantNamespace(ctx context.Context, t *testing.T, w *workload, dir, ns, user string) {
	t.Helper()
	if _, err := w.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	applyRBAC(ctx, t, w, filepath.Join(dir, w.cluster+"-rbac.yaml"), "--namespace", ns, "--user", user)
}

// applyRBAC applies to w's cluster what `cnibench rbac ARGS` prints, kept in file, and deletes
// it when the test ends.
func applyRBAC(ctx context.Context, t *testing.T, w *workload, file string, args ...string) {
	t.Helper()
	objects, err := cli(ctx, append([]string{"rbac"}, args...)...)
	if err != nil {
		t.Fatalf("rbac: %v\n%s", err, objects)
	}
	if err := os.WriteFile(file, []byte(objects), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runCmd(ctx, w.kubectl, "--kubeconfig", w.kubeconfig, "apply", "-f", file); err != nil {
		t.Fatalf("apply the rbac objects: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		_, _ = runCmd(context.Background(), w.kubectl, "--kubeconfig", w.kubeconfig, "delete", "--ignore-not-found", "-f", file)
	})
}
