package appserver

import (
	"encoding/json"
	"net/http"
	"sync"
)

// SendRecord is one /large response as the server saw it.
type SendRecord struct {
	ID       string  `json:"id"`
	Bytes    int64   `json:"bytes"`
	AppSendS float64 `json:"app_send_s"`
	Complete bool    `json:"complete"`
	Error    string  `json:"error,omitempty"`
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
