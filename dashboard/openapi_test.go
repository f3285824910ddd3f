// Proves api/openapi.yaml describes the gate report endpoint: its path
// and method, the report's and the answer's fields exactly as the Go types
// encode them, and the endpoint's own error code in the code table.
package dashboard_test

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/fencegate/fencegate/dashboard"
	"github.com/fencegate/fencegate/gate/report"
)

func TestOpenAPIDescribesGateReports(t *testing.T) {
	y, err := os.ReadFile("../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Info       struct{ Description string }
		Paths      map[string]map[string]json.RawMessage
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(j, &doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc.Paths[report.ReportPath]["post"]; !ok {
		t.Errorf("openapi.yaml lacks POST %s", report.ReportPath)
	}
	for name, v := range map[string]any{"GateReport": report.Report{}, "GateAnswer": report.Answer{},
		"GateResourceView": report.ResourceView{}, "GateDecision": report.Decision{}} {
		want := jsonFields(reflect.TypeOf(v))
		var got []string
		for f := range doc.Components.Schemas[name].Properties {
			got = append(got, f)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("schema %s has %v, Go type %T encodes %v", name, got, v, want)
		}
	}
	if !strings.Contains(doc.Info.Description, "| "+dashboard.CodeRateLimited+" |") || !strings.Contains(doc.Info.Description, "| "+dashboard.CodeInvalid+" |") {
		t.Error("openapi.yaml's code table lacks the report endpoint's codes")
	}
}

func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
