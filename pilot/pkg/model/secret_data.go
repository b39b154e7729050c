package model

// SecretDataStore is a SecretStore that also gives the data of a Secret,
// for what is not a certificate and key: the CA bundle and CRL that
// verify client certificates. Stores without it serve no CA from Secrets.
type SecretDataStore interface {
	SecretStore
	// SecretData returns the Secret's data keys; ok is false when it does
	// not exist. Callers must not modify the map or its values.
	SecretData(namespace, name string) (data map[string][]byte, ok bool)
}

// CABundle picks the CA certificates and the optional CRL out of a
// Secret's data: the kubernetes.io/tls-style keys ca.crt and ca.crl, or
// the cacert and crl keys of Istio's generic form. ok is false without a
// non-empty CA.
func CABundle(data map[string][]byte) (ca, crl []byte, ok bool) {
	switch {
	case len(data["ca.crt"]) > 0:
		ca, crl = data["ca.crt"], data["ca.crl"]
	case len(data["cacert"]) > 0:
		ca, crl = data["cacert"], data["crl"]
	default:
		return nil, nil, false
	}
	return ca, crl, true
}

// CAForCredential finds the CA that goes with credential ref, where Istio
// looks: the ca.crt (or cacert) key of the credential's own Secret, else
// the Secret named after it with "-cacert", in the same namespace. from
// names the Secret it came from, for messages. Each Secret is checked
// with refusal (SecretScope.Refusal) before it is read: when the
// credential's own Secret is refused, refused says why and nothing is
// read; a NAME-cacert Secret that is refused is passed over as if absent,
// so neither answer depends on what the Secrets hold.
func CAForCredential(store SecretStore, ref SecretRef, refusal func(SecretRef) string) (ca, crl []byte, from SecretRef, refused string, ok bool) {
	if why := refusal(ref); why != "" {
		return nil, nil, ref, why, false
	}
	ds, isData := store.(SecretDataStore)
	if !isData {
		return nil, nil, SecretRef{}, "", false
	}
	for _, r := range []SecretRef{ref, {Namespace: ref.Namespace, Name: ref.Name + CASuffix}} {
		if r != ref && refusal(r) != "" {
			continue
		}
		if data, found := ds.SecretData(r.Namespace, r.Name); found {
			if ca, crl, ok := CABundle(data); ok {
				return ca, crl, r, "", true
			}
		}
	}
	return nil, nil, SecretRef{}, "", false
}
