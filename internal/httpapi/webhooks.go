package httpapi

import (
	"net/http"

	"github.com/rushgate/rushgate"
	"github.com/rushgate/rushgate/internal/notify"
)

// webhooks lists the last webhooks queued, newest first, with how the delivery of each goes: where an
// operator learns whether the site heard of an auction's end, and if not, why.
func (s *Server) webhooks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := notify.Filter{State: q.Get("state"), Auction: q.Get("auction"), Drop: q.Get("drop")}
	var limit int
	var err error
	switch {
	case f.State != "" && f.State != notify.Pending && f.State != notify.Delivered && f.State != notify.Failed:
		err = apiError(http.StatusBadRequest, codeInvalidRequest, `state must be "pending", "delivered" or "failed"`)
	case f.Auction != "" && !rushgate.ValidID(f.Auction):
		err = apiError(http.StatusBadRequest, codeInvalidRequest, "auction must be an auction's id")
	case f.Drop != "" && !rushgate.ValidID(f.Drop):
		err = apiError(http.StatusBadRequest, codeInvalidRequest, "drop must be a drop's id")
	case f.Drop != "" && f.Auction != "":
		err = apiError(http.StatusBadRequest, codeInvalidRequest, "ask for one auction's or one drop's webhooks, not both")
	default:
		limit, err = limitParam(q, 100, 500)
	}
	list := []notify.Webhook{}
	if err == nil && s.webhookLog != nil {
		list, err = s.webhookLog.Webhooks(r.Context(), f, limit)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"url": s.webhookURL, "webhooks": list})
}

// sendWebhook makes a webhook due now: the sender delivers it within its next second.
func (s *Server) sendWebhook(w http.ResponseWriter, r *http.Request) {
	if s.webhookLog == nil {
		s.writeError(w, r, notify.ErrNotFound)
		return
	}
	wh, err := s.webhookLog.SendWebhookNow(r.Context(), r.PathValue("id"), s.now())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wh)
}

// pingWebhook queues a test event for the site: the sender delivers it within its next second, and the
// list (or the console) says whether the site took it.
func (s *Server) pingWebhook(w http.ResponseWriter, r *http.Request) {
	if s.webhookLog == nil || s.webhookURL == "" {
		s.writeError(w, r, apiError(http.StatusConflict, codeWebhooksOff, "rushgate sends webhooks only with --webhook-url"))
		return
	}
	wh, err := s.webhookLog.QueuePing(r.Context(), s.now())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, wh)
}
