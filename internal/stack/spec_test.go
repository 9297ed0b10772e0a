package stack

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"
)

// The template is checked against the CloudFormation resource specification
// that @aws-cdk/aws-service-spec carries (db.json.gz, pinned in
// localstack/package.json and installed by `make deps`), and its
// AWS::Serverless::* resources against the SAM specification that
// goformation carries. goformation's own parser silently drops properties
// it does not know, so the check reads the YAML itself.

const serviceSpecPath = "../../localstack/node_modules/@aws-cdk/aws-service-spec/db.json.gz"

// specType is a property type in the service spec database.
type specType struct {
	Type      string     `json:"type"`
	Element   *specType  `json:"element"`
	Types     []specType `json:"types"`
	Reference *struct {
		Ref string `json:"$ref"`
	} `json:"reference"`
}

type specProperty struct {
	Type     specType `json:"type"`
	Required bool     `json:"required"`
}

type specEntity struct {
	ID                 string                  `json:"$id"`
	CloudFormationType string                  `json:"cloudFormationType"`
	Name               string                  `json:"name"`
	Properties         map[string]specProperty `json:"properties"`
}

type serviceSpec struct {
	resources map[string]specEntity // by CloudFormation type
	types     map[string]specEntity // type definitions by $id
}

var (
	specOnce sync.Once
	spec     serviceSpec
	specErr  error
)

func loadServiceSpec(t *testing.T) serviceSpec {
	t.Helper()
	specOnce.Do(func() {
		f, err := os.Open(serviceSpecPath)
		if err != nil {
			specErr = fmt.Errorf("%w (run `make deps`: npm ci in localstack/ installs @aws-cdk/aws-service-spec)", err)
			return
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			specErr = err
			return
		}
		var db struct {
			Schema struct {
				Resource       struct{ Entities []specEntity } `json:"resource"`
				TypeDefinition struct{ Entities []specEntity } `json:"typeDefinition"`
			} `json:"schema"`
		}
		if err := json.NewDecoder(zr).Decode(&db); err != nil {
			specErr = fmt.Errorf("decode %s: %w", serviceSpecPath, err)
			return
		}
		spec = serviceSpec{resources: map[string]specEntity{}, types: map[string]specEntity{}}
		for _, e := range db.Schema.Resource.Entities {
			spec.resources[e.CloudFormationType] = e
		}
		for _, e := range db.Schema.TypeDefinition.Entities {
			spec.types[e.ID] = e
		}
	})
	if specErr != nil {
		t.Fatal(specErr)
	}
	return spec
}

// samSpec is the classic resource specification format of goformation's
// generate/sam-2016-10-31.json.
type samSpec struct {
	ResourceTypes map[string]struct {
		Properties map[string]samProperty
	}
	PropertyTypes map[string]struct {
		Properties map[string]samProperty
	}
}

type samProperty struct {
	Required          bool
	Type              string
	PrimitiveType     string
	ItemType          string
	PrimitiveItemType string
	PrimitiveTypes    []string
	Types             []string
}

