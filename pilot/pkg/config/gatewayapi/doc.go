// Package gatewayapi converts the Kubernetes Gateway API
// (gateway.networking.k8s.io, sigs.k8s.io/gateway-api v1.6.3) into the
// Gateway, VirtualService and DestinationRule configs the rest of the
// pipeline already serves, as package ingress does for Ingress and as istiod does, and
// computes the status that conversion decides. It is pure: it reads the
// objects and a read-only view of Services, Namespaces and ServiceEntries
// given in an Input, and returns config, errors and status; it watches,
// queues and writes nothing. Its sources run it (see Sources below).
//
// # Why conversion into Istio's model
//
// Wayfinder's translators (listeners, routes, clusters, SDS) read Istio
// config from one push context. Converting Gateway API objects into that
// model, rather than feeding both APIs into a new intermediate
// representation (Envoy Gateway's way), keeps one set of translators, one
// set of goldens and one validation path, and makes every Istio feature the
// route translator has (header operations, mirrors, retries, rewrites)
// available to HTTPRoute filters at once. What the Gateway API adds on top,
// attachment rules, ReferenceGrants and its route precedence, is decided
// here, before the translator sees anything.
//
// # Version
//
// sigs.k8s.io/gateway-api v1.6.3 is the newest release that builds with Go
// 1.26, which Wayfinder stays on; v1.7.0 needs Go 1.27. Its standard
// channel already serves TLSRoute, TCPRoute, ListenerSet and
// BackendTLSPolicy as v1, so the CRDs in manifests/crds/gateway-api are all
// standard channel; file mode checks documents against the experimental
// channel's schemas of the same kinds (manifests/crds/gateway-api-experimental),
// a superset carrying the experimental HTTPRoute fields read here.
//
// # What a Gateway becomes
//
//   - A GatewayClass is handled when spec.controllerName is ControllerName
//     (wayfinder.io/gateway-controller); Gateways of other classes are left
//     to their controllers.
//   - Each listener of a handled Gateway becomes one Istio Gateway,
//     "GATEWAY-LISTENER-gwapi" in the Gateway's namespace, with one server:
//     the listener's port and protocol (HTTP; HTTPS terminating with the
//     certificateRefs Secret; TLS passing through, or terminating like
//     HTTPS; TCP), its hostname or "*". One Istio Gateway per
//     listener lets a route attach to a single listener (sectionName) and be
//     bound only there.
//   - The server's hosts are "NAMESPACE/host" for each namespace the
//     listener's allowedRoutes admit ("*/host" for All; a Selector resolved
//     against the Namespaces, which are watched), as istiod 1.29's
//     buildHostnameMatch writes them, plus the Gateway's own namespace,
//     where the generated VirtualServices live (isolation.go). A bare host
//     would let a VirtualService of any namespace naming the generated
//     Gateway bind to the listener. The Gateway carries
//     model.GatewayAPIListenerAnnotation, by which the push context
//     refuses and reports such VirtualServices, and Istio Gateways of other
//     namespaces selecting the Gateway's proxies
//     (model/gateway_isolation.go).
//   - Its selector is gateway.networking.k8s.io/gateway-name: GATEWAY, and it
//     carries model.NamespaceOnlyAnnotation, so it is served only to proxies
//     of the Gateway's own namespace: a Gateway of namespace A never reaches
//     a proxy of namespace B that happens to carry the same label.
//
// # ListenerSets
//
// A ListenerSet adds listeners to the Gateway its parentRef names when the
// Gateway's spec.allowedListeners admit the set's namespace (None by
// default; Same, All, Selector), else it is NotAllowed (listenerset.go).
// Its listeners are converted as the Gateway's own, after every Gateway's,
// into Istio Gateways in the parent's namespace selecting the parent's
// proxies (ListenerSetIstioGatewayName), since those proxies take Gateways
// of their own namespace only. Merge order is the specification's: the
// Gateway's listeners, then ListenerSets oldest first, then by
// namespace/name; a listener conflicting with an earlier one on its port
// (another protocol or TLS termination: ProtocolConflict; the same protocol
// and hostname: HostnameConflict) is refused and reported Conflicted, and a
// Gateway's own listener never loses. allowedRoutes Same and certificateRefs
// are relative to the set's namespace (another needs a ReferenceGrant from
// ListenerSets); its Secrets are bound to the parent's proxies and, not
// being of the parent's namespace, named kubernetes-gateway://NS/NAME and
// lent to that listener alone (SecretGrants). Routes attach with a parentRef
// of kind ListenerSet (listenerset_attach.go); a parentRef to the Gateway
// reaches its own listeners only. listenerset_status.go computes the sets'
// status and the Gateway's attachedListenerSets.
//
// # What an HTTPRoute becomes
//
// A route attaches to the listeners its parentRefs name (sectionName, port)
// that allow it (allowedRoutes namespaces Same, All or Selector, and kinds)
// and whose hostname intersects the route's hostnames. The attached rules
// are then regrouped: one VirtualService per Istio Gateway (listener) and
// hostname, "GATEWAY-LISTENER-HOST-gwapi" in the Gateway's namespace (dots
// become dashes, "*" becomes "wildcard"), holding every match of every
// route attached there. Each HTTPRouteMatch is its own Istio HTTP route, and
// they are pre-sorted by the Gateway API's precedence:
//
//  0. the more specific hostname: the routes of the VirtualService's own
//     hostname, then those of every wildcard hostname of the same listener
//     covering it ("*.example.com", then "*"), since the Gateway API
//     matches across all of them while Envoy picks one virtual host;
//  1. an Exact path, then a RegularExpression path, then a PathPrefix, each
//     longest first;
//  2. a method match before none;
//  3. more header matches first, then more query parameter matches;
//  4. the oldest route, then namespace/name alphabetically;
//  5. the order of rules and matches within the route.
//
// Because each hostname of a listener has exactly one VirtualService, the
// shared route translator, which keeps a VirtualService's routes in the
// order written, emits the Gateway API's order and never Istio's
// oldest-VirtualService-first order across routes. A route's hostnames are
// narrowed to the listener's: "*.example.com" on the listener and
// "a.example.com" on the route give "a.example.com"; a route without
// hostnames takes the listener's.
//
// A GRPCRoute is converted the same way onto the request path
// "/SERVICE/METHOD": service and method exact as an exact path (ranked as
// Exact), a service alone as the prefix "/SERVICE/" (ranked as PathPrefix),
// a method alone or a RegularExpression as a regex (ranked as
// RegularExpression), more characters of service and method first. Its
// routes are sorted together with the HTTPRoutes of the same hostname.
// The backend Service's port name must announce HTTP/2 (grpc-*, http2-*)
// for the cluster to speak it, as for any Istio destination.
//
// TLSRoutes and TCPRoutes go onto the TLS passthrough and TCP translation
// (see streamroute.go): a VirtualService per route and listener, with a
// tls route matching the SNI names on a Passthrough listener, or a tcp
// route on a Terminate TLS or a TCP listener. These VirtualServices are
// dated like their route, so the translator's oldest-first rule gives a
// contested listener or SNI name to the oldest route, as the Gateway API
// asks.
//
// Filters map onto the VirtualService: RequestHeaderModifier and
// ResponseHeaderModifier onto headers, RequestRedirect onto redirect,
// URLRewrite onto rewrite (ReplacePrefixMatch as a prefix rewrite, per
// piece of the element-wise prefix, see match.go; ReplaceFullPath as a
// regex rewrite of the whole path), RequestMirror onto
// mirrors; backendRefs to Services become weighted destinations
// NAME.NAMESPACE.svc.SUFFIX, and backendRefs of kind Hostname (group
// networking.istio.io, istiod's) the ServiceEntry host they name (see
// hostname.go); timeouts.request becomes the route timeout.
//
// Route policies follow istiod 1.29's convertHTTPRoute. The CORS filter
// becomes the route's corsPolicy (cors.go: exact, prefix and regex
// origins as istiod writes them, preflights of other origins answered by
// the gateway). retry becomes Istio retries on connection errors plus its
// codes, attempts 2 when unset, backoff as Envoy's base back-off interval;
// timeouts.backendRequest is the per-try timeout of a rule that retries,
// else the route timeout (retry.go). sessionPersistence, which istiod
// does not serve, becomes a cookie or header session carried on the
// generated VirtualService (model.GatewayAPISessionsAnnotation, since
// Istio's HTTPRoute has no field for it), which the route translator
// serves with Envoy's stateful_session filter (session.go); a GRPCRoute
// rule's the same way. A field that cannot be read is reported and left
// out, the rule served.
//
// # BackendTLSPolicy
//
// BackendTLSPolicies become DestinationRules as istiod 1.29's
// backend_policies.go makes them (backendtls.go): one per targeted
// Service, SERVICE-backendtls-gwapi in its namespace, for its host only
// (no exportTo, no workloadSelector), and one per host of a targeted
// ServiceEntry (ENTRY-HOST-backendtls-gwapi), trafficPolicy.tls SIMPLE from a
// targetRef without sectionName and portLevelSettings from one naming a
// port; sni the policy's hostname, subjectAltNames its Hostname and URI
// SANs or, without them, the hostname (the specification; istiod checks
// the chain only). The CA is the system bundle (wellKnownCACertificates
// System) or the ca.crt of the ConfigMaps caCertificateRefs name
// (Input.ConfigMaps), parsed, re-encoded and carried by the rule under
// model.BackendTLSCAAnnotationPrefix for the credentialName
// configmap://NS/NAME, which the cluster translator puts inline; without a
// valid CA the rule names model.InvalidCredentialName and the Service's
// clusters are not built (requests fail, never unverified). The rule is
// dated the zero time, as istiod's generated ones: the oldest of its host
// and namespace. Of two policies on one Service and sectionName the older
// applies, the other is Conflicted. backendtls_status.go gives each policy
// one ancestor per handled Gateway an accepted route reaches a target
// through, with Accepted and ResolvedRefs, and routes to a Service whose
// policy asks for CAs Wayfinder does not have ResolvedRefs False.
//
// # Certificates of another namespace
//
// A listener's certificateRef to a Secret of another namespace is served
// only with a ReferenceGrant there from Gateways of the Gateway's
// namespace. The server then names it "kubernetes-gateway://NS/NAME", as
// istiod does. For every listener with a certificate the conversion
// records in SecretGrants (secretgrants.go) the generated Istio Gateway,
// the ServiceAccount its proxies run as when Wayfinder deploys them
// (Options.DeploysProxies), and the Secret of another namespace lent to
// it. The xDS server hands those to model.SecretScope.Grants: the
// listener's Secrets go to its own Gateway's proxies only, and a
// kubernetes-gateway:// Secret of another namespace only while its
// listener is lent it, never on a SubjectAccessReview; Istio config never
// names another namespace's Secret. The Kubernetes source replaces the
// records with each conversion, so a deleted grant refuses the Secret
// from the conversion that also takes the listener away.
//
// # Certificates, parameters and TLS modes
//
// A listener's certificateRef is resolved against the Secret itself
// (certrefs.go), as istiod 1.29's buildSecretReference does: it must
// exist, be of type kubernetes.io/tls or Opaque, and hold a PEM
// certificate and key (tls.crt and tls.key, or Istio's cert and key) whose
// key is the certificate's. Otherwise the listener is ResolvedRefs False,
// InvalidCertificateRef, and Programmed False, as the specification asks;
// it stays Accepted, routes still attach to it (counted in its
// attachedRoutes, reported Accepted) and nothing is served there. No
// message quotes the Secret's data. Input.Secrets is the lookup; nil (file
// mode, which serves no Secrets) checks nothing. The Secrets and
// ConfigMaps a conversion looked up are in Result.Referenced: the
// Kubernetes source converts again when one of those changes, and for no
// other.
//
// A Gateway's spec.infrastructure.parametersRef is read as istiod 1.29
// reads it (params.go): a ConfigMap of the Gateway's namespace, which must
// exist; another kind, or a ConfigMap that does not exist, rejects the
// Gateway (Accepted False, InvalidParameters) and none of its listeners is
// served. The ConfigMap's data is not applied (a warning says so): the
// deployer takes no parameters. GatewayClass parametersRef is not read,
// as in istiod.
//
// Terminate and Passthrough TLS listeners (HTTPS or TLS Terminate beside
// TLS Passthrough) on one port are refused, each Accepted False and
// Conflicted True with reason ProtocolConflict (tlsmodes.go): one Envoy
// listener per port either terminates or passes through, and
// TLSRouteModeMixed is not claimed.
//
// Client certificate validation (spec.tls.frontend, frontendtls.go) of a
// listener's port (a ListenerSet's listener's too) makes its terminating
// servers MUTUAL (AllowValidOnly) or OPTIONAL_MUTUAL
// (AllowInsecureFallback), verifying clients against the bundle of its
// caCertificateRefs (ConfigMaps or Secrets, ca.crt), which the generated
// Gateway carries inline (model.GatewayClientCAAnnotationPrefix) into its
// own proxies' listener; with no valid CA the listener is Accepted False,
// NoValidCACertificate, and not served.
// spec.tls.backend.clientCertificateRef is presented by the Gateway's
// own proxies on the connections a BackendTLSPolicy originates
// (backendclient.go): its generated Gateways carry
// model.BackendClientCertificateAnnotation, which gives those proxies a
// view of their own; a ref that does not resolve makes the Gateway's
// ResolvedRefs False (InvalidClientCertificateRef, RefNotPermitted).
//
// status.supportedFeatures of every handled GatewayClass is
// SupportedFeatures (features.go), the one list of the Gateway API
// features Wayfinder implements, which the conformance run claims.
//
// # Refusals
//
// Conversion is pure and best effort, like Ingress conversion: what cannot
// be served (a backend or certificate in another namespace without a
// ReferenceGrant, a Service that does not exist, an unsupported filter or
// kind) is reported as a config.Error naming the object and the field,
// and everything else is still converted. A rule whose backends are all
// refused answers 500, as the specification asks; among usable ones, the
// refused backends' summed weight goes to one destination
// model.InvalidBackendHost, which the route translator turns into the
// never-generated cluster model.InvalidBackendCluster with
// cluster_not_found_response_code 500: those requests get a 500 and the
// valid backends keep their share. Every converted route
// and listener is validated as the store validates Istio config (check.go)
// before it joins a VirtualService shared with other routes, so a regex
// that does not compile leaves out its own match, not its neighbours'.
// Inputs are never modified.
//
// # Status
//
// ConvertWithStatus computes, from the decisions conversion took (record.go
// collects them, status.go turns them into sigs.k8s.io/gateway-api types),
// the status of every handled GatewayClass (Accepted, supportedFeatures), ListenerSet of a
// handled Gateway (see ListenerSets), Gateway (Accepted,
// Programmed; per listener Accepted, ResolvedRefs, Programmed, Conflicted,
// supportedKinds and attachedRoutes) and the parents entries of each route
// for the parentRefs naming a handled Gateway (Accepted with
// NotAllowedByListeners, NoMatchingListenerHostname or NoMatchingParent;
// ResolvedRefs with BackendNotFound, RefNotPermitted or InvalidKind, the
// first refused backend's). Every condition carries its object's
// generation. Programmed says the listeners were converted and the
// Gateway has an address: that of its Service (deployment.go: the one a
// Hostname spec.addresses entry names, else GATEWAY-CLASS, which package
// gatewaydeploy deploys), its load balancer's ingress IPs and hostnames,
// else its cluster IPs, reported in status.addresses; without one it is
// False, AddressNotAssigned. Its message starts with the controller name:
// when a Gateway stops being ours (its class changed or was deleted), the
// status writer recognises what it wrote and puts it back to Pending. A
// Conflicted listener is reported but still served, except one of mixed
// TLS termination, which is refused. The backends of a
// route no listener accepted are resolved all the same, silently, for its
// ResolvedRefs.
//
// Generated names longer than 63 characters (a long Gateway, listener or
// hostname) are cut and end with a hash of the whole (names.go), so they
// stay valid DNS-1123 labels, unique and stable.
//
// # Sources
//
// Two sources run ConvertWithStatus on every change of what it reads and
// serve the generated config to the push context:
//
//   - pilot/pkg/config/kube/gatewayapi (Kubernetes mode): a Controller
//     reading the objects, Services, Namespaces and ConfigMaps from
//     informers, the Secrets from the SDS store's informer, the
//     ServiceEntries from the Istio config store, and watching for Gateway
//     API CRDs installed after start;
//   - pilot/pkg/config/file/gatewayapi (file mode): a StaticSource over
//     the config folder's objects (pkg/config/manifest parses and checks
//     them against the CRD schemas), with Services answered from the
//     folder's ServiceEntries.
//
// Both keep the last conversion's Status for /debug/configz. The status
// writers (pilot/pkg/config/kube/status, under the status Lease) write
// what ConvertWithStatus computes onto the objects in Kubernetes mode;
// file mode writes no status. Package gatewaydeploy deploys the proxies of
// handled Gateways with the names and opt-outs of deployment.go
// (DeploymentName, Managed), which conversion also reads for a Gateway's
// address.
//
// # Not yet
//
// Invalid backends among valid ones of TLSRoutes and TCPRoutes (their
// weight goes to the others: a connection cannot be answered with a 500).
// File mode has no Namespace objects: an allowedRoutes Selector sees no
// labels there but the implied kubernetes.io/metadata.name, and its hosts
// name the Gateway's namespace only.
package gatewayapi
