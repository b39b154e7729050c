// Package generated holds what the Kubernetes sources that generate Istio
// config (Ingress, Gateway API) share around their conversion: the Set of
// generated objects, which turns each new conversion into sorted
// add/update/delete events for registered handlers; the Watches of their
// informers, which tell when the first conversion may run and which
// watches the API server refuses (RBAC); and the Source that ties both to
// the shared queue and serves the Set as a model.ConfigStoreController.
//
// Both sources convert everything on every change, so the diff, the
// handler bookkeeping and the first-sync wait live here, once; a
// controller adds only its informers and its conversion.
package generated
