package kubernetes

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/slowlab/slowlab/exporter"
	"github.com/slowlab/slowlab/internal/slowlabtest"
)

func TestMain(m *testing.M) { os.Exit(slowlabtest.Main(m)) }

// decode reads file strictly into v: an unknown, misspelt or duplicate
// field fails.
func decode(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := strictDecode(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// strictDecode is the API server's strict decoding: case-sensitive field
// names (encoding/json would take clusterIp for clusterIP), no unknown and
// no duplicate fields.
func strictDecode(b []byte, v any) error {
	j, err := yaml.YAMLToJSONStrict(b)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(j, v, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// Every manifest decodes strictly into its type; kustomization.yaml lists
// them all.
func TestManifestsDecodeStrictly(t *testing.T) {
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Namespace  string   `json:"namespace"`
		Resources  []string `json:"resources"`
	}
	decode(t, "kustomization.yaml", &k)
	files, _ := filepath.Glob("*.yaml")
	files = slices.DeleteFunc(files, func(f string) bool { return f == "kustomization.yaml" })
	slices.Sort(files)
	res := slices.Sorted(slices.Values(k.Resources))
	if !slices.Equal(res, files) {
		t.Errorf("kustomization resources %v, want every manifest %v", res, files)
	}
	decode(t, "daemonset.yaml", &appsv1.DaemonSet{})
	decode(t, "service.yaml", &corev1.Service{})
	decode(t, "configmap.yaml", &corev1.ConfigMap{})
	decode(t, "podmonitor.yaml", &monitoringv1.PodMonitor{})
	decode(t, "priorityclass.yaml", &schedulingv1.PriorityClass{})
	decode(t, RuleFile, &monitoringv1.PrometheusRule{})

	// The check can fail: a misspelt or wrongly cased field is refused.
	for _, bad := range []string{"spec:\n  clusterIp: None\n", "spec:\n  clusterAddress: None\n", "spec:\n  clusterIP: None\n  clusterIP: x\n"} {
		if err := strictDecode([]byte("apiVersion: v1\nkind: Service\n"+bad), &corev1.Service{}); err == nil {
			t.Errorf("%q decoded without error", bad)
		}
	}
}

// The DaemonSet is what exporter/README.md asks: host PIDs, /proc and the
// cgroup tree read-only, only SYS_PTRACE and DAC_READ_SEARCH, a read-only
// root filesystem, requests and limits; the Service and PodMonitor select
// its pods and port.
func TestDaemonSetShape(t *testing.T) {
	slowlabtest.Timing(t)
	var ds appsv1.DaemonSet
	decode(t, "daemonset.yaml", &ds)
	pod := ds.Spec.Template.Spec
	if !pod.HostPID || len(pod.Containers) != 1 {
		t.Fatalf("hostPID %t, %d containers", pod.HostPID, len(pod.Containers))
	}
	var pc schedulingv1.PriorityClass
	decode(t, "priorityclass.yaml", &pc)
	if pod.PriorityClassName != pc.Name || pc.GlobalDefault || pc.Value <= 0 || pc.Value >= 1_000_000_000 {
		t.Errorf("priority class %q, want %q: above ordinary pods (0), below the system classes (2e9), not the default (value %d, default %t)",
			pod.PriorityClassName, pc.Name, pc.Value, pc.GlobalDefault)
	}
	if pod.NodeSelector["kubernetes.io/os"] != "linux" {
		t.Errorf("node selector %v: the exporter reads Linux /proc and cgroups; want kubernetes.io/os: linux", pod.NodeSelector)
	}
	if psc := pod.SecurityContext; psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v: want seccompProfile RuntimeDefault", psc)
	}
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.String() == "0" {
		t.Errorf("rolling update %+v: want a maxUnavailable", ru)
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		!slices.Equal(sc.Capabilities.Add, []corev1.Capability{"SYS_PTRACE", "DAC_READ_SEARCH"}) ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("security context %+v", sc)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[r]; !ok {
			t.Errorf("no %s request", r)
		}
		if _, ok := c.Resources.Limits[r]; !ok {
			t.Errorf("no %s limit", r)
		}
	}
	hostPaths := map[string]string{}
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	mounted := map[string]bool{}
	for _, m := range c.VolumeMounts {
		if p, ok := hostPaths[m.Name]; ok {
			if !m.ReadOnly {
				t.Errorf("host path %s mounted writable", p)
			}
			mounted[p] = true
		}
	}
	if !mounted["/proc"] || !mounted["/sys/fs/cgroup"] || len(mounted) != 2 {
		t.Errorf("host paths mounted %v, want /proc and /sys/fs/cgroup only", mounted)
	}

	var svc corev1.Service
	decode(t, "service.yaml", &svc)
	var pm monitoringv1.PodMonitor
	decode(t, "podmonitor.yaml", &pm)
	labels := ds.Spec.Template.Labels
	for k, v := range svc.Spec.Selector {
		if labels[k] != v {
			t.Errorf("service selector %s=%s does not select the pods (%v)", k, v, labels)
		}
	}
	for k, v := range pm.Spec.Selector.MatchLabels {
		if labels[k] != v {
			t.Errorf("pod monitor selector %s=%s does not select the pods (%v)", k, v, labels)
		}
	}
	if len(pm.Spec.PodMetricsEndpoints) != 1 || pm.Spec.PodMetricsEndpoints[0].Port == nil ||
		*pm.Spec.PodMetricsEndpoints[0].Port != c.Ports[0].Name || svc.Spec.Ports[0].TargetPort.StrVal != c.Ports[0].Name {
		t.Errorf("pod monitor and service must scrape port %q", c.Ports[0].Name)
	}
}

// The ConfigMap's config is valid, makes dynamic groups, and the
// DaemonSet's own command line runs the image's binary, the standalone
// exporter, with it (host paths swapped for this machine's, the port for a
// free one): every flag exists.
func TestDaemonSetCommandRuns(t *testing.T) {
	slowlabtest.Timing(t)
	var cm corev1.ConfigMap
	decode(t, "configmap.yaml", &cm)
	var ds appsv1.DaemonSet
	decode(t, "daemonset.yaml", &ds)
	pod := ds.Spec.Template.Spec
	args := podArgs(pod.Containers[0], podMounts(t, pod, pod.Containers[0], map[string]corev1.ConfigMap{cm.Name: cm}, nil))
	i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "--config=") })
	if i < 0 {
		t.Fatalf("args %v: no --config", args)
	}
	cfg, err := exporter.LoadConfig(strings.TrimPrefix(args[i], "--config="))
	if err != nil {
		t.Fatal(err)
	}
	dynamic := 0
	for _, g := range cfg.Groups {
		if slices.ContainsFunc(g.Selectors, func(s string) bool { return strings.HasPrefix(s, "cgroup-re:") }) {
			dynamic++
		}
	}
	if dynamic != 2 {
		t.Errorf("%d dynamic groups in the ConfigMap, want one per kubelet cgroup driver", dynamic)
	}
	addr := runImageCommand(t, args)
	client := http.Client{Timeout: time.Minute}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "slowlab_exporter_dynamic_groups ") ||
		!strings.Contains(string(body), `slowlab_exporter_collector_success{collector="cgroup-re"} 1`) {
		t.Errorf("status %d, /metrics without the dynamic-group gauges or with the cgroup walk failing:\n%s", resp.StatusCode, body)
	}
}

