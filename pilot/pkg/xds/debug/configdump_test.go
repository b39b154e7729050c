package debug

import (
	"encoding/base64"
	"strings"
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/encoding/protojson"
)

func TestRedactSecretKinds(t *testing.T) {
	file := &core.DataSource{Specifier: &core.DataSource_Filename{Filename: "/etc/key.pem"}}
	inline := func() *core.DataSource {
		return &core.DataSource{Specifier: &core.DataSource_InlineBytes{InlineBytes: []byte("secret")}}
	}
	cases := []*tlsv3.Secret{
		{Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{PrivateKey: inline(), Password: inline()}}},
		{Type: &tlsv3.Secret_GenericSecret{GenericSecret: &tlsv3.GenericSecret{Secret: inline()}}},
		{Type: &tlsv3.Secret_SessionTicketKeys{SessionTicketKeys: &tlsv3.TlsSessionTicketKeys{Keys: []*core.DataSource{inline(), inline()}}}},
	}
	for i, sec := range cases {
		redactSecret(sec)
		if b, _ := protojson.Marshal(sec); strings.Contains(string(b), base64.StdEncoding.EncodeToString([]byte("secret"))) || !strings.Contains(string(b), "[redacted]") {
			t.Errorf("case %d: %s", i, b)
		}
	}
	withFile := &tlsv3.Secret{Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{PrivateKey: file}}}
	redactSecret(withFile)
	if withFile.GetTlsCertificate().GetPrivateKey().GetFilename() != "/etc/key.pem" {
		t.Error("a key file name is no secret and stays, as in Envoy's dump")
	}
}
