package appserver

import (
	"encoding/json"
	"net/http"
	"sync"
)

// SendStart is SendRecord.Event of the record an app writes as a /large
// body begins.
const SendStart = "start"

// SendRecord is one /large response as the server saw it. Every app (this
// server and the WSGI, ASGI and Node.js apps) writes two per GET /large
// that it answers 200: one with Event SendStart, ID, PID and PeerPort as
// the body begins, so a worker killed mid-body leaves a record of what it
// served, and one with Event "" when it has written the body or failed
// to, with Bytes, AppSendS, Complete and PID (and PeerPort) too.
type SendRecord struct {
	Event    string  `json:"event,omitempty"`
	ID       string  `json:"id"`
	Bytes    int64   `json:"bytes"`
	AppSendS float64 `json:"app_send_s"`
	Complete bool    `json:"complete"`
	Error    string  `json:"error,omitempty"`
	// PID is the process that served the request: a Gunicorn, Uvicorn or
	// Node.js worker, or this server's own process (its workers are
	// goroutines: PeerPort tells its connections apart).
	PID int `json:"pid,omitempty"`
	// PeerPort is the remote TCP port of the connection the request came
	// on, as PeerPortHeader says; 0 when there is none.
	PeerPort int `json:"peer_port,omitempty"`
}

// sendLog keeps the newest records, bounded so a long soak cannot grow it.
type sendLog struct {
	mu   sync.Mutex
	max  int
	recs []SendRecord
}

func newSendLog(max int) *sendLog { return &sendLog{max: max} }

func (l *sendLog) add(r SendRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.recs) == l.max {
		copy(l.recs, l.recs[1:])
		l.recs = l.recs[:l.max-1]
	}
	l.recs = append(l.recs, r)
}

// serveHTTP returns the records as a JSON array; ?id= selects one request.
func (l *sendLog) serveHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	l.mu.Lock()
	out := make([]SendRecord, 0, len(l.recs))
	for _, rec := range l.recs {
		if id == "" || rec.ID == id {
			out = append(out, rec)
		}
	}
	l.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}
