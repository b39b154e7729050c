// Package generated holds what the Kubernetes sources that generate Istio
// config (Ingress, Gateway API) share once their conversion has run: the
// Set of generated objects, which turns each new conversion into sorted
// add/update/delete events for registered handlers, and the Watches of
// their informers, which tell when the first conversion may run and which
// watches the API server refuses (RBAC).
//
// Both sources convert everything on every change, so the diff lives here,
// once, rather than in each controller.
package generated
