package serve

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// deployDir is deploy/ from this package.
var deployDir = filepath.Join("..", "deploy")

// deployDocs reads every YAML document under deploy/, by path from
// deploy/ ("kubernetes/deployment.yaml"); every one must parse.
func deployDocs(t *testing.T) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	err := filepath.WalkDir(deployDir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || (!strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml")) {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dec := yaml.NewDecoder(bytes.NewReader(b), yaml.Strict())
		for {
			var doc map[string]any
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Errorf("%s does not parse: %v", p, err)
				break
			}
			if doc != nil {
				rel, _ := filepath.Rel(deployDir, p)
				out[filepath.ToSlash(rel)] = append(out[filepath.ToSlash(rel)], doc)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// deployAt walks a decoded document by keys and list indexes.
func deployAt(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func deployStr(v any, path ...any) string {
	s, _ := deployAt(v, path...).(string)
	return s
}

func deployList(v any, path ...any) []any {
	l, _ := deployAt(v, path...).([]any)
	return l
}

// deployDocOf is the one Kubernetes object of a kind.
func deployDocOf(t *testing.T, docs map[string][]map[string]any, kind string) map[string]any {
	t.Helper()
	var found []map[string]any
	for file, ds := range docs {
		if !strings.HasPrefix(file, "kubernetes/") {
			continue
		}
		for _, d := range ds {
			if d["kind"] == kind {
				found = append(found, d)
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s in deploy/, found %d", kind, len(found))
	}
	return found[0]
}

// Every YAML file under deploy/ parses; every Kubernetes object (in
// deploy/kubernetes) is whole, and none is a Secret: secrets are
// referenced, never written.
func TestDeployYAMLParses(t *testing.T) {
	docs := deployDocs(t)
	var files []string
	for file, ds := range docs {
		if !strings.HasPrefix(file, "kubernetes/") {
			continue
		}
		if f := strings.TrimPrefix(file, "kubernetes/"); f != "kustomization.yaml" {
			files = append(files, f)
		}
		for _, d := range ds {
			if deployStr(d, "apiVersion") == "" || deployStr(d, "kind") == "" {
				t.Errorf("%s: a document without apiVersion or kind", file)
			}
			if d["kind"] != "Kustomization" && deployStr(d, "metadata", "name") == "" {
				t.Errorf("%s: %s without a name", file, d["kind"])
			}
			if d["kind"] == "Secret" {
				t.Errorf("%s holds a Secret: reference secrets, do not write them", file)
			}
		}
	}
	// The kustomization lists every other file, and only files that exist.
	k := deployDocOf(t, docs, "Kustomization")
	var res []string
	for _, r := range deployList(k, "resources") {
		res = append(res, r.(string))
	}
	if len(files) < 5 {
		t.Fatalf("found %d Kubernetes files under deploy/kubernetes", len(files))
	}
	slices.Sort(res)
	slices.Sort(files)
	if !slices.Equal(res, files) {
		t.Errorf("kustomization.yaml lists %v; deploy/kubernetes has %v", res, files)
	}
}

// The Deployment runs non-root on a read-only root, probes /healthz and
// /readyz, keeps the state file on a volume, and takes every credential
// from a Secret.
func TestDeployDeployment(t *testing.T) {
	docs := deployDocs(t)
	d := deployDocOf(t, docs, "Deployment")
	pod := deployAt(d, "spec", "template", "spec")
	if deployAt(d, "spec", "replicas") != uint64(1) || deployStr(d, "spec", "strategy", "type") != "Recreate" {
		t.Errorf("want one replica replaced with Recreate (one watcher, a ReadWriteOnce volume): replicas %v strategy %q",
			deployAt(d, "spec", "replicas"), deployStr(d, "spec", "strategy", "type"))
	}
	if deployAt(pod, "securityContext", "runAsNonRoot") != true || deployAt(pod, "securityContext", "runAsUser") == uint64(0) {
		t.Error("the pod may run as root")
	}
	cs := deployList(pod, "containers")
	if len(cs) != 1 {
		t.Fatalf("%d containers", len(cs))
	}
	c := cs[0]
	sc := deployAt(c, "securityContext")
	if deployAt(sc, "readOnlyRootFilesystem") != true || deployAt(sc, "allowPrivilegeEscalation") != false || deployStr(sc, "capabilities", "drop", 0) != "ALL" {
		t.Errorf("container securityContext: %v", sc)
	}
	if p := deployStr(c, "livenessProbe", "httpGet", "path"); p != "/healthz" {
		t.Errorf("liveness probe on %q", p)
	}
	if p := deployStr(c, "readinessProbe", "httpGet", "path"); p != "/readyz" {
		t.Errorf("readiness probe on %q", p)
	}
	// The state file is on a mounted volume, a claim that exists.
	var state string
	for _, a := range deployList(c, "args") {
		if s, ok := strings.CutPrefix(a.(string), "--state-file="); ok {
			state = s
		}
	}
	if state == "" {
		t.Fatal("the Deployment gives no --state-file")
	}
	mounted := ""
	for _, m := range deployList(c, "volumeMounts") {
		if strings.HasPrefix(state, deployStr(m, "mountPath")+"/") {
			mounted = deployStr(m, "name")
		}
	}
	var claim string
	for _, v := range deployList(pod, "volumes") {
		if deployStr(v, "name") == mounted && mounted != "" {
			claim = deployStr(v, "persistentVolumeClaim", "claimName")
		}
	}
	pvc := deployDocOf(t, docs, "PersistentVolumeClaim")
	if claim == "" || claim != deployStr(pvc, "metadata", "name") {
		t.Errorf("the state file %s is not on the PersistentVolumeClaim (volume %q, claim %q)", state, mounted, claim)
	}
	// Credentials come from a Secret, none is written.
	refs := map[string]bool{}
	for _, e := range deployList(c, "env") {
		name := deployStr(e, "name")
		if deployAt(e, "value") != nil && regexp.MustCompile(`TOKEN|SECRET|PASSWORD|WEBHOOK`).MatchString(name) {
			t.Errorf("%s is written in the Deployment", name)
		}
		if deployStr(e, "valueFrom", "secretKeyRef", "name") != "" && deployStr(e, "valueFrom", "secretKeyRef", "key") != "" {
			refs[name] = true
		}
	}
	for _, want := range []string{"LLMDOCTOR_SLACK_TOKEN", "LLMDOCTOR_SLACK_SIGNING_SECRET", "LLMDOCTOR_PROM_TOKEN"} {
		if !refs[want] {
			t.Errorf("%s is not taken from a Secret", want)
		}
	}
	// The Service reaches the container's port by name, the ServiceMonitor
	// scrapes the Service's port at /metrics.
	port := deployStr(c, "ports", 0, "name")
	svc := deployDocOf(t, docs, "Service")
	if deployStr(svc, "spec", "ports", 0, "targetPort") != port {
		t.Errorf("the Service targets port %q, the container's is %q", deployStr(svc, "spec", "ports", 0, "targetPort"), port)
	}
	for k, v := range deployAt(svc, "spec", "selector").(map[string]any) {
		if deployStr(d, "spec", "template", "metadata", "labels", k) != v {
			t.Errorf("the Service selects %s=%v, which the pods do not carry", k, v)
		}
	}
	sm := deployDocOf(t, docs, "ServiceMonitor")
	if deployStr(sm, "apiVersion") != "monitoring.coreos.com/v1" || deployStr(sm, "spec", "endpoints", 0, "path") != "/metrics" ||
		deployStr(sm, "spec", "endpoints", 0, "port") != deployStr(svc, "spec", "ports", 0, "name") {
		t.Errorf("ServiceMonitor: %v", sm)
	}
	for k, v := range deployAt(sm, "spec", "selector", "matchLabels").(map[string]any) {
		if deployStr(svc, "metadata", "labels", k) != v {
			t.Errorf("the ServiceMonitor selects %s=%v, which the Service does not carry", k, v)
		}
	}
}

// The Dockerfile is multi-stage, builds the command that exists as a
// static binary without local paths, with the Go of go.mod, and runs it as
// a non-root user on distroless static; its default command is serve.
// (It is checked here, not built: there is no Docker in the tests.)
func TestDeployDockerfile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var from, run, copies []string
	var user, entry, cmd string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		word, rest, _ := strings.Cut(line, " ")
		switch word {
		case "FROM":
			from = append(from, rest)
		case "RUN":
			run = append(run, rest)
		case "COPY":
			copies = append(copies, rest)
		case "USER":
			user = rest
		case "ENTRYPOINT":
			entry = rest
		case "CMD":
			cmd = rest
		}
	}
	if len(from) < 2 {
		t.Fatalf("not multi-stage: %v", from)
	}
	if last := from[len(from)-1]; last != "gcr.io/distroless/static-debian12:nonroot" {
		t.Errorf("final stage %q", last)
	}
	gomod, _ := os.ReadFile(filepath.Join("..", "go.mod"))
	gov := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if gov == nil || !strings.HasPrefix(from[0], "golang:"+string(gov[1])+" ") {
		t.Errorf("build stage %q, go.mod says go %s", from[0], gov[1])
	}
	var build string
	for _, r := range run {
		if strings.Contains(r, "go build") {
			build = r
		}
	}
	pkg := regexp.MustCompile(`\./cmd/[a-z]+`).FindString(build)
	if !strings.Contains(build, "CGO_ENABLED=0") || !strings.Contains(build, "-trimpath") || pkg != "./cmd/llmdoctor" {
		t.Errorf("build: %q", build)
	}
	if _, err := os.Stat(filepath.Join("..", pkg, "main.go")); err != nil {
		t.Errorf("the Dockerfile builds %s: %v", pkg, err)
	}
	out := regexp.MustCompile(`-o (\S+)`).FindStringSubmatch(build)
	var bin string
	for _, c := range copies {
		if f := strings.Fields(c); len(f) == 3 && out != nil && f[0] == "--from=build" && f[1] == out[1] {
			bin = f[2]
		}
	}
	if bin == "" || entry != `["`+bin+`"]` || filepath.Base(bin) != "llmdoctor" {
		t.Errorf("ENTRYPOINT %s, binary copied to %q", entry, bin)
	}
	if cmd != `["serve"]` {
		t.Errorf("CMD %s", cmd)
	}
	if user == "" || user == "root" || strings.HasPrefix(user, "0") {
		t.Errorf("USER %q", user)
	}
}
