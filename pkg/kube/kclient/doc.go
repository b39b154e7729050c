// Package kclient is Wayfinder's access to the Kubernetes API: typed
// clients and informers for the kinds it reads and writes, and nothing
// else.
//
// client-go's generated clientsets (and Istio's and the Gateway API's,
// through their discovery clients) link its whole scheme: every API group
// of Kubernetes, with their clients, informers, listers and apply
// configurations. pilot-discovery runs the init code of all of them and
// keeps their pages resident. This package builds the same REST clients
// from a scheme holding only the kinds Wayfinder uses (see scheme.go),
// with client-go's generic client (gentype), listers and SharedIndexInformer,
// so the rest of the client-go stack is the same.
//
// The three interfaces (Kube, Istio, GatewayAPI) keep client-go's call
// chains (CoreV1().Services(ns).Get(...)) over a subset of its methods, so
// code reads as it would against a clientset. Tests adapt client-go's fake
// clientsets with the kclienttest package.
package kclient
