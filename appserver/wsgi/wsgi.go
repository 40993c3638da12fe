// Package wsgi holds the WSGI app that the gunicorn-nginx stack serves with
// Gunicorn (app.py: standard library only, the embedded target's endpoints).
// The source is embedded so the slowlab binary can write it into a run's
// work directory from anywhere; the package does not start Gunicorn (lab
// does).
package wsgi

import _ "embed"

// AppSource is app.py; Gunicorn loads it as app:application.
//
//go:embed app.py
var AppSource []byte

// AppModule is the WSGI application Gunicorn is told to serve.
const AppModule = "app:application"
