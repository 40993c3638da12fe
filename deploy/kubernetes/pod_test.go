package kubernetes

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/slowlab/slowlab/exporter"
	"github.com/slowlab/slowlab/exporter/exportercmd"
	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// kustomize builds dir as `kubectl apply -k dir` would and returns each
// resource's YAML by kind and name ("DaemonSet/slowlab-exporter").
func kustomize(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	out := map[string][]byte{}
	for _, r := range res.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		out[r.GetKind()+"/"+r.GetName()] = y
	}
	return out
}

// podMounts stands in for the pod's volumes on this machine: each of c's
// mount paths is a directory here, the host's own for a hostPath volume
// (the cgroup tree where this machine has it), a temp dir holding the
// keys of the ConfigMap or Secret (from secrets: the operator makes them)
// otherwise.
func podMounts(t *testing.T, pod corev1.PodSpec, c corev1.Container, cms map[string]corev1.ConfigMap, secrets map[string]map[string][]byte) map[string]string {
	t.Helper()
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		v, ok := vols[m.Name]
		if !ok {
			t.Fatalf("mount %s: no volume %q", m.MountPath, m.Name)
		}
		files := map[string][]byte{}
		switch {
		case v.HostPath != nil && v.HostPath.Path == "/sys/fs/cgroup":
			mounts[m.MountPath] = exporter.DefaultCgroupFS
			continue
		case v.HostPath != nil:
			mounts[m.MountPath] = v.HostPath.Path
			continue
		case v.ConfigMap != nil:
			cm, ok := cms[v.ConfigMap.Name]
			if !ok {
				t.Fatalf("volume %s: no ConfigMap %q among the manifests", v.Name, v.ConfigMap.Name)
			}
			for k, d := range cm.Data {
				files[k] = []byte(d)
			}
		case v.Secret != nil:
			s, ok := secrets[v.Secret.SecretName]
			if !ok {
				t.Fatalf("volume %s: Secret %q, which the test does not make", v.Name, v.Secret.SecretName)
			}
			files = s
		default:
			t.Fatalf("volume %s: a kind this test does not stand in for", v.Name)
		}
		dir := t.TempDir()
		for k, d := range files {
			if err := os.WriteFile(filepath.Join(dir, k), d, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		mounts[m.MountPath] = dir
	}
	return mounts
}

// podArgs are c's arguments with every path under a mount swapped for its
// directory here (podMounts) and the listen address for a free loopback
// port: the command line the container runs, on this machine.
func podArgs(c corev1.Container, mounts map[string]string) []string {
	var args []string
	for _, a := range c.Args {
		flag, val, ok := strings.Cut(a, "=")
		switch {
		case !ok:
		case flag == "--web.listen-address":
			a = flag + "=127.0.0.1:0"
		default:
			// The longest mount path that holds the value: a mount inside
			// another (the web config's /etc/slowlab/web inside the
			// config's /etc/slowlab) is its own volume.
			best := ""
			for mp := range mounts {
				if rest, ok := strings.CutPrefix(val, mp); ok && (rest == "" || rest[0] == '/') && len(mp) > len(best) {
					best = mp
				}
			}
			if best != "" {
				a = flag + "=" + mounts[best] + strings.TrimPrefix(val, best)
			}
		}
		args = append(args, a)
	}
	return args
}

// runImageCommand runs the image's command, the standalone exporter
// (deploy/Dockerfile.exporter builds cmd/slowlab-exporter, whose main is
// exportercmd.Run under the name slowlab-exporter), with args in this
// process, and returns the address its ready line names; it stops when
// the test ends. (TestExporterImageBuilds builds the image's binary.)
func runImageCommand(t *testing.T, args []string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var stderr slowlabtest.SyncBuffer
	done := make(chan error, 1)
	go func() {
		err := exportercmd.Run(ctx, "slowlab-exporter", args, pw, &stderr)
		pw.CloseWithError(err)
		done <- err
	}()
	stop := func() error {
		cancel()
		go io.Copy(io.Discard, pr) // a ready line nobody reads must not block it
		return <-done
	}
	line, err := bufio.NewReader(pr).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ready listen=")
	if err != nil || !ok {
		t.Fatalf("no ready line (%q, %v); exporter: %v; stderr: %s", line, err, stop(), stderr.String())
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("the exporter ended with %v; stderr: %s", err, stderr.String())
		}
	})
	return addr
}
