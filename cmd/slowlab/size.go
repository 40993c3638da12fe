package main

import "github.com/slowlab/slowlab/internal/bytesize"

// byteSizeFlag reads a byte size flag with NGINX's size syntax (16k, 32m, 1g).
func byteSizeFlag(name, s string) (int64, error) {
	v, err := bytesize.Parse(s)
	if err != nil {
		return 0, usagef("--%s %q: want bytes as N, Nk, Nm or Ng (KiB, MiB, GiB)", name, s)
	}
	return v, nil
}
