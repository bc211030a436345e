package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/cnibench/cnibench/internal/kube"
	"github.com/spf13/cobra"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// rbacOptions are the flags of `cnibench rbac`.
type rbacOptions struct {
	namespace      string // --namespace: the run's existing namespace
	serviceAccount string // --service-account NAMESPACE/NAME
	user, group    string // --user, --group
	policies       bool   // --network-policies
	// secondaryNetwork is --secondary-network: the NetworkAttachmentDefinition the run's
	// secondary paths take, which its preflight reads.
	secondaryNetwork string
}

func newRBACCommand() *cobra.Command {
	var o rbacOptions
	cmd := &cobra.Command{
		Use:   "rbac --namespace NS (--service-account NS/NAME | --user NAME | --group NAME)",
		Short: "Print the Role, ClusterRole and bindings a run needs on a cluster, and nothing more",
		Long: `Prints, as YAML for kubectl apply, the permissions a run needs: a Role in the run's namespace
(its pods, their exec and logs, Services, EndpointSlices; NetworkPolicies with --network-policies)
and a read-only ClusterRole (nodes and their kubelet summaries, RuntimeClasses, and the CNI's and
kube-proxy's DaemonSets and named ConfigMaps for the fingerprint), each bound to the subject;
with --secondary-network, get on that one NetworkAttachmentDefinition (in the Role when it is
in the run's namespace, else by name in the ClusterRole).
A run with --namespace NS checks exactly these before it deploys anything. Without --namespace
the run makes a namespace of its own each time, which only cluster-wide rules can cover: prefer a
namespace the platform team creates. Not covered: the gateway path's split (its Gateway API
objects) and the host-network path (Pod Security may refuse it).`,
		Example: `  cnibench rbac --namespace cnibench --service-account cnibench/runner | kubectl apply -f -
  cnibench run --kubeconfig runner.kubeconfig --namespace cnibench --image REGISTRY/cnibench-tools:TAG`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.OutOrStdout()) },
	}
	f := cmd.Flags()
	f.StringVar(&o.namespace, "namespace", "", "the run's namespace (existing; the run keeps to it): omit only for runs that make their own")
	f.StringVar(&o.serviceAccount, "service-account", "", "bind a ServiceAccount, as NAMESPACE/NAME")
	f.StringVar(&o.user, "user", "", "bind a user")
	f.StringVar(&o.group, "group", "", "bind a group")
	f.BoolVar(&o.policies, "network-policies", false, "also the NetworkPolicy permissions of policy variants")
	f.StringVar(&o.secondaryNetwork, "secondary-network", "", "also reading this NetworkAttachmentDefinition, NAMESPACE/NAME or NAME in --namespace, for the secondary paths (run --secondary-network)")
	cmd.MarkFlagsMutuallyExclusive("service-account", "user", "group")
	cmd.MarkFlagsOneRequired("service-account", "user", "group")
	return cmd
}

// subject is the one subject the flags name.
func (o rbacOptions) subject() (rbacv1.Subject, error) {
	switch {
	case o.serviceAccount != "":
		ns, name, ok := strings.Cut(o.serviceAccount, "/")
		if !ok || ns == "" || name == "" {
			return rbacv1.Subject{}, fmt.Errorf("--service-account %q: expected NAMESPACE/NAME", o.serviceAccount)
		}
		return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}, nil
	case o.user != "":
		return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: o.user}, nil
	default:
		return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: o.group}, nil
	}
}

func (o rbacOptions) run(w io.Writer) error {
	subject, err := o.subject()
	if err != nil {
		return err
	}
	a := kube.Access{Namespace: o.namespace, OwnNamespace: o.namespace == "", Policies: o.policies}
	if o.secondaryNetwork != "" {
		if !strings.Contains(o.secondaryNetwork, "/") && o.namespace == "" {
			return fmt.Errorf("--secondary-network %q: a name alone is in the run's namespace, and without --namespace the run makes its own: expected NAMESPACE/NAME", o.secondaryNetwork)
		}
		a.SecondaryNetwork = kube.QualifyNetwork(o.secondaryNetwork, o.namespace)
	}
	for i, obj := range a.RBAC(subject) {
		b, err := yaml.Marshal(obj)
		if err != nil {
			return fmt.Errorf("print the RBAC objects: %w", err)
		}
		if i > 0 {
			fmt.Fprintln(w, "---")
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}
