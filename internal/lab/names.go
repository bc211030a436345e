package lab

import "regexp"

// objectNameRE is a DNS-1123 subdomain: dot-separated labels of lowercase letters, digits
// and '-', each starting and ending with a letter or digit.
var objectNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// objectNameMax is the longest DNS-1123 subdomain.
const objectNameMax = 253

// IsObjectName reports whether name can name a cluster-scoped Kubernetes object such as a
// RuntimeClass: a DNS-1123 subdomain of at most 253 characters, as the API server requires.
// The check is here rather than taken from Kubernetes' libraries so that the suite schema,
// and the reports that compile it, need none of them.
func IsObjectName(name string) bool {
	return len(name) <= objectNameMax && objectNameRE.MatchString(name)
}
