package binaries

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// MultusVersion is the Multus CNI release built from the Go module proxy. The proxy serves it
// under its gopkg.in path only (the github.com path is refused).
const MultusVersion = "v4.2.3"

// Multus is the component holding the Multus meta-plugin and the NetworkAttachmentDefinition
// CRD, built by `setup --all`, or on first use by a cluster that asks for Multus; Base leaves
// it out.
const Multus = "multus"

// Files of the Multus component in the cache's bin dir.
const (
	// MultusBinary is Multus' thin plugin: a CNI plugin that reads the cluster through its
	// kubeconfig and delegates to the cluster network and to each NetworkAttachmentDefinition
	// a pod names. The thick daemon is not needed: the plugin runs where the kubelet's
	// runtime calls it, like every other plugin of a local cluster.
	MultusBinary = "multus"
	// MultusCRDs is the NetworkAttachmentDefinition CRD as one manifest, taken from Multus'
	// own deployment manifest.
	MultusCRDs = "multus-crds.yaml"
)

const (
	multusModule = "gopkg.in/k8snetworkplumbingwg/multus-cni.v4"
	// multusCRDSource is the deployment manifest of the module that carries the CRD.
	multusCRDSource = "deployments/multus-daemonset.yml"
)

// multusComponents are the Multus thin plugin and the NetworkAttachmentDefinition CRD.
func multusComponents() []Component {
	c := Component{
		Name:    Multus,
		Module:  multusModule,
		Version: MultusVersion,
		// Measured on the 2-core target with empty Go build and module caches (see
		// docs/local-cluster.md, "Multus").
		ColdBuild: 3 * time.Minute,
		// `go install` fails on the proxy's deprecation lookup for this module: build in a
		// writable copy of it.
		recipe:   multusRecipe(),
		ldflags:  "-s -w -X " + multusModule + "/pkg/multus.version=" + MultusVersion,
		packages: []string{"./cmd/multus", multusCRDSource},
		Binaries: []string{MultusBinary, MultusCRDs},
		verify: verifySpec{
			binary: MultusBinary,
			args:   []string{"-version"},
			want:   MultusVersion,
		},
	}
	return []Component{c}
}

// multusRecipe builds the multus component: the thin plugin and the CRD.
func multusRecipe() recipe { return plainRecipe("multus-thin", buildMultus) }

// buildMultus builds the thin plugin in a writable copy of the module and writes the
// NetworkAttachmentDefinition CRD out of its deployment manifest.
func buildMultus(ctx context.Context, log io.Writer, comp Component, scratch, out string) error {
	src, err := writableModule(ctx, log, comp, scratch)
	if err != nil {
		return err
	}
	if err := buildBinaries(ctx, log, comp, src, out, goBinary{name: MultusBinary, pkg: "./cmd/multus"}); err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(multusCRDSource)))
	if err != nil {
		return fmt.Errorf("multus CRD: %w", err)
	}
	crd, err := crdDocuments(string(data))
	if err != nil {
		return fmt.Errorf("multus CRD in %s: %w", multusCRDSource, err)
	}
	fmt.Fprintf(log, "# wrote the CRDs of %s to %s\n", multusCRDSource, MultusCRDs)
	return os.WriteFile(filepath.Join(out, MultusCRDs), []byte(crd), 0o644)
}

// crdDocuments returns the CustomResourceDefinition documents of a multi-document manifest,
// joined; a manifest without one is an error, so that a changed layout is noticed.
func crdDocuments(manifest string) (string, error) {
	var docs []string
	for _, doc := range strings.Split(manifest, "\n---") {
		doc = strings.TrimPrefix(strings.TrimLeft(doc, "\n"), "---\n")
		if slices.Contains(topLevelKinds([]byte(doc)), "CustomResourceDefinition") {
			docs = append(docs, strings.TrimRight(doc, "\n")+"\n")
		}
	}
	if len(docs) == 0 {
		return "", errors.New("no CustomResourceDefinition")
	}
	return strings.Join(docs, "---\n"), nil
}
