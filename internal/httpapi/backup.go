package httpapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/rushgate/rushgate/internal/backup"
)

// errBackupUnavailable answers for backups where nothing under --data is the instance's own.
var errBackupUnavailable = apiError(http.StatusConflict, codeBackupUnavailable,
	"nothing under --data is this instance's own: Redis keeps the lines and secrets, PostgreSQL the record; back them up with their own tools")

// backup answers GET /v1/backup with a copy of the data directory to start another rushgate from: the
// embedded backend's record and lines as of one instant, and its secrets; on Redis, the SQLite record.
// One is taken at a time (backup.ErrRunning: 409). A failure before the first byte is the API's JSON
// error; one after it cuts the download, which then fails in the client rather than looking whole.
func (s *Server) backup(w http.ResponseWriter, r *http.Request) {
	if s.backups == nil {
		s.writeError(w, r, errBackupUnavailable)
		return
	}
	// A backup sealed to recipients (--backup-recipient) is an age file.
	contentType, name := "application/gzip", "rushgate-backup-"+s.now().UTC().Format("20060102T150405Z")+".tar.gz"
	if s.backups.Sealed() {
		contentType, name = "application/octet-stream", name+".age"
	}
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "no-store")
		return // a probe of the link: no copy for an answer without a body
	}
	// The server's ReadTimeout, past which net/http ends a request's context, is for request bodies: a
	// large record copied to a slow client may take longer.
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	began := time.Now()
	out := &download{w: w, contentType: contentType, name: name}
	err := s.backups.Backup(r.Context(), out)
	switch {
	case errors.Is(err, backup.ErrAbandoned):
		s.log.Info("backup: its download was abandoned by the client", "bytes", out.n, "err", err, "client", s.clientAddr(r))
		if out.n > 0 {
			panic(http.ErrAbortHandler)
		}
	case errors.Is(err, backup.ErrRunning):
		s.writeError(w, r, apiError(http.StatusConflict, codeBackupRunning, "a backup is being taken; ask again once it is done"))
	case err != nil && out.n == 0:
		s.writeError(w, r, &Error{Status: http.StatusServiceUnavailable, Code: codeStoreUnavailable,
			Message: "the backup could not be taken", Cause: err})
	case err != nil:
		s.log.Warn("backup: cut short", "bytes", out.n, "err", err)
		panic(http.ErrAbortHandler)
	default:
		// Said with who asked: the archive holds the secrets.
		s.log.Info("backup taken", "file", out.name, "bytes", out.n, "took", time.Since(began).Round(time.Millisecond),
			"client", s.clientAddr(r))
	}
}

// download is a backup's answer: its headers go out with the first byte, so that a backup that fails
// before it is answered as an error instead.
type download struct {
	w                 http.ResponseWriter
	contentType, name string
	n                 int64
}

func (d *download) Write(p []byte) (int, error) {
	if d.n == 0 {
		attachment(d.w.Header(), d.contentType, d.name)
	}
	n, err := d.w.Write(p)
	d.n += int64(n)
	return n, err
}

// backupStatus is GET /v1/backups: how the backups went, and what --backup-dir keeps, newest first.
type backupStatus struct {
	LastTakenAt  *time.Time      `json:"last_taken_at"`
	LastFailedAt *time.Time      `json:"last_failed_at"`
	Failure      string          `json:"failure,omitempty"`
	Encrypted    bool            `json:"encrypted"`
	Schedule     *backupSchedule `json:"schedule"`
}

type backupSchedule struct {
	Dir          string       `json:"dir"`
	EverySeconds float64      `json:"every_seconds"`
	Kept         []keptBackup `json:"kept"`
}

type keptBackup struct {
	Name    string    `json:"name"`
	Bytes   int64     `json:"bytes"`
	TakenAt time.Time `json:"taken_at"`
}

// listBackups answers GET /v1/backups; 409 backup_unavailable as GET /v1/backup does.
func (s *Server) listBackups(w http.ResponseWriter, r *http.Request) {
	if s.backups == nil {
		s.writeError(w, r, errBackupUnavailable)
		return
	}
	st := s.backups.Status()
	out := backupStatus{LastTakenAt: instant(st.LastTaken), LastFailedAt: instant(st.LastFailed), Failure: st.Failure, Encrypted: st.Encrypted}
	if st.Dir != "" {
		out.Schedule = &backupSchedule{Dir: st.Dir, EverySeconds: st.Every.Seconds(), Kept: []keptBackup{}}
		for _, a := range st.Kept {
			out.Schedule.Kept = append(out.Schedule.Kept, keptBackup{Name: a.Name, Bytes: a.Size, TakenAt: a.TakenAt.UTC()})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// instant is t for JSON, null when zero.
func instant(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}
