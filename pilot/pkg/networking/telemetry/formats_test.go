package telemetry

import (
	"encoding/json"
	"maps"
	"os"
	"testing"
)

// The testdata/istiod files hold istiod 1.29's default access log formats
// as data (its EnvoyTextLogFormat and EnvoyJSONLogFormatIstio values in
// pilot/pkg/model/telemetry_logging.go), so a change to ours that would
// stop matching istiod's output fails here.

func TestTextFormatIsIstiods(t *testing.T) {
	want, err := os.ReadFile("testdata/istiod/EnvoyTextLogFormat.txt")
	if err != nil {
		t.Fatal(err)
	}
	if EnvoyTextLogFormat != string(want) {
		t.Errorf("EnvoyTextLogFormat differs from istiod's:\n got %q\nwant %q", EnvoyTextLogFormat, want)
	}
}

func TestJSONFormatIsIstiods(t *testing.T) {
	data, err := os.ReadFile("testdata/istiod/EnvoyJSONLogFormatIstio.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]string
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for k, v := range EnvoyJSONLogFormat().GetFields() {
		got[k] = v.GetStringValue()
	}
	if !maps.Equal(got, want) {
		t.Errorf("EnvoyJSONLogFormat differs from istiod's:\n got %v\nwant %v", got, want)
	}
}

func TestTextFormatAddsNewline(t *testing.T) {
	for in, want := range map[string]string{"": EnvoyTextLogFormat, "%PROTOCOL%": "%PROTOCOL%\n", "x\n": "x\n"} {
		if got := textFormat(in); got != want {
			t.Errorf("textFormat(%q) = %q, want %q", in, got, want)
		}
	}
}
