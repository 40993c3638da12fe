// Package node holds the Node.js app that the node server model serves
// (app.js: node:http and node:cluster only, the embedded target's
// endpoints). The source is embedded so the slowlab binary can write it
// into a run's work directory from anywhere; the package does not start
// Node.js (lab does).
package node

import _ "embed"

// AppSource is app.js; `node app.js` serves it.
//
//go:embed app.js
var AppSource []byte

// AppFile is the name the app is written under and started as.
const AppFile = "app.js"

// WorkersEnv is the environment variable that sets app.js's worker
// processes: 1 serves in one process, W > 1 runs a node:cluster primary
// with W workers.
const WorkersEnv = "SLOWLAB_WORKERS"
