package binaries

import (
	"strings"
	"testing"
)

func TestMultusComponent(t *testing.T) {
	c, err := Lookup(Multus)
	if err != nil {
		t.Fatal(err)
	}
	if c.Module != "gopkg.in/k8snetworkplumbingwg/multus-cni.v4" || c.Version != MultusVersion {
		t.Errorf("multus from %s@%s", c.Module, c.Version)
	}
	if len(c.Binaries) != 2 || c.Binaries[0] != MultusBinary || c.Binaries[1] != MultusCRDs {
		t.Errorf("multus builds %v", c.Binaries)
	}
	// The plugin stamps its version where `multus -version` prints it.
	if !strings.Contains(c.ldflags, "multus-cni.v4/pkg/multus.version="+MultusVersion) || c.verify.want != MultusVersion {
		t.Errorf("version stamp %q, verified against %q", c.ldflags, c.verify.want)
	}
	base, err := Base("")
	if err == nil {
		for _, b := range base {
			if b.Name == Multus {
				t.Error("Base builds Multus: only a cluster that asks for it should")
			}
		}
	}
}

// TestCRDDocuments keeps the CRDs of a deployment manifest and drops everything else, the
// comments before the first document included.
func TestCRDDocuments(t *testing.T) {
	manifest := "# Note:\n#   quickstart\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: a\nspec:\n  names:\n    kind: NetworkAttachmentDefinition\n" +
		"---\nkind: ClusterRole\napiVersion: rbac.authorization.k8s.io/v1\nmetadata:\n  name: multus\n" +
		"---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: kube-multus-ds\n"
	got, err := crdDocuments(manifest)
	if err != nil {
		t.Fatal(err)
	}
	want := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: a\nspec:\n  names:\n    kind: NetworkAttachmentDefinition\n"
	if got != want {
		t.Errorf("crdDocuments:\n%s\nwant:\n%s", got, want)
	}
	if _, err := crdDocuments("---\nkind: DaemonSet\n"); err == nil {
		t.Error("a manifest without a CRD was accepted")
	}
}
