// Package tempdisk is the temp-disk-full experiment (issue 18): the
// proxy's temp dir on a small tmpfs (8 MiB) that the run mounts in a mount
// namespace of the proxy's own, and 2 slow readers of 16 MiB behind the
// proxy with buffering on, beside a control condition with the temp dir on
// disk. When the tmpfs is full NGINX logs "[crit] pwrite() ... failed (28:
// No space left on device)" and cuts the responses it was buffering: the
// clients get a 200 and a body shorter than its Content-Length; /fast is
// untouched. The embedded proxy does the same. The exporter's
// slowlab_proxy_temp_write_errors_total, read from the proxy's error log,
// counts each failed write and SlowlabProxyTempWriteFailed fires; its
// slowlab_proxy_temp_fs_avail_bytes shows the filesystem full only if a
// scrape falls in the milliseconds it is (SlowlabProxyTempFilesystemFull
// fires for one that stays full). The namespace, and the
// tmpfs with it, ends with the proxy on every path.
//
// Its configuration, run, rows, files and conditions table are
// temp-cliff's (package tempcliff, Condition.TempTmpfs); this package owns
// the published conditions and its report section (Section: the
// downloads figure and what each temp dir did, drawn from tempcliff's
// Data).
package tempdisk

import (
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/tempcliff"
)

// Name is the experiment's name.
const Name = "temp-disk-full"

// PublishedTmpfs is the tmpfs size of the published condition.
const PublishedTmpfs = 8 << 20

func init() {
	lab.Register(lab.Experiment{Name: Name, Order: 10, New: func() lab.Config { return Published() }, NewResult: func() lab.Result { return new(tempcliff.Result) }, Report: Section,
		Files: tempcliff.ResultsFiles, Smoke: tempcliff.Smoke, External: tempcliff.External,
		Summary: "slow readers behind a buffering proxy whose temp dir is a small tmpfs that fills up (root: a mount namespace)",
		Shared:  lab.SharedStackRun})
}

// Published returns the matrix: 2 slow readers of 16 MiB on sync-2 with
// the temp dir on an 8 MiB tmpfs, and the same with it on disk; 3
// repetitions at 4 MiB/s. --quick runs both once at 8 MiB/s.
func Published() *tempcliff.Config {
	c := tempcliff.NewConfig(Name)
	full := tempcliff.Condition{Server: tempcliff.PublishedServer, SlowClients: 2, Size: 16 << 20, MaxTempFileSize: tempcliff.PublishedMaxTemp,
		TempTmpfs: PublishedTmpfs}
	onDisk := full
	onDisk.TempTmpfs = 0
	c.Conditions = []tempcliff.Condition{full, onDisk}
	c.SetQuick(c.Conditions)
	return c
}
