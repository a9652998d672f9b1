package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/slogate/slogate/result"
	"github.com/slogate/slogate/sim"
	"github.com/slogate/slogate/workload"
)

// k8sDocs reads every YAML document of a manifest file.
func k8sDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []map[string]any
	for {
		var d map[string]any
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			return docs
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		docs = append(docs, d)
	}
}

// dig follows keys (map keys, or list indices as ints) through a decoded document.
func dig(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func findDoc(docs []map[string]any, kind, name string) map[string]any {
	for _, d := range docs {
		if d["kind"] == kind && dig(d, "metadata", "name") == name {
			return d
		}
	}
	return nil
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

// podEnv is the environment Kubernetes gives the container: its env list, with
// downward-API annotation references resolved against the pod template.
func podEnv(t *testing.T, pod, container map[string]any) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, e := range container["env"].([]any) {
		e := e.(map[string]any)
		name := e["name"].(string)
		if v, ok := e["value"]; ok {
			env[name] = fmt.Sprint(v)
			continue
		}
		path, _ := dig(e, "valueFrom", "fieldRef", "fieldPath").(string)
		m := regexp.MustCompile(`^metadata\.annotations\['([^']+)'\]$`).FindStringSubmatch(path)
		if m == nil {
			t.Fatalf("env %s: fieldRef %q is not a pod annotation", name, path)
		}
		v, ok := dig(pod, "metadata", "annotations", m[1]).(string)
		if !ok {
			t.Fatalf("env %s: the pod template has no annotation %q", name, m[1])
		}
		env[name] = v
	}
	return env
}

// expand resolves $(VAR) as Kubernetes does in args, and moves the container's mount
// paths onto local directories.
func expand(args []string, env map[string]string, mounts map[string]string) []string {
	out := make([]string, len(args))
	ref := regexp.MustCompile(`\$\(([A-Z_][A-Z0-9_]*)\)`)
	for i, a := range args {
		a = ref.ReplaceAllStringFunc(a, func(s string) string {
			if v, ok := env[s[2:len(s)-1]]; ok {
				return v
			}
			return s
		})
		for from, to := range mounts {
			if a == from || strings.HasPrefix(a, from+"/") {
				a = to + strings.TrimPrefix(a, from)
			}
		}
		out[i] = a
	}
	return out
}

// The Indexed Job and the merge Job of deploy/k8s, checked field by field, then run here:
// each pod's container command with the environment the Job would give it, against the
// simulator, then the merge Job's two containers over the same "volume".
func TestKubernetesIndexedJob(t *testing.T) {
	t.Parallel()
	long(t)
	shardsDocs := k8sDocs(t, "../deploy/k8s/slogate-shards.yaml")
	mergeDocs := k8sDocs(t, "../deploy/k8s/slogate-merge.yaml")

	cm := findDoc(shardsDocs, "ConfigMap", "slogate-config")
	if cm == nil {
		t.Fatal("no ConfigMap slogate-config")
	}
	if _, err := workload.Parse("slogate-config/slogate.yaml", []byte(dig(cm, "data", "slogate.yaml").(string))); err != nil {
		t.Errorf("the ConfigMap's slogate.yaml does not load: %v", err)
	}

	job := findDoc(shardsDocs, "Job", "slogate-shards")
	if job == nil {
		t.Fatal("no Job slogate-shards")
	}
	spec := job["spec"].(map[string]any)
	if spec["completionMode"] != "Indexed" || spec["backoffLimit"] != 0 {
		t.Errorf("completionMode %v backoffLimit %v: want Indexed and 0", spec["completionMode"], spec["backoffLimit"])
	}
	pod := spec["template"].(map[string]any)
	c := dig(pod, "spec", "containers", 0).(map[string]any)
	env := podEnv(t, pod, c)
	completions := fmt.Sprint(spec["completions"])
	if env["SLOGATE_SHARDS"] != completions || fmt.Sprint(spec["parallelism"]) != completions {
		t.Errorf("SLOGATE_SHARDS %q, completions %s, parallelism %v: all three must agree", env["SLOGATE_SHARDS"], completions, spec["parallelism"])
	}
	args := strs(c["args"])
	for _, want := range []string{"run", "--shard-from-env", "--start-at", "$(SLOGATE_START_AT)"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if k := slices.Index(args, "-o"); k < 0 || !strings.Contains(args[k+1], "$(JOB_COMPLETION_INDEX)") || !strings.HasPrefix(args[k+1], "/results/") {
		t.Errorf("args %q: each pod needs its own directory on the results volume", args)
	}
	if dig(pod, "spec", "restartPolicy") != "Never" {
		t.Error("restartPolicy must be Never: a restarted pod would start late")
	}

	merge := findDoc(mergeDocs, "Job", "slogate-merge")
	if merge == nil {
		t.Fatal("no Job slogate-merge")
	}
	mpod := dig(merge, "spec", "template").(map[string]any)
	mergeArgs := strs(dig(mpod, "spec", "initContainers", 0, "args"))
	gateArgs := strs(dig(mpod, "spec", "containers", 0, "args"))
	if mergeArgs[0] != "merge" || gateArgs[0] != "gate" {
		t.Fatalf("merge Job runs %q then %q", mergeArgs, gateArgs)
	}
	if pvc := findDoc(mergeDocs, "PersistentVolumeClaim", "slogate-results"); pvc == nil || !slices.Contains(strs(dig(pvc, "spec", "accessModes")), "ReadWriteMany") {
		t.Error("the results volume must be ReadWriteMany: every shard pod writes to it at once")
	}

	// Run it here: three pods (a smaller Job than the manifest's), the config a small
	// workload against the simulator.
	url := startSim(t, sim.Options{Seed: 1})
	root := t.TempDir()
	mounts := map[string]string{"/config": filepath.Join(root, "config"), "/results": filepath.Join(root, "results"), "/baselines": filepath.Join(root, "baselines")}
	for _, d := range mounts {
		os.MkdirAll(d, 0o755)
	}
	cfg := strings.Replace(scaleConfig, "target: {api: completions, engine: auto}", "target: {api: completions, engine: auto, url: "+strconv.Quote(url)+"}", 1) +
		"gate:\n  baselines: /baselines\n  drift: {tool.version: ignore}\n  rules:\n    goodput: {direction: higher, tolerance: 50%}\n    error_rate: {max: 5%}\n"
	cfgLocal := strings.Replace(cfg, "baselines: /baselines", "baselines: "+mounts["/baselines"], 1)
	os.WriteFile(filepath.Join(mounts["/config"], "slogate.yaml"), []byte(cfgLocal), 0o644)

	const pods = 3
	pod["metadata"].(map[string]any)["annotations"].(map[string]any)["slogate.dev/start-at"] = time.Now().Add(4 * time.Second).UTC().Format(time.RFC3339)
	var wg sync.WaitGroup
	codes, logs := make([]int, pods), make([]string, pods)
	for k := range pods {
		penv := podEnv(t, pod, c)
		penv["SLOGATE_SHARDS"] = strconv.Itoa(pods)
		penv["JOB_COMPLETION_INDEX"] = strconv.Itoa(k) // set by the Job controller
		wg.Go(func() {
			a, out, errb := testApp(t)
			a.getenv = func(key string) string { return penv[key] }
			codes[k] = a.run(cmdCtx(t), expand(args, penv, mounts))
			logs[k] = out.String() + errb.String()
		})
	}
	wg.Wait()
	for k, code := range codes {
		if code != ExitOK {
			t.Fatalf("pod %d: exit %d\n%s", k, code, logs[k])
		}
	}
	// The baseline the gate container reads, as the repository would hold it.
	a, _, errb := testApp(t)
	whole := t.TempDir()
	if code := a.run(cmdCtx(t), []string{"run", "-c", filepath.Join(mounts["/config"], "slogate.yaml"), "-o", whole}); code != ExitOK {
		t.Fatalf("unsharded run: exit %d\n%s", code, errb)
	}
	a, _, errb = testApp(t)
	if code := a.run(cmdCtx(t), []string{"baseline", "update", "-c", filepath.Join(mounts["/config"], "slogate.yaml"), "-r", whole}); code != ExitOK {
		t.Fatalf("baseline update: exit %d\n%s", code, errb)
	}
	for _, step := range [][]string{mergeArgs, gateArgs} {
		a, out, errb := testApp(t)
		if code := a.run(cmdCtx(t), expand(step, nil, mounts)); code != ExitOK {
			t.Fatalf("%s: exit %d\n%s\n%s", step[0], code, out, errb)
		}
	}
	m, err := result.Read(filepath.Join(mounts["/results"], "merged", "small.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Shards) != pods || m.Sync == nil || m.Summary.Requests != 90 {
		t.Errorf("merged record: %d shards, sync %+v, %d requests", len(m.Shards), m.Sync, m.Summary.Requests)
	}
	if _, err := os.Stat(filepath.Join(mounts["/results"], "merged", "gate.json")); err != nil {
		t.Errorf("the gate container wrote no gate.json: %v", err)
	}
	// Rerunning the merge Job over the same volume finds its own earlier output and
	// leaves it out.
	a, _, errb = testApp(t)
	if code := a.run(cmdCtx(t), expand(mergeArgs, nil, mounts)); code != ExitOK {
		t.Errorf("second merge: exit %d\n%s", code, errb)
	}
}
