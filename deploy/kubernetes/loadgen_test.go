package kubernetes

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/recorder"
)

// The load generator's Indexed Job, run as its pods would be: kustomize
// builds it, it decodes strictly, the results claim it mounts is one of
// the kustomization's (ReadWriteMany), its shards are its completions, its
// PodMonitor scrapes its pods' metrics port labelled by shard, and its N
// pods' own command lines (with $(VAR)s expanded as the kubelet does, the
// results volume a temp dir, the target a local server, and the run cut
// to 1 s without the linger) send together exactly the one schedule.
func TestLoadgenJobShardsSendTheSchedule(t *testing.T) {
	slowlabtest.EndToEnd(t, "it runs load generator processes")
	res := kustomize(t, "loadgen")
	var job batchv1.Job
	var pm monitoringv1.PodMonitor
	var pvc corev1.PersistentVolumeClaim
	for id, v := range map[string]any{"Job/slowlab-loadgen": &job, "PodMonitor/slowlab-loadgen": &pm, "PersistentVolumeClaim/slowlab-results": &pvc} {
		if err := strictDecode(res[id], v); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	// Every claim the pods mount is in the kustomization, writable from
	// every node at once, with a size.
	for _, v := range job.Spec.Template.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		if name := v.PersistentVolumeClaim.ClaimName; res["PersistentVolumeClaim/"+name] == nil {
			t.Errorf("volume %s: claim %s is in no manifest of the kustomization", v.Name, name)
		}
	}
	if !slices.Equal(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}) || pvc.Spec.Resources.Requests.Storage().IsZero() {
		t.Errorf("results claim: access modes %v, storage %v; want ReadWriteMany (shards on several nodes write at once) and a size",
			pvc.Spec.AccessModes, pvc.Spec.Resources.Requests.Storage())
	}
	c := job.Spec.Template.Spec.Containers[0]
	shards := 0
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--shard=$(JOB_COMPLETION_INDEX)/"); ok {
			shards, _ = strconv.Atoi(v)
		}
	}
	if job.Spec.CompletionMode == nil || *job.Spec.CompletionMode != batchv1.IndexedCompletion || shards < 2 ||
		job.Spec.Completions == nil || int(*job.Spec.Completions) != shards || job.Spec.Parallelism == nil || int(*job.Spec.Parallelism) != shards {
		t.Fatalf("job: completion mode %v, completions %v, parallelism %v, --shard .../%d: want Indexed, one completion a shard, all at once",
			job.Spec.CompletionMode, job.Spec.Completions, job.Spec.Parallelism, shards)
	}
	labels := job.Spec.Template.Labels
	for k, v := range pm.Spec.Selector.MatchLabels {
		if labels[k] != v {
			t.Errorf("pod monitor selector %s=%s does not select the job's pods (%v)", k, v, labels)
		}
	}
	if ep := pm.Spec.PodMetricsEndpoints; len(ep) != 1 || ep[0].Port == nil || *ep[0].Port != c.Ports[0].Name ||
		len(ep[0].RelabelConfigs) != 1 || ep[0].RelabelConfigs[0].TargetLabel != "shard" {
		t.Errorf("pod monitor endpoints %+v: want the %s port, labelled shard", ep, c.Ports[0].Name)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/large" {
			w.Write(make([]byte, 64<<10))
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	bin := filepath.Join(t.TempDir(), "slowlab")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/slowlab").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/slowlab: %v\n%s", err, out)
	}
	results := t.TempDir()
	env := map[string]string{"TARGET": srv.URL + "/fast", "START_AT": time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)}
	var rate float64
	var wg sync.WaitGroup
	for i := range shards {
		podEnv := map[string]string{"JOB_COMPLETION_INDEX": strconv.Itoa(i)}
		for _, e := range c.Env {
			podEnv[e.Name] = env[e.Name]
		}
		var args []string
		for _, a := range c.Args {
			a = expandVars(a, podEnv)
			flag, val, _ := strings.Cut(a, "=")
			switch flag {
			case "--duration":
				a = "--duration=1s"
			case "--linger":
				a = "--linger=0s"
			case "--metrics-addr":
				a = "--metrics-addr=127.0.0.1:0"
			case "--out":
				a = "--out=" + filepath.Join(results, strings.TrimPrefix(val, c.VolumeMounts[0].MountPath))
			case "--rate":
				rate, _ = strconv.ParseFloat(val, 64)
			}
			args = append(args, a)
		}
		wg.Go(func() {
			var stderr bytes.Buffer
			cmd := exec.Command(bin, args...)
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				t.Errorf("shard %d: %v: %s", i, err, stderr.String())
			}
		})
	}
	wg.Wait()
	seen := map[int]int{}
	for i := range shards {
		rows, err := recorder.ReadFile[recorder.Request](filepath.Join(results, fmt.Sprintf("shard-%d", i), "requests.csv"))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			seen[r.Seq]++
			if r.Status != 200 {
				t.Errorf("shard %d: %+v", i, r)
			}
		}
	}
	want := int(rate)
	for seq := range want {
		if seen[seq] != 1 {
			t.Errorf("seq %d sent %d times, want once", seq, seen[seq])
		}
	}
	if len(seen) != want {
		t.Errorf("%d scheduled requests across %d shards, want the schedule's %d", len(seen), shards, want)
	}
}

