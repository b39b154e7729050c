package security

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wayfinder-dev/wayfinder/pkg/kube/kclient"
)

// Names of the objects the self-signed CA lives in, in Wayfinder's own
// namespace.
const (
	// CASecretName holds the CA and the serving certificate with their keys.
	CASecretName = "wayfinder-ca"
	// RootCertConfigMap publishes the CA certificate for gateways to mount,
	// as Istio's istio-ca-root-cert.
	RootCertConfigMap = "wayfinder-ca-root-cert"
	// RootCertKey is the ConfigMap key holding the CA certificate.
	RootCertKey = "root-cert.pem"

	caCertKey = "ca.crt"
	caKeyKey  = "ca.key"
)

// Validity of the generated certificates. Istio's self-signed root lives
// ten years; the serving certificate is not rotated by Wayfinder, so it
// lives as long (give --tls-cert-file from cert-manager to rotate).
const selfSignedValidity = 10 * 365 * 24 * time.Hour

// SelfSignedOptions say where the CA is kept and what the serving
// certificate covers.
type SelfSignedOptions struct {
	Client    kclient.Kube
	Namespace string
	// DNSNames are the serving certificate's SANs; an IP address becomes
	// an IP SAN.
	DNSNames []string
	Logger   *slog.Logger
	// Now is the clock for the validity period; nil means time.Now.
	Now func() time.Time
}

// EnsureSelfSigned returns the serving certificate and CA certificate
// (PEM) kept in Secret wayfinder-ca, creating them when absent. Replicas
// starting together each try to create it; the first wins (AlreadyExists
// for the others) and all of them then read and serve the winner's, so
// every replica serves the same certificate. The CA certificate is then
// published in ConfigMap wayfinder-ca-root-cert (key root-cert.pem).
func EnsureSelfSigned(ctx context.Context, o SelfSignedOptions) (tls.Certificate, []byte, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	secrets := o.Client.CoreV1().Secrets(o.Namespace)
	sec, err := secrets.Get(ctx, CASecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		var fresh *corev1.Secret
		if fresh, err = newCASecret(o); err != nil {
			return tls.Certificate{}, nil, err
		}
		sec, err = secrets.Create(ctx, fresh, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			sec, err = secrets.Get(ctx, CASecretName, metav1.GetOptions{})
		} else if err == nil {
			o.Logger.Info("created self-signed CA and serving certificate", "secret", o.Namespace+"/"+CASecretName, "dnsNames", o.DNSNames)
		}
	}
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("secret %s/%s: %w", o.Namespace, CASecretName, err)
	}
	pair, err := tls.X509KeyPair(sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("secret %s/%s: keys %s and %s: %w", o.Namespace, CASecretName, corev1.TLSCertKey, corev1.TLSPrivateKeyKey, err)
	}
	caPEM := sec.Data[caCertKey]
	if len(caPEM) == 0 {
		return tls.Certificate{}, nil, fmt.Errorf("secret %s/%s: key %s is empty", o.Namespace, CASecretName, caCertKey)
	}
	if leaf, err := x509.ParseCertificate(pair.Certificate[0]); err == nil {
		var missing []string
		for _, n := range o.DNSNames {
			if leaf.VerifyHostname(n) != nil {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			o.Logger.Warn("the stored serving certificate does not cover every name; delete the Secret to have it issued again",
				"secret", o.Namespace+"/"+CASecretName, "missing", missing)
		}
	}
	if err := publishRootCert(ctx, o, caPEM); err != nil {
		return tls.Certificate{}, nil, err
	}
	return pair, caPEM, nil
}

// publishRootCert creates or updates ConfigMap wayfinder-ca-root-cert.
func publishRootCert(ctx context.Context, o SelfSignedOptions, caPEM []byte) error {
	cms := o.Client.CoreV1().ConfigMaps(o.Namespace)
	want := string(caPEM)
	for range 3 {
		cm, err := cms.Get(ctx, RootCertConfigMap, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = cms.Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: RootCertConfigMap, Namespace: o.Namespace, Labels: labels()},
				Data:       map[string]string{RootCertKey: want},
			}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				continue
			}
		} else if err == nil && cm.Data[RootCertKey] != want {
			cm = cm.DeepCopy()
			if cm.Data == nil {
				cm.Data = map[string]string{}
			}
			cm.Data[RootCertKey] = want
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) {
				continue
			}
		}
		if err != nil {
			return fmt.Errorf("configmap %s/%s: %w", o.Namespace, RootCertConfigMap, err)
		}
		return nil
	}
	return fmt.Errorf("configmap %s/%s: conflicting updates", o.Namespace, RootCertConfigMap)
}

func labels() map[string]string {
	return map[string]string{"app.kubernetes.io/name": "pilot-discovery", "app.kubernetes.io/part-of": "wayfinder"}
}

func newCASecret(o SelfSignedOptions) (*corev1.Secret, error) {
	now := o.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{Organization: []string{"wayfinder"}, CommonName: "Wayfinder self-signed CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(selfSignedValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	if len(o.DNSNames) == 0 {
		return nil, errors.New("self-signed serving certificate: no DNS names")
	}
	var dnsNames []string
	var ips []net.IP
	for _, n := range o.DNSNames {
		if ip := net.ParseIP(n); ip != nil {
			ips = append(ips, ip) // --tls-san 10.0.0.7: an IP SAN
		} else {
			dnsNames = append(dnsNames, n)
		}
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{Organization: []string{"wayfinder"}, CommonName: o.DNSNames[0]},
		DNSNames:     dnsNames,
		IPAddresses:  ips,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(selfSignedValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caKeyPEM, err := ecKeyPEM(caKey)
	if err != nil {
		return nil, err
	}
	keyPEM, err := ecKeyPEM(key)
	if err != nil {
		return nil, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	certPEM := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), caPEM...)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: CASecretName, Namespace: o.Namespace, Labels: labels()},
		Type:       corev1.SecretTypeTLS,
		Data: map[string][]byte{
			corev1.TLSCertKey:       certPEM,
			corev1.TLSPrivateKeyKey: keyPEM,
			caCertKey:               caPEM,
			caKeyKey:                caKeyPEM,
		},
	}, nil
}

func ecKeyPEM(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}
