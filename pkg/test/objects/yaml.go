package objects

// PublicGatewayYAML is the Gateway istio-system/public: the ingress
// gateways labelled istio=ingressgateway, plain HTTP on port 80 for every
// host of every namespace. It begins with a newline so it can open a
// multi-document constant.
const PublicGatewayYAML = `
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: public, namespace: istio-system}
spec:
  selector: {istio: ingressgateway}
  servers:
  - {name: http, port: {number: 80, name: http, protocol: HTTP}, hosts: ["*/*"]}
`