var podVar = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expandVars expands $(VAR) in s from env as the kubelet does in a
// container's args: a variable it does not know stays as written.
func expandVars(s string, env map[string]string) string {
	return podVar.ReplaceAllStringFunc(s, func(m string) string {
		if v, ok := env[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// imageUser is the numeric uid a Dockerfile's last USER line sets (the
// final stage's); a name, or no USER line, is an error: with no
// /etc/passwd in an empty image, and for runAsNonRoot to check it, the
// user must be a number.
func imageUser(dockerfile string) (int64, error) {
	m := regexp.MustCompile(`(?m)^USER (\S+)$`).FindAllStringSubmatch(dockerfile, -1)
	if m == nil {
		return 0, fmt.Errorf("no USER line")
	}
	user, _, _ := strings.Cut(m[len(m)-1][1], ":")
	uid, err := strconv.ParseInt(user, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("USER %s: not a number", user)
	}
	return uid, nil
}

// The lab's image (deploy/Dockerfile) runs as the user the load
// generator's pods run as, not root; the exporter's image is root, and
// says why beside its USER line. A USER 0 or a user name is refused.
func TestImageUsers(t *testing.T) {
	var job batchv1.Job
	if err := strictDecode(kustomize(t, "loadgen")["Job/slowlab-loadgen"], &job); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	uid, err := imageUser(string(b))
	psc := job.Spec.Template.Spec.SecurityContext
	if err != nil || uid == 0 || psc == nil || psc.RunAsUser == nil || *psc.RunAsUser != uid {
		t.Errorf("deploy/Dockerfile: USER %d (%v); want the Job's runAsUser %v, not root", uid, err, psc)
	}
	for _, bad := range []string{"FROM scratch\nUSER 65534\nFROM scratch\nUSER nobody\n", "FROM scratch\n"} {
		if uid, err := imageUser(bad); err == nil {
			t.Errorf("%q: USER %d, want refused", bad, uid)
		}
	}
	if uid, err := imageUser("FROM scratch\nUSER 65534:65534\n"); err != nil || uid != 65534 {
		t.Errorf("USER 65534:65534: %d, %v", uid, err)
	}

	b, err = os.ReadFile("../Dockerfile.exporter")
	if err != nil {
		t.Fatal(err)
	}
	if uid, err := imageUser(string(b)); err != nil || uid != 0 || !regexp.MustCompile(`(?m)^# Root, .*\n(#.*\n)+USER 0\n`).Match(b) {
		t.Errorf("deploy/Dockerfile.exporter: USER %d (%v); want root, with a comment saying why right above it", uid, err)
	}
}
