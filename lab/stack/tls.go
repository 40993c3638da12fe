package stack

import (
	"crypto/tls"
	"net/netip"

	"github.com/slowlab/slowlab/internal/runcert"
)

// DeploymentTLS is a run's certificate for its proxy (runcert), made for
// 127.0.0.1 and ::1: its PEM files under the run's WorkDir and a client
// configuration that trusts it and nothing else.
type DeploymentTLS struct {
	CertFile, KeyFile string
	Client            *tls.Config
}

// newDeploymentTLS makes the run's certificate and writes it under
// d.WorkDir, removed with it.
func newDeploymentTLS(d Deployment) (*DeploymentTLS, error) {
	c, err := runcert.New("slowlab "+d.RunID, netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback())
	if err != nil {
		return nil, err
	}
	certFile, keyFile, err := c.WritePEM(d.WorkDir)
	if err != nil {
		return nil, err
	}
	return &DeploymentTLS{CertFile: certFile, KeyFile: keyFile, Client: &tls.Config{RootCAs: c.Pool, MinVersion: tls.VersionTLS12}}, nil
}
