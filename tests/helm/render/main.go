// tests/helm/render/main.go: renders a Helm chart offline the way `helm
// template` does, for the chart tests (Helm itself cannot be installed on the
// project's machines). Same engine as Helm: Go's text/template with sprig's
// TxtFuncMap, Helm's extra functions, values coalesced like Helm's and checked
// against values.schema.json with gojsonschema (the validator Helm 3 uses).
//
// Owns: the subset of Helm's rendering the epochgate chart relies on.
// Must never: fetch anything, or accept a chart Helm would refuse: a
// template function Helm lacks, values the schema rejects, a kubeVersion
// the target cluster does not satisfy.
//
// Implemented, as Helm does it:
//   - charts: Chart.yaml, values.yaml, values.schema.json, templates/**, other
//     files as .Files (Get only), subcharts in charts/<name>/ (directories or
//     symlinks to directories); a subchart's values are the parent's values
//     under the subchart's name coalesced over its own values.yaml, plus
//     "global".
//   - values: YAML read through JSON (sigs.k8s.io/yaml), so numbers are float64
//     as in Helm; --values files merged in order (maps deep, null deletes).
//   - objects: .Values .Chart .Release .Capabilities .Template .Files.
//   - functions: sprig's TxtFuncMap without env/expandenv, plus include, tpl,
//     required, toYaml, fromYaml, fromYamlArray, toJson, fromJson,
//     fromJsonArray, lookup (always empty, as in `helm template`).
//   - templates named _* are partials; NOTES.txt is rendered (an error in it
//     fails like an install would) but printed only with --notes;
//     missingkey=zero and "<no value>" removed from the output.
//
// Usage: render --chart DIR [--values FILE]... [--release NAME]
//
//	[--namespace NS] [--kube-version v1.30.0] [--api-versions a/v1,b/v2] [--notes]
//
// Prints "---\n# Source: <chart>/templates/<file>\n<manifest>" for every
// non-empty manifest, sorted by path. Exit 1 with the reason on any error.
//
// Built in GOPATH mode from Debian's packages (GO111MODULE=off,
// GOPATH=/usr/share/gocode): golang-github-masterminds-sprig-dev,
// golang-gopkg-yaml.v2-dev, golang-github-xeipuuv-gojsonschema-dev.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/semver"
	"github.com/Masterminds/sprig"
	"github.com/xeipuuv/gojsonschema"
	yaml "gopkg.in/yaml.v2"
)

// chart is one loaded chart and its subcharts.
type chart struct {
	name      string
	meta      map[string]interface{} // Chart.yaml
	values    map[string]interface{} // values.yaml
	schema    []byte                 // values.schema.json, nil if absent
	templates map[string]string      // path under the chart ("templates/x.yaml") -> text
	files     files                  // every other file, for .Files
	subcharts []*chart
}

// files is .Files: Get returns a file's contents, "" when absent.
type files map[string][]byte

func (f files) Get(name string) string { return string(f[name]) }

// GetBytes returns a file's bytes, nil when absent.
func (f files) GetBytes(name string) []byte { return f[name] }

// versionSet is .Capabilities.APIVersions.
type versionSet []string

// Has reports whether the cluster serves the group/version or group/version/Kind.
func (v versionSet) Has(apiVersion string) bool {
	for _, x := range v {
		if x == apiVersion {
			return true
		}
	}
	return false
}

type kubeVersion struct {
	Version    string
	Major      string
	Minor      string
	GitVersion string
}

func (k kubeVersion) String() string { return k.Version }

type capabilities struct {
	KubeVersion kubeVersion
	APIVersions versionSet
	HelmVersion map[string]string
}

