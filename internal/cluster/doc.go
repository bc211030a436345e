// Package cluster is the embedded local Kubernetes provider: it builds a real cluster on one
// Linux host (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, and per node
// containerd, kubelet and kube-proxy), each node a network namespace, and tears it down
// without leaving host objects behind.
//
// Every host object it creates carries the prefix "cnb": namespaces cnb-<cluster>-<node>, the
// root veth cnb-<cluster>, cgroups /cnb-<cluster>, and state under one directory per cluster.
package cluster
