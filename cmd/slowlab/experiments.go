package main

// The experiments `slowlab reproduce` and `slowlab run` know: each
// registers itself with lab, and lab/experiments imports them all.
import _ "github.com/slowlab/slowlab/lab/experiments"