// fromJSONish turns YAML into the JSON-typed values Helm works with
// (map[string]interface{}, []interface{}, float64, string, bool, nil).
func fromJSONish(data []byte) (interface{}, error) {
	var raw interface{}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	conv, err := stringKeys(raw)
	if err != nil {
		return nil, err
	}
	j, err := json.Marshal(conv)
	if err != nil {
		return nil, err
	}
	var out interface{}
	if err := json.Unmarshal(j, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func stringKeys(v interface{}) (interface{}, error) {
	switch t := v.(type) {
	case map[interface{}]interface{}:
		m := make(map[string]interface{}, len(t))
		for k, val := range t {
			c, err := stringKeys(val)
			if err != nil {
				return nil, err
			}
			m[fmt.Sprint(k)] = c
		}
		return m, nil
	case []interface{}:
		for i := range t {
			c, err := stringKeys(t[i])
			if err != nil {
				return nil, err
			}
			t[i] = c
		}
		return t, nil
	}
	return v, nil
}

func readYAMLMap(p string) (map[string]interface{}, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	v, err := fromJSONish(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if v == nil {
		return map[string]interface{}{}, nil
	}
	m, ok := v.(map[string]interface{})
	if !ok {
		return nil, fmt.Errorf("%s: top level is not a map", p)
	}
	return m, nil
}

func loadChart(dir string) (*chart, error) {
	c := &chart{templates: map[string]string{}, files: files{}}
	// charts/<name> may be a symlink (helm follows it); walk the real directory.
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	meta, err := readYAMLMap(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, err
	}
	c.meta = meta
	name, _ := meta["name"].(string)
	if name == "" {
		return nil, fmt.Errorf("%s/Chart.yaml: no name", dir)
	}
	c.name = name
	c.values = map[string]interface{}{}
	if _, err := os.Stat(filepath.Join(dir, "values.yaml")); err == nil {
		if c.values, err = readYAMLMap(filepath.Join(dir, "values.yaml")); err != nil {
			return nil, err
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, "values.schema.json")); err == nil {
		c.schema = data
	}
	err = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if info.IsDir() {
			if rel == "charts" {
				return filepath.SkipDir
			}
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(rel, "templates/"):
			c.templates[rel] = string(data)
		case rel == "Chart.yaml" || rel == "values.yaml" || rel == "values.schema.json" || rel == ".helmignore":
		default:
			c.files[rel] = data
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(filepath.Join(dir, "charts"))
	if err == nil {
		for _, e := range entries {
			sub := filepath.Join(dir, "charts", e.Name())
			if st, err := os.Stat(sub); err != nil || !st.IsDir() {
				continue // Helm also reads .tgz archives here; the tests use directories
			}
			sc, err := loadChart(sub)
			if err != nil {
				return nil, err
			}
			c.subcharts = append(c.subcharts, sc)
		}
	}
	return c, nil
}

// mergeValues writes src over dst: maps merge deeply, other values replace,
// and a null in src deletes the key (helm's --values semantics).
func mergeValues(dst, src map[string]interface{}) {
	for k, sv := range src {
		if sv == nil {
			delete(dst, k)
			continue
		}
		if sm, ok := sv.(map[string]interface{}); ok {
			if dm, ok := dst[k].(map[string]interface{}); ok {
				mergeValues(dm, sm)
				continue
			}
		}
		dst[k] = sv
	}
}

func deepCopy(v interface{}) interface{} {
	j, _ := json.Marshal(v)
	var out interface{}
	_ = json.Unmarshal(j, &out)
	return out
}

// coalesce fills values[sub.name] from each subchart's defaults and globals.
func coalesce(c *chart, values map[string]interface{}) {
	for _, sc := range c.subcharts {
		merged := deepCopy(sc.values).(map[string]interface{})
		if user, ok := values[sc.name].(map[string]interface{}); ok {
			mergeValues(merged, user)
		}
		// Helm always hands a dependency a "global" map (its schema must allow it).
		mg, _ := merged["global"].(map[string]interface{})
		if mg == nil {
			mg = map[string]interface{}{}
		}
		if g, ok := values["global"].(map[string]interface{}); ok {
			mergeValues(mg, deepCopy(g).(map[string]interface{}))
		}
		merged["global"] = mg
		values[sc.name] = merged
		coalesce(sc, merged)
	}
}

// validate checks every chart's values against its values.schema.json.
func validate(c *chart, values map[string]interface{}, where string) error {
	var problems []string
	if c.schema != nil {
		res, err := gojsonschema.Validate(gojsonschema.NewBytesLoader(c.schema), gojsonschema.NewGoLoader(values))
		if err != nil {
			return fmt.Errorf("%s/values.schema.json: %w", where, err)
		}
		for _, e := range res.Errors() {
			problems = append(problems, fmt.Sprintf("- %s", e))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("values don't meet the specifications of the schema(s) in the following chart(s):\n%s:\n%s",
			c.name, strings.Join(problems, "\n"))
	}
	for _, sc := range c.subcharts {
		sv, _ := values[sc.name].(map[string]interface{})
		if err := validate(sc, sv, where+"/charts/"+sc.name); err != nil {
			return err
		}
	}
	return nil
}

func checkKubeVersion(c *chart, kube string) error {
	if constraint, ok := c.meta["kubeVersion"].(string); ok && constraint != "" {
		cons, err := semver.NewConstraint(constraint)
		if err != nil {
			return fmt.Errorf("chart %s: kubeVersion %q: %w", c.name, constraint, err)
		}
		v, err := semver.NewVersion(kube)
		if err != nil {
			return err
		}
		if !cons.Check(v) {
			return fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", constraint, kube)
		}
	}
	for _, sc := range c.subcharts {
		if err := checkKubeVersion(sc, kube); err != nil {
			return err
		}
	}
	return nil
}

// chartObject is .Chart: Chart.yaml with Helm's field names.
func chartObject(c *chart) map[string]interface{} {
	out := map[string]interface{}{}
	names := map[string]string{"apiVersion": "APIVersion", "appVersion": "AppVersion", "kubeVersion": "KubeVersion"}
	for k, v := range c.meta {
		n, ok := names[k]
		if !ok {
			n = strings.ToUpper(k[:1]) + k[1:]
		}
		out[n] = v
	}
	return out
}

func toYAML(v interface{}) string {
	j, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	var y interface{}
	if err := yaml.Unmarshal(j, &y); err != nil {
		return ""
	}
	data, err := yaml.Marshal(y)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

func toJSON(v interface{}) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(data)
}

// renderItem is one template to execute, with the data it sees.
type renderItem struct {
	name  string
	notes bool // NOTES.txt: rendered (its errors fail an install) but not a manifest
	data  map[string]interface{}
}

type renderer struct {
	tmpl       *template.Template
	items      []renderItem
	release    map[string]interface{}
	caps       capabilities
	includeCnt map[string]int
}

func (r *renderer) add(c *chart, prefix string, values map[string]interface{}) error {
	co := chartObject(c)
	names := make([]string, 0, len(c.templates))
	for n := range c.templates {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		full := prefix + "/" + n
		if _, err := r.tmpl.New(full).Parse(c.templates[n]); err != nil {
			return err
		}
		base := path.Base(n)
		if strings.HasPrefix(base, "_") {
			continue
		}
		r.items = append(r.items, renderItem{name: full, notes: base == "NOTES.txt", data: map[string]interface{}{
			"Values":       values,
			"Chart":        co,
			"Release":      r.release,
			"Capabilities": r.caps,
			"Files":        c.files,
			"Template":     map[string]interface{}{"Name": full, "BasePath": prefix + "/templates"},
		}})
	}
	for _, sc := range c.subcharts {
		sv, _ := values[sc.name].(map[string]interface{})
		if err := r.add(sc, prefix+"/charts/"+sc.name, sv); err != nil {
			return err
		}
	}
	return nil
}

func (r *renderer) funcs() template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	f["toYaml"] = toYAML
	f["toJson"] = toJSON
	f["fromYaml"] = func(s string) map[string]interface{} {
		v, err := fromJSONish([]byte(s))
		if err != nil {
			return map[string]interface{}{"Error": err.Error()}
		}
		m, ok := v.(map[string]interface{})
		if !ok {
			return map[string]interface{}{}
		}
		return m
	}
	f["fromYamlArray"] = func(s string) []interface{} {
		v, err := fromJSONish([]byte(s))
		if err != nil {
			return []interface{}{err.Error()}
		}
		a, _ := v.([]interface{})
		return a
	}
	f["fromJson"] = func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			m["Error"] = err.Error()
		}
		return m
	}
	f["fromJsonArray"] = func(s string) []interface{} {
		var a []interface{}
		if err := json.Unmarshal([]byte(s), &a); err != nil {
			return []interface{}{err.Error()}
		}
		return a
	}
	f["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil {
			return v, errors.New(msg)
		}
		if s, ok := v.(string); ok && s == "" {
			return v, errors.New(msg)
		}
		return v, nil
	}
	f["include"] = func(name string, data interface{}) (string, error) {
		r.includeCnt[name]++
		defer func() { r.includeCnt[name]-- }()
		if r.includeCnt[name] > 1000 {
			return "", fmt.Errorf("rendering template has a nested reference name: %s", name)
		}
		var buf bytes.Buffer
		if err := r.tmpl.ExecuteTemplate(&buf, name, data); err != nil {
			return "", err
		}
		return buf.String(), nil
	}
	f["tpl"] = func(text string, data interface{}) (string, error) {
		t, err := r.tmpl.Clone()
		if err != nil {
			return "", err
		}
		t, err = t.New("tpl").Parse(text)
		if err != nil {
			return "", err
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, data); err != nil {
			return "", err
		}
		return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
	}
	f["lookup"] = func(apiVersion, kind, namespace, name string) (map[string]interface{}, error) {
		return map[string]interface{}{}, nil
	}
	return f
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

func run() error {
	var valueFiles listFlag
	chartDir := flag.String("chart", "", "chart directory")
	flag.Var(&valueFiles, "values", "values file merged over the chart's values.yaml (repeatable)")
	releaseName := flag.String("release", "release", "release name")
	namespace := flag.String("namespace", "default", "release namespace")
	kube := flag.String("kube-version", "v1.30.0", "Kubernetes version for .Capabilities")
	apiVersions := flag.String("api-versions", "", "extra API versions for .Capabilities.APIVersions, comma-separated")
	notes := flag.Bool("notes", false, "print the chart's NOTES.txt after the manifests, as a comment-only document")
	flag.Parse()
	if *chartDir == "" {
		return errors.New("--chart is required")
	}
	c, err := loadChart(*chartDir)
	if err != nil {
		return err
	}
	values := deepCopy(c.values).(map[string]interface{})
	for _, vf := range valueFiles {
		over, err := readYAMLMap(vf)
		if err != nil {
			return err
		}
		mergeValues(values, over)
	}
	coalesce(c, values)
	if err := validate(c, values, c.name); err != nil {
		return err
	}
	kv, err := semver.NewVersion(*kube)
	if err != nil {
		return fmt.Errorf("--kube-version: %w", err)
	}
	if err := checkKubeVersion(c, *kube); err != nil {
		return err
	}
	apis := versionSet{"v1", "apps/v1", "policy/v1", "batch/v1", "autoscaling/v2", "networking.k8s.io/v1"}
	if *apiVersions != "" {
		apis = append(apis, strings.Split(*apiVersions, ",")...)
	}
	r := &renderer{
		release: map[string]interface{}{"Name": *releaseName, "Namespace": *namespace, "Service": "Helm",
			"IsInstall": true, "IsUpgrade": false, "Revision": 1},
		caps: capabilities{
			KubeVersion: kubeVersion{Version: "v" + kv.String(), Major: fmt.Sprint(kv.Major()),
				Minor: fmt.Sprint(kv.Minor()), GitVersion: "v" + kv.String()},
			APIVersions: apis,
			HelmVersion: map[string]string{"Version": "v3-offline-render"},
		},
		includeCnt: map[string]int{},
	}
	r.tmpl = template.New("gotpl").Option("missingkey=zero")
	r.tmpl.Funcs(r.funcs())
	if err := r.add(c, c.name, values); err != nil {
		return err
	}
	sort.Slice(r.items, func(i, j int) bool { return r.items[i].name < r.items[j].name })
	var out strings.Builder
	notesText := ""
	for _, it := range r.items {
		var buf bytes.Buffer
		if err := r.tmpl.ExecuteTemplate(&buf, it.name, it.data); err != nil {
			return err
		}
		text := strings.ReplaceAll(buf.String(), "<no value>", "")
		if it.notes {
			if *notes && it.name == c.name+"/templates/NOTES.txt" {
				notesText = text
			}
			continue
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", it.name, strings.TrimSpace(text))
	}
	fmt.Print(out.String())
	if *notes {
		fmt.Printf("---\n# NOTES\n%s\n", strings.TrimSpace(notesText))
	}
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}