// The ConfigMap's groups against a table of the cgroup paths each
// runtime and kubelet cgroup driver makes (a cgroup v2 tree built in a
// temp dir, each cgroup with one process): every container is a group
// with its pod UID and container ID, and the pod slices, CRI-O's conmon
// scopes, a container's own child cgroups and the pod sandboxes (whose
// only process is pause) are none.
func TestConfigMapMatchesRuntimes(t *testing.T) {
	var cm corev1.ConfigMap
	decode(t, "configmap.yaml", &cm)
	dir := t.TempDir()
	file := filepath.Join(dir, "exporter.yml")
	if err := os.WriteFile(file, []byte(cm.Data["exporter.yml"]), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := exporter.LoadConfig(file)
	if err != nil {
		t.Fatal(err)
	}
	id := func(c string) string { return strings.Repeat(c, 64) }
	const uid, uidU = "6f1e2a3b-1111-2222-3333-444455556666", "6f1e2a3b_1111_2222_3333_444455556666"
	type want struct{ pod, ctr string }
	paths := []struct {
		path, comm string
		want       *want
	}{
		// systemd driver
		{"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + id("a") + ".scope", "python3", &want{uidU, id("a")}},
		{"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + id("e") + ".scope", "pause", nil},
		{"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + id("a") + ".scope/init", "python3", nil},
		{"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice", "", nil},
		{"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidU + ".slice/crio-" + id("b") + ".scope", "nginx", &want{uidU, id("b")}},
		{"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidU + ".slice/crio-conmon-" + id("b") + ".scope", "conmon", nil},
		{"kubepods.slice/kubepods-pod" + uidU + ".slice/docker-" + id("c") + ".scope", "node", &want{uidU, id("c")}},
		{"kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + id("d") + ".scope", "gunicorn", &want{uidU, id("d")}},
		// cgroupfs driver
		{"kubepods/burstable/pod" + uid + "/" + id("f"), "python3", &want{uid, id("f")}},
		{"kubelet/kubepods/burstable/pod" + uid + "/" + id("3"), "python3", &want{uid, id("3")}},
		{"kubepods/besteffort/pod" + uid + "/crio-" + id("0"), "nginx", &want{uid, id("0")}},
		{"kubepods/pod" + uid + "/" + id("1"), "uvicorn", &want{uid, id("1")}},
		{"kubepods/pod" + uid + "/" + id("2"), "pause", nil},
		{"kubepods/burstable/pod" + uid, "", nil},
		// not Kubernetes
		{"system.slice/containerd.service", "containerd", nil},
	}
	cgroups, proc := filepath.Join(dir, "cgroup"), filepath.Join(dir, "proc")
	write := func(path, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(cgroups, "cgroup.controllers"), "cpu memory\n")
	for i, p := range paths {
		procs := ""
		if p.comm != "" {
			pid := strconv.Itoa(1000 + i)
			procs = pid + "\n"
			write(filepath.Join(proc, pid, "comm"), p.comm+"\n")
		}
		write(filepath.Join(cgroups, filepath.FromSlash(p.path), "cgroup.procs"), procs)
	}
	e, err := exporter.New(cfg, exporter.Options{ProcFS: proc, CgroupFS: cgroups,
		Collectors: map[string]bool{"cgroup": false, "process": false, "tempfiles": false, "sockets": false, "errorlog": false}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	targets, err := e.Targets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[want]bool{}
	for _, g := range targets {
		if g.Group == exporter.OtherGroup {
			t.Errorf("a match summed into other: %+v", g)
			continue
		}
		got[want{g.Labels["pod_uid"], g.Labels["container_id"]}] = true
	}
	for _, p := range paths {
		if p.want != nil && !got[*p.want] {
			t.Errorf("%s (%s): no group with pod_uid %s, container_id %s", p.path, p.comm, p.want.pod, p.want.ctr)
		}
		if p.want != nil {
			delete(got, *p.want)
		}
	}
	for g := range got {
		t.Errorf("a group that is no container: pod_uid %s, container_id %s", g.pod, g.ctr)
	}
}

// The DaemonSet's image: deploy/Dockerfile.exporter builds the standalone
// exporter with its version set, and its entrypoint is what it built. No
// container runtime runs here, so the build step runs as the Dockerfile
// says, without one, and the binary reports the version it was given.
func TestExporterImageBuilds(t *testing.T) {
	slowlabtest.EndToEnd(t, "it builds the exporter's image")
	b, err := os.ReadFile("../Dockerfile.exporter")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	build := regexp.MustCompile(`(?m)^RUN CGO_ENABLED=0 go build (.*) -o (/\S+) (\./cmd/\S+)$`).FindStringSubmatch(df)
	entry := regexp.MustCompile(`(?m)^ENTRYPOINT \["(/[^"]+)"\]$`).FindStringSubmatch(df)
	if build == nil || entry == nil || entry[1] != build[2] || build[3] != "./cmd/slowlab-exporter" {
		t.Fatalf("Dockerfile.exporter: build %q, entrypoint %q: want the standalone exporter built where the entrypoint runs it", build, entry)
	}
	flags := strings.ReplaceAll(build[1], "${VERSION}", "v9.9.9-image")
	args := []string{"build"}
	for _, f := range regexp.MustCompile(`"[^"]*"|\S+`).FindAllString(flags, -1) {
		args = append(args, strings.Trim(f, `"`))
	}
	bin := filepath.Join(t.TempDir(), "slowlab-exporter")
	cmd := exec.Command("go", append(args, "-o", bin, build[3])...)
	cmd.Dir, cmd.Env = "../..", append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
	if out, err := exec.Command(bin, "--version").CombinedOutput(); err != nil || !strings.Contains(string(out), "version v9.9.9-image") {
		t.Errorf("--version: %v %q, want the VERSION build argument", err, out)
	}
	var ds appsv1.DaemonSet
	decode(t, "daemonset.yaml", &ds)
	if img := ds.Spec.Template.Spec.Containers[0].Image; !strings.HasPrefix(img, "slowlab-exporter:") {
		t.Errorf("DaemonSet image %q, want the slowlab-exporter image", img)
	}
}
