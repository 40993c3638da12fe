// Package asgi holds the ASGI app that the real stack serves with Uvicorn
// (app.py: standard library only, the WSGI app's endpoints and records,
// plus /large?backpressure=off). The source is embedded so the slowlab
// binary can write it into a run's work directory from anywhere; the
// package does not start Uvicorn (lab/stack does).
package asgi

import _ "embed"

// AppSource is app.py; Uvicorn loads it as app:application.
//
//go:embed app.py
var AppSource []byte

// AppModule is the ASGI application Uvicorn is told to serve.
const AppModule = "app:application"
