package assess

import "strings"

// flagOf is the flag of each field assess's flags set, by its YAML path.
var flagOf = map[string]string{
	"server": "server", "route": "route", "probes": "probes", "max_clients": "max-clients", "window": "window",
	"fast_rate": "fast-rate", "idle_max": "idle-max", "budget": "budget", "fail_on": "fail-on",
	"large_size": "large-size", "upload_size": "upload-size", "shard": "shard", "start_at": "start-at",
	"server_wmem": "server-wmem", "external.fast_url": "fast-url", "external.large_url": "large-url",
	"external.upload_url": "upload-url", "external.stream_url": "stream-url",
	"external.groups.app": "app", "external.groups.proxy": "proxy", "external.temp_dirs": "temp-dir",
}

// NameFlag names the field an error of the config's checks starts with
// ("max_clients 0: ...", "external.large_url: ...") by the flag that set
// it ("--max-clients 0: ...", "--large-url: ..."): when given(flag) says
// that flag was given, or the field is of the external: block, which only
// the external flags make. Other errors, and nil, are returned as they
// are; the one returned wraps err.
func NameFlag(err error, given func(flag string) bool) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	i := strings.IndexAny(msg, " :")
	if i < 0 {
		return err
	}
	name, ok := flagOf[msg[:i]]
	if !ok || !(given(name) || strings.HasPrefix(msg, "external.")) {
		return err
	}
	return flagNamed{msg: "--" + name + msg[i:], err: err}
}

// flagNamed is an error renamed by NameFlag.
type flagNamed struct {
	msg string
	err error
}

func (e flagNamed) Error() string { return e.msg }
func (e flagNamed) Unwrap() error { return e.err }
