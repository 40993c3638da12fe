package kubernetes

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"golang.org/x/crypto/bcrypt"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
)

// Both kustomizations build as `kubectl apply -k` builds them, and what
// they make decodes strictly: the base's six resources, and the secured
// overlay's same six with the web-config component's patches applied.
func TestKustomizationsBuild(t *testing.T) {
	types := map[string]func() any{
		"DaemonSet":      func() any { return &appsv1.DaemonSet{} },
		"Service":        func() any { return &corev1.Service{} },
		"ConfigMap":      func() any { return &corev1.ConfigMap{} },
		"PodMonitor":     func() any { return &monitoringv1.PodMonitor{} },
		"PriorityClass":  func() any { return &schedulingv1.PriorityClass{} },
		"PrometheusRule": func() any { return &monitoringv1.PrometheusRule{} },
	}
	for _, dir := range []string{".", "../kubernetes-secured"} {
		res := kustomize(t, dir)
		if len(res) != len(types) {
			t.Errorf("%s builds %d resources, want %d", dir, len(res), len(types))
		}
		for id, y := range res {
			kind, _, _ := strings.Cut(id, "/")
			newObj, ok := types[kind]
			if !ok {
				t.Errorf("%s: %s, a kind the exporter does not deploy", dir, id)
				continue
			}
			if err := strictDecode(y, newObj()); err != nil {
				t.Errorf("%s: %s: %v", dir, id, err)
			}
		}
	}
}

// The secured overlay run as the pod would run it: the DaemonSet's own
// command line, with the Secret the operator makes mounted where the
// component says, serves /metrics over TLS to a client that holds the
// PodMonitor's credentials and CA and checks the name it gives, and
// refuses everyone else: no credentials, a wrong password, plain HTTP
// (what the unsecured PodMonitor would send).
func TestSecuredMetrics(t *testing.T) {
	res := kustomize(t, "../kubernetes-secured")
	var ds appsv1.DaemonSet
	var pm monitoringv1.PodMonitor
	var cm corev1.ConfigMap
	for id, v := range map[string]any{"DaemonSet/slowlab-exporter": &ds, "PodMonitor/slowlab-exporter": &pm, "ConfigMap/slowlab-exporter": &cm} {
		if err := strictDecode(res[id], v); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	ep := pm.Spec.PodMetricsEndpoints[0]
	if ep.Scheme == nil || ep.Scheme.String() != "https" || ep.TLSConfig == nil || ep.TLSConfig.CA.Secret == nil ||
		ep.TLSConfig.ServerName == nil || ep.BasicAuth == nil {
		t.Fatalf("pod monitor endpoint %+v: want https, the CA and server name, basic auth", ep)
	}
	scrape := ep.BasicAuth.Username.Name
	if ep.BasicAuth.Password.Name != scrape || ep.TLSConfig.CA.Secret.Name != scrape {
		t.Errorf("the pod monitor reads three secrets (%s, %s, %s), want the one the README has the operator make",
			scrape, ep.BasicAuth.Password.Name, ep.TLSConfig.CA.Secret.Name)
	}
	const user, password = "prometheus", "correct horse battery staple"
	certPEM, keyPEM := selfSigned(t, *ep.TLSConfig.ServerName)
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	// The two Secrets as exporter/README.md has the operator make them.
	secrets := map[string]map[string][]byte{
		"slowlab-exporter-web": {
			"web.yml": []byte("tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\nbasic_auth_users:\n  " + user + ": " + string(hash) + "\n"),
			"tls.crt": certPEM, "tls.key": keyPEM,
		},
		scrape: {"username": []byte(user), "password": []byte(password), "ca.crt": certPEM},
	}
	pod := ds.Spec.Template.Spec
	c := pod.Containers[0]
	addr := runImageCommand(t, podArgs(c, podMounts(t, pod, c, map[string]corev1.ConfigMap{cm.Name: cm}, secrets)))

	if p := c.ReadinessProbe; p == nil || p.TCPSocket == nil || p.TCPSocket.Port.StrVal != c.Ports[0].Name {
		t.Errorf("readiness probe %+v: every path asks for credentials, want a TCP probe of port %s", p, c.Ports[0].Name)
	} else if conn, err := net.Dial("tcp", addr); err != nil {
		t.Errorf("the probe's TCP connect: %v", err)
	} else {
		conn.Close()
	}

	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(secrets[scrape][ep.TLSConfig.CA.Secret.Key]) {
		t.Fatalf("no CA under key %q of %s", ep.TLSConfig.CA.Secret.Key, scrape)
	}
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: *ep.TLSConfig.ServerName}}}
	get := func(scheme, user, pass string) (int, string) {
		req, _ := http.NewRequest("GET", scheme+"://"+addr+"/metrics", nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s as %q: %v", scheme, user, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	creds := secrets[scrape]
	if code, body := get(ep.Scheme.String(), string(creds[ep.BasicAuth.Username.Key]), string(creds[ep.BasicAuth.Password.Key])); code != 200 ||
		!strings.Contains(body, "slowlab_exporter_build_info") {
		t.Errorf("the pod monitor's scrape: status %d, want 200 with the exporter's metrics:\n%.300s", code, body)
	}
	for _, bad := range []struct{ scheme, user, pass, what string }{
		{"https", "", "", "no credentials"},
		{"https", user, "wrong", "a wrong password"},
		{"http", user, password, "plain HTTP"},
	} {
		if code, _ := get(bad.scheme, bad.user, bad.pass); code == 200 {
			t.Errorf("%s: status 200", bad.what)
		}
	}
}

// selfSigned is a certificate for name and its key, PEM-encoded, as the
// README's openssl line makes them.
func selfSigned(t *testing.T, name string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}
