package model

// GatewayAPIRoutesAnnotation marks a VirtualService generated from Gateway
// API routes (HTTPRoute, GRPCRoute). Its HTTP routes are then named after
// the route and rule they came from ("NS/NAME/rules/I/matches/J"), and the
// gateway route translation names their Envoy statistics after those
// (stat_prefix "httproute/NS/NAME/rule/I") instead of after the generated
// VirtualService. Set by hand on an Istio VirtualService it changes only
// statistics names.
const GatewayAPIRoutesAnnotation = "internal.wayfinder.io/gateway-api-routes"
