package slowupload

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
)

// TestAppsServeUpload: every registered app serves POST /upload alike: the whole
// body read, its size in X-Slowlab-Body-Bytes, the time in body reads in
// Server-Timing body (no longer than the client's own total), and 405
// with Allow: POST to a GET. Each app runs as a deployment of its own.
func TestAppsServeUpload(t *testing.T) {
	slowlabtest.Timing(t)
	for _, tc := range labtest.Apps() {
		t.Run(tc.Stack, func(t *testing.T) {
			running := labtest.StartOwn(t, tc.Stack, stack.RouteDirect, tc.Server, 0)
			u, err := url.Parse(running.URL() + "/upload")
			if err != nil {
				t.Fatal(err)
			}
			const size = 1<<20 + 7
			up := loadgen.SlowUploader{URL: u, Size: size, Rate: 8 << 20, SndBuf: loadgen.DefaultUploadSndBuf,
				WriteSize: loadgen.DefaultUploadWriteSize, Timeout: time.Minute}.Run(context.Background(), 0)
			if up.Outcome != loadgen.UploadOK || up.Err != nil {
				t.Fatalf("upload: %+v, want ok", up)
			}
			if !up.AppBytesOK || up.AppBytes != size {
				t.Errorf("app read %d bytes (reported %v), want %d", up.AppBytes, up.AppBytesOK, size)
			}
			if !up.AppReadOK || up.AppRead <= 0 || up.AppRead > up.Total {
				t.Errorf("app body read %v (reported %v), want more than 0 and at most the client's %v", up.AppRead, up.AppReadOK, up.Total)
			}
			resp, err := http.Get(u.String())
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
				t.Errorf("GET /upload: %d, Allow %q; want 405, POST", resp.StatusCode, resp.Header.Get("Allow"))
			}
		})
	}
}