func loadSAMSpec(t *testing.T) samSpec {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/awslabs/goformation/v7").Output()
	if err != nil {
		t.Fatalf("locate goformation: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "generate", "sam-2016-10-31.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s samSpec
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// intrinsic reports whether n is a CloudFormation function (!Ref, !Sub,
// {"Fn::If": ...}): its value is known only at deploy time.
func intrinsic(n *yaml.Node) bool {
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		return true // a short-form function; "!!int" and the like are YAML's own
	}
	if n.Kind == yaml.MappingNode && len(n.Content) == 2 {
		k := n.Content[0].Value
		return k == "Ref" || k == "Condition" || strings.HasPrefix(k, "Fn::")
	}
	return false
}

func mapping(n *yaml.Node) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	if n == nil || n.Kind != yaml.MappingNode {
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		out[n.Content[i].Value] = n.Content[i+1]
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// checkValue reports how n does not have type ty, at path.
func (s serviceSpec) checkValue(path string, n *yaml.Node, ty specType) []string {
	if intrinsic(n) {
		return nil
	}
	scalar := n.Kind == yaml.ScalarNode
	switch ty.Type {
	case "string", "date-time":
		if !scalar {
			return []string{path + ": want a string"}
		}
	case "integer":
		if _, err := strconv.ParseInt(n.Value, 10, 64); !scalar || err != nil {
			return []string{path + ": want an integer"}
		}
	case "number":
		if _, err := strconv.ParseFloat(n.Value, 64); !scalar || err != nil {
			return []string{path + ": want a number"}
		}
	case "boolean":
		if v := strings.ToLower(n.Value); !scalar || (v != "true" && v != "false") {
			return []string{path + ": want a boolean"}
		}
	case "json", "null":
	case "tag":
		m := mapping(n)
		if n.Kind != yaml.MappingNode || m["Key"] == nil || m["Value"] == nil || len(m) != 2 {
			return []string{path + ": want a tag {Key, Value}"}
		}
	case "array":
		if n.Kind != yaml.SequenceNode {
			return []string{path + ": want a list"}
		}
		var errs []string
		for i, e := range n.Content {
			errs = append(errs, s.checkValue(fmt.Sprintf("%s[%d]", path, i), e, *ty.Element)...)
		}
		return errs
	case "map":
		if n.Kind != yaml.MappingNode {
			return []string{path + ": want a map"}
		}
		var errs []string
		m := mapping(n)
		for _, k := range sortedKeys(m) {
			errs = append(errs, s.checkValue(path+"."+k, m[k], *ty.Element)...)
		}
		return errs
	case "ref":
		def, ok := s.types[ty.Reference.Ref]
		if !ok {
			return []string{path + ": the spec names a type it does not define"}
		}
		if n.Kind != yaml.MappingNode {
			return []string{fmt.Sprintf("%s: want a %s object", path, def.Name)}
		}
		return s.checkProperties(path, mapping(n), def.Properties)
	case "union":
		for _, alt := range ty.Types {
			if len(s.checkValue(path, n, alt)) == 0 {
				return nil
			}
		}
		return []string{path + ": matches none of its allowed shapes"}
	default:
		return []string{fmt.Sprintf("%s: the spec type %q is unknown to this check", path, ty.Type)}
	}
	return nil
}

// checkProperties reports unknown and missing properties and wrong shapes.
func (s serviceSpec) checkProperties(path string, props map[string]*yaml.Node, want map[string]specProperty) []string {
	var errs []string
	for _, name := range sortedKeys(props) {
		p, ok := want[name]
		if !ok {
			errs = append(errs, fmt.Sprintf("%s.%s: no such property", path, name))
			continue
		}
		errs = append(errs, s.checkValue(path+"."+name, props[name], p.Type)...)
	}
	for _, name := range sortedKeys(want) {
		if want[name].Required && props[name] == nil {
			errs = append(errs, fmt.Sprintf("%s.%s: required property missing", path, name))
		}
	}
	return errs
}

// checkSAM reports properties of a SAM resource that its spec lacks, and
// the shape of the few that hookline uses with structure.
func checkSAM(sam samSpec, path, typ string, props map[string]*yaml.Node) []string {
	rt, ok := sam.ResourceTypes[typ]
	if !ok {
		return []string{fmt.Sprintf("%s: %s is not a SAM resource type", path, typ)}
	}
	var errs []string
	for _, name := range sortedKeys(props) {
		p, ok := rt.Properties[name]
		if !ok {
			errs = append(errs, fmt.Sprintf("%s.%s: no such property", path, name))
			continue
		}
		n := props[name]
		if intrinsic(n) {
			continue
		}
		switch {
		case p.PrimitiveType == "Integer":
			if _, err := strconv.Atoi(n.Value); n.Kind != yaml.ScalarNode || err != nil {
				errs = append(errs, fmt.Sprintf("%s.%s: want an integer", path, name))
			}
		case p.PrimitiveType == "String":
			if n.Kind != yaml.ScalarNode {
				errs = append(errs, fmt.Sprintf("%s.%s: want a string", path, name))
			}
		case p.Type == "List" && p.PrimitiveItemType != "":
			if n.Kind != yaml.SequenceNode {
				errs = append(errs, fmt.Sprintf("%s.%s: want a list", path, name))
			}
		case p.Type != "" && p.Type != "List" && p.Type != "Map":
			pt, ok := sam.PropertyTypes[typ+"."+p.Type]
			if !ok || n.Kind != yaml.MappingNode {
				if len(p.PrimitiveTypes) == 0 || n.Kind != yaml.ScalarNode {
					errs = append(errs, fmt.Sprintf("%s.%s: want a %s", path, name, p.Type))
				}
				continue
			}
			sub := mapping(n)
			for _, k := range sortedKeys(sub) {
				if _, ok := pt.Properties[k]; !ok {
					errs = append(errs, fmt.Sprintf("%s.%s.%s: no such property", path, name, k))
				}
			}
			for _, k := range sortedKeys(pt.Properties) {
				if pt.Properties[k].Required && sub[k] == nil {
					errs = append(errs, fmt.Sprintf("%s.%s.%s: required property missing", path, name, k))
				}
			}
		}
	}
	return errs
}

// checkAgainstSpecs checks every resource of the template file.
func checkAgainstSpecs(t *testing.T, file string) []string {
	t.Helper()
	s := loadServiceSpec(t)
	sam := loadSAMSpec(t)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	root := mapping(doc.Content[0])
	var errs []string
	if g := mapping(root["Globals"]); g["Function"] != nil {
		errs = append(errs, checkSAM(sam, "Globals.Function", "AWS::Serverless::Function", mapping(g["Function"]))...)
	}
	resources := mapping(root["Resources"])
	for _, id := range sortedKeys(resources) {
		r := mapping(resources[id])
		typ := r["Type"].Value
		props := mapping(r["Properties"])
		if strings.HasPrefix(typ, "AWS::Serverless::") {
			errs = append(errs, checkSAM(sam, id, typ, props)...)
			continue
		}
		e, ok := s.resources[typ]
		if !ok {
			errs = append(errs, fmt.Sprintf("%s: %s is not a CloudFormation resource type", id, typ))
			continue
		}
		errs = append(errs, s.checkProperties(id, props, e.Properties)...)
	}
	return errs
}

// TestTemplateMatchesCloudFormationSpec: every resource type and property
// of infra/template.yaml exists, with the right shape, in the current
// CloudFormation resource specification (and SAM's, for SAM resources).
func TestTemplateMatchesCloudFormationSpec(t *testing.T) {
	for _, file := range []string{"../../infra/template.yaml", filepath.Join(brokenDir, "complete.yaml")} {
		for _, e := range checkAgainstSpecs(t, file) {
			t.Errorf("%s: %s", file, e)
		}
	}
}

// TestSpecCheckCatchesMistakes: each template in testdata/templates/spec has
// one mistake the spec check must report, naming it.
func TestSpecCheckCatchesMistakes(t *testing.T) {
	for _, tc := range []struct {
		file string
		want string
		n    int // errors expected; 0 means 1
	}{
		{file: "unknown-type.yaml", want: "AWS::SQS::Queu is not a CloudFormation resource type"},
		{file: "misspelt-property.yaml", want: "WorkQueue.VisibilityTimout: no such property"},
		{file: "wrong-shape.yaml", want: "WorkerEventSource.BatchSize: want an integer"},
		{file: "nested-property.yaml", want: "WorkerEventSource.ScalingConfig.MaxConcurrency: no such property"},
		{file: "missing-required.yaml", want: "WorkerEventSource.FunctionName: required property missing"},
		{file: "sam-property.yaml", want: "WorkerFunction.Timeot: no such property"},
		{file: "sam-environment.yaml", want: "WorkerFunction.Environment.Vars: no such property", n: 2}, // and Variables is missing
	} {
		t.Run(tc.file, func(t *testing.T) {
			errs := checkAgainstSpecs(t, filepath.Join(brokenDir, "spec", tc.file))
			n := max(tc.n, 1)
			if len(errs) != n || !strings.Contains(errs[0], tc.want) {
				t.Fatalf("got %q, want %d error(s), the first containing %q", errs, n, tc.want)
			}
		})
	}
}
