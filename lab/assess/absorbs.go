package assess

import (
	"fmt"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/pathmodel"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
)

// absorbsNote says a for the verdict's notes.
func absorbsNote(a Absorbs) string {
	if a.Fits {
		return fmt.Sprintf("the %s response fits in what the path holds (predicted %s): a reader cannot hold a worker at this size; responses over %s can",
			mibs(float64(a.ResponseBytes)), a.Hops, mibs(float64(a.PredictedBytes)))
	}
	return fmt.Sprintf("the path holds %s of the %s response (predicted %s): the rest holds the app's send until the reader takes it",
		mibs(float64(a.PredictedBytes)), mibs(float64(a.ResponseBytes)), a.Hops)
}

// absorbs predicts the path of a slow reader on route for a response of
// size bytes; nil (and why) where the model cannot: a proxy the user
// runs (its buffers are its own configuration), a route the model does
// not know, the kernel's settings unreadable.
func absorbs(route stack.Route, external bool, size int64) (*Absorbs, string) {
	if external && route.Proxied() {
		return nil, "the proxy's buffers are its own configuration"
	}
	if !route.Valid() {
		return nil, fmt.Sprintf("route %s is not a download route the model knows", route)
	}
	var c pathmodel.Config
	if err := pathmodel.NetConfig(lab.NetSettings(lab.HostNamespace, nil, nil), &c); err != nil {
		return nil, err.Error()
	}
	c.Route, c.ClientRcvBuf = route, loadgen.DefaultSlowRcvBuf
	c.Proxy = stack.Deployment{Route: route, LargeSize: size}.ResponseBuffers()
	p, err := pathmodel.Predict(c)
	if err != nil {
		return nil, err.Error()
	}
	return &Absorbs{PredictedBytes: p.Total(), Hops: p.String(), ResponseBytes: size, Fits: size <= p.Total()}, ""
}
