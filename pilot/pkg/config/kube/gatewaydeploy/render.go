package gatewaydeploy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/wayfinder-dev/wayfinder/pilot/pkg/config/gatewayapi"
)

// Objects are what the deployer applies for one Gateway, all named
// gatewayapi.DeploymentName in the Gateway's namespace and owned by it.
type Objects struct {
	ServiceAccount *corev1.ServiceAccount
	// Role and RoleBinding let the ServiceAccount get, list and watch the
	// Secrets of the Gateway's namespace: what Wayfinder's
	// SubjectAccessReview asks before it sends the proxies a Secret of
	// their namespace, as istiod does. The pods hold no token the API
	// server accepts (theirs is for Wayfinder's audience only), so the
	// grant reaches the API server through Wayfinder alone.
	Role        *rbacv1.Role
	RoleBinding *rbacv1.RoleBinding
	ConfigMap   *corev1.ConfigMap
	Deployment  *appsv1.Deployment
	Service     *corev1.Service
}

// List is the objects in the order they are applied: what the Deployment
// mounts and runs as first, the Role before the RoleBinding naming it
// (the API server checks a binding against its Role's rules).
func (o Objects) List() []runtime.Object {
	return []runtime.Object{o.ServiceAccount, o.Role, o.RoleBinding, o.ConfigMap, o.Deployment, o.Service}
}

// Render renders the objects of a Gateway. It is pure: the same Gateway
// and options give the same objects.
func Render(g *gw.Gateway, opts Options) (Objects, error) {
	opts = opts.WithDefaults()
	name := gatewayapi.DeploymentName(g)
	if len(name) > 63 {
		return Objects{}, fmt.Errorf("Gateway %s/%s: the name of its deployment %q is longer than 63 characters (a Service name must be a DNS label); shorten the Gateway's or its class's name",
			g.Namespace, name, name)
	}
	svcType := opts.ServiceType
	if t := g.Annotations[gatewayapi.ServiceTypeAnnotation]; t != "" {
		svcType = corev1.ServiceType(t)
		if !validServiceType(svcType) {
			return Objects{}, fmt.Errorf("Gateway %s/%s: metadata.annotations[%s] %q: want ClusterIP, NodePort or LoadBalancer",
				g.Namespace, g.Name, gatewayapi.ServiceTypeAnnotation, t)
		}
	}
	var infraLabels, infraAnnotations map[string]string
	if inf := g.Spec.Infrastructure; inf != nil {
		infraLabels, infraAnnotations = map[string]string{}, map[string]string{}
		for k, v := range inf.Labels {
			infraLabels[string(k)] = string(v)
		}
		for k, v := range inf.Annotations {
			infraAnnotations[string(k)] = string(v)
		}
	}
	// Pod labels: the Gateway's name selects the converted Istio Gateways'
	// servers (gatewayapi.GatewayNameLabel); the infrastructure labels the
	// Gateway asks for come first so they cannot replace ours.
	podLabels := map[string]string{}
	maps.Copy(podLabels, infraLabels)
	podLabels[gatewayapi.GatewayNameLabel] = g.Name
	podLabels[ClassLabel] = string(g.Spec.GatewayClassName)
	labels := maps.Clone(podLabels)
	labels[ManagedLabel] = ManagedLabelValue
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Name: name, Namespace: g.Namespace, Labels: maps.Clone(labels), Annotations: maps.Clone(infraAnnotations),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: gw.GroupVersion.String(), Kind: "Gateway", Name: g.Name, UID: g.UID, Controller: ptr(true),
			}},
		}
	}
	pc, err := proxyConfig(g, opts)
	if err != nil {
		return Objects{}, err
	}
	boot, err := renderBootstrap(bootstrapInput{
		Cluster: name + "." + g.Namespace, Namespace: g.Namespace, Labels: podLabels, ClusterID: opts.ClusterID,
		XDSAddress: opts.XDSAddress, RootCert: len(opts.RootCertPEM) > 0, ProxyConfig: pc,
	})
	if err != nil {
		return Objects{}, fmt.Errorf("Gateway %s/%s: %w", g.Namespace, g.Name, err)
	}
	cm := &corev1.ConfigMap{TypeMeta: typeMeta("v1", "ConfigMap"), ObjectMeta: meta(),
		Data: map[string]string{bootstrapFile: string(boot)}}
	if len(opts.RootCertPEM) > 0 {
		cm.Data[rootCertFile] = string(opts.RootCertPEM)
	}
	sum := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
		sum.Write([]byte(k + "\x00" + cm.Data[k] + "\x00"))
	}
	podAnnotations := maps.Clone(infraAnnotations)
	if podAnnotations == nil {
		podAnnotations = map[string]string{}
	}
	podAnnotations[BootstrapHashAnnotation] = hex.EncodeToString(sum.Sum(nil))[:16]

	ports := listenerPorts(g)
	var svcPorts []corev1.ServicePort
	containerPorts := []corev1.ContainerPort{{Name: "status-port", ContainerPort: statusPort, Protocol: corev1.ProtocolTCP}}
	for _, p := range ports {
		svcPorts = append(svcPorts, corev1.ServicePort{Name: p.name, Port: p.port, Protocol: corev1.ProtocolTCP,
			AppProtocol: p.appProtocol, TargetPort: intstr.FromInt32(p.port)})
		containerPorts = append(containerPorts, corev1.ContainerPort{ContainerPort: p.port, Protocol: corev1.ProtocolTCP})
	}
	dep := &appsv1.Deployment{TypeMeta: typeMeta("apps/v1", "Deployment"), ObjectMeta: meta(),
		Spec: appsv1.DeploymentSpec{
			// replicas is left to the API server's default (1) and to
			// whoever scales it (an HPA): not owned by the deployer.
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{gatewayapi.GatewayNameLabel: g.Name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(podLabels), Annotations: podAnnotations},
				Spec:       podSpec(g, name, opts, containerPorts),
			},
		}}
	svc := &corev1.Service{TypeMeta: typeMeta("v1", "Service"), ObjectMeta: meta(),
		Spec: corev1.ServiceSpec{
			Type:     svcType,
			Selector: map[string]string{gatewayapi.GatewayNameLabel: g.Name},
			Ports:    svcPorts,
		}}
	sa := &corev1.ServiceAccount{TypeMeta: typeMeta("v1", "ServiceAccount"), ObjectMeta: meta()}
	role := &rbacv1.Role{TypeMeta: typeMeta(rbacv1.SchemeGroupVersion.String(), "Role"), ObjectMeta: meta(),
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: SecretVerbs}}}
	binding := &rbacv1.RoleBinding{TypeMeta: typeMeta(rbacv1.SchemeGroupVersion.String(), "RoleBinding"), ObjectMeta: meta(),
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: g.Namespace}}}
	return Objects{ServiceAccount: sa, Role: role, RoleBinding: binding, ConfigMap: cm, Deployment: dep, Service: svc}, nil
}

