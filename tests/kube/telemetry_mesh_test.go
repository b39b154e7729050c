package kube

import (
	"testing"

	filealv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/bootstrap"
	"github.com/wayfinder-dev/wayfinder/pkg/adsc"
)

// accessLogPath is the path of the file access logger of listener
// 0.0.0.0_80's connection manager ("" for none).
func accessLogPath(s adsc.State) string {
	for _, fc := range s.Listeners["0.0.0.0_80"].GetFilterChains() {
		for _, f := range fc.GetFilters() {
			cm := &hcmv3.HttpConnectionManager{}
			if f.GetTypedConfig().UnmarshalTo(cm) != nil {
				continue
			}
			for _, al := range cm.GetAccessLog() {
				fl := &filealv3.FileAccessLog{}
				if al.GetTypedConfig().UnmarshalTo(fl) == nil {
					return fl.GetPath()
				}
			}
		}
	}
	return ""
}

// The istio ConfigMap's accessLogFile (mesh config, against the real API
// server) is the connected gateway's access log, and an update to the
// ConfigMap changes it there, as istiod pushes a mesh config change.
func TestMeshConfigMapAccessLogReachesGateway(t *testing.T) {
	c, ns := newCluster(t, "meshlog")
	e := clientEnv(t, c, ns)
	cms := e.kube.CoreV1().ConfigMaps(ns)
	cm := func(data string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "istio"}, Data: map[string]string{"mesh": data}}
	}
	_, err := cms.Create(ctx, cm("accessLogFile: /dev/stdout\n"), metav1.CreateOptions{})
	e.must(err)
	e.createGateway("gw")
	e.server = startServer(t, bootstrap.Options{Kubeconfig: c.Kubeconfig, WatchNamespaces: []string{ns}, PodNamespace: ns})

	gw := e.gateway("gw-0")
	waitFor(t, gw, "the ConfigMap's access log", func(s adsc.State) bool { return accessLogPath(s) == "/dev/stdout" })
	_, err = cms.Update(ctx, cm("accessLogFile: /var/log/gateway.log\n"), metav1.UpdateOptions{})
	e.must(err)
	waitFor(t, gw, "the updated ConfigMap's access log", func(s adsc.State) bool { return accessLogPath(s) == "/var/log/gateway.log" })
}
