// Package kubeutil holds small helpers shared by the Kubernetes
// controllers.
package kubeutil

import "slices"

// NormalizeNamespaces sorts and deduplicates namespaces, dropping empty
// entries; none left means all namespaces ("").
func NormalizeNamespaces(in []string) []string {
	var out []string
	for _, ns := range in {
		if ns != "" {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) == 0 {
		return []string{""}
	}
	return out
}