// podSpec runs Envoy unprivileged with the bootstrap, the root
// certificate and a projected token of the Gateway's ServiceAccount for
// Wayfinder's audience (the ServiceAccount's own token is not mounted).
// The node ID is Istio's, from the downward API: the pod's IP, name and
// namespace.
func podSpec(g *gw.Gateway, name string, opts Options, ports []corev1.ContainerPort) corev1.PodSpec {
	field := func(env, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: env, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}}
	}
	nodeID := "router~$(POD_IP)~$(POD_NAME).$(POD_NAMESPACE)~$(POD_NAMESPACE).svc." + opts.DomainSuffix
	return corev1.PodSpec{
		ServiceAccountName:           name,
		AutomountServiceAccountToken: ptr(false),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsUser: ptr(int64(101)), RunAsGroup: ptr(int64(101)), RunAsNonRoot: ptr(true), FSGroup: ptr(int64(101)),
			// Listeners on ports below 1024 without NET_BIND_SERVICE,
			// as istiod's gateways do.
			Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "0"}},
		},
		Containers: []corev1.Container{{
			Name:  "envoy",
			Image: opts.Image,
			Args: []string{"-c", configDir + "/" + bootstrapFile, "--service-node", nodeID,
				"--disable-hot-restart", "--log-level", "info"},
			Env:   []corev1.EnvVar{field("POD_NAME", "metadata.name"), field("POD_NAMESPACE", "metadata.namespace"), field("POD_IP", "status.podIP")},
			Ports: ports,
			ReadinessProbe: &corev1.Probe{
				ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
					Path: "/healthz/ready", Port: intstr.FromInt32(statusPort), Scheme: corev1.URISchemeHTTP}},
				InitialDelaySeconds: 1, PeriodSeconds: 2, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 30,
			},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr(false), ReadOnlyRootFilesystem: ptr(true), RunAsNonRoot: ptr(true),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "config", MountPath: configDir, ReadOnly: true},
				{Name: "token", MountPath: tokenDir, ReadOnly: true},
				{Name: "tmp", MountPath: "/tmp"},
			},
		}},
		Volumes: []corev1.Volume{
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: name}}}},
			{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{
				ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: opts.TokenAudience, ExpirationSeconds: ptr(int64(43200)), Path: tokenFile},
			}}}}},
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		},
	}
}

type port struct {
	name        string
	port        int32
	appProtocol *string
}

// listenerPorts are the Gateway's distinct listener ports, in order,
// each named PROTOCOL-PORT after the first listener using it (istiod's
// naming), with its application protocol.
func listenerPorts(g *gw.Gateway) []port {
	var out []port
	for _, l := range g.Spec.Listeners {
		p := int32(l.Port)
		if slices.ContainsFunc(out, func(x port) bool { return x.port == p }) {
			continue
		}
		proto := strings.ToLower(string(l.Protocol))
		var app *string
		switch l.Protocol {
		case gw.HTTPProtocolType, gw.HTTPSProtocolType, gw.TLSProtocolType, gw.TCPProtocolType:
			app = ptr(proto)
		}
		// A port name is a DNS label of at most 15 characters.
		n := fmt.Sprintf("%s-%d", proto, p)
		if len(n) > 15 || strings.ContainsAny(proto, "./") {
			n = fmt.Sprintf("port-%d", p)
		}
		out = append(out, port{name: n, port: p, appProtocol: app})
	}
	return out
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

func ptr[T any](v T) *T { return &v }
