// Package objects builds the config objects tests feed the control plane,
// so that each test package need not write its own: Istio config as
// config.Config (Gateway, VirtualService, DestinationRule, ServiceEntry),
// Kubernetes Services and EndpointSlices, the YAML of the public ingress
// Gateway most file-mode tests serve, and a validator that rejects the
// objects a test marks invalid.
//
// Builders fill only what their arguments name and leave metadata such as
// Source, CreationTimestamp and ResourceVersion empty: a test that needs
// them sets them on the returned value. Objects a single test shapes its
// own way stay in that test.
package objects
