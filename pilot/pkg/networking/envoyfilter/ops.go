package envoyfilter

import (
	networking "istio.io/api/networking/v1alpha3"
)

// positional applies an ADD, INSERT_* , REPLACE or REMOVE to a list, as
// istiod does for listener, network and HTTP filters: named says whether
// the patch's match names an element, match tests one, value returns a
// fresh copy of the patch value. It reports whether the list changed
// shape (the patch applied).
func positional[E any](op networking.EnvoyFilter_Patch_Operation, s []E, named bool, match func(E) bool, value func() E) ([]E, bool) {
	switch op {
	case networking.EnvoyFilter_Patch_ADD:
		return append(s, value()), true
	case networking.EnvoyFilter_Patch_INSERT_FIRST:
		return append([]E{value()}, s...), true
	case networking.EnvoyFilter_Patch_INSERT_AFTER:
		if !named {
			return append(s, value()), true
		}
		if i := index(s, match); i >= 0 {
			return insertAt(s, i+1, value()), true
		}
	case networking.EnvoyFilter_Patch_INSERT_BEFORE:
		if !named {
			return append([]E{value()}, s...), true
		}
		if i := index(s, match); i >= 0 {
			return insertAt(s, i, value()), true
		}
	case networking.EnvoyFilter_Patch_REPLACE:
		if !named {
			return s, false
		}
		if i := index(s, match); i >= 0 {
			s[i] = value()
			return s, true
		}
	case networking.EnvoyFilter_Patch_REMOVE:
		if !named {
			return s, false
		}
		out := s[:0]
		removed := false
		for _, e := range s {
			if match(e) {
				removed = true
				continue
			}
			out = append(out, e)
		}
		return out, removed
	}
	return s, false
}

func index[E any](s []E, match func(E) bool) int {
	for i, e := range s {
		if match(e) {
			return i
		}
	}
	return -1
}

func insertAt[E any](s []E, i int, e E) []E {
	out := make([]E, 0, len(s)+1)
	out = append(out, s[:i]...)
	out = append(out, e)
	return append(out, s[i:]...)
}
