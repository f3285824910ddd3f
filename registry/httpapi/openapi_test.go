// Tests that api/openapi.yaml describes what the server serves: every
// route with its method, every request schema with exactly the Go
// request type's JSON fields, and every error code the server can send.
package httpapi

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/fencegate/fencegate/internal/strictjson"
	"github.com/fencegate/fencegate/wire"
)

type openAPIDoc struct {
	OpenAPI string `json:"openapi"`
	Info    struct {
		Description string `json:"description"`
	} `json:"info"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]struct {
			Properties           map[string]json.RawMessage `json:"properties"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		} `json:"schemas"`
	} `json:"components"`
}

func loadOpenAPI(t *testing.T) *openAPIDoc {
	t.Helper()
	y, err := os.ReadFile("../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		t.Fatal(err)
	}
	var d openAPIDoc
	if err := json.Unmarshal(j, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

func TestOpenAPICoversRoutes(t *testing.T) {
	d := loadOpenAPI(t)
	s, err := NewServer(Config{Registry: newHarness(t).reg, Auth: Chain{}, Authorizer: AllowAll{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range s.Routes() {
		ops, ok := d.Paths[r.Path]
		if !ok {
			t.Errorf("openapi.yaml lacks path %s", r.Path)
			continue
		}
		if _, ok := ops[strings.ToLower(r.Method)]; !ok {
			t.Errorf("openapi.yaml: %s lacks %s", r.Path, r.Method)
		}
	}
}

func TestOpenAPISchemasMatchTypes(t *testing.T) {
	d := loadOpenAPI(t)
	for name, v := range map[string]any{
		"AcquireRequest": wire.AcquireRequest{}, "LeaseRequest": wire.LeaseRequest{}, "StatusRequest": wire.StatusRequest{},
		"Issued": wire.IssuedResponse{}, "ResourceInfo": wire.ResourceInfo{}, "ReleaseResponse": wire.ReleaseResponse{},
		"Error": wire.ErrorBody{}, "Health": wire.Health{},
		"FenceRangeBumpRequest": wire.FenceRangeBumpRequest{}, "FenceRange": wire.FenceRange{},
		"BatchRequest": wire.BatchRequest{}, "BatchOperation": wire.BatchOperation{},
		"BatchResponse": wire.BatchResponse{}, "BatchAnswer": wire.BatchAnswer{},
		"LockSetRequest": wire.LockSetRequest{}, "LockSetLeasesRequest": wire.LockSetLeasesRequest{},
		"IssuedSet": wire.IssuedSetResponse{}, "LockSetReleaseResponse": wire.LockSetReleaseResponse{},
		"LockHolder": wire.LockHolder{}, "LockWaiter": wire.LockWaiter{},
	} {
		sc, ok := d.Components.Schemas[name]
		if !ok {
			t.Errorf("openapi.yaml lacks schema %s", name)
			continue
		}
		want, got := strictjson.Names(v), []string(nil)
		for f := range sc.Properties {
			got = append(got, f)
		}
		slices.Sort(want)
		slices.Sort(got)
		if !reflect.DeepEqual(want, got) {
			t.Errorf("schema %s has %v, Go type %T has %v", name, got, v, want)
		}
		if strings.HasSuffix(name, "Request") && (sc.AdditionalProperties == nil || *sc.AdditionalProperties) {
			t.Errorf("request schema %s must say additionalProperties: false", name)
		}
	}
}

func TestOpenAPIListsEveryCode(t *testing.T) {
	d := loadOpenAPI(t)
	for code := range codeStatus {
		if !strings.Contains(d.Info.Description, "| "+code+" |") {
			t.Errorf("openapi.yaml's code table lacks %s", code)
		}
	}
}
